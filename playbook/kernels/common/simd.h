#if defined(__AVX512F__)
#define VBYTES 64
#elif defined(__AVX__)
#define VBYTES 32
#else
#define VBYTES 16
#endif
#define VL (VBYTES / 4)
typedef float vf __attribute__((vector_size(VBYTES)));
typedef int32_t vi __attribute__((vector_size(VBYTES)));
typedef float vf_u __attribute__((vector_size(VBYTES), aligned(4)));
typedef float vfh_u __attribute__((vector_size(VBYTES / 2), aligned(4)));
typedef double vd __attribute__((vector_size(VBYTES)));
static inline vf vload(const float* p) { return *(const vf_u*)p; }
static inline void vstore(float* p, vf v) { *(vf_u*)p = v; }
static inline vf vsplat(float a) { return (vf){0} + a; }
static inline vf vselect(vi mask, vf a, vf b) { return (vf)((mask & (vi)a) | (~mask & (vi)b)); }
#if defined(__AVX512F__)
#include <immintrin.h>
static inline vf vmax(vf a, vf b) { return (vf)_mm512_max_ps((__m512)a, (__m512)b); }
#elif defined(__AVX__)
#include <immintrin.h>
static inline vf vmax(vf a, vf b) { return (vf)_mm256_max_ps((__m256)a, (__m256)b); }
#else
static inline vf vmax(vf a, vf b) { return vselect(a > b, a, b); }
#endif
#if defined(__AVX512F__)
static inline vd vload_d(const float* p) { return (vd)_mm512_cvtps_pd(_mm256_loadu_ps(p)); }
#else
static inline vd vload_d(const float* p) { return __builtin_convertvector(*(const vfh_u*)p, vd); }
#endif
static inline float vsum(vf v) { float s = 0.0f; for (int l = 0; l < VL; ++l) s += v[l]; return s; }
static inline double vsum_d(vd v) { double s = 0.0; for (int l = 0; l < VL / 2; ++l) s += v[l]; return s; }
static inline float vmaxall(vf v) { float m = v[0]; for (int l = 1; l < VL; ++l) m = v[l] > m ? v[l] : m; return m; }

/* exp(x) for x <= 0, VL lanes at once: k = round(x / ln 2) (AVX-512: vrndscaleps; else the
   1.5 * 2^23 trick, which also leaves k in the low mantissa bits), r = x - k ln 2 in two steps
   (Cody-Waite), exp(r) on [-ln2/2, ln2/2] by a degree-6 Horner polynomial (Chebyshev fit,
   0.6 ulp), times 2^k (vscalefps, or built in the exponent field). Below -87.3 the result is
   clamped to ~2^-126 (a normal float) rather than 0. */
static inline vf vexp_neg(vf x) {
    x = vmax(x, vsplat(-87.3f));
#if defined(__AVX512F__)
    vf k = (vf)_mm512_roundscale_ps((__m512)(x * 1.44269504088896341f), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#else
    const vf magic = vsplat(12582912.0f);
    vf t = x * 1.44269504088896341f + magic;
    vf k = t - magic;
    vi ki = (vi)t - (vi)magic;
#endif
    vf r = x - k * 0.693359375f;
    r = r + k * 2.12194440e-4f;
    vf p = vsplat(1.394858118e-3f);
    p = p * r + 8.375128731e-3f;
    p = p * r + 4.166621715e-2f;
    p = p * r + 1.666641533e-1f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
#if defined(__AVX512F__)
    return (vf)_mm512_scalef_ps((__m512)p, (__m512)k);
#else
    return p * (vf)((ki + 127) << 23);
#endif
}
