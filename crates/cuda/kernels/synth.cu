// Synthetic inputs for tests and benchmarks, made on the device (driver: src/synth.rs).
//
// Points: P_i = T1[i mod 2^k1] + T2[i >> k1] in affine form, from two small host tables of
// subgroup points (s * generator). The host picks the table scalars so that T1[a] != +-T2[b]
// for every pair, hence x(T1[a]) != x(T2[b]), every chord addition is defined and no P_i
// is the identity. Each thread makes SYNTH_BATCH points i = gid + j * T (T = threads in
// the grid, so a warp writes consecutive points) with one field inversion for the batch
// (Montgomery's trick): pass 1 forms the prefix products of the denominators
// x2 - x1, one inversion, pass 2 walks back and peels off each 1 / (x2 - x1).
// Should a denominator be zero after all, the point is written as the identity (all zero)
// and counted in *bad, and the host reports an error.
//
// Scalars: splitmix64 per index; a 32-bit draw picks zero / one / uniform by thresholds.
// Compare: counts differing elements of two buffers and finds the first one (NTT round
// trips checked without a download).
#include "ec/xyzz.cuh"

#define SYNTH_BATCH 32

// a^(p-2) = a^-1 (0 for a = 0): left-to-right square-and-multiply over the modulus limbs.
// The exponent is the same for every thread, so the branch does not diverge.
template <class P>
__device__ __forceinline__ Field<P> field_inv(const Field<P>& a) {
    Field<P> r = Field<P>::one();
#pragma unroll 1
    for (int w = P::N - 1; w >= 0; w--) {
        const uint32_t e = P::mod(w) - (w == 0 ? 2u : 0u);  // p is odd and > 2: no borrow
#pragma unroll 1
        for (int b = 31; b >= 0; b--) {
            r = r.sqr();
            if ((e >> b) & 1u) r = r * a;
        }
    }
    return r;
}

__device__ __forceinline__ Fq inv(const Fq& a) { return field_inv(a); }

// (c0 + c1 u)^-1 = (c0 - c1 u) / (c0^2 + c1^2), as u^2 = -1; the norm is in Fq.
__device__ __forceinline__ Fq2 inv(const Fq2& a) {
    const Fq t = field_inv(a.c0.sqr() + a.c1.sqr());
    return {a.c0 * t, (a.c1 * t).neg()};
}

template <class F>
__device__ __forceinline__ void synth_points(const Affine<F>* t1, const Affine<F>* t2, uint32_t k1, uint32_t n,
                                             Affine<F>* out, uint32_t* bad) {
    const uint64_t T = (uint64_t)gridDim.x * blockDim.x;
    const uint64_t gid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t mask = (1ull << k1) - 1;
    F pre[SYNTH_BATCH];  // pre[j] = d_0 * ... * d_j (local memory)
    F acc = F::one();
    int m = 0;
#pragma unroll 1
    for (int j = 0; j < SYNTH_BATCH; j++) {
        const uint64_t i = gid + (uint64_t)j * T;
        if (i >= n) break;
        F d = t2[i >> k1].x - t1[i & mask].x;
        if (d.is_zero()) d = F::one();  // degenerate: kept out of the product (see pass 2)
        acc = acc * d;
        pre[j] = acc;
        m = j + 1;
    }
    if (m == 0) return;
    F r = inv(acc);  // r = (d_0 * ... * d_{m-1})^-1
#pragma unroll 1
    for (int j = m - 1; j >= 0; j--) {
        const uint64_t i = gid + (uint64_t)j * T;
        const Affine<F> p = t1[i & mask], q = t2[i >> k1];
        const F d = q.x - p.x;
        if (d.is_zero()) {
            // d was taken as 1 in pass 1: r already excludes it.
            atomicAdd(bad, 1u);
            out[i] = Affine<F>{F::zero(), F::zero()};
            continue;
        }
        const F dinv = j > 0 ? r * pre[j - 1] : r;  // (d_0..d_j)^-1 * (d_0..d_{j-1}) = 1/d_j
        r = r * d;                                  // now (d_0 .. d_{j-1})^-1
        const F lam = (q.y - p.y) * dinv;
        const F x3 = lam.sqr() - p.x - q.x;
        const F y3 = lam * (p.x - x3) - p.y;
        out[i] = Affine<F>{x3, y3};
    }
}

extern "C" __global__ void g1_synth_points(const G1A* t1, const G1A* t2, uint32_t k1, uint32_t n, G1A* out,
                                           uint32_t* bad) {
    synth_points<Fq>(t1, t2, k1, n, out, bad);
}

extern "C" __global__ void g2_synth_points(const G2A* t1, const G2A* t2, uint32_t k1, uint32_t n, G2A* out,
                                           uint32_t* bad) {
    synth_points<Fq2>(t1, t2, k1, n, out, bad);
}

__device__ __forceinline__ unsigned long long synth_mix64(unsigned long long x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// out[i] (Montgomery form) for i < n: with v the top 32 bits of a per-index hash, zero when
// v < zero_below, one when zero_below <= v < one_below, else a full-size value (255
// random bits reduced once mod r). Thresholds are fractions of 2^32 (at most 2^32).
extern "C" __global__ void synth_scalars(Fr* out, uint32_t n, unsigned long long seed,
                                         unsigned long long zero_below, unsigned long long one_below) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long h = synth_mix64(synth_mix64(seed) + (unsigned long long)i * 0xd1b54a32d192ed03ull);
    const unsigned long long v = h >> 32;
    if (v < zero_below) {
        out[i] = Fr::zero();
        return;
    }
    if (v < one_below) {
        out[i] = Fr::one();
        return;
    }
    Fr x;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        h = synth_mix64(h + k);
        x.v[2 * k] = (uint32_t)h;
        x.v[2 * k + 1] = (uint32_t)(h >> 32);
    }
    x.v[7] &= 0x7fffffffu;  // < 2^255 < 2r
    out[i] = Fr::reduce_once(x).to_mont();
}

// result[0] += number of i < n where a and b differ in any of their `words` u32 words;
// result[1] = min(result[1], first such i). The host sets result to {0, ~0} first.
extern "C" __global__ void synth_compare(const uint32_t* a, const uint32_t* b, unsigned long long n, uint32_t words,
                                         unsigned long long* result) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        uint32_t acc = 0;
        for (uint32_t k = 0; k < words; k++) acc |= a[i * words + k] ^ b[i * words + k];
        if (acc) {
            atomicAdd(&result[0], 1ull);
            atomicMin(&result[1], i);
        }
    }
}
