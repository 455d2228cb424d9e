// Short Weierstrass points (a = 0) over a field F (Fq for G1, Fq2 for G2).
// Affine points use blst's layout (x, y; the identity is all zero). Accumulators use
// XYZZ coordinates (x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2; ZZ = 0 is the identity): a mixed
// addition costs 8M + 2S and needs no inversion.
#pragma once
#include "../ff/bls12_381.cuh"

// Loads and stores of points and field elements in 16-byte pieces (LDG.128 / STG.128).
// Element-wise, a point is 24 (G1) or 48 (G2) 4-byte accesses; when a warp's lanes touch
// different points (gathered bases, per-lane chunks) each of those instructions costs the
// L1 a pass per lane, four times as many passes as 16-byte pieces cost. Every type used
// here is a multiple of 16 bytes and every device array of them starts 16-byte aligned.
template <class T>
union Pieces16 {
    T t;
    uint4 v[sizeof(T) / 16];
};
template <class T>
__device__ __forceinline__ T vload(const T* p) {
    static_assert(sizeof(T) % 16 == 0, "16-byte pieces");
    Pieces16<T> u;
    const uint4* s = reinterpret_cast<const uint4*>(p);
#pragma unroll
    for (int i = 0; i < (int)(sizeof(T) / 16); i++) u.v[i] = s[i];
    return u.t;
}
template <class T>
__device__ __forceinline__ void vstore(T* p, const T& x) {
    static_assert(sizeof(T) % 16 == 0, "16-byte pieces");
    Pieces16<T> u;
    u.t = x;
    uint4* d = reinterpret_cast<uint4*>(p);
#pragma unroll
    for (int i = 0; i < (int)(sizeof(T) / 16); i++) d[i] = u.v[i];
}

template <class F>
struct Affine {
    F x, y;
    __device__ __forceinline__ bool is_inf() const { return x.is_zero() && y.is_zero(); }
    __device__ __forceinline__ Affine neg() const { return is_inf() ? *this : Affine{x, y.neg()}; }
};

template <class F>
struct Xyzz {
    F X, Y, ZZ, ZZZ;

    __device__ __forceinline__ static Xyzz inf() { return {F::zero(), F::one(), F::zero(), F::zero()}; }
    __device__ __forceinline__ bool is_inf() const { return ZZ.is_zero(); }
    __device__ __forceinline__ static Xyzz from_affine(const Affine<F>& a) {
        if (a.is_inf()) return inf();
        return {a.x, a.y, F::one(), F::one()};
    }
    __device__ __forceinline__ Xyzz neg() const { return {X, Y.neg(), ZZ, ZZZ}; }

    // dbl-2008-s-1 (a = 0).
    __device__ __forceinline__ Xyzz dbl() const {
        if (is_inf()) return *this;
        F U = Y.dbl();
        F V = U.sqr();
        F W = U * V;
        F S = X * V;
        F X2 = X.sqr();
        F M = X2.dbl() + X2;
        F X3 = M.sqr() - S.dbl();
        F Y3 = M * (S - X3) - W * Y;
        return {X3, Y3, V * ZZ, W * ZZZ};
    }

    // mdbl-2008-s-1: doubling of an affine point.
    __device__ __forceinline__ static Xyzz dbl_affine(const Affine<F>& a) {
        F U = a.y.dbl();
        F V = U.sqr();
        F W = U * V;
        F S = a.x * V;
        F X2 = a.x.sqr();
        F M = X2.dbl() + X2;
        F X3 = M.sqr() - S.dbl();
        F Y3 = M * (S - X3) - W * a.y;
        return {X3, Y3, V, W};
    }

    // madd-2008-s: this + affine.
    __device__ __forceinline__ Xyzz add_affine(const Affine<F>& a) const {
        if (a.is_inf()) return *this;
        if (is_inf()) return from_affine(a);
        F U2 = a.x * ZZ;
        F S2 = a.y * ZZZ;
        F P = U2 - X;
        F R = S2 - Y;
        if (P.is_zero()) {
            if (R.is_zero()) return dbl_affine(a);
            return inf();
        }
        F PP = P.sqr();
        F PPP = P * PP;
        F Q = X * PP;
        F X3 = R.sqr() - PPP - Q.dbl();
        F Y3 = R * (Q - X3) - Y * PPP;
        return {X3, Y3, ZZ * PP, ZZZ * PPP};
    }

    // add-2008-s: this + other.
    __device__ __forceinline__ Xyzz add(const Xyzz& o) const {
        if (o.is_inf()) return *this;
        if (is_inf()) return o;
        F U1 = X * o.ZZ;
        F U2 = o.X * ZZ;
        F S1 = Y * o.ZZZ;
        F S2 = o.Y * ZZZ;
        F P = U2 - U1;
        F R = S2 - S1;
        if (P.is_zero()) {
            if (R.is_zero()) return dbl();
            return inf();
        }
        F PP = P.sqr();
        F PPP = P * PP;
        F Q = U1 * PP;
        F X3 = R.sqr() - PPP - Q.dbl();
        F Y3 = R * (Q - X3) - S1 * PPP;
        return {X3, Y3, ZZ * o.ZZ * PP, ZZZ * o.ZZZ * PPP};
    }

    // this * k for a small non-negative integer k (double-and-add).
    __device__ __forceinline__ Xyzz mul_small(uint32_t k) const {
        Xyzz r = inf(), b = *this;
        while (k) {
            if (k & 1) r = r.add(b);
            b = b.dbl();
            k >>= 1;
        }
        return r;
    }
};

typedef Affine<Fq> G1A;
typedef Xyzz<Fq> G1X;
typedef Affine<Fq2> G2A;
typedef Xyzz<Fq2> G2X;
