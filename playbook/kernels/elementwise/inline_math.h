#if INLINE_MATH
static inline float erf_inline(float x) {
    float a = fabsf(x);
    float u = (a > 3.92f ? 3.92f : a) * 0.5102040816f - 1.0f;
    float p = -1.911908388e-02f;
    p = p * u + 5.108139664e-02f;
    p = p * u + 4.003736377e-02f;
    p = p * u - 2.252807617e-01f;
    p = p * u + 1.121753082e-01f;
    p = p * u + 3.145585358e-01f;
    p = p * u - 4.646417201e-01f;
    p = p * u + 9.632534534e-02f;
    p = p * u + 3.784925640e-01f;
    p = p * u - 5.489316583e-01f;
    p = p * u + 4.055797160e-01f;
    p = p * u - 1.821759790e-01f;
    p = p * u + 4.747498408e-02f;
    p = p * u + 9.944247603e-01f;
    return copysignf(p > 1.0f ? 1.0f : p, x);
}
static inline float exp_inline(float x) {
    float c = x < -87.3f ? -87.3f : (x > 88.7f ? 88.7f : x);
    float t = c * 1.44269504088896341f + 12582912.0f;
    float k = t - 12582912.0f;
    int32_t tb, sb;
    memcpy(&tb, &t, sizeof tb);
    float r = c - k * 0.693359375f;
    r = r + k * 2.12194440e-4f;
    float p = 1.394858118e-3f;
    p = p * r + 8.375128731e-3f;
    p = p * r + 4.166621715e-2f;
    p = p * r + 1.666641533e-1f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    sb = (tb - 0x4B400000 + 127) << 23;
    float scale;
    memcpy(&scale, &sb, sizeof scale);
    float e = p * scale;
    return x > 88.72f ? INFINITY : (x < -87.3f ? 0.0f : e);
}
#define erff erf_inline
#define expf exp_inline
#endif
