// Fixed-base multiplication of the standard generators, for parameter generation (driver
// and design: src/fixed_base.rs).
//
// Table: `windows` rows of `half` = 2^(w-1) affine points, row k entry j-1 = j 2^(w k) G
// (G the generator), made by fb_table from two small host tables per row.
// Multiplication: one thread per scalar; the scalar leaves Montgomery form, is recoded
// window by window into signed digits in (-2^(w-1), 2^(w-1)] (the recoding of
// src/keygen/fixed_base.rs in filprove-groth16, digit for digit), and each non-zero digit
// is one mixed addition XYZZ += affine (the table entry, negated for a negative digit).
// The next window's entry is loaded before the current addition. Doublings and
// cancellations are handled by Xyzz::add_affine (they cannot be ruled out for every
// scalar at the top window).
// To affine: one thread per FB_BATCH points, one field inversion per thread (Montgomery's
// trick on ZZZ): x = X / ZZ, y = Y / ZZZ with 1/ZZ = (ZZ / ZZZ)^2 (ZZ^3 = ZZZ^2 in XYZZ
// form). The identity (ZZZ = 0) is written as all-zero limbs, blst's identity.
#include "ec/xyzz.cuh"
#include "ff/inverse.cuh"
#include "msm/digits.cuh"

// Points per thread in fb_affine and fb_table (one inversion each). FB_BATCH in
// src/fixed_base.rs must match.
#define FB_BATCH 32

// Launch bounds of the G1 multiplication (blocks of 128 threads, at least 3 per SM): as
// the MSM's bucket sums (msm/msm.cuh), a loop of XYZZ += affine additions with the Fq
// product out of line.
#define FB_MUL_BOUNDS __launch_bounds__(128, 3)

__device__ __forceinline__ Fq fb_inv(const Fq& a) { return field_inverse(a); }

// (c0 + c1 u)^-1 = (c0 - c1 u) / (c0^2 + c1^2), as u^2 = -1; the norm is in Fq.
__device__ __forceinline__ Fq2 fb_inv(const Fq2& a) {
    const Fq t = field_inverse(a.c0.sqr() + a.c1.sqr());
    return {a.c0 * t, (a.c1 * t).neg()};
}

// One signed digit: the magnitude (0..=half) and its sign.
struct FbDigit {
    uint32_t mag;
    bool neg;
};

// Digit of window `win` (bits win*w .. win*w + w - 1 of k, plus the carry of the window
// below); updates the carry. v in [0, 2^w]: v > half becomes v - 2^w with a carry.
__device__ __forceinline__ FbDigit fb_digit(const Fr& k, uint32_t win, uint32_t w, uint32_t half, uint32_t& carry) {
    const uint32_t v = scalar_bits(k, win * w, w) + carry;
    if (v > half) {
        carry = 1;
        return {(1u << w) - v, true};
    }
    carry = 0;
    return {v, false};
}

template <class F>
__device__ __forceinline__ void fb_mul(const Affine<F>* table, uint32_t w, uint32_t windows, const Fr* scalars,
                                       uint32_t n, Xyzz<F>* out) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const Fr k = scalars[i].from_mont();
    const uint32_t half = 1u << (w - 1);
    Xyzz<F> acc = Xyzz<F>::inf();
    uint32_t carry = 0;
    FbDigit d = fb_digit(k, 0, w, half, carry);
    Affine<F> e = {F::zero(), F::zero()};
    if (d.mag) e = vload(&table[d.mag - 1]);
#pragma unroll 1
    for (uint32_t win = 0; win < windows; win++) {
        FbDigit dn = {0, false};
        Affine<F> en = e;
        if (win + 1 < windows) {
            dn = fb_digit(k, win + 1, w, half, carry);
            if (dn.mag) en = vload(&table[(uint64_t)(win + 1) * half + dn.mag - 1]);
        }
        if (d.mag) acc = acc.add_affine(d.neg ? Affine<F>{e.x, e.y.neg()} : e);
        d = dn;
        e = en;
    }
    vstore(&out[i], acc);
}

template <class F>
__device__ __forceinline__ void fb_affine(const Xyzz<F>* in, uint32_t n, Affine<F>* out) {
    const uint64_t T = (uint64_t)gridDim.x * blockDim.x;
    const uint64_t gid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    F pre[FB_BATCH];  // pre[j] = z_0 * ... * z_j (local memory)
    F acc = F::one();
    int m = 0;
#pragma unroll 1
    for (int j = 0; j < FB_BATCH; j++) {
        const uint64_t i = gid + (uint64_t)j * T;
        if (i >= n) break;
        F z = in[i].ZZZ;
        if (z.is_zero()) z = F::one();  // the identity: kept out of the product
        acc = acc * z;
        pre[j] = acc;
        m = j + 1;
    }
    if (m == 0) return;
    F r = fb_inv(acc);  // (z_0 * ... * z_{m-1})^-1
#pragma unroll 1
    for (int j = m - 1; j >= 0; j--) {
        const uint64_t i = gid + (uint64_t)j * T;
        const Xyzz<F> p = vload(&in[i]);
        if (p.ZZZ.is_zero()) {
            vstore(&out[i], Affine<F>{F::zero(), F::zero()});
            continue;
        }
        const F zzz_inv = j > 0 ? r * pre[j - 1] : r;
        r = r * p.ZZZ;  // now (z_0 .. z_{j-1})^-1
        const F zz_inv = (p.ZZ * zzz_inv).sqr();
        vstore(&out[i], Affine<F>{p.X * zz_inv, p.Y * zzz_inv});
    }
}

// out[k * half + j - 1] = j 2^(w k) G for k < windows, 1 <= j <= half: with j = a + b 2^lo
// (a < 2^lo), the sum of a[k * na + a] = a 2^(w k) G and b[k * nb + b] = b 2^(lo + w k) G
// (na = 2^lo; index 0 of both is the identity and never added). For a, b > 0 the two
// points are not +-each other (a != +-b 2^lo mod r), so the chord addition is defined;
// a zero denominator all the same is counted in *bad and the entry written as the
// identity (the host then fails). FB_BATCH entries per thread, one inversion.
template <class F>
__device__ __forceinline__ void fb_table(const Affine<F>* ta, const Affine<F>* tb, uint32_t lo, uint32_t nb,
                                         uint32_t half, uint32_t windows, Affine<F>* out, uint32_t* bad) {
    const uint64_t T = (uint64_t)gridDim.x * blockDim.x;
    const uint64_t gid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t total = (uint64_t)windows * half;
    const uint32_t na = 1u << lo;
    F pre[FB_BATCH];
    F acc = F::one();
    int m = 0;
#pragma unroll 1
    for (int j = 0; j < FB_BATCH; j++) {
        const uint64_t e = gid + (uint64_t)j * T;
        if (e >= total) break;
        const uint32_t k = (uint32_t)(e / half), jj = (uint32_t)(e % half) + 1;
        const uint32_t a = jj & (na - 1), b = jj >> lo;
        F d = F::one();
        if (a && b) {
            d = tb[(uint64_t)k * nb + b].x - ta[(uint64_t)k * na + a].x;
            if (d.is_zero()) d = F::one();  // degenerate: kept out of the product (pass 2)
        }
        acc = acc * d;
        pre[j] = acc;
        m = j + 1;
    }
    if (m == 0) return;
    F r = fb_inv(acc);
#pragma unroll 1
    for (int j = m - 1; j >= 0; j--) {
        const uint64_t e = gid + (uint64_t)j * T;
        const uint32_t k = (uint32_t)(e / half), jj = (uint32_t)(e % half) + 1;
        const uint32_t a = jj & (na - 1), b = jj >> lo;
        const Affine<F> p = ta[(uint64_t)k * na + a], q = tb[(uint64_t)k * nb + b];
        if (!b) {
            vstore(&out[e], p);
            continue;
        }
        if (!a) {
            vstore(&out[e], q);
            continue;
        }
        const F d = q.x - p.x;
        if (d.is_zero()) {
            atomicAdd(bad, 1u);
            vstore(&out[e], Affine<F>{F::zero(), F::zero()});
            continue;
        }
        const F dinv = j > 0 ? r * pre[j - 1] : r;
        r = r * d;
        const F lam = (q.y - p.y) * dinv;
        const F x3 = lam.sqr() - p.x - q.x;
        const F y3 = lam * (p.x - x3) - p.y;
        vstore(&out[e], Affine<F>{x3, y3});
    }
}

extern "C" __global__ void g1_fb_table(const G1A* ta, const G1A* tb, uint32_t lo, uint32_t nb, uint32_t half,
                                       uint32_t windows, G1A* out, uint32_t* bad) {
    fb_table<Fq>(ta, tb, lo, nb, half, windows, out, bad);
}
extern "C" __global__ void FB_MUL_BOUNDS g1_fb_mul(const G1A* table, uint32_t w, uint32_t windows, const Fr* scalars,
                                                   uint32_t n, G1X* out) {
    fb_mul<Fq>(table, w, windows, scalars, n, out);
}
extern "C" __global__ void g1_fb_affine(const G1X* in, uint32_t n, G1A* out) { fb_affine<Fq>(in, n, out); }

// out[i] = 2^k in[i] in XYZZ form, by k doublings (the second half of the folded H bases,
// src/folded.rs; g1_fb_affine then takes them to affine form). One thread per point.
extern "C" __global__ void FB_MUL_BOUNDS g1_fb_shift(const G1A* in, uint32_t n, uint32_t k, G1X* out) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    G1X p = G1X::from_affine(vload(&in[i]));
#pragma unroll 1
    for (uint32_t j = 0; j < k; j++) p = p.dbl();
    vstore(&out[i], p);
}

extern "C" __global__ void g2_fb_table(const G2A* ta, const G2A* tb, uint32_t lo, uint32_t nb, uint32_t half,
                                       uint32_t windows, G2A* out, uint32_t* bad) {
    fb_table<Fq2>(ta, tb, lo, nb, half, windows, out, bad);
}
extern "C" __global__ void g2_fb_mul(const G2A* table, uint32_t w, uint32_t windows, const Fr* scalars, uint32_t n,
                                     G2X* out) {
    fb_mul<Fq2>(table, w, windows, scalars, n, out);
}
extern "C" __global__ void g2_fb_affine(const G2X* in, uint32_t n, G2A* out) { fb_affine<Fq2>(in, n, out); }
