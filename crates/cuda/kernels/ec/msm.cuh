// Pippenger MSM, generic over the curve (G1: Affine<Fq>, G2: Affine<Fq2>).
//
// Per MSM (the host launches these in order on one stream and syncs once at the end):
// 1. msm_digits<false>: each scalar -> signed c-bit digits; count points per bucket
//    (key = window * B + |digit| - 1, B = 2^(c-1) buckets per window);
// 2. exclusive scan of the counts (scalars.cu) -> bucket offsets;
// 3. msm_digits<true>: scatter "point index | sign << 31" into its bucket's slot
//    (a counting sort; the order inside a bucket does not matter);
// 4. msm_bucket_sum: one thread per bucket sums its points (XYZZ += affine);
// 5. msm_bucket_reduce: per window, S blocks of T threads each take a run of buckets and
//    form sum (b+1) * bucket_b by running sums, then a shared-memory tree; xyzz_reduce
//    adds the S partials of each window;
// 6. msm_combine: Horner over the windows (c doublings each), plus the sum of the points
//    whose scalar is 1 when the split MSM skipped them (msm_ones_sum + xyzz_reduce).
#pragma once
#include "xyzz.cuh"

__device__ __forceinline__ uint32_t scalar_bits(const Fr& k, uint32_t pos, uint32_t c) {
    uint32_t w = pos >> 5, b = pos & 31;
    if (w >= 8) return 0;
    uint64_t lo = k.v[w];
    if (w + 1 < 8) lo |= (uint64_t)k.v[w + 1] << 32;
    return (uint32_t)(lo >> b) & ((1u << c) - 1);
}

template <bool SCATTER>
__device__ __forceinline__ void msm_digits(const Fr* scalars, uint32_t n, uint32_t c, uint32_t windows,
                                           uint32_t skip_ones, uint32_t* counts, uint32_t* sorted) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Fr s = scalars[i];
    if (s.is_zero() || (skip_ones && s == Fr::one())) return;
    Fr k = s.from_mont();
    const uint32_t B = 1u << (c - 1);
    uint32_t carry = 0;
    for (uint32_t w = 0; w < windows; w++) {
        uint32_t d = scalar_bits(k, w * c, c) + carry;
        uint32_t a, neg;
        if (d > B) {
            a = (1u << c) - d;
            neg = 1;
            carry = 1;
        } else {
            a = d;
            neg = 0;
            carry = 0;
        }
        if (a == 0) continue;
        uint32_t key = w * B + a - 1;
        if (!SCATTER) {
            atomicAdd(&counts[key], 1u);
        } else {
            uint32_t pos = atomicAdd(&counts[key], 1u);  // counts = running cursors here
            sorted[pos] = i | (neg << 31);
        }
    }
}

template <class F>
__device__ __forceinline__ void msm_bucket_sum(const Affine<F>* bases, const uint32_t* sorted,
                                               const uint32_t* offsets, uint32_t nbuckets, Xyzz<F>* buckets) {
    uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= nbuckets) return;
    Xyzz<F> acc = Xyzz<F>::inf();
    uint32_t end = offsets[k + 1];
    for (uint32_t p = offsets[k]; p < end; p++) {
        uint32_t v = sorted[p];
        Affine<F> pt = bases[v & 0x7fffffffu];
        if (v >> 31) pt = pt.neg();
        acc = acc.add_affine(pt);
    }
    buckets[k] = acc;
}

// Tree-sums sm[0..T) into sm[0]; T a power of two.
template <class F>
__device__ __forceinline__ void block_tree_sum(Xyzz<F>* sm, uint32_t T) {
    for (uint32_t s = T / 2; s > 0; s >>= 1) {
        __syncthreads();
        if (threadIdx.x < s) sm[threadIdx.x] = sm[threadIdx.x].add(sm[threadIdx.x + s]);
    }
    __syncthreads();
}

// grid = windows * S blocks (S segments per window), blockDim.x = T (power of two,
// T * S <= B). Block (w, s) writes sum over its buckets b of (b+1) * bucket_b to
// partial[w * S + s]; xyzz_reduce then sums the S partials of each window.
template <class F>
__device__ __forceinline__ void msm_bucket_reduce(const Xyzz<F>* buckets, uint32_t c, uint32_t S, Xyzz<F>* partial) {
    extern __shared__ unsigned char smraw[];
    Xyzz<F>* sm = reinterpret_cast<Xyzz<F>*>(smraw);
    const uint32_t B = 1u << (c - 1), T = blockDim.x, L = B / (T * S);
    const uint32_t w = blockIdx.x / S, seg = blockIdx.x % S;
    const uint32_t lo = (seg * T + threadIdx.x) * L;
    const Xyzz<F>* bk = buckets + (size_t)w * B;
    Xyzz<F> running = Xyzz<F>::inf(), acc = Xyzz<F>::inf();
    for (uint32_t b = lo + L; b-- > lo;) {
        running = running.add(bk[b]);
        acc = acc.add(running);
    }
    // acc holds sum (b - lo + 1) * bucket_b; the weight is b + 1.
    sm[threadIdx.x] = acc.add(running.mul_small(lo));
    block_tree_sum(sm, T);
    if (threadIdx.x == 0) partial[blockIdx.x] = sm[0];
}

// One thread: out = sum_w 2^(c w) window_sums[w] (+ extra[0] when extra != null).
template <class F>
__device__ __forceinline__ void msm_combine(const Xyzz<F>* window_sums, uint32_t windows, uint32_t c,
                                            const Xyzz<F>* extra, Xyzz<F>* out) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    Xyzz<F> r = Xyzz<F>::inf();
    for (uint32_t w = windows; w-- > 0;) {
        for (uint32_t j = 0; j < c; j++) r = r.dbl();
        r = r.add(window_sums[w]);
    }
    if (extra) r = r.add(extra[0]);
    out[0] = r;
}

// Per block: sum of the bases whose scalar is exactly 1 (grid-stride), into partial[block].
template <class F>
__device__ __forceinline__ void msm_ones_sum(const Affine<F>* bases, const Fr* scalars, uint32_t n,
                                             Xyzz<F>* partial) {
    extern __shared__ unsigned char smraw[];
    Xyzz<F>* sm = reinterpret_cast<Xyzz<F>*>(smraw);
    Xyzz<F> acc = Xyzz<F>::inf();
    const Fr one = Fr::one();
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        if (scalars[i] == one) acc = acc.add_affine(bases[i]);
    }
    sm[threadIdx.x] = acc;
    block_tree_sum(sm, blockDim.x);
    if (threadIdx.x == 0) partial[blockIdx.x] = sm[0];
}

// Block j: out[j] = sum of in[j*n .. (j+1)*n).
template <class F>
__device__ __forceinline__ void xyzz_reduce(const Xyzz<F>* in, uint32_t n, Xyzz<F>* out) {
    extern __shared__ unsigned char smraw[];
    Xyzz<F>* sm = reinterpret_cast<Xyzz<F>*>(smraw);
    Xyzz<F> acc = Xyzz<F>::inf();
    in += (size_t)blockIdx.x * n;
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) acc = acc.add(in[i]);
    sm[threadIdx.x] = acc;
    block_tree_sum(sm, blockDim.x);
    if (threadIdx.x == 0) out[blockIdx.x] = sm[0];
}

// extern "C" entry points for one curve; G is the kernel name prefix (g1, g2).
#define MSM_KERNELS(G, F)                                                                              \
    extern "C" __global__ void G##_msm_count(const Fr* s, uint32_t n, uint32_t c, uint32_t w, uint32_t so, \
                                             uint32_t* counts) {                                       \
        msm_digits<false>(s, n, c, w, so, counts, nullptr);                                            \
    }                                                                                                  \
    extern "C" __global__ void G##_msm_scatter(const Fr* s, uint32_t n, uint32_t c, uint32_t w,          \
                                               uint32_t so, uint32_t* cursors, uint32_t* sorted) {     \
        msm_digits<true>(s, n, c, w, so, cursors, sorted);                                             \
    }                                                                                                  \
    extern "C" __global__ void G##_msm_bucket_sum(const Affine<F>* b, const uint32_t* sorted,           \
                                                  const uint32_t* off, uint32_t nb, Xyzz<F>* out) {    \
        msm_bucket_sum<F>(b, sorted, off, nb, out);                                                    \
    }                                                                                                  \
    extern "C" __global__ void G##_msm_bucket_reduce(const Xyzz<F>* bk, uint32_t c, uint32_t S,         \
                                                     Xyzz<F>* part) {                                  \
        msm_bucket_reduce<F>(bk, c, S, part);                                                          \
    }                                                                                                  \
    extern "C" __global__ void G##_msm_combine(const Xyzz<F>* ws, uint32_t w, uint32_t c,               \
                                               const Xyzz<F>* extra, Xyzz<F>* out) {                   \
        msm_combine<F>(ws, w, c, extra, out);                                                          \
    }                                                                                                  \
    extern "C" __global__ void G##_msm_ones_sum(const Affine<F>* b, const Fr* s, uint32_t n,            \
                                                Xyzz<F>* partial) {                                    \
        msm_ones_sum<F>(b, s, n, partial);                                                             \
    }                                                                                                  \
    extern "C" __global__ void G##_xyzz_reduce(const Xyzz<F>* in, uint32_t n, Xyzz<F>* out) {            \
        xyzz_reduce<F>(in, n, out);                                                                    \
    }
