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

    // The product: CIOS with 64-bit partial products (mont_mul_eo below), the Fq one out of
    // line, the Fr one inlined. Inlined, each Fq product of an elliptic-curve addition is
    // its own ~1,160 SASS instructions and the bucket-sum loop outgrows the SM's
    // instruction cache; out of line a kernel holds one copy and a call costs a few moves
    // (H200, 2^27 G1 MSM 1,492 -> 1,373 ms). The Fr product stays inlined in the NTT
    // kernels, which keep few registers live. Against the lo/hi carry-chain CIOS and the
    // multiply-add CIOS, this variant won on both fields (2^27 G1 MSM 1,373 -> 1,188 ms
    // over the two steps; H at 2^27 444 -> 387 ms; docs/decisions/005-field-products.md).
    // Karatsuba on the halves (252 instead of 288 IMAD.WIDE) was no faster in the G1 MSM
    // and 2.6 % slower in the G2 one (H100, decision 005).
    static constexpr bool MUL_OUTLINE = N == 12;

    __device__ __forceinline__ friend Field operator*(const Field& a, const Field& b) {
        if constexpr (MUL_OUTLINE) return mont_mul_call(a, b);
        return mont_mul_eo(a, b);
    }
    __device__ __noinline__ static Field mont_mul_call(Field a, Field b) { return mont_mul_eo(a, b); }

    // CIOS whose partial products are bare 64-bit products (IMAD.WIDE with a zero
    // addend), added to the running sum t by 32-bit carry chains (IADD3 / IADD3.X). In
    // a CIOS whose multiply-adds take the previous carry and limb, each needs its 64-bit addend assembled first (limb plus
    // previous carry, a zero high word): in SASS that is ~0.56 IMAD.MOV and ~0.4 IMAD.X per
    // IMAD.WIDE, all on the multiplier pipe, which IMAD.WIDE already saturates. Here a row
    // a*bi (or m*p) is split by the parity of j: the products a_j*bi with j even tile limbs
    // 0..N-1 without overlap (lo at j, hi at j+1), the odd ones limbs 1..N, so each half is
    // one carry chain over t and no product needs an addend. 2 ALU additions per product,
    // no register moves.
    // Bounds: t < 2p entering a round; adding a*bi (< p 2^32) and m*p (< p 2^32) leaves
    // t < p (2^33 + 2), below 2^(32 (N + 1)) whenever p < 2^(32 N - 1) (1 - 2^-32): true
    // for Fq (p < 2^381, N = 12: t < 2^415) and Fr (r < 2^255, N = 8: t < 2^288). So
    // N + 1 limbs hold it and the last carry of each chain needs no further limb. The
    // final t < 2p.
    // t (N + 1 limbs) += the row sum_j (hi[j] 2^32 + lo[j]) 2^(32 j): the even-j products
    // tile limbs 0..N-1 (carry into t[N]), the odd-j ones limbs 1..N; one carry chain each.
    __device__ __forceinline__ static void add_row_eo(uint32_t (&t)[N + 1], const uint32_t (&lo)[N],
                                                      const uint32_t (&hi)[N]) {
        t[0] = ptx::add_cc(t[0], lo[0]);
        t[1] = ptx::addc_cc(t[1], hi[0]);
#pragma unroll
        for (int j = 2; j < N; j += 2) {
            t[j] = ptx::addc_cc(t[j], lo[j]);
            t[j + 1] = ptx::addc_cc(t[j + 1], hi[j]);
        }
        t[N] = ptx::addc(t[N], 0);
        t[1] = ptx::add_cc(t[1], lo[1]);
#pragma unroll
        for (int j = 1; j < N - 1; j += 2) {
            t[j + 1] = ptx::addc_cc(t[j + 1], hi[j]);
            t[j + 2] = ptx::addc_cc(t[j + 2], lo[j + 2]);
        }
        t[N] = ptx::addc(t[N], hi[N - 1]);
    }

    template <bool REDUCE = true>
    __device__ __forceinline__ static Field mont_mul_eo(const Field& a, const Field& b) {
        static_assert(N % 2 == 0, "even limb count");
        uint32_t t[N + 1];
#pragma unroll
        for (int i = 0; i < N; i++) {
            const uint32_t bi = b.v[i];
            uint32_t lo[N], hi[N];
#pragma unroll
            for (int j = 0; j < N; j++) {
                const uint64_t pr = (uint64_t)a.v[j] * bi;
                lo[j] = (uint32_t)pr;
                hi[j] = (uint32_t)(pr >> 32);
            }
            if (i == 0) {
#pragma unroll
                for (int j = 0; j < N; j += 2) {
                    t[j] = lo[j];
                    t[j + 1] = hi[j];
                }
                t[1] = ptx::add_cc(t[1], lo[1]);
#pragma unroll
                for (int j = 1; j < N - 1; j += 2) {
                    t[j + 1] = ptx::addc_cc(t[j + 1], hi[j]);
                    t[j + 2] = ptx::addc_cc(t[j + 2], lo[j + 2]);
                }
                t[N] = ptx::addc(hi[N - 1], 0);
            } else {
                add_row_eo(t, lo, hi);
            }
            // t += m * p, m chosen so that t[0] becomes 0
            const uint32_t m = t[0] * P::INV;
#pragma unroll
            for (int j = 0; j < N; j++) {
                const uint64_t pr = (uint64_t)m * P::mod(j);
                lo[j] = (uint32_t)pr;
                hi[j] = (uint32_t)(pr >> 32);
            }
            add_row_eo(t, lo, hi);  // t[0] becomes 0
            // shift down one limb
#pragma unroll
            for (int j = 0; j < N; j++) t[j] = t[j + 1];
            t[N] = 0;
        }
        Field r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = t[i];
        return REDUCE ? reduce_once(r) : r;
    }

    // Arithmetic on values below 2p, for a chain of butterflies that reduces once at the
    // end (the NTT): p < 2^(32 N - 1), so 2p fits N limbs.
    // The product without its final subtraction, for a < p and b < 2p: the rounds' bound
    // above holds (it multiplies a by b's limbs) and the result a b / R + (< p) < 2p.
    __device__ __forceinline__ static Field mul_below_2p(const Field& a, const Field& b) {
        return mont_mul_eo<false>(a, b);
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

    // A dedicated square (off-diagonal products once, doubled, plus the diagonal; 222
    // instead of 288 lo/hi pairs) was slower in the G1 MSM in both forms on the H200:
    // inlined 1.45x, out of line beside the out-of-line product 1,459 vs 1,373 ms at 2^27
    // (1,360 vs 1,293 with the wide product).
    __device__ __forceinline__ Field sqr() const { return *this * *this; }

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
