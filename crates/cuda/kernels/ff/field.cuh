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

    __device__ __forceinline__ friend Field operator*(const Field& a, const Field& b) {
#ifdef FILPROVE_FQ_MUL_NOINLINE
        if constexpr (N == 12) return mont_mul_call(a, b);
#endif
        return mont_mul(a, b);
    }
#ifdef FILPROVE_FQ_MUL_NOINLINE
    // A/B builds only: the Fq product out of line (one copy of its code per kernel).
    __device__ __noinline__ static Field mont_mul_call(Field a, Field b) { return mont_mul(a, b); }
#endif

    // Rounds of the Fq product's outer loop unrolled per loop iteration (a divisor of 12;
    // 12 = fully unrolled). A/B builds set FILPROVE_MUL_UNROLL; Fr is always unrolled.
#ifndef FILPROVE_MUL_UNROLL
#define FILPROVE_MUL_UNROLL 12
#endif
    static constexpr int MUL_ROUNDS = N == 12 ? FILPROVE_MUL_UNROLL : N;
    static_assert(N % MUL_ROUNDS == 0, "FILPROVE_MUL_UNROLL must divide 12");

#ifndef FILPROVE_MUL_WIDE
    // Montgomery product a*b/R mod p: CIOS, lo and hi partial products in two PTX carry
    // chains. The outer loop runs N / MUL_ROUNDS times with MUL_ROUNDS rounds unrolled in
    // each; b's limbs move down by MUL_ROUNDS per iteration so that every index is static.
    __device__ __forceinline__ static Field mont_mul(const Field& a, const Field& b_in) {
        uint32_t t[N + 2];
#pragma unroll
        for (int i = 0; i < N + 2; i++) t[i] = 0;
        uint32_t bv[N];
#pragma unroll
        for (int i = 0; i < N; i++) bv[i] = b_in.v[i];
#pragma unroll 1
        for (int it = 0; it < N / MUL_ROUNDS; it++) {
#pragma unroll
        for (int i = 0; i < MUL_ROUNDS; i++) {
            const uint32_t bi = bv[i];
            // t += a * bi
            t[0] = ptx::mad_lo_cc(a.v[0], bi, t[0]);
#pragma unroll
            for (int j = 1; j < N; j++) t[j] = ptx::madc_lo_cc(a.v[j], bi, t[j]);
            t[N] = ptx::addc_cc(t[N], 0);
            t[N + 1] = ptx::addc(t[N + 1], 0);
            t[1] = ptx::mad_hi_cc(a.v[0], bi, t[1]);
#pragma unroll
            for (int j = 1; j < N; j++) t[j + 1] = ptx::madc_hi_cc(a.v[j], bi, t[j + 1]);
            t[N + 1] = ptx::addc(t[N + 1], 0);
            // t += m * p, m chosen so that t[0] becomes 0
            const uint32_t m = t[0] * P::INV;
            // The limbs below j0 are added without products: for Fr (p = ... :
            // 0xffffffff : 0x00000001) m = -t[0], m * p0 = m, and m * p1 = m 2^32 - m has
            // low half t[0] and high half m - (m != 0). ptxas already drops the product by
            // p0 = 1, so this saves 8 of the 120 high halves of an Fr product (SASS).
            constexpr int j0 = P::LOW_ONE_MINUS_ONE ? 2 : 1;
            const uint32_t t0 = t[0];
            if constexpr (j0 == 2) {
                t[0] = ptx::add_cc(t0, m);  // 0, carry (t0 != 0)
                t[1] = ptx::addc_cc(t[1], t0);
            } else {
                t[0] = ptx::mad_lo_cc(m, P::mod(0), t0);
            }
#pragma unroll
            for (int j = j0; j < N; j++) t[j] = ptx::madc_lo_cc(m, P::mod(j), t[j]);
            t[N] = ptx::addc_cc(t[N], 0);
            t[N + 1] = ptx::addc(t[N + 1], 0);
            if constexpr (j0 == 2) {
                t[2] = ptx::add_cc(t[2], m - (m != 0u));
            } else {
                t[1] = ptx::mad_hi_cc(m, P::mod(0), t[1]);
            }
#pragma unroll
            for (int j = j0; j < N; j++) t[j + 1] = ptx::madc_hi_cc(m, P::mod(j), t[j + 1]);
            t[N + 1] = ptx::addc(t[N + 1], 0);
            // shift down one limb
#pragma unroll
            for (int j = 0; j <= N; j++) t[j] = t[j + 1];
            t[N + 1] = 0;
        }
#pragma unroll
        for (int j = 0; j + MUL_ROUNDS < N; j++) bv[j] = bv[j + MUL_ROUNDS];
        }
        Field r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = t[i];
        return reduce_once(r);
    }
#else
    // Alternative product (A/B builds only, FILPROVE_CUDA_DEFINES=FILPROVE_MUL_WIDE): CIOS
    // with each partial product one 32x32+64 -> 64-bit multiply-add (IMAD.WIDE), carries on
    // the integer ALU. In isolation (bench/mulbench.cu, H200) it makes a G1 mixed addition
    // 1.33x faster, but the real bucket-sum kernel 1.33x SLOWER (2^27: 1,958 vs 1,469 ms;
    // docs/benchmarks.md, "Field product A/B"), so it is not the default.
    __device__ __forceinline__ static Field mont_mul(const Field& a, const Field& b) {
        uint32_t t[N + 2];
#pragma unroll
        for (int i = 0; i < N + 2; i++) t[i] = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            const uint32_t bi = b.v[i];
            uint64_t c = 0;
#pragma unroll
            for (int j = 0; j < N; j++) {
                c = (uint64_t)a.v[j] * bi + t[j] + (c >> 32);
                t[j] = (uint32_t)c;
            }
            c = (uint64_t)t[N] + (c >> 32);
            t[N] = (uint32_t)c;
            t[N + 1] = (uint32_t)(c >> 32);
            const uint32_t m = t[0] * P::INV;
            c = (uint64_t)m * P::mod(0) + t[0];
#pragma unroll
            for (int j = 1; j < N; j++) {
                c = (uint64_t)m * P::mod(j) + t[j] + (c >> 32);
                t[j - 1] = (uint32_t)c;
            }
            c = (uint64_t)t[N] + (c >> 32);
            t[N - 1] = (uint32_t)c;
            t[N] = t[N + 1] + (uint32_t)(c >> 32);
        }
        Field r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = t[i];
        return reduce_once(r);
    }
#endif
    // A dedicated square (off-diagonal products once, SOS reduction, wide products) was
    // 1.2-1.4x faster alone but made the G1 mixed addition 1.45x slower: not used.
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
