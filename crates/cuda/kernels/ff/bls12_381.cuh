// BLS12-381 moduli: Fr (scalar field, 255 bits) and Fq (base field, 381 bits), Fq2.
#pragma once
#include "field.cuh"

struct FrParams {
    static constexpr int N = 8;
    static constexpr uint32_t INV = 0xffffffffu;  // -r^-1 mod 2^32
    static constexpr bool LOW_ONE_MINUS_ONE = true;  // limbs 0, 1 of r: 1, 2^32 - 1
    __device__ __forceinline__ static uint32_t mod(int i) {
        const uint32_t t[8] = {0x00000001, 0xffffffff, 0xfffe5bfe, 0x53bda402,
                                        0x09a1d805, 0x3339d808, 0x299d7d48, 0x73eda753};
        return t[i];
    }
    __device__ __forceinline__ static uint32_t one(int i) {
        const uint32_t t[8] = {0xfffffffe, 0x00000001, 0x00034802, 0x5884b7fa,
                                        0xecbc4ff5, 0x998c4fef, 0xacc5056f, 0x1824b159};
        return t[i];
    }
    __device__ __forceinline__ static uint32_t r2(int i) {
        const uint32_t t[8] = {0xf3f29c6d, 0xc999e990, 0x87925c23, 0x2b6cedcb,
                                       0x7254398f, 0x05d31496, 0x9f59ff11, 0x0748d9d9};
        return t[i];
    }
};

struct FqParams {
    static constexpr int N = 12;
    static constexpr uint32_t INV = 0xfffcfffdu;  // -p^-1 mod 2^32
    static constexpr bool LOW_ONE_MINUS_ONE = false;
    __device__ __forceinline__ static uint32_t mod(int i) {
        const uint32_t t[12] = {0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe,
                                         0xf6b0f624, 0x6730d2a0, 0xf38512bf, 0x64774b84,
                                         0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
        return t[i];
    }
    __device__ __forceinline__ static uint32_t one(int i) {
        const uint32_t t[12] = {0x0002fffd, 0x76090000, 0xc40c0002, 0xebf4000b,
                                         0x53c758ba, 0x5f489857, 0x70525745, 0x77ce5853,
                                         0xa256ec6d, 0x5c071a97, 0xfa80e493, 0x15f65ec3};
        return t[i];
    }
    __device__ __forceinline__ static uint32_t r2(int i) {
        const uint32_t t[12] = {0x1c341746, 0xf4df1f34, 0x09d104f1, 0x0a76e6a6,
                                        0x4c95b6d5, 0x8de5476c, 0x939d83c0, 0x67eb88a9,
                                        0xb519952d, 0x9a793e85, 0x92cae3aa, 0x11988fe5};
        return t[i];
    }
};

typedef Field<FrParams> Fr;
typedef Field<FqParams> Fq;

// Fq products for Fq2: the Fq product is already out of line (field.cuh).
__device__ __forceinline__ Fq fq_mul_call(Fq a, Fq b) { return a * b; }

// Fq2 = Fq[u]/(u^2 + 1), blst layout (c0, c1).
struct Fq2 {
    Fq c0, c1;
    __device__ __forceinline__ static Fq2 zero() { return {Fq::zero(), Fq::zero()}; }
    __device__ __forceinline__ static Fq2 one() { return {Fq::one(), Fq::zero()}; }
    __device__ __forceinline__ bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    __device__ __forceinline__ bool operator==(const Fq2& o) const { return c0 == o.c0 && c1 == o.c1; }
    __device__ __forceinline__ bool operator!=(const Fq2& o) const { return !(*this == o); }
    __device__ __forceinline__ friend Fq2 operator+(const Fq2& a, const Fq2& b) {
        return {a.c0 + b.c0, a.c1 + b.c1};
    }
    __device__ __forceinline__ friend Fq2 operator-(const Fq2& a, const Fq2& b) {
        return {a.c0 - b.c0, a.c1 - b.c1};
    }
    __device__ __forceinline__ Fq2 neg() const { return {c0.neg(), c1.neg()}; }
    __device__ __forceinline__ Fq2 dbl() const { return {c0.dbl(), c1.dbl()}; }
    // Karatsuba: 3 Fq products.
    __device__ __forceinline__ friend Fq2 operator*(const Fq2& a, const Fq2& b) {
        Fq t0 = fq_mul_call(a.c0, b.c0), t1 = fq_mul_call(a.c1, b.c1);
        Fq t2 = fq_mul_call(a.c0 + a.c1, b.c0 + b.c1);
        return {t0 - t1, t2 - t0 - t1};
    }
    __device__ __forceinline__ Fq2 sqr() const {
        Fq t = fq_mul_call(c0, c1);
        return {fq_mul_call(c0 + c1, c0 - c1), t.dbl()};
    }
};
