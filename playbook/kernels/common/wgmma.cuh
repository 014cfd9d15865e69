// Helpers for Hopper's warpgroup tensor cores (wgmma, sm_90a only) with TF32 operands: the hi/lo split
// of 3xTF32, cp.async into the shared-memory ring, the fences between the generic and async proxies,
// the 128-byte-swizzled K-major descriptor, and wgmma m64nNk8 with A from registers (N = 96 or 128).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "the wgmma kernels need the arch-specific target: compile for sm_90a"
#endif

__device__ __forceinline__ unsigned wg_tf32(float x) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ void wg_copy16(unsigned dst, const void* src, int bytes) {
    // bytes < 16: the rest of the 16 is zero-filled (0: a row or k past the matrix)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void wg_copy4(unsigned dst, const void* src, int bytes) {  // bytes 0: a zero
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void wg_copies_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int PENDING>
__device__ __forceinline__ void wg_copies_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory"); }
// cp.async writes through the generic proxy, wgmma reads through the async proxy
__device__ __forceinline__ void wg_fence_proxy() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// Keep the compiler from moving register reads/writes across the asynchronous wgmma window.
__device__ __forceinline__ void wg_pin(float& x) { asm volatile("" : "+f"(x)::"memory"); }
__device__ __forceinline__ void wg_pin(unsigned& x) { asm volatile("" : "+r"(x)::"memory"); }

// Shared-memory matrix descriptor: K-major, 128-byte swizzle, 8-row core groups 1024 bytes apart.
__device__ __forceinline__ unsigned long long wg_desc(unsigned address) {
    return (unsigned long long)((address & 0x3FFFF) >> 4) | (1ull << 16) | ((unsigned long long)(1024 >> 4) << 32) |
           (1ull << 62);
}

#define WG_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
                 "+f"(d[i + 6]), "+f"(d[i + 7])
// d (+)= A (64 x 8, registers) * B (8 x 128, shared memory); SCALE_D 0: d = A * B.
template <int SCALE_D>
__device__ __forceinline__ void wg_mma(float (&d)[64], const unsigned (&a)[4], unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "{%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
        : WG_D8(0), WG_D8(8), WG_D8(16), WG_D8(24), WG_D8(32), WG_D8(40), WG_D8(48), WG_D8(56)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(SCALE_D));
}
// The same with B 8 x 96.
template <int SCALE_D>
__device__ __forceinline__ void wg_mma(float (&d)[48], const unsigned (&a)[4], unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %53, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n96k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, "
        "{%48, %49, %50, %51}, %52, p, 1, 1;\n}\n"
        : WG_D8(0), WG_D8(8), WG_D8(16), WG_D8(24), WG_D8(32), WG_D8(40)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(SCALE_D));
}
// 3xTF32's two steps, shared by the matmul and the convolution. A fragment of A (four values) split into
// tf32 hi = tf32(v) and lo = tf32(v - hi), pinned in registers before the asynchronous window.
__device__ __forceinline__ void wg_split(const float (&v)[4], unsigned (&hi)[4], unsigned (&lo)[4]) {
    #pragma unroll
    for (int q = 0; q < 4; ++q) {
        hi[q] = wg_tf32(v[q]);
        lo[q] = wg_tf32(v[q] - __uint_as_float(hi[q]));
        wg_pin(hi[q]);
        wg_pin(lo[q]);
    }
}
// Group h of a 32-deep k-tile's four k-steps, issued and committed: part = lo*hi + hi*lo + hi*hi over the
// group's FLUSH k-steps, from zero. b_hi, b_lo: the stage's B tiles; k-step s starts 32 bytes further into
// each 128-byte row (the swizzle applies on top). The caller waits, then adds part with wg_accumulate.
template <int FLUSH_STEPS, int N>
__device__ __forceinline__ void wg_mma_3xtf32(float (&part)[N], const unsigned (&a_hi)[4][4],
                                              const unsigned (&a_lo)[4][4], unsigned b_hi, unsigned b_lo, int h) {
    #pragma unroll
    for (int i = 0; i < N; ++i) wg_pin(part[i]);
    wg_fence();
    #pragma unroll
    for (int s = h * FLUSH_STEPS; s < (h + 1) * FLUSH_STEPS; ++s) {
        if (s == h * FLUSH_STEPS)
            wg_mma<0>(part, a_lo[s], wg_desc(b_hi + 32 * s));
        else
            wg_mma<1>(part, a_lo[s], wg_desc(b_hi + 32 * s));
        wg_mma<1>(part, a_hi[s], wg_desc(b_lo + 32 * s));
        wg_mma<1>(part, a_hi[s], wg_desc(b_hi + 32 * s));
    }
    wg_commit();
}
// The group's partial into the fp32 accumulators with ordinary FADDs (the tensor cores truncate their sums).
template <int N>
__device__ __forceinline__ void wg_accumulate(float (&acc)[N], float (&part)[N]) {
    #pragma unroll
    for (int i = 0; i < N; ++i) {
        wg_pin(part[i]);
        acc[i] += part[i];
    }
}
#endif
