// Steps 4-6 of a window group after the batch-affine levels (msm/affine_sums.cuh), in
// place of the chunk sums, fix-up and bucket reduction of msm/msm.cuh.
//
// After the levels a bucket holds a few points (about 2^-levels of its entries: two or
// three for random scalars at 2^27 points and 5 levels). Summing them into XYZZ buckets
// and then reducing the buckets costs a mixed addition per point plus two full additions
// per bucket (running += bucket, acc += running); adding them straight into the running
// sum saves one full addition per bucket, the buckets' stores and loads and the fix-up.
//
// A bucket of more than `light` points (many equal scalars, skewed digits) would make its
// thread's run of buckets long, so those buckets are summed first, balanced as in
// msm_chunk_sum: msm_leftover_heavy_counts keeps the heavy buckets' sizes (0 for the
// light ones), their exclusive scan `hoff` numbers the heavy points alone, and the chunks
// of L of those (none for random scalars) are summed by msm_leftover_chunk_sum and joined
// by msm_chunk_fixup / msm_heavy_fixup over `hoff`. The reduction then takes a heavy
// bucket's sum and a light bucket's points.
#pragma once
#include "msm/msm.cuh"

// Launch bounds of msm_leftover_reduce (blocks of 128 threads): 2 blocks per SM. 2^27 G1
// MSM on the H200: 79.5 ms with 2 (no spills), 87.7 with 3 (1.9 KB spilled), 88.8 with 4
// (docs/decisions/003-batch-affine-msm-levels.md).
#define LEFTOVER_REDUCE_BOUNDS __launch_bounds__(128, 2)

// counts[b] = the size of bucket b when it holds more than `light` points, else 0;
// counts[nb] = 0 (their exclusive scan then ends with the number of heavy points).
__device__ __forceinline__ void msm_leftover_heavy_counts(const uint32_t* off, uint32_t nb, uint32_t light,
                                                          uint32_t* counts) {
    const uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b > nb) return;
    const uint32_t m = b < nb ? off[b + 1] - off[b] : 0;
    counts[b] = m > light ? m : 0;
}

// Step 4 for the heavy buckets (see above): `pts` the leftover points in bucket order,
// off[b]..off[b + 1] those of bucket b; heavy point p of bucket b (hoff[b] <= p <
// hoff[b + 1]) is pts[off[b] + p - hoff[b]]. Chunks of L heavy points, written as in
// msm_chunk_sum.
template <class F>
__device__ __forceinline__ void msm_leftover_chunk_sum(const Affine<F>* pts, const uint32_t* off,
                                                       const uint32_t* hoff, uint32_t nb, uint32_t L,
                                                       uint32_t chunks, Xyzz<F>* buckets, Xyzz<F>* head,
                                                       Xyzz<F>* tail) {
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= chunks) return;
    const uint32_t total = hoff[nb];
    if ((uint64_t)j * L >= total) return;
    const uint32_t p0 = j * L, p1 = min(p0 + L, total);
    uint32_t b = msm_bucket_of(hoff, 0, nb, p0), p = p0;
    for (;;) {
        const uint32_t start = hoff[b], end = hoff[b + 1], e = min(end, p1);
        const Affine<F>* src = pts + off[b] - start;  // heavy point q is src[q]
        Xyzz<F> acc = Xyzz<F>::inf();
        Affine<F> next = vload(src + p);
        for (uint32_t q = p; q < e; q++) {
            const Affine<F> cur = next;
            if (q + 1 < e) next = vload(src + q + 1);
            acc = acc.add_affine(cur);
        }
        if (start >= p0 && end <= p1) vstore(buckets + b, acc);
        else if (start < p0) vstore(head + j, acc);
        else vstore(tail + j, acc);
        p = e;
        if (p == p1) break;
        b = msm_bucket_of(hoff, b + 1, nb, p);  // the next heavy bucket (hoff[b + 1] = p)
    }
}

// Step 6 from the leftover points: grid = windows * S blocks of T threads (T a power of
// two). Thread t of the S T threads of window w takes buckets [t B / (S T), (t + 1) B /
// (S T)) and forms sum (b + 1) * bucket_b by running sums from the top: a light bucket's
// points are added to the running sum one by one (the next point loaded while the
// current one is added), a heavy bucket's sum (`heavy`, written by the steps above) at
// once. Block (w, s) writes its threads' total to partial[w * S + s]; xyzz_reduce adds
// the S partials of each window.
template <class F>
__device__ __forceinline__ void msm_leftover_reduce(const Affine<F>* pts, const uint32_t* off,
                                                    const Xyzz<F>* heavy, uint32_t light, uint32_t c,
                                                    uint32_t S, Xyzz<F>* partial) {
    extern __shared__ unsigned char smraw[];
    Xyzz<F>* sm = reinterpret_cast<Xyzz<F>*>(smraw);
    const uint32_t B = 1u << (c - 1), T = blockDim.x;
    const uint32_t w = blockIdx.x / S, seg = blockIdx.x % S;
    const uint64_t all = (uint64_t)S * T, t = (uint64_t)seg * T + threadIdx.x;
    const uint32_t lo = (uint32_t)(t * B / all), hi = (uint32_t)((t + 1) * B / all);
    const uint32_t* o = off + (size_t)w * B;
    const Xyzz<F>* hv = heavy + (size_t)w * B;
    Xyzz<F> running = Xyzz<F>::inf(), acc = Xyzz<F>::inf();
    // Points q - 1 down to first are still to add; `next` holds point q - 1.
    const uint32_t first = o[lo];
    uint32_t q = o[hi];
    Affine<F> next = {F::zero(), F::zero()};
    if (q > first) next = vload(pts + q - 1);
    for (uint32_t b = hi; b-- > lo;) {
        const uint32_t start = o[b];
        if (q - start > light) {
            running = running.add(vload(hv + b));
            q = start;
            if (q > first) next = vload(pts + q - 1);
        } else {
            while (q > start) {
                const Affine<F> cur = next;
                q--;
                if (q > first) next = vload(pts + q - 1);
                running = running.add_affine(cur);
            }
        }
        acc = acc.add(running);
    }
    // acc holds sum (b - lo + 1) * bucket_b; the weight is b + 1.
    sm[threadIdx.x] = acc.add(running.mul_small(lo));
    block_tree_sum(sm, T);
    if (threadIdx.x == 0) partial[blockIdx.x] = sm[0];
}
