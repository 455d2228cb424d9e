// Pippenger MSM, generic over the curve (G1: Affine<Fq>, G2: Affine<Fq2>).
//
// The host (src/msm/) runs the windows in groups of G (all at once for small MSMs, one
// at a time for 2^24 points and more, so every group's counters stay in L2). Per group,
// in order on one stream:
// 0. msm_canonical (msm_scalars.cu), once per MSM: the scalars out of Montgomery form into a
//    scratch copy in entry order (the digit passes below run twice per window group; a
//    conversion in each cost 13 x 2 Fr products per scalar, ~100 ms at 2^27);
// 1. msm_count: each scalar -> signed c-bit digits (all windows up to the group's last,
//    for the carries); count the group's non-zero digits per bucket
//    (key = (window - w0) * B + |digit| - 1, B = 2^(c-1) buckets per window); for the
//    first group only: every later group is counted by the scatter of the one before;
// 2. exclusive scan of the counts (scalars.cu) -> bucket offsets;
// 3. msm_scatter: write "base index | sign << 31" into its bucket's slot (counting sort;
//    the order inside a bucket does not matter), and count the next group's digits. The
//    large MSMs, one window per group, scatter through bins instead (msm/bin_scatter.cuh):
//    their global atomics, not memory, bounded this step;
// 4. msm_chunk_sum: the sorted entries are cut into chunks of L; one thread per chunk
//    sums its points (XYZZ += affine) bucket by bucket. A bucket that lies inside the
//    chunk is written out; the chunk's first bucket, when it began in an earlier chunk,
//    goes to head[chunk], its last, when it goes on into the next, to tail[chunk]. Every
//    thread does the same work however the digits fall (one heavy bucket, a sparse top
//    window, many equal scalars);
// 5. msm_chunk_fixup: one thread per bucket that spans chunks adds its pieces
//    (tail of the first chunk, head of every later one); a bucket over many chunks goes
//    to msm_heavy_fixup, a block per bucket;
// 6. msm_bucket_reduce: per window, S blocks of T threads each take a run of buckets and
//    form sum (b+1) * bucket_b by running sums, then a shared-memory tree; xyzz_reduce
//    adds the S partials of each window.
// G1 groups from AffineSums' threshold (2^23 entries by default, src/msm/affine.rs) run
// batch-affine levels after step 3 (msm/affine_sums.cuh); steps 4-6 then take what those
// levels leave: group by group in msm/leftover.cuh when a group's buckets fill the GPU
// (the H MSM), else as above with the leftover points as the sorted entries.
// The window sums go to the host, which combines them by Horner's rule (src/msm/,
// DeviceMsm) and adds the sum of the points whose scalar is 1 when the split MSM took
// them out.
//
// A split MSM first classifies the scalars (classify_scalars in msm_scalars.cu): the indices
// of the ones are summed by msm_list_sum (G1 from the same threshold: after batch-affine
// levels over them as one bucket), the others go through Pippenger as an index list (`idx`, its
// length in device memory at `n_dev`).
#pragma once
#include "ec/xyzz.cuh"
#include "msm/digits.cuh"

// Number of entries: n, or the device count when the entries are an index list.
__device__ __forceinline__ uint32_t msm_len(uint32_t n, const uint32_t* n_dev) {
    return n_dev ? min(n, *n_dev) : n;
}

// `canon[i]`: entry i's scalar as an integer (msm_canonical); its base is idx[i], or i.
// The scatter also counts the next group's digits (windows [w1, w2)) into `next` when it
// is not null, so that no separate count pass reads the scalars again.
template <bool SCATTER>
__device__ __forceinline__ void msm_digits(const Fr* canon, const uint32_t* idx, uint32_t n,
                                           const uint32_t* n_dev, uint32_t c, uint32_t w0, uint32_t w1,
                                           uint32_t* counts, uint32_t* sorted, uint32_t* next, uint32_t w2) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= msm_len(n, n_dev)) return;
    const Fr k = canon[i];
    if (k.is_zero()) return;
    const uint32_t B = 1u << (c - 1);
    uint32_t carry = 0;
    const uint32_t wend = next ? max(w1, w2) : w1;
    for (uint32_t w = 0; w < wend; w++) {
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
        if (w < w0 || a == 0) continue;
        if (w >= w1) {  // the next group's count
            atomicAdd(&next[(w - w1) * B + a - 1], 1u);
            continue;
        }
        uint32_t key = (w - w0) * B + a - 1;
        if (!SCATTER) {
            atomicAdd(&counts[key], 1u);
        } else {
            uint32_t pos = atomicAdd(&counts[key], 1u);  // counts = running cursors here
            sorted[pos] = (idx ? idx[i] : i) | (neg << 31);
        }
    }
}

template <class F>
__device__ __forceinline__ Affine<F> msm_point(const Affine<F>* bases, uint32_t v) {
    Affine<F> pt = vload(bases + (v & 0x7fffffffu));
    return (v >> 31) ? pt.neg() : pt;
}

// Entry p of the bucket-sorted list: sorted[p] as above, or point p itself when `sorted`
// is null (the points left by the batch-affine levels, msm/affine_sums.cuh).
template <class F>
__device__ __forceinline__ Affine<F> msm_entry(const Affine<F>* bases, const uint32_t* sorted, uint32_t p) {
    return sorted ? msm_point(bases, sorted[p]) : vload(bases + p);
}

// The last bucket b in [lo, hi) with off[b] <= o (off[lo] <= o): binary search over
// bucket offsets (the chunk sums, the batch-affine levels).
template <class I>
__device__ __forceinline__ uint32_t msm_bucket_of(const uint32_t* off, uint32_t lo, uint32_t hi, I o) {
    while (hi - lo > 1) {
        const uint32_t mid = (lo + hi) >> 1;
        if (off[mid] <= o) lo = mid;
        else hi = mid;
    }
    return lo;
}

// Step 4 (see the top). nb buckets, offsets[nb] = number of sorted entries.
template <class F>
__device__ __forceinline__ void msm_chunk_sum(const Affine<F>* bases, const uint32_t* sorted,
                                              const uint32_t* offsets, uint32_t nb, uint32_t L, uint32_t chunks,
                                              Xyzz<F>* buckets, Xyzz<F>* head, Xyzz<F>* tail) {
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= chunks) return;
    const uint32_t total = offsets[nb];
    if ((uint64_t)j * L >= total) return;
    const uint32_t p0 = j * L, p1 = min(p0 + L, total);
    // The bucket holding entry p0 (offsets[0] = 0).
    uint32_t b = msm_bucket_of(offsets, 0, nb, p0), start = offsets[b], end = offsets[b + 1];
    Xyzz<F> acc = Xyzz<F>::inf();
    // The next point is loaded while the current one is added (hides the two dependent
    // global loads behind the addition's arithmetic; without it the 2^27 bucket sums took
    // 1,821 instead of 1,330 ms on the H200).
    Affine<F> next = msm_entry(bases, sorted, p0);
    for (uint32_t p = p0;; p++) {
        if (p == p1 || p >= end) {
            // acc holds this chunk's entries of bucket b (at least one).
            if (start >= p0 && end <= p1) vstore(buckets + b, acc);
            else if (start < p0) vstore(head + j, acc);
            else vstore(tail + j, acc);
            if (p == p1) break;
            do {
                b++;
                start = end;
                end = offsets[b + 1];
            } while (end <= p);
            acc = Xyzz<F>::inf();
        }
        const Affine<F> cur = next;
        if (p + 1 < p1) next = msm_entry(bases, sorted, p + 1);
        acc = acc.add_affine(cur);
    }
}

// Step 5: buckets spanning chunks j1 < j2 are tail[j1] + head[j1+1] + ... + head[j2].
// A bucket over more than FIXUP_SERIAL chunks (many equal scalars) is listed in heavy[]
// instead and summed by a whole block (msm_heavy_fixup).
#define FIXUP_SERIAL 16
template <class F>
__device__ __forceinline__ void msm_chunk_fixup(const uint32_t* offsets, uint32_t nb, uint32_t L,
                                                const Xyzz<F>* head, const Xyzz<F>* tail, Xyzz<F>* buckets,
                                                uint32_t* heavy, uint32_t* heavy_count) {
    const uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nb) return;
    const uint32_t start = offsets[b], end = offsets[b + 1];
    if (start == end) return;
    const uint32_t j1 = start / L, j2 = (end - 1) / L;
    if (j1 == j2) return;
    if (j2 - j1 > FIXUP_SERIAL) {
        heavy[atomicAdd(heavy_count, 1u)] = b;
        return;
    }
    Xyzz<F> acc = tail[j1];
    for (uint32_t j = j1 + 1; j <= j2; j++) acc = acc.add(head[j]);
    buckets[b] = acc;
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

// The heavy buckets of step 5: block-stride over the list, the block's threads split the
// bucket's chunk pieces and a shared-memory tree adds their sums.
template <class F>
__device__ __forceinline__ void msm_heavy_fixup(const uint32_t* offsets, uint32_t L, const Xyzz<F>* head,
                                                const Xyzz<F>* tail, Xyzz<F>* buckets, const uint32_t* heavy,
                                                const uint32_t* heavy_count) {
    extern __shared__ unsigned char smraw[];
    Xyzz<F>* sm = reinterpret_cast<Xyzz<F>*>(smraw);
    const uint32_t count = *heavy_count;
    for (uint32_t h = blockIdx.x; h < count; h += gridDim.x) {
        const uint32_t b = heavy[h];
        const uint32_t j1 = offsets[b] / L, j2 = (offsets[b + 1] - 1) / L;
        Xyzz<F> acc = Xyzz<F>::inf();
        for (uint32_t j = j1 + threadIdx.x; j <= j2; j += blockDim.x) acc = acc.add(j == j1 ? tail[j] : head[j]);
        sm[threadIdx.x] = acc;
        block_tree_sum(sm, blockDim.x);
        if (threadIdx.x == 0) buckets[b] = sm[0];
        __syncthreads();
    }
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

// Thread j: partial[j] = sum of bases[idx[p]] (bases[p] when idx is null) for p in
// [j L, (j+1) L) below the list's length (identity past it). `chunks` threads in all.
// Loading the next point ahead, as msm_chunk_sum does, made the G2 ones' sum slower (31.8
// against 30.7 ms at 2^25 on the H200: the G2 kernel then spills) and the G1 one no faster.
template <class F>
__device__ __forceinline__ void msm_list_sum(const Affine<F>* bases, const uint32_t* idx, uint32_t n,
                                             const uint32_t* n_dev, uint32_t L, uint32_t chunks,
                                             Xyzz<F>* partial) {
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= chunks) return;
    const uint32_t len = msm_len(n, n_dev);
    Xyzz<F> acc = Xyzz<F>::inf();
    const uint64_t p0 = (uint64_t)j * L, p1 = min(p0 + L, (uint64_t)len);
    for (uint64_t p = p0; p < p1; p++) acc = acc.add_affine(vload(bases + (idx ? idx[p] : p)));
    partial[j] = acc;
}

// Block j: out[j] = sum of in[j*m .. min((j+1)*m, n)).
template <class F>
__device__ __forceinline__ void xyzz_reduce(const Xyzz<F>* in, uint32_t m, uint32_t n, Xyzz<F>* out) {
    extern __shared__ unsigned char smraw[];
    Xyzz<F>* sm = reinterpret_cast<Xyzz<F>*>(smraw);
    Xyzz<F> acc = Xyzz<F>::inf();
    const size_t lo = (size_t)blockIdx.x * m, hi = min(lo + m, (size_t)n);
    for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) acc = acc.add(in[i]);
    sm[threadIdx.x] = acc;
    block_tree_sum(sm, blockDim.x);
    if (threadIdx.x == 0) out[blockIdx.x] = sm[0];
}

// Launch bounds of the G1 bucket-sum kernels (blocks of 128 threads): 3 blocks per SM.
// With the Fq product out of line (ff/field.cuh) 3 are best by a little on the H200 (2^27
// bucket sums 1,142 ms against 1,146 with 4 and 1,154 with 2); with the products inlined,
// bounding them at all had been worth 11 % (docs/decisions/004-msm-bucket-sums-and-windows.md).
#define MSM_SUM_BOUNDS __launch_bounds__(128, 3)

// Launch bounds of the G1 bucket reduction (blocks of REDUCE_THREADS = 128): its running
// sums are serial chains too. 3 blocks per SM (168 registers, 1.5 KB spilled) against 2
// unbounded (255): 2^27 reduction 58.4 -> 50.8 ms on the H200 (15.6 ms once the Fq
// product went out of line).
#define MSM_REDUCE_BOUNDS_G1 __launch_bounds__(128, 3)

// extern "C" entry points for one curve; G is the kernel name prefix (g1, g2), SUM_BOUNDS
// the launch bounds of its bucket-sum kernels (MSM_SUM_BOUNDS for G1; none for G2: bounded
// to 3 or 4 blocks per SM its split MSM was slower), REDUCE_BOUNDS those of its
// bucket reduction.
#define MSM_KERNELS(G, F, SUM_BOUNDS, REDUCE_BOUNDS)                                                                            \
    extern "C" __global__ void G##_msm_count(const Fr* s, const uint32_t* idx, uint32_t n,               \
                                             const uint32_t* n_dev, uint32_t c, uint32_t w0, uint32_t w1, \
                                             uint32_t* counts) {                                        \
        msm_digits<false>(s, idx, n, n_dev, c, w0, w1, counts, nullptr, nullptr, 0);                    \
    }                                                                                                   \
    extern "C" __global__ void G##_msm_scatter(const Fr* s, const uint32_t* idx, uint32_t n,             \
                                               const uint32_t* n_dev, uint32_t c, uint32_t w0, uint32_t w1, \
                                               uint32_t* cursors, uint32_t* sorted, uint32_t* next,     \
                                               uint32_t w2) {                                           \
        msm_digits<true>(s, idx, n, n_dev, c, w0, w1, cursors, sorted, next, w2);                       \
    }                                                                                                   \
    extern "C" __global__ void SUM_BOUNDS G##_msm_chunk_sum(const Affine<F>* b, const uint32_t* sorted,             \
                                                 const uint32_t* off, uint32_t nb, uint32_t L,           \
                                                 uint32_t chunks, Xyzz<F>* buckets, Xyzz<F>* head,       \
                                                 Xyzz<F>* tail) {                                       \
        msm_chunk_sum<F>(b, sorted, off, nb, L, chunks, buckets, head, tail);                           \
    }                                                                                                   \
    extern "C" __global__ void G##_msm_chunk_fixup(const uint32_t* off, uint32_t nb, uint32_t L,         \
                                                   const Xyzz<F>* head, const Xyzz<F>* tail,            \
                                                   Xyzz<F>* buckets, uint32_t* heavy, uint32_t* hc) {   \
        msm_chunk_fixup<F>(off, nb, L, head, tail, buckets, heavy, hc);                                 \
    }                                                                                                   \
    extern "C" __global__ void G##_msm_heavy_fixup(const uint32_t* off, uint32_t L, const Xyzz<F>* head, \
                                                   const Xyzz<F>* tail, Xyzz<F>* buckets,               \
                                                   const uint32_t* heavy, const uint32_t* hc) {         \
        msm_heavy_fixup<F>(off, L, head, tail, buckets, heavy, hc);                                     \
    }                                                                                                   \
    extern "C" __global__ void REDUCE_BOUNDS G##_msm_bucket_reduce(const Xyzz<F>* bk, uint32_t c, uint32_t S,          \
                                                     Xyzz<F>* part) {                                   \
        msm_bucket_reduce<F>(bk, c, S, part);                                                           \
    }                                                                                                   \
    extern "C" __global__ void SUM_BOUNDS G##_msm_list_sum(const Affine<F>* b, const uint32_t* idx, uint32_t n,     \
                                                const uint32_t* n_dev, uint32_t L, uint32_t chunks,     \
                                                Xyzz<F>* partial) {                                     \
        msm_list_sum<F>(b, idx, n, n_dev, L, chunks, partial);                                          \
    }                                                                                                   \
    extern "C" __global__ void G##_xyzz_reduce(const Xyzz<F>* in, uint32_t m, uint32_t n, Xyzz<F>* out) { \
        xyzz_reduce<F>(in, m, n, out);                                                                  \
    }
