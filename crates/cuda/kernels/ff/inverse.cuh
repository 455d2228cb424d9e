// Field inversion by Kaliski's almost-inverse (a binary extended Euclidean algorithm whose
// coefficients are only added and doubled, never halved mod p), with each run of
// trailing zeros shifted out in one step, and one correction at the end. Variable time,
// for public values only (the MSM's batch-affine denominators).
//
// Loop invariants (u, v, r, s integers, A the input): p = u s + v r, and u, v odd after
// the first step; each step subtracts the smaller of u, v from the larger and shifts the
// t trailing zeros of the difference out, adding r and s into one another and doubling the
// other t times; k counts the shifted bits. It ends when v reaches 0 (u = gcd = 1), with
// r < 2p, s < 2p throughout and p - (r mod p) = A^-1 2^k mod p, n <= k <= 2n for an n-bit
// p (Kaliski, "The Montgomery inverse and its applications", 1995). About 270 steps of
// a few N-limb additions and shifts for Fq, against ~550 rounds of subtractions and
// modular halvings, bit by bit, of the binary algorithm it replaces.
#pragma once
#include "field.cuh"

namespace inv_detail {

// x >>= t, whole words first.
template <int N>
__device__ __forceinline__ void shr(uint32_t (&x)[N], uint32_t t) {
    while (t >= 32) {  // rare: 32 or more trailing zeros
#pragma unroll
        for (int i = 0; i < N - 1; i++) x[i] = x[i + 1];
        x[N - 1] = 0;
        t -= 32;
    }
    if (t == 0) return;
#pragma unroll
    for (int i = 0; i < N - 1; i++) x[i] = __funnelshift_r(x[i], x[i + 1], t);
    x[N - 1] >>= t;
}

// x <<= t (no bits lost: the callers' bounds keep x below 2^(32 N)).
template <int N>
__device__ __forceinline__ void shl(uint32_t (&x)[N], uint32_t t) {
    while (t >= 32) {
#pragma unroll
        for (int i = N - 1; i > 0; i--) x[i] = x[i - 1];
        x[0] = 0;
        t -= 32;
    }
    if (t == 0) return;
#pragma unroll
    for (int i = N - 1; i > 0; i--) x[i] = __funnelshift_l(x[i - 1], x[i], t);
    x[0] <<= t;
}

// Trailing zero bits of x (x != 0).
template <int N>
__device__ __forceinline__ uint32_t ctz(const uint32_t (&x)[N]) {
#pragma unroll
    for (int i = 0; i < N; i++) {
        if (x[i]) return 32 * i + __ffs(x[i]) - 1;
    }
    return 32 * N;
}

// d = x - y; true when it borrowed (x < y).
template <int N>
__device__ __forceinline__ bool sub(uint32_t (&d)[N], const uint32_t (&x)[N], const uint32_t (&y)[N]) {
    d[0] = ptx::sub_cc(x[0], y[0]);
#pragma unroll
    for (int i = 1; i < N; i++) d[i] = ptx::subc_cc(x[i], y[i]);
    return ptx::subc(0, 0) != 0;
}

// x += y (no carry out: the callers' bounds).
template <int N>
__device__ __forceinline__ void add(uint32_t (&x)[N], const uint32_t (&y)[N]) {
    x[0] = ptx::add_cc(x[0], y[0]);
#pragma unroll
    for (int i = 1; i < N - 1; i++) x[i] = ptx::addc_cc(x[i], y[i]);
    x[N - 1] = ptx::addc(x[N - 1], y[N - 1]);
}

template <int N>
__device__ __forceinline__ bool is_zero(const uint32_t (&x)[N]) {
    uint32_t acc = 0;
#pragma unroll
    for (int i = 0; i < N; i++) acc |= x[i];
    return acc == 0;
}

// One step for the larger of u, v (`big`, with d = big - smaller, even): big becomes d with
// its t trailing zeros shifted out, `grow` += `dbl`, then `dbl` is doubled t times. The
// last step has d = 0 and t = 1. Returns t.
template <int N>
__device__ __forceinline__ uint32_t peel(uint32_t (&big)[N], const uint32_t (&d)[N], uint32_t (&grow)[N],
                                         uint32_t (&dbl)[N]) {
    const uint32_t t = is_zero(d) ? 1 : ctz(d);
#pragma unroll
    for (int i = 0; i < N; i++) big[i] = d[i];
    shr(big, t);
    add(grow, dbl);
    shl(dbl, t);
    return t;
}

// y (N + 1 limbs) += the row sum_j (hi[j] 2^32 + lo[j]) 2^(32 j) of 64-bit products: the
// even-j products tile limbs 0..N-1 (carry into y[N]), the odd-j ones limbs 1..N; one
// carry chain each. The caller leaves y[N] room for both carries.
template <int N>
__device__ __forceinline__ void add_row(uint32_t (&y)[N + 1], const uint32_t (&lo)[N], const uint32_t (&hi)[N]) {
    y[0] = ptx::add_cc(y[0], lo[0]);
    y[1] = ptx::addc_cc(y[1], hi[0]);
#pragma unroll
    for (int j = 2; j < N; j += 2) {
        y[j] = ptx::addc_cc(y[j], lo[j]);
        y[j + 1] = ptx::addc_cc(y[j + 1], hi[j]);
    }
    y[N] = ptx::addc(y[N], 0);
    y[1] = ptx::add_cc(y[1], lo[1]);
#pragma unroll
    for (int j = 1; j < N - 1; j += 2) {
        y[j + 1] = ptx::addc_cc(y[j + 1], hi[j]);
        y[j + 2] = ptx::addc_cc(y[j + 2], lo[j + 2]);
    }
    y[N] = ptx::addc(y[N], hi[N - 1]);
}

}  // namespace inv_detail

// x 2^-t mod p for x < 2p (result < 2p): Montgomery steps that add the multiple m p making
// the low bits zero and shift them out, 32 bits at a time, then the last t mod 32.
template <class P>
__device__ __forceinline__ void div_pow2(uint32_t (&x)[P::N], uint32_t t) {
    constexpr int N = P::N;
    while (t > 0) {
        const uint32_t b = t < 32 ? t : 32;
        uint32_t m = x[0] * P::INV;  // x + m p = 0 mod 2^32
        if (b < 32) m &= (1u << b) - 1;
        uint32_t lo[N], hi[N], y[N + 1];
#pragma unroll
        for (int j = 0; j < N; j++) {
            const uint64_t pr = (uint64_t)m * P::mod(j);
            lo[j] = (uint32_t)pr;
            hi[j] = (uint32_t)(pr >> 32);
            y[j] = x[j];
        }
        // y = x + m p in N + 1 limbs (x < 2p and m p < 2^32 p leave the top limb's room)
        y[N] = 0;
        inv_detail::add_row<N>(y, lo, hi);
        if (b == 32) {
#pragma unroll
            for (int j = 0; j < N; j++) x[j] = y[j + 1];
        } else {
#pragma unroll
            for (int j = 0; j < N; j++) x[j] = __funnelshift_r(y[j], y[j + 1], b);
        }
        t -= b;
    }
}

// a^-1 in Montgomery form (0 for 0). `a` holds A = a R mod p (R = 2^(32 N)); the almost-
// inverse gives X = A^-1 2^k, and a^-1 R = A^-1 R^2 = (X R) 2^(32 N - k): one conversion
// to Montgomery form, then a division by 2^(k - 32 N) or, when k < 32 N, a few doublings.
// A bound on the steps keeps an input that is not below p from looping forever (its
// result is then meaningless, never a hang).
template <class P>
__device__ __noinline__ Field<P> field_inverse(const Field<P> a) {
    constexpr int N = P::N;
    using namespace inv_detail;
    if (a.is_zero()) return a;
    uint32_t u[N], v[N], r[N], s[N], d[N];
#pragma unroll
    for (int i = 0; i < N; i++) {
        u[i] = P::mod(i);
        v[i] = a.v[i];
        r[i] = 0;
        s[i] = i == 0;
    }
    uint32_t k = ctz(v);  // r = 0 stays 0 under the doublings
    shr(v, k);
    for (int step = 0; step < 64 * N; step++) {
        if (!sub(d, u, v) && !is_zero(d)) {  // u > v
            k += peel(u, d, r, s);
        } else {
            sub(d, v, u);
            k += peel(v, d, s, r);
            if (is_zero(v)) break;  // v was u = 1
        }
    }
    // X = p - (r mod p) (r < 2p; r = 0 cannot happen for a != 0), then X R 2^(32 N - k).
    Field<P> x;
#pragma unroll
    for (int i = 0; i < N; i++) x.v[i] = r[i];
    x = Field<P>::zero() - Field<P>::reduce_once(x);
    x = x.to_mont();
    if (k >= 32 * N) {
        div_pow2<P>(x.v, k - 32 * N);
        x = Field<P>::reduce_once(x);
    } else {
        for (uint32_t i = k; i < 32 * N; i++) x = x.dbl();
    }
    return x;
}
