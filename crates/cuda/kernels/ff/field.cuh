// Prime-field arithmetic in Montgomery form with 32-bit limbs, generic over the modulus.
// The limb layout is blst's (little-endian), so device memory holds blstrs values as is.
// Requires the modulus to leave at least one spare top bit (true for BLS12-381 Fr and Fq).
#pragma once
#include "ptx.cuh"

template <class P>
struct Field {
    static constexpr int N = P::N;
    uint32_t v[N];

    __device__ __forceinline__ static Field zero() {
        Field r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = 0;
        return r;
    }
    __device__ __forceinline__ static Field one() {
        Field r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = P::one(i);
        return r;
    }
    __device__ __forceinline__ bool is_zero() const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i];
        return acc == 0;
    }
    __device__ __forceinline__ bool operator==(const Field& o) const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i] ^ o.v[i];
        return acc == 0;
    }
    __device__ __forceinline__ bool operator!=(const Field& o) const { return !(*this == o); }

    // r = x - p if x >= p, else x (x < 2p).
    __device__ __forceinline__ static Field reduce_once(const Field& x) {
        Field t;
        t.v[0] = ptx::sub_cc(x.v[0], P::mod(0));
#pragma unroll
        for (int i = 1; i < N; i++) t.v[i] = ptx::subc_cc(x.v[i], P::mod(i));
        uint32_t borrow = ptx::subc(0, 0);  // 0xffffffff when x < p
        return borrow ? x : t;
    }

    __device__ __forceinline__ friend Field operator+(const Field& a, const Field& b) {
        Field r;
        r.v[0] = ptx::add_cc(a.v[0], b.v[0]);
#pragma unroll
        for (int i = 1; i < N; i++) r.v[i] = ptx::addc_cc(a.v[i], b.v[i]);
        return reduce_once(r);  // no overflow past N limbs: p has a spare top bit
    }
    __device__ __forceinline__ friend Field operator-(const Field& a, const Field& b) {
        Field r;
        r.v[0] = ptx::sub_cc(a.v[0], b.v[0]);
#pragma unroll
        for (int i = 1; i < N; i++) r.v[i] = ptx::subc_cc(a.v[i], b.v[i]);
        uint32_t borrow = ptx::subc(0, 0);
        Field q;  // p masked by the borrow
#pragma unroll
        for (int i = 0; i < N; i++) q.v[i] = P::mod(i) & borrow;
        r.v[0] = ptx::add_cc(r.v[0], q.v[0]);
#pragma unroll
        for (int i = 1; i < N; i++) r.v[i] = ptx::addc_cc(r.v[i], q.v[i]);
        return r;
    }
    __device__ __forceinline__ Field neg() const { return is_zero() ? *this : zero() - *this; }
    __device__ __forceinline__ Field dbl() const { return *this + *this; }

    // The product: Montgomery's in product-scanning form (below), the Fq one out of line,
    // the Fr one inlined. Inlined, each Fq product of an elliptic-curve addition is its own
    // ~1,000 SASS instructions and the bucket-sum loop outgrows the SM's instruction
    // cache; out of line a kernel holds one copy and a call costs a few moves (H200, 2^27
    // G1 MSM 1,492 -> 1,373 ms). The Fr product stays inlined in the NTT kernels, which
    // keep few registers live. Forms measured and replaced or lost: decision 005.
    static constexpr bool MUL_OUTLINE = N == 12;

    __device__ __forceinline__ friend Field operator*(const Field& a, const Field& b) {
        if constexpr (MUL_OUTLINE) return mont_mul_call(a, b);
        return mont_mul(a, b);
    }
    __device__ __noinline__ static Field mont_mul_call(Field a, Field b) { return mont_mul(a, b); }

    // Montgomery's product column by column (product scanning, the reduction interleaved):
    // column k of a b + m p collects every a_i b_j and m_i p_j with i + j = k in a 64-bit
    // accumulator plus a carry count (ptx::mac_wide: one IMAD.WIDE.U32 with a carry out
    // per product, half an IADD3.X for its carry), for k < N chooses m_k so that the
    // column's low word becomes 0, and shifts the accumulator down one word. About 0.6 ALU
    // instructions per product instead of the 2 of row-wise carry chains (CIOS): the Fq
    // product is 513 SASS instructions instead of 915 and runs at the multiplier's rate
    // (H100: 2.54e10 products/s against 1.88e10; 2^27 G1 MSM 866 -> 782 ms, H 317 -> 251
    // ms; decision 005).
    // Bounds: for a b < 4 p^2 (a, b < 2p, Fq: 4p < R) or a < p, b < 2p (Fr: 2p < R) the
    // result (a b + m p) / R < 2p, so N words hold it and the last column leaves no carry.
    // A column's sum stays below 2^70 (at most 2N products below 2^64, the carry in below
    // 2^39), so the count stays below 2^6.
    template <bool REDUCE = true>
    __device__ __forceinline__ static Field mont_mul(const Field& a, const Field& b) {
        const Field r = reduce_columns([&](int k, uint64_t& acc, uint32_t& c) {
#pragma unroll
            for (int i = 0; i < N; i++)
                if (k - i >= 0 && k - i < N) ptx::mac_wide(acc, c, a.v[i], b.v[k - i]);
        });
        return REDUCE ? reduce_once(r) : r;
    }

    // (x + m p) / R column by column, where column(k, acc, c) adds column k of x (the
    // product's or the square's terms) to the accumulator and its carry count; for k < N
    // m_k makes the column's low word 0. Below 2p (the bounds above).
    template <class Column>
    __device__ __forceinline__ static Field reduce_columns(Column column) {
        uint32_t m[N];
        Field r;
        uint64_t acc = 0;
        uint32_t c = 0;
#pragma unroll
        for (int k = 0; k < N; k++) {
            column(k, acc, c);
#pragma unroll
            for (int i = 0; i < k; i++) ptx::mac_wide(acc, c, m[i], P::mod(k - i));
            m[k] = (uint32_t)acc * P::INV;
            ptx::mac_wide(acc, c, m[k], P::mod(0));  // the low word becomes 0
            acc = (acc >> 32) | ((uint64_t)c << 32);
            c = 0;
        }
#pragma unroll
        for (int k = N; k < 2 * N; k++) {
            column(k, acc, c);
#pragma unroll
            for (int i = k - N + 1; i < N; i++) ptx::mac_wide(acc, c, m[i], P::mod(k - i));
            r.v[k - N] = (uint32_t)acc;
            acc = (acc >> 32) | ((uint64_t)c << 32);
            c = 0;
        }
        return r;
    }

    // Arithmetic on values below 2p, for a chain of butterflies that reduces once at the
    // end (the NTT): p < 2^(32 N - 1), so 2p fits N limbs.
    // The product without its final subtraction, for a < p and b < 2p: the rounds' bound
    // above holds (it multiplies a by b's limbs) and the result a b / R + (< p) < 2p.
    __device__ __forceinline__ static Field mul_below_2p(const Field& a, const Field& b) {
        return mont_mul<false>(a, b);
    }
    // x + y for x, y < 2p, less 2p where that leaves it non-negative: below 2p.
    __device__ __forceinline__ static Field add_below_2p(const Field& x, const Field& y) {
        Field s, d;
        s.v[0] = ptx::add_cc(x.v[0], y.v[0]);
#pragma unroll
        for (int i = 1; i < N; i++) s.v[i] = ptx::addc_cc(x.v[i], y.v[i]);
        const uint32_t carry = ptx::addc(0, 0);
        d.v[0] = ptx::sub_cc(s.v[0], mod2(0));
#pragma unroll
        for (int i = 1; i < N; i++) d.v[i] = ptx::subc_cc(s.v[i], mod2(i));
        const uint32_t below = ptx::subc(carry, 0);  // 0xffffffff when x + y < 2p
        return below ? s : d;
    }
    // x - y for x, y < 2p, plus 2p where it is negative: below 2p.
    __device__ __forceinline__ static Field sub_below_2p(const Field& x, const Field& y) {
        Field r;
        r.v[0] = ptx::sub_cc(x.v[0], y.v[0]);
#pragma unroll
        for (int i = 1; i < N; i++) r.v[i] = ptx::subc_cc(x.v[i], y.v[i]);
        const uint32_t borrow = ptx::subc(0, 0);
        r.v[0] = ptx::add_cc(r.v[0], mod2(0) & borrow);
#pragma unroll
        for (int i = 1; i < N; i++) r.v[i] = ptx::addc_cc(r.v[i], mod2(i) & borrow);
        return r;
    }
    // Limb i of 2p.
    __device__ __forceinline__ static uint32_t mod2(int i) {
        return (P::mod(i) << 1) | (i ? P::mod(i - 1) >> 31 : 0);
    }

    // The square: the product's columns with each off-diagonal a_i a_j (i < j) once,
    // doubled, and the diagonal a_i^2: 222 instead of 288 wide products for Fq.
    __device__ __forceinline__ Field sqr() const {
        if constexpr (MUL_OUTLINE) return mont_sqr_call(*this);
        return mont_sqr(*this);
    }
    __device__ __noinline__ static Field mont_sqr_call(Field a) { return mont_sqr(a); }
    __device__ __forceinline__ static Field mont_sqr(const Field& a) {
        // Column k: the off-diagonal products once, doubled, and the diagonal's square.
        return reduce_once(reduce_columns([&](int k, uint64_t& acc, uint32_t& c) {
            uint64_t o = 0;
            uint32_t oc = 0;
#pragma unroll
            for (int i = 0; i < N; i++)
                if (2 * i < k && k - i < N) ptx::mac_wide(o, oc, a.v[i], a.v[k - i]);
            ptx::add_wide(acc, c, o, oc);
            ptx::add_wide(acc, c, o, oc);
            if (k % 2 == 0) ptx::mac_wide(acc, c, a.v[k / 2], a.v[k / 2]);
        }));
    }

    // Montgomery form <-> canonical integer.
    __device__ __forceinline__ Field to_mont() const {
        Field r2;
#pragma unroll
        for (int i = 0; i < N; i++) r2.v[i] = P::r2(i);
        return *this * r2;
    }
    __device__ __forceinline__ Field from_mont() const {
        Field one_int = zero();
        one_int.v[0] = 1;
        return *this * one_int;
    }

    // x^e for a small public exponent (e.g. an index).
    __device__ __forceinline__ Field pow(uint64_t e) const {
        Field r = one(), b = *this;
        while (e) {
            if (e & 1) r = r * b;
            b = b.sqr();
            e >>= 1;
        }
        return r;
    }
};
