// The Fq Montgomery product on the FP64 pipe: 8 limbs of 48 bits held exactly in doubles,
// each 96-bit partial product split by two fused multiply-adds into its high and low 48
// bits, the pieces summed as integers (their bit patterns) in 64-bit columns.
//
// The split of x y (x, y < 2^48, exact doubles), with C1 = 2^100 and C2 = 2^100 + 2^52:
//   h = fma_rz(x, y, C1)  = 2^100 + floor(x y / 2^48) 2^48 (x y < 2^96: the sum stays in
//                           [2^100, 2^101), whose unit is 2^48)
//   l = fma(x, y, C2 - h) = 2^52 + (x y mod 2^48) (exact: in [2^52, 2^53), unit 1)
// The bit pattern of h is HI_K + floor(x y / 2^48), that of l is LO_K + (x y mod 2^48).
// Column k collects the low pieces of the products i + j = k and the high pieces of
// i + j = k - 1; it starts at minus the offsets it will receive (mod 2^64), so once
// complete it holds the exact sum (< 2^54); the offsets' low 48 bits are zero.
// Montgomery reduction in base 2^48 (R = 2^384, as for the 32-bit-limb product): round k
// takes m = col_k (-p^-1) mod 2^48, adds m p at column k and carries col_k >> 48 on.
//
// Measured against mont_mul_eo (docs/decisions/005-field-products.md): faster alone
// (mulbench), slower inside the MSM kernels. Kept in history only.
#pragma once
#include <stdint.h>

namespace fp64 {
constexpr uint64_t MASK48 = (1ull << 48) - 1;
constexpr uint64_t LO_K = 0x4330000000000000ull;  // bit pattern of 2^52
constexpr uint64_t HI_K = 0x4630000000000000ull;  // bit pattern of 2^100
constexpr double TWO52 = 4503599627370496.0;
constexpr double C1 = 1267650600228229401496703205376.0;  // 2^100
constexpr double C2 = C1 + TWO52;

__host__ __device__ constexpr int pairs_in_column(int k) { return k < 0 || k > 14 ? 0 : (k < 8 ? k + 1 : 15 - k); }
__host__ __device__ constexpr uint64_t column_start(int k) {
    return 0ull - (uint64_t)(2 * pairs_in_column(k)) * LO_K - (uint64_t)(2 * pairs_in_column(k - 1)) * HI_K;
}

__device__ __forceinline__ double exact(uint64_t x48) { return __longlong_as_double((long long)(LO_K | x48)) - TWO52; }

__device__ __forceinline__ void to_limbs(const uint32_t (&w)[12], double (&d)[8]) {
#pragma unroll
    for (int q = 0; q < 4; q++) {
        const uint32_t w0 = w[3 * q], w1 = w[3 * q + 1], w2 = w[3 * q + 2];
        d[2 * q] = exact((uint64_t)w0 | ((uint64_t)(w1 & 0xffffu) << 32));
        d[2 * q + 1] = exact((uint64_t)(w1 >> 16) | ((uint64_t)w2 << 16));
    }
}

__device__ __forceinline__ void add_product(uint64_t (&col)[16], int k, double x, double y) {
    const double h = __fma_rz(x, y, C1);
    const double l = __fma_rn(x, y, C2 - h);
    col[k] += (uint64_t)__double_as_longlong(l);
    col[k + 1] += (uint64_t)__double_as_longlong(h);
}

// r = a b / 2^384 mod p, r < 2p, for a, b < p.
template <class P>
__device__ __forceinline__ void mont_mul(const uint32_t (&a)[12], const uint32_t (&b)[12], uint32_t (&r)[12]) {
    double da[8], db[8];
    to_limbs(a, da);
    to_limbs(b, db);
    uint64_t col[16];
#pragma unroll
    for (int k = 0; k < 16; k++) col[k] = column_start(k);
#pragma unroll
    for (int i = 0; i < 8; i++) {
#pragma unroll
        for (int j = 0; j < 8; j++) add_product(col, i + j, da[i], db[j]);
    }
#pragma unroll
    for (int k = 0; k < 8; k++) {
        const double m = exact((col[k] * P::INV48) & MASK48);
#pragma unroll
        for (int j = 0; j < 8; j++) add_product(col, k + j, m, P::limb48(j));
        col[k + 1] += col[k] >> 48;
    }
    uint64_t l[8], carry = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const uint64_t v = col[8 + i] + carry;
        l[i] = v & MASK48;
        carry = v >> 48;
    }
#pragma unroll
    for (int q = 0; q < 4; q++) {
        r[3 * q] = (uint32_t)l[2 * q];
        r[3 * q + 1] = (uint32_t)(l[2 * q] >> 32) | (uint32_t)(l[2 * q + 1] << 16);
        r[3 * q + 2] = (uint32_t)(l[2 * q + 1] >> 16);
    }
}
}  // namespace fp64
