// A/B variants of the G1 bucket sum (step 4 of msm.cuh) that keep per-thread state in
// shared memory instead of registers. Included by msm.cuh only when a build defines one of
// the switches below (FILPROVE_CUDA_DEFINES); default builds do not see this file.
//
// Why: the bucket sum is latency-bound (every Fq product is a serial carry chain), so
// resident warps matter. The register version needs 166 registers unbounded and spills at
// the 128 of 4 blocks per SM. Moving state to shared memory frees registers, either for
// more warps (FILPROVE_MSM_SUM_MIN_BLOCKS=5: <= 102 registers) or for the wide product
// (FILPROVE_MUL_WIDE) at 4 blocks without spills.
//
// FILPROVE_MSM_ASYNC_PREFETCH: the next point is not held in registers (24 of them) but
//   copied by cp.async (16-byte global->shared copies, L2 only) into a per-thread double
//   buffer: while entry p is added from one slot, entry p + 1 lands in the other; after
//   the addition entry p + 2 is issued into the slot just read. The entry word (index |
//   sign << 31) is read from `sorted` one addition earlier still, so neither global load
//   waits. The sign is kept as one bit per slot and applied (y -> -y, identity stays the
//   identity) when y is read from shared memory. 2 x 96 B per thread: 24 KB per block.
// FILPROVE_MSM_ACC_SMEM: the XYZZ accumulator (4 x 48 B) lives in shared memory;
//   xyzz_add_affine_to (xyzz.cuh) reads each coordinate where it is used and writes the
//   new ones back. 192 B per thread: 24 KB per block.
//
// Both: 48 KB per block (the static limit), so at most 4 blocks per SM (228 KB);
// FILPROVE_MSM_ACC_SMEM_COORDS=3 (ZZZ in registers) makes it 42 KB, 5 blocks.
// Shared memory is laid out [slot][16-byte chunk][thread] so that a warp reads and
// writes 512 consecutive bytes (no bank conflicts; a thread-major layout would make
// the 48-word rows 16-way conflicted). Each thread touches only its own slots: no
// barriers. Blocks must have MSM_SUM_THREADS threads (src/msm.rs launches 128).
#pragma once

#define MSM_SUM_THREADS 128

// Fq <-> shared memory: chunk c (limbs 4c .. 4c + 3) at q[c * MSM_SUM_THREADS].
template <class F>
__device__ __forceinline__ F smem_load(const uint4* q) {
    F r;
#pragma unroll
    for (int c = 0; c < F::N / 4; c++) {
        const uint4 w = q[c * MSM_SUM_THREADS];
        r.v[4 * c] = w.x;
        r.v[4 * c + 1] = w.y;
        r.v[4 * c + 2] = w.z;
        r.v[4 * c + 3] = w.w;
    }
    return r;
}
template <class F>
__device__ __forceinline__ void smem_store(uint4* q, const F& a) {
#pragma unroll
    for (int c = 0; c < F::N / 4; c++) q[c * MSM_SUM_THREADS] = make_uint4(a.v[4 * c], a.v[4 * c + 1], a.v[4 * c + 2], a.v[4 * c + 3]);
}

// A point in registers seen through the accessors of xyzz_add_affine_to.
template <class F>
struct RegPoint {
    Affine<F> a;
    __device__ __forceinline__ bool is_inf() const { return a.is_inf(); }
    __device__ __forceinline__ F x() const { return a.x; }
    __device__ __forceinline__ F y() const { return a.y; }
};
// A point in a shared-memory slot (x: chunks 0 .. C-1, y: C .. 2C-1) with its entry's sign.
template <class F>
struct SmemPoint {
    static constexpr int C = F::N / 4;
    const uint4* q;
    uint32_t neg;
    __device__ __forceinline__ bool is_inf() const {
        uint32_t acc = 0;
#pragma unroll
        for (int c = 0; c < 2 * C; c++) {
            const uint4 w = q[c * MSM_SUM_THREADS];
            acc |= w.x | w.y | w.z | w.w;
        }
        return acc == 0;
    }
    __device__ __forceinline__ F x() const { return smem_load<F>(q); }
    // msm_point's negation: -y, or 0 for the identity (F::neg keeps 0).
    __device__ __forceinline__ F y() const {
        const F y = smem_load<F>(q + C * MSM_SUM_THREADS);
        return neg ? y.neg() : y;
    }
    __device__ __forceinline__ Affine<F> affine() const { return {x(), y()}; }
};

// FILPROVE_MSM_ACC_SMEM: the accumulator in shared memory (the accessors of
// xyzz_add_affine_to). FILPROVE_MSM_ACC_SMEM_COORDS = K keeps only the first K of X, Y,
// ZZ, ZZZ there and the others in registers (default 4: all; 3 leaves 42 KB per block
// with FILPROVE_MSM_ASYNC_PREFETCH, so that 5 blocks fit in an SM's 228 KB).
#ifndef FILPROVE_MSM_ACC_SMEM_COORDS
#define FILPROVE_MSM_ACC_SMEM_COORDS 4
#endif
template <class F>
struct SmemAcc {
    static constexpr int C = F::N / 4;  // 16-byte chunks per coordinate
    static constexpr int K = FILPROVE_MSM_ACC_SMEM_COORDS;
    static_assert(K >= 1 && K <= 4, "FILPROVE_MSM_ACC_SMEM_COORDS: 1 to 4");
    uint4* q;         // coordinate k < K, chunk c at q[(k * C + c) * MSM_SUM_THREADS]
    F r[K < 4 ? 4 - K : 1];  // coordinate k >= K in r[k - K]
    __device__ __forceinline__ SmemAcc() {
        __shared__ uint4 sm[K * C][MSM_SUM_THREADS];  // one SmemAcc per thread
        q = &sm[0][threadIdx.x];
    }
    __device__ __forceinline__ F get(int k) const {
        return k < K ? smem_load<F>(q + k * C * MSM_SUM_THREADS) : r[k - K];
    }
    __device__ __forceinline__ void put(int k, const F& a) {
        if (k < K) smem_store(q + k * C * MSM_SUM_THREADS, a);
        else r[k - K] = a;
    }
    __device__ __forceinline__ F X() const { return get(0); }
    __device__ __forceinline__ F Y() const { return get(1); }
    __device__ __forceinline__ F ZZ() const { return get(2); }
    __device__ __forceinline__ F ZZZ() const { return get(3); }
    __device__ __forceinline__ void set_X(const F& a) { put(0, a); }
    __device__ __forceinline__ void set_Y(const F& a) { put(1, a); }
    __device__ __forceinline__ void set_ZZ(const F& a) { put(2, a); }
    __device__ __forceinline__ void set_ZZZ(const F& a) { put(3, a); }
    __device__ __forceinline__ void set(const Xyzz<F>& a) {
        put(0, a.X);
        put(1, a.Y);
        put(2, a.ZZ);
        put(3, a.ZZZ);
    }
    __device__ __forceinline__ void clear() { set(Xyzz<F>::inf()); }
    __device__ __forceinline__ Xyzz<F> value() const { return {get(0), get(1), get(2), get(3)}; }
    __device__ __forceinline__ void add(const Affine<F>& a) { xyzz_add_affine_to<F>(*this, RegPoint<F>{a}); }
    __device__ __forceinline__ void add(const SmemPoint<F>& a) { xyzz_add_affine_to<F>(*this, a); }
};

namespace cp_async {
// 16-byte global -> shared copy, cached in L2 only (the points are not reused soon).
__device__ __forceinline__ void copy16(void* dst, const void* src) {
    const uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most N of this thread's committed groups are still pending.
template <int N>
__device__ __forceinline__ void wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
}  // namespace cp_async

// FILPROVE_MSM_ASYNC_PREFETCH: the point source (same protocol as RegPoints: take(p), the
// addition, done(p)). One commit group per entry, also an empty one past p1, so that
// "all but the newest group done" always means "entry p has landed".
template <class F>
struct AsyncPoints {
    static constexpr int C = 2 * F::N / 4;  // 16-byte chunks per affine point
    const Affine<F>* bases;
    const uint32_t* sorted;
    uint32_t p0, p1;
    uint32_t ahead;  // sorted[p + 2] during entry p's addition (when p + 2 < p1)
    uint32_t signs;  // bit s: the sign of the point in slot s
    uint4* q;        // slot s, chunk c at q[(s * C + c) * MSM_SUM_THREADS]

    __device__ __forceinline__ void issue(uint32_t s, uint32_t e) {
        const uint4* src = reinterpret_cast<const uint4*>(bases + (e & 0x7fffffffu));
        uint4* dst = q + s * C * MSM_SUM_THREADS;
#pragma unroll
        for (int c = 0; c < C; c++) cp_async::copy16(dst + c * MSM_SUM_THREADS, src + c);
        signs = (signs & ~(1u << s)) | ((e >> 31) << s);
    }
    __device__ __forceinline__ AsyncPoints(const Affine<F>* bases, const uint32_t* sorted, uint32_t p0, uint32_t p1)
        : bases(bases), sorted(sorted), p0(p0), p1(p1), signs(0) {
        __shared__ uint4 sm[2 * C][MSM_SUM_THREADS];
        q = &sm[0][threadIdx.x];
        issue(0, sorted[p0]);  // p0 < p1
        cp_async::commit();
        if (p0 + 1 < p1) issue(1, sorted[p0 + 1]);
        cp_async::commit();
        ahead = p0 + 2 < p1 ? sorted[p0 + 2] : 0;
    }
    // Entry p's point (entries in turn from p0): groups p0 .. p + 1 are committed here.
    __device__ __forceinline__ SmemPoint<F> take(uint32_t p) {
        cp_async::wait<1>();
        const uint32_t s = (p - p0) & 1;
        return {q + s * C * MSM_SUM_THREADS, (signs >> s) & 1};
    }
    // After entry p's addition (its slot is free): entry p + 2 into that slot.
    __device__ __forceinline__ void done(uint32_t p) {
        if (p + 2 < p1) {
            issue((p - p0) & 1, ahead);
            if (p + 3 < p1) ahead = sorted[p + 3];
        }
        cp_async::commit();
    }
};

// G1 only: G2's Fq2 state would be twice the size (and its additions call out-of-line
// products anyway).
template <>
struct SumPolicy<Fq> {
#ifdef FILPROVE_MSM_ACC_SMEM
    using Acc = SmemAcc<Fq>;
#else
    using Acc = RegAcc<Fq>;
#endif
#ifdef FILPROVE_MSM_ASYNC_PREFETCH
    using Src = AsyncPoints<Fq>;
#else
    using Src = RegPoints<Fq>;
#endif
};
