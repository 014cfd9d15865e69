#include <math.h>
#include <stdint.h>
#include <string.h>
typedef long long i64;
#define DEVICE_FN static inline
#define NEG_INF (-INFINITY)

/* exp(x) for x <= 0 in a form the compiler can vectorise (Cody-Waite range reduction and a
   degree-6 polynomial, ~2 ulp); arguments below -87 return ~1e-38 instead of underflowing. */
static inline float exp_neg(float x) {
    x = x < -87.0f ? -87.0f : x;
    float k = floorf(x * 1.44269504088896341f + 0.5f);
    float r = x - k * 0.693359375f + k * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = ((int32_t)k + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}
