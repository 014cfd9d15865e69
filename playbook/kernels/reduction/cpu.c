#include <stdlib.h>
void reduce(const float* x, float* y, i64 outer, i64 r, i64 inner) {
#if MODE == 0
    for (i64 o = 0; o < outer; ++o)
        for (i64 i = 0; i < inner; ++i) {
            acc_t a = IDENTITY;
            for (i64 k = 0; k < r; ++k) { acc_t b = x[(o * r + k) * inner + i]; a = COMBINE(a, b); }
            y[o * inner + i] = FINAL(a, r);
        }
#else
    #pragma omp parallel if (PARALLEL)
    {
        acc_t* acc = (acc_t*)malloc(sizeof(acc_t) * (inner > 0 ? inner : 1));
        #pragma omp for schedule(static)
        for (i64 o = 0; o < outer; ++o) {
            const float* slab = x + o * r * inner;
            for (i64 i = 0; i < inner; ++i) acc[i] = IDENTITY;
            for (i64 k = 0; k < r; ++k) {
                const float* row = slab + k * inner;
                #pragma omp simd
                for (i64 i = 0; i < inner; ++i) { acc_t a = acc[i], b = row[i]; acc[i] = COMBINE(a, b); }
            }
            if (inner == 1) {
                /* a single long row: the loop above is a serial chain; use independent partial results */
                acc_t part[8];
                for (int j = 0; j < 8; ++j) part[j] = IDENTITY;
                i64 k = 0;
                for (; k + 8 <= r; k += 8)
                    for (int j = 0; j < 8; ++j) { acc_t a = part[j], b = slab[k + j]; part[j] = COMBINE(a, b); }
                acc_t a = IDENTITY;
                for (int j = 0; j < 8; ++j) { acc_t b = part[j]; a = COMBINE(a, b); }
                for (; k < r; ++k) { acc_t b = slab[k]; a = COMBINE(a, b); }
                acc[0] = a;
            }
            for (i64 i = 0; i < inner; ++i) y[o * inner + i] = FINAL(acc[i], r);
        }
        free(acc);
    }
#endif
}
