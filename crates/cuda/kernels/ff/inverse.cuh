// Field inversion by the binary extended Euclidean algorithm: variable time, for public
// values only (the MSM's batch-affine denominators). Estimated, not measured alone: about
// 1,100 rounds of shifts and subtractions of N-limb integers for Fq on one thread, ~50,000
// instructions or ~55 Montgomery products, against ~440 products for Fermat's a^(p-2).
// Measured: skipping it entirely saves ~7 % of the affine levels
// (docs/decisions/003-batch-affine-msm-levels.md).
#pragma once
#include "field.cuh"

namespace inv_detail {

// u >>= 1 (u even).
template <int N>
__device__ __forceinline__ void shr1(uint32_t (&u)[N]) {
#pragma unroll
    for (int i = 0; i < N - 1; i++) u[i] = __funnelshift_r(u[i], u[i + 1], 1);
    u[N - 1] >>= 1;
}

// Sign of u - v as integers.
template <int N>
__device__ __forceinline__ int cmp(const uint32_t (&u)[N], const uint32_t (&v)[N]) {
#pragma unroll
    for (int i = N - 1; i >= 0; i--) {
        if (u[i] != v[i]) return u[i] > v[i] ? 1 : -1;
    }
    return 0;
}

// u -= v (u >= v).
template <int N>
__device__ __forceinline__ void sub(uint32_t (&u)[N], const uint32_t (&v)[N]) {
    u[0] = ptx::sub_cc(u[0], v[0]);
#pragma unroll
    for (int i = 1; i < N; i++) u[i] = ptx::subc_cc(u[i], v[i]);
}

}  // namespace inv_detail

// x / 2 mod p for x < p: x >> 1 when x is even, else (x + p) >> 1 (x + p < 2p fits in N
// limbs: p leaves a spare top bit).
template <class P>
__device__ __forceinline__ Field<P> half_mod(const Field<P>& x) {
    constexpr int N = P::N;
    Field<P> r = x;
    if (x.v[0] & 1) {
        r.v[0] = ptx::add_cc(r.v[0], P::mod(0));
#pragma unroll
        for (int i = 1; i < N; i++) r.v[i] = ptx::addc_cc(r.v[i], P::mod(i));
    }
    inv_detail::shr1<N>(r.v);
    return r;
}

// One round of field_inverse for big > small (both odd): big -= small, then big loses its
// factors of two, its coefficient following (xb A = big, xs A = small mod p).
template <class P>
__device__ __forceinline__ void reduce_larger(uint32_t (&big)[P::N], Field<P>& xb, const uint32_t (&small)[P::N],
                                              const Field<P>& xs) {
    inv_detail::sub<P::N>(big, small);
    xb = xb - xs;
    do {
        inv_detail::shr1<P::N>(big);
        xb = half_mod(xb);
    } while (!(big[0] & 1));
}

// a^-1 in Montgomery form (0 for 0). `a` holds A = a R mod p; the binary algorithm gives
// A^-1 = a^-1 R^-1 as an integer, and two conversions to Montgomery form multiply it by
// R^2. Invariants: x1 A = u and x2 A = v (mod p), u and v odd; the larger loses the
// smaller (a positive even difference) and its factors of two until both equal gcd(A, p)
// = 1. A bound on the rounds keeps a value that is not below p from looping forever (its
// result is then meaningless, never a hang).
template <class P>
__device__ __noinline__ Field<P> field_inverse(const Field<P> a) {
    constexpr int N = P::N;
    if (a.is_zero()) return a;
    uint32_t u[N], v[N];
    Field<P> x1 = Field<P>::zero(), x2 = Field<P>::zero();
    x1.v[0] = 1;
#pragma unroll
    for (int i = 0; i < N; i++) {
        u[i] = a.v[i];
        v[i] = P::mod(i);
    }
    // u and v odd from here on (v = p is odd); the loop ends when they meet at gcd = 1.
    while (!(u[0] & 1)) {
        inv_detail::shr1<N>(u);
        x1 = half_mod(x1);
    }
    for (int round = 0; round < 64 * 32 * N; round++) {
        const int c = inv_detail::cmp<N>(u, v);
        if (c == 0) break;
        if (c > 0) reduce_larger(u, x1, v, x2);
        else reduce_larger(v, x2, u, x1);
    }
    return x1.to_mont().to_mont();
}
