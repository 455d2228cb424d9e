// Batch-affine bucket sums: the first levels of each bucket's sum, ahead of msm_chunk_sum
// (msm.cuh, step 4).
//
// A mixed XYZZ addition costs 10 field products. An affine addition costs 3 (the slope
// and the new x and y) once its denominator is inverted, and Montgomery's trick inverts
// many denominators for 3 products each plus one inversion. Each level here pairs the
// points of every bucket, (0, 1), (2, 3), ..., and writes the sums (an odd bucket's last
// point goes on alone): m points become ceil(m / 2), in bucket order, with new offsets
// (msm_affine_halve, then an exclusive scan). After the last level msm_chunk_sum adds
// what is left of each bucket in XYZZ coordinates, as it does the scattered entries
// without these levels.
//
// One level: block-uniform rounds over the level's outputs; in a round each thread takes
// AFF_SLOTS consecutive outputs (one binary search for the first one's bucket, then a
// walk). Phase 1 classifies each pair and multiplies the denominators of the true
// additions into a running product, leaving each prefix, the slot's input and its case
// in global scratch (laid out so that a warp's stores coalesce; it stays in L2). The block's AFF_THREADS products are inverted
// together: a product tree in shared memory, one inversion of the root (ff/inverse.cuh,
// variable time: the points are public), and the tree back down. Phase 3 walks the
// slots backwards peeling each denominator's inverse off the running inverse, and writes
// the sums.
#pragma once
#include "msm.cuh"
#include "../ff/inverse.cuh"

// Threads per block (one inversion per block and round; the host, src/msm_affine.rs,
// launches blocks of this size), output slots per thread and round, and the level
// kernel's launch bounds (blocks per SM). A/B builds set FILPROVE_AFF_SLOTS (up to 128:
// the host sizes the scratch for that) and FILPROVE_AFF_MIN_BLOCKS.
// FILPROVE_AFF_NO_INVERSE=1 skips the block's inversion: wrong sums, for timing only.
#define AFF_THREADS 128
#ifndef FILPROVE_AFF_SLOTS
#define FILPROVE_AFF_SLOTS 64
#endif
#if FILPROVE_AFF_SLOTS > 128
#error "FILPROVE_AFF_SLOTS above the host's scratch (128)"
#endif
#ifndef FILPROVE_AFF_MIN_BLOCKS
#define FILPROVE_AFF_MIN_BLOCKS 3
#endif
#ifndef FILPROVE_AFF_NO_INVERSE
#define FILPROVE_AFF_NO_INVERSE 0
#endif
#define AFF_SLOTS FILPROVE_AFF_SLOTS

// What an output slot holds: nothing (past the level's end), the pair's first point (an
// odd bucket's last point, or a pair whose second point is the identity), its second
// point (the first is the identity), their sum by the chord or the tangent rule, or the
// identity (a point and its negation).
enum : uint32_t { AFF_NONE = 0, AFF_FIRST = 1, AFF_SECOND = 2, AFF_ADD = 3, AFF_DBL = 4, AFF_INF = 5 };

// The level's input point p: on the first level the scattered entry p (a base index,
// the sign in bit 31), later the previous level's point p.
template <class F>
__device__ __forceinline__ Affine<F> aff_input(const Affine<F>* pts, const uint32_t* sorted, uint32_t p) {
    return sorted ? msm_point(pts, sorted[p]) : vload(pts + p);
}

// The x coordinate of input p (the sign of a scattered entry does not change it).
template <class F>
__device__ __forceinline__ F aff_x(const Affine<F>* pts, const uint32_t* sorted, uint32_t p) {
    return vload(&pts[sorted ? sorted[p] & 0x7fffffffu : p].x);
}

template <class F>
__device__ __forceinline__ uint32_t aff_case(const Affine<F>& p, const Affine<F>& q, bool pair) {
    if (!pair || q.is_inf()) return AFF_FIRST;
    if (p.is_inf()) return AFF_SECOND;
    if (p.x != q.x) return AFF_ADD;
    if (p.y == q.y && !p.y.is_zero()) return AFF_DBL;
    return AFF_INF;
}

// The slope's denominator (AFF_ADD or AFF_DBL): never zero.
template <class F>
__device__ __forceinline__ F aff_denominator(const Affine<F>& p, const Affine<F>& q, uint32_t cs) {
    return cs == AFF_ADD ? q.x - p.x : p.y.dbl();
}

// counts[b] = ceil(m_b / 2) for the m_b = off[b + 1] - off[b] points of bucket b; counts[nb]
// = 0 (the exclusive scan of counts then ends with the level's output count).
__device__ __forceinline__ void msm_affine_halve(const uint32_t* off, uint32_t nb, uint32_t* counts) {
    const uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b > nb) return;
    counts[b] = b < nb ? (off[b + 1] - off[b] + 1) / 2 : 0;
}

// One level (see the top). in_off / out_off: nb + 1 offsets of the input and output
// points per bucket. Scratch, AFF_SLOTS * gridDim.x * AFF_THREADS entries each: `pre`
// (prefix products), `src` (each slot's first input) and `kind` (its AFF_* case).
template <class F>
__device__ __forceinline__ void msm_affine_level(const Affine<F>* pts, const uint32_t* sorted, const uint32_t* in_off,
                                                 const uint32_t* out_off, uint32_t nb, Affine<F>* out, F* pre,
                                                 uint32_t* src, uint8_t* kind) {
    __shared__ F tree[2 * AFF_THREADS];
    const uint32_t tid = threadIdx.x;
    const uint64_t total = out_off[nb];
    const size_t stride = (size_t)gridDim.x * AFF_THREADS;
    const size_t g = (size_t)blockIdx.x * AFF_THREADS + tid;
    const uint64_t per_block = AFF_THREADS * AFF_SLOTS;
    for (uint64_t base = blockIdx.x * per_block; base < total; base += gridDim.x * per_block) {
        const uint64_t o0 = base + (uint64_t)tid * AFF_SLOTS;
        int first = -1;  // the first slot with a denominator
        F acc = F::one();
        if (o0 < total) {
            uint32_t b = msm_bucket_of(out_off, 0, nb, o0);
            uint32_t ob = out_off[b], oe = out_off[b + 1];
            // Slot i's first input and whether it has a second (false past the end).
            auto locate = [&](int i, uint32_t& p1, bool& pair) -> bool {
                const uint64_t o = o0 + i;
                if (o >= total) return false;
                if (o >= oe) {
                    b++;
                    ob = oe;
                    oe = out_off[b + 1];
                    if (o >= oe) {  // empty buckets between
                        b = msm_bucket_of(out_off, b, nb, o);
                        ob = out_off[b];
                        oe = out_off[b + 1];
                    }
                }
                p1 = in_off[b] + 2 * (uint32_t)(o - ob);
                pair = p1 + 1 < in_off[b + 1];
                return true;
            };
            // The next slot's x coordinates are loaded while this slot's product runs.
            uint32_t np1 = 0;
            bool npair = false, nvalid = locate(0, np1, npair);
            F nx1 = F::zero(), nx2 = F::zero();
            if (nvalid) {
                nx1 = aff_x(pts, sorted, np1);
                if (npair) nx2 = aff_x(pts, sorted, np1 + 1);
            }
#pragma unroll 1
            for (int i = 0; i < AFF_SLOTS; i++) {
                const uint32_t p1 = np1;
                const bool pair = npair, valid = nvalid;
                const F x1 = nx1, x2 = nx2;
                if (i + 1 < AFF_SLOTS) {
                    nvalid = locate(i + 1, np1, npair);
                    if (nvalid) {
                        nx1 = aff_x(pts, sorted, np1);
                        if (npair) nx2 = aff_x(pts, sorted, np1 + 1);
                    }
                }
                uint32_t cs = AFF_NONE;
                if (valid) {
                    F d;
                    if (pair && !x1.is_zero() && !x2.is_zero() && x1 != x2) {
                        // Neither is the identity (x = 0 there) and the x differ.
                        cs = AFF_ADD;
                        d = x2 - x1;
                    } else {
                        const Affine<F> p = aff_input(pts, sorted, p1);
                        const Affine<F> q = pair ? aff_input(pts, sorted, p1 + 1) : p;
                        cs = aff_case(p, q, pair);
                        if (cs == AFF_ADD || cs == AFF_DBL) d = aff_denominator(p, q, cs);
                    }
                    if (cs == AFF_ADD || cs == AFF_DBL) {
                        if (first < 0) {
                            first = i;
                            acc = d;
                        } else {
                            vstore(pre + i * stride + g, acc);
                            acc = acc * d;
                        }
                    }
                }
                src[i * stride + g] = p1;
                kind[i * stride + g] = (uint8_t)cs;
            }
        }
        // The block's products inverted together (leaves at AFF_THREADS + tid).
        tree[AFF_THREADS + tid] = acc;
        __syncthreads();
        for (uint32_t lvl = AFF_THREADS / 2; lvl >= 1; lvl >>= 1) {
            if (tid < lvl) tree[lvl + tid] = tree[2 * (lvl + tid)] * tree[2 * (lvl + tid) + 1];
            __syncthreads();
        }
#if !FILPROVE_AFF_NO_INVERSE  // timing diagnostic only: the sums are then wrong
        if (tid == 0) tree[1] = field_inverse(tree[1]);
#endif
        __syncthreads();
        for (uint32_t lvl = 1; lvl < AFF_THREADS; lvl <<= 1) {
            if (tid < lvl) {
                const uint32_t i = lvl + tid;
                const F inv = tree[i], l = tree[2 * i], r = tree[2 * i + 1];
                tree[2 * i] = inv * r;
                tree[2 * i + 1] = inv * l;
            }
            __syncthreads();
        }
        F run = tree[AFF_THREADS + tid];  // 1 / acc
        __syncthreads();                  // every leaf read before the next round writes
        if (o0 >= total) continue;
#pragma unroll 1
        for (int i = AFF_SLOTS - 1; i >= 0; i--) {
            const uint32_t cs = kind[i * stride + g];
            if (cs == AFF_NONE) continue;
            const uint32_t p1 = src[i * stride + g];
            const Affine<F> p = aff_input(pts, sorted, p1);
            const Affine<F> q = cs == AFF_FIRST ? p : aff_input(pts, sorted, p1 + 1);
            Affine<F> r = p;
            if (cs == AFF_SECOND) {
                r = q;
            } else if (cs == AFF_INF) {
                r = {F::zero(), F::zero()};
            } else if (cs != AFF_FIRST) {
                const F d = aff_denominator(p, q, cs);
                F inv = run;
                if (i != first) {
                    inv = run * vload(pre + i * stride + g);
                    run = run * d;
                }
                F num;
                if (cs == AFF_ADD) {
                    num = q.y - p.y;
                } else {
                    const F xx = p.x.sqr();
                    num = xx.dbl() + xx;
                }
                const F lam = num * inv;
                const F x3 = lam.sqr() - p.x - q.x;
                r = {x3, lam * (p.x - x3) - p.y};
            }
            vstore(out + o0 + i, r);
        }
    }
}
