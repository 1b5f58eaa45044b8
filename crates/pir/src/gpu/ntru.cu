// `ntru-paper` on the GPU: the paper's per-column work (TracEdge §5.4, Fig. 4) in
// the number-theoretic domain of `ntru::ntt` (length 1024, prime P = 2^64 - 2^32 + 1,
// the "FFT" of the CPU server). For one column j and one transformed query q:
//   acc[t] = sum over regions i of q[i][t] * e[i][t]  (mod P),  t < 1024,
// in two steps as the paper describes: beta blocks each sum the regions
// i = b, b + beta, b + 2 beta, ... into one partial polynomial, then one block adds
// the beta partials. The inverse transform and the fold modulo X^N - 1 stay on the
// host (one per column and query), as in the CPU server.
typedef unsigned long long u64;
typedef unsigned int u32;

#define P 0xffffffff00000001ULL

__device__ __forceinline__ u64 add_p(u64 a, u64 b) {
    u64 s = a + b;
    const int over = s < a;
    const u64 t = s - P;
    const int under = s < P;
    // a + b - P when the sum wrapped or is at least P, else a + b.
    return (over || !under) ? t : s;
}

__device__ __forceinline__ u64 mul_p(u64 a, u64 b) {
    const u64 lo = a * b, hi = __umul64hi(a, b);
    const u64 hi_hi = hi >> 32, hi_lo = hi & 0xffffffffULL;
    u64 t0 = lo - hi_hi;
    if (lo < hi_hi) t0 -= 0xffffffffULL;
    const u64 t1 = hi_lo * 0xffffffffULL;
    u64 r = t0 + t1;
    if (r < t1) r += 0xffffffffULL;
    return r >= P ? r - P : r;
}

// Step one: block b of `beta` writes partial[b][t]; 256 threads, 4 coefficients each.
extern "C" __global__ void __launch_bounds__(256)
    ntru_column_partial(const u64 *__restrict__ e, const u64 *__restrict__ q, u64 regions, u32 beta,
                        u64 *__restrict__ partial) {
    for (int k = 0; k < 4; k++) {
        const u32 t = threadIdx.x + 256 * k;
        u64 acc = 0;
        for (u64 i = blockIdx.x; i < regions; i += beta) acc = add_p(acc, mul_p(q[i * 1024 + t], e[i * 1024 + t]));
        partial[(u64)blockIdx.x * 1024 + t] = acc;
    }
}

// Step two: one block adds the beta partials.
extern "C" __global__ void __launch_bounds__(256)
    ntru_column_final(const u64 *__restrict__ partial, u32 beta, u64 *__restrict__ out) {
    for (int k = 0; k < 4; k++) {
        const u32 t = threadIdx.x + 256 * k;
        u64 acc = 0;
        for (u32 b = 0; b < beta; b++) acc = add_p(acc, partial[(u64)b * 1024 + t]);
        out[t] = acc;
    }
}
