// Batch-affine bucket sums: the first levels of each bucket's sum, ahead of msm_chunk_sum
// (msm.cuh, step 4).
//
// A mixed XYZZ addition costs 10 field products. An affine addition costs 3 (the slope
// and the new x and y) once its denominator is inverted, and Montgomery's trick inverts
// many denominators for 3 products each plus one inversion. The same kernel serves G1
// (F = Fq) and G2 (F = Fq2, whose inverse is one Fq inversion of the norm). Each level
// here pairs the points of every bucket, (0, 1), (2, 3), ..., and writes the sums (an odd
// bucket's last point goes on alone): m points become ceil(m / 2), in bucket order, with
// new offsets (msm_affine_halve, then an exclusive scan). After the last level what is
// left of each bucket is added in XYZZ coordinates: for G1's large groups straight into
// the bucket reduction's running sums (msm/leftover.cuh), otherwise by msm_chunk_sum.
//
// One level: block-uniform rounds over the level's outputs; in a round each thread takes
// `slots` consecutive outputs (one binary search for the first one's bucket, then a
// walk). Phase 1 classifies each pair and multiplies the denominators of the true
// additions into a running product, leaving each prefix, the slot's two input indices
// and its case in global scratch (laid out so that a warp's accesses coalesce). The
// block's T products are inverted together (aff_block_inverse: shuffles within
// each warp, one inversion of the block's product by ff/inverse.cuh, variable time: the
// points are public). Phase 3 walks the slots backwards peeling each denominator's
// inverse off the running inverse, and writes the sums.
#pragma once
#include "msm/msm.cuh"
#include "ff/inverse.cuh"

// Threads per block T (one inversion per block and round) of the level kernel, a template
// argument, and its launch bounds' blocks per SM (msm_g1.cu / msm_g2.cu): G1 at 384
// threads per SM in all (168 registers each), G2 at 3 blocks or more (255 registers; the
// 30 KB stage lets 7 reside). The host (src/msm/affine.rs) reads the block size back from
// the launch bounds and the stage from src/kernels.rs; it passes the most output slots per
// thread and round.
#define AFF_THREADS_G1 128
#define AFF_BLOCKS_G1 (384 / AFF_THREADS_G1)
#define AFF_THREADS_G2 32
#define AFF_BLOCKS_G2 3

// What an output slot holds: nothing (past the level's end), the pair's first point (an
// odd bucket's last point, or a pair whose second point is the identity), its second
// point (the first is the identity), their sum by the chord or the tangent rule, or the
// identity (a point and its negation).
enum : uint32_t { AFF_NONE = 0, AFF_FIRST = 1, AFF_SECOND = 2, AFF_ADD = 3, AFF_DBL = 4, AFF_INF = 5 };

// The x coordinate of input v (an index into the level's points; on the first level a
// scattered entry, whose sign in bit 31 does not change x).
template <class F>
__device__ __forceinline__ F aff_x(const Affine<F>* pts, uint32_t v) {
    return vload(&pts[v & 0x7fffffffu].x);
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

// 16-byte asynchronous copies global -> shared (cp.async, cached in L2 only), their
// groups and the wait for all but the newest `N` groups of this thread.
__device__ __forceinline__ void aff_cp16(uint4* smem, const void* gmem) {
    const uint32_t s = (uint32_t)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void aff_cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void aff_cp_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// A field element across a warp: from lane `lane - d` (UP) or `lane + d`, word by word.
template <bool UP, class F>
__device__ __forceinline__ F aff_shfl(const F& a, uint32_t d) {
    static_assert(sizeof(F) % 4 == 0, "whole words");
    union Words {
        F f;
        uint32_t w[sizeof(F) / 4];
    } in, out;
    in.f = a;
#pragma unroll
    for (int k = 0; k < (int)(sizeof(F) / 4); k++)
        out.w[k] = UP ? __shfl_up_sync(0xffffffffu, in.w[k], d) : __shfl_down_sync(0xffffffffu, in.w[k], d);
    return out.f;
}

// 1 / a (a != 0): Fq by ff/inverse.cuh; Fq2 as conj(a) / norm(a), norm(a) = c0^2 + c1^2 in
// Fq (u^2 = -1): one Fq inversion and four Fq products.
__device__ __forceinline__ Fq aff_inverse(const Fq& a) { return field_inverse(a); }
__device__ __forceinline__ Fq2 aff_inverse(const Fq2& a) {
    const Fq n = field_inverse(fq_mul_call(a.c0, a.c0) + fq_mul_call(a.c1, a.c1));
    return {fq_mul_call(a.c0, n), fq_mul_call(a.c1, n).neg()};
}

// 1 / a for every thread's a (none zero), one inversion per block of T threads: each
// warp's lanes multiply their values into prefix and suffix products by shuffles, the
// block's first thread inverts the product of the T / 32 warp products and hands each warp
// its share back, and lane l's inverse is the warp's inverse times the products of the
// other lanes. `roots` holds 2 * T / 32 shared elements.
template <class F, int T>
__device__ __forceinline__ F aff_block_inverse(const F& a, F* roots) {
    static_assert(T % 32 == 0 && T <= 1024, "whole warps per block");
    constexpr int W = T / 32;
    const uint32_t lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    F pre = a, suf = a;  // inclusive products of lanes <= l and >= l
#pragma unroll 1
    for (uint32_t d = 1; d < 32; d <<= 1) {
        const F up = aff_shfl<true>(pre, d), down = aff_shfl<false>(suf, d);
        if (lane >= d) pre = pre * up;
        if (lane + d < 32) suf = suf * down;
    }
    F others = aff_shfl<true>(pre, 1);  // lanes below l, then times lanes above l
    if (lane == 0) others = F::one();
    F above = aff_shfl<false>(suf, 1);
    if (lane != 31) others = others * above;
    if (lane == 31) roots[w] = pre;  // the warp's product
    __syncthreads();
    if (threadIdx.x == 0) {
        F run[W];  // run[k]: product of warps below k
        run[0] = F::one();
#pragma unroll
        for (int k = 1; k < W; k++) run[k] = run[k - 1] * roots[k - 1];
        F inv = aff_inverse(run[W - 1] * roots[W - 1]);
#pragma unroll
        for (int k = W - 1; k >= 0; k--) {
            const F r = roots[k];
            roots[W + k] = inv * run[k];
            inv = inv * r;
        }
    }
    __syncthreads();
    return roots[W + w] * others;
}

// One level (see the top), at most `max_slots` (at least 1) outputs per thread and
// round. in_off / out_off: nb + 1 offsets of the input and output points per bucket.
// Scratch, max_slots * gridDim.x * T entries each: `pre` (prefix products),
// `src_a` / `src_b` (each slot's two input indices, sign in bit 31 on the first level)
// and `kind` (its AFF_* case). Dynamic shared memory: aff_stage_bytes<F, T>() (the host's
// AFFINE_LEVELS in src/kernels.rs).
//
// Every global load is issued a slot or two before its use: phase 1 finds slot i + 2's
// inputs (bucket offsets of the next bucket read ahead, the scattered entries' indices)
// and loads slot i + 1's x coordinates while slot i's product runs; phase 3 reads slot
// i - 2's case and indices and copies slot i - 1's points and prefix into shared memory
// (cp.async, two buffers per thread) while slot i's sum runs.
// 16-byte pieces staged per slot (two points and a prefix: 15 for G1, 30 for G2) and the
// stage of a block of T threads (two buffers).
template <class F>
__host__ __device__ constexpr int aff_pieces() {
    return (2 * (int)sizeof(Affine<F>) + (int)sizeof(F)) / 16;
}
template <class F, int T>
__host__ __device__ constexpr int aff_stage_bytes() {
    return 2 * aff_pieces<F>() * T * 16;
}
template <class F, int T>
__device__ __forceinline__ void msm_affine_level(const Affine<F>* pts, const uint32_t* sorted, const uint32_t* in_off,
                                                 const uint32_t* out_off, uint32_t nb, Affine<F>* out, F* pre,
                                                 uint32_t* src_a, uint32_t* src_b, uint8_t* kind, uint32_t max_slots) {
    // Pieces per slot, per field element, per point.
    constexpr int P = aff_pieces<F>(), PF = (int)sizeof(F) / 16, PP = (int)sizeof(Affine<F>) / 16;
    static_assert(sizeof(F) % 16 == 0, "whole 16-byte pieces");
    __shared__ F roots[2 * T / 32];
    extern __shared__ uint4 stage[];  // [buffer][piece][thread]
    const uint32_t tid = threadIdx.x;
    const uint64_t total = out_off[nb];
    const size_t stride = (size_t)gridDim.x * T;
    const size_t g = (size_t)blockIdx.x * T + tid;
    // Rounds of at most max_slots outputs per thread, and as many slots as make them
    // equal (a last round a fraction full would take nearly a full round's time).
    const uint64_t rounds = (total + stride * max_slots - 1) / (stride * max_slots);
    const uint32_t slots = rounds ? (uint32_t)((total + stride * rounds - 1) / (stride * rounds)) : 1;
    const uint64_t per_block = (uint64_t)T * slots;
    // This thread's 16-byte piece k of buffer `buf`, and the field element in the PF
    // pieces from k0 on.
    auto piece = [&](int buf, int k) -> uint4* { return stage + ((buf * P + k) * T + tid); };
    auto staged_at = [&](int buf, int k0) -> F {
        Pieces16<F> u;
#pragma unroll
        for (int k = 0; k < PF; k++) u.v[k] = *piece(buf, k0 + k);
        return u.t;
    };
    for (uint64_t base = blockIdx.x * per_block; base < total; base += gridDim.x * per_block) {
        const uint64_t o0 = base + (uint64_t)tid * slots;
        int first = -1;  // the first slot with a denominator
        F acc = F::one();
        if (o0 < total) {
            // The bucket of the slot being located and the offsets around it; those of the
            // bucket after it are read ahead (the walk usually steps one bucket on).
            uint32_t b = msm_bucket_of(out_off, 0, nb, o0);
            uint32_t ob = out_off[b], oe = out_off[b + 1], ib = in_off[b], ie = in_off[b + 1];
            uint32_t oe2 = b + 2 <= nb ? out_off[b + 2] : oe, ie2 = b + 2 <= nb ? in_off[b + 2] : ie;
            // Slot i's inputs: whether it has any (false past the end), and two.
            struct Loc {
                bool valid, pair;
                uint32_t a, b;  // input indices (sorted entries: sign in bit 31)
            };
            auto locate = [&](int i) -> Loc {
                Loc l{false, false, 0, 0};
                const uint64_t o = o0 + i;
                if (i >= (int)slots || o >= total) return l;
                if (o >= oe) {
                    b++;
                    ob = oe;
                    oe = oe2;
                    ib = ie;
                    ie = ie2;
                    if (o >= oe) {  // empty buckets between
                        b = msm_bucket_of(out_off, b, nb, o);
                        ob = out_off[b];
                        oe = out_off[b + 1];
                        ib = in_off[b];
                        ie = in_off[b + 1];
                    }
                    oe2 = b + 2 <= nb ? out_off[b + 2] : oe;
                    ie2 = b + 2 <= nb ? in_off[b + 2] : ie;
                }
                const uint32_t p1 = ib + 2 * (uint32_t)(o - ob);
                l.valid = true;
                l.pair = p1 + 1 < ie;
                // b's index is loaded on its own (an unpaired slot reads a's again, from
                // L1), so that nothing here waits for a load: both are first used a slot
                // later.
                const uint32_t pb = l.pair ? p1 + 1 : p1;
                l.a = sorted ? sorted[p1] : p1;
                l.b = sorted ? sorted[pb] : pb;
                return l;
            };
            Loc cur = locate(0), nxt = locate(1);
            F x1 = F::zero(), x2 = F::zero();
            if (cur.valid) {
                x1 = aff_x(pts, cur.a);
                x2 = aff_x(pts, cur.b);
            }
#pragma unroll 1
            for (int i = 0; i < (int)slots; i++) {
                const Loc l = cur;
                const F px = x1, qx = x2;
                cur = nxt;
                if (cur.valid) {
                    x1 = aff_x(pts, cur.a);
                    x2 = aff_x(pts, cur.b);
                }
                nxt = locate(i + 2);
                uint32_t cs = AFF_NONE;
                if (l.valid) {
                    F d;
                    if (!l.pair) {
                        // An odd bucket's last point goes on alone, whatever it is: no load
                        // (a warp would wait for one whenever any of its lanes had such a
                        // slot, most of the time in the later levels).
                        cs = AFF_FIRST;
                    } else if (!px.is_zero() && !qx.is_zero() && px != qx) {
                        // Neither is the identity (x = 0 there) and the x differ.
                        cs = AFF_ADD;
                        d = qx - px;
                    } else {
                        const Affine<F> p = msm_point(pts, l.a);
                        const Affine<F> q = msm_point(pts, l.b);
                        cs = aff_case(p, q, l.pair);
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
                src_a[i * stride + g] = l.a;
                src_b[i * stride + g] = l.b;
                kind[i * stride + g] = (uint8_t)cs;
            }
        }
        F run = aff_block_inverse<F, T>(acc, roots);  // 1 / acc
        if (o0 >= total) continue;
        // Phase 3, slots backwards. Slot i's case and indices, and its copies into buffer
        // i & 1 (one group per slot, empty for nothing to copy).
        struct Meta {
            uint32_t cs, a, b;
        };
        auto meta = [&](int i) -> Meta {
            return {kind[i * stride + g], src_a[i * stride + g], src_b[i * stride + g]};
        };
        auto copy = [&](int i, const Meta& m) {
            const int buf = i & 1;
            if (m.cs != AFF_NONE) {
                const uint4* a = reinterpret_cast<const uint4*>(pts + (m.a & 0x7fffffffu));
                const uint4* bq = reinterpret_cast<const uint4*>(pts + (m.b & 0x7fffffffu));
#pragma unroll
                for (int k = 0; k < PP; k++) aff_cp16(piece(buf, k), a + k);
                if (m.cs != AFF_FIRST) {
#pragma unroll
                    for (int k = 0; k < PP; k++) aff_cp16(piece(buf, PP + k), bq + k);
                }
                if ((m.cs == AFF_ADD || m.cs == AFF_DBL) && i != first) {
                    const uint4* pr = reinterpret_cast<const uint4*>(pre + i * stride + g);
#pragma unroll
                    for (int k = 0; k < PF; k++) aff_cp16(piece(buf, 2 * PP + k), pr + k);
                }
            }
            aff_cp_commit();
        };
        const int last = (int)slots - 1;
        Meta m = meta(last), mn = meta(last >= 1 ? last - 1 : 0);
        copy(last, m);
#pragma unroll 1
        for (int i = last; i >= 0; i--) {
            const Meta c = m;
            if (i > 0) {
                copy(i - 1, mn);
                m = mn;
                if (i > 1) mn = meta(i - 2);
                aff_cp_wait<1>();  // slot i's group done, slot i - 1's in flight
            } else {
                aff_cp_wait<0>();
            }
            if (c.cs == AFF_NONE) continue;
            const int buf = i & 1;
            Affine<F> p = {staged_at(buf, 0), staged_at(buf, PF)};
            if (c.a >> 31) p = p.neg();
            Affine<F> q = p;
            if (c.cs != AFF_FIRST) {
                q = {staged_at(buf, PP), staged_at(buf, PP + PF)};
                if (c.b >> 31) q = q.neg();
            }
            Affine<F> r = p;
            if (c.cs == AFF_SECOND) {
                r = q;
            } else if (c.cs == AFF_INF) {
                r = {F::zero(), F::zero()};
            } else if (c.cs != AFF_FIRST) {
                const F d = aff_denominator(p, q, c.cs);
                F inv = run;
                if (i != first) {
                    inv = run * staged_at(buf, 2 * PP);
                    run = run * d;
                }
                F num;
                if (c.cs == AFF_ADD) {
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

// The entry points of one curve G over F: the halving counts and the level kernel in
// blocks of T threads (launch bounds T, BLOCKS), whose stage of PIECES 16-byte pieces per
// slot and thread must match AFFINE_LEVELS in src/kernels.rs.
#define AFFINE_LEVEL_KERNELS(G, F, T, BLOCKS, PIECES)                                                        \
    static_assert(aff_stage_bytes<F, T>() == 2 * (PIECES) * 16 * (T), "AFFINE_LEVELS in src/kernels.rs");   \
    extern "C" __global__ void G##_msm_affine_halve(const uint32_t* off, uint32_t nb, uint32_t* counts) {    \
        msm_affine_halve(off, nb, counts);                                                                   \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(T, BLOCKS)                                                  \
        G##_msm_affine_level(const Affine<F>* pts, const uint32_t* sorted, const uint32_t* in_off,           \
                             const uint32_t* out_off, uint32_t nb, Affine<F>* out, F* pre, uint32_t* src_a,  \
                             uint32_t* src_b, uint8_t* kind, uint32_t max_slots) {                           \
        msm_affine_level<F, T>(pts, sorted, in_off, out_off, nb, out, pre, src_a, src_b, kind, max_slots);  \
    }
