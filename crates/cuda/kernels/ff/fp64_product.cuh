// A Montgomery product on the FP64 pipe: the operands in 48-bit limbs held exactly in
// doubles, each 96-bit partial product split by two fused multiply-adds into its high and
// low 48 bits, the pieces summed as integers (their bit patterns) in 64-bit columns.
//
// The split of x y (x, y < 2^48, exact doubles), with C1 = 2^100 and C2 = 2^100 + 2^52:
//   h = fma_rz(x, y, C1)  = 2^100 + floor(x y / 2^48) 2^48 (x y < 2^96: the sum stays in
//                           [2^100, 2^101), whose unit is 2^48)
//   l = fma(x, y, C2 - h) = 2^52 + (x y mod 2^48) (exact: in [2^52, 2^53), unit 1)
// The bit pattern of h is HI_K + floor(x y / 2^48), that of l is LO_K + (x y mod 2^48).
// Column k collects the low pieces of the products i + j = k and the high pieces of
// i + j = k - 1; it starts at minus the offsets it will receive (mod 2^64), so once
// complete it holds the exact sum (< 2^54); the offsets' low 48 bits are zero.
//
// Montgomery reduction in base 2^48 with R = 2^(32 N), the 32-bit-limb product's R, so the
// rest of the code is unchanged: FULL = floor(32 N / 48) rounds take m = col_k (-p^-1) mod
// 2^48, add m p at column k and carry col_k >> 48 on; where 32 N is not a multiple of 48
// (Fr: 256 = 5 x 48 + 16) one more round takes the last PART bits of m, and the result is
// the columns from FULL on, shifted right by PART bits. With a, b < p the result is below
// 2p: (a b + M p) / R < p (p / R + 1).
//
// The multiplier's work moves from IMAD.WIDE (half rate, shared with every other integer
// multiply) to DFMA, a pipe of its own; the column additions stay on the ALU.
#pragma once
#include <stdint.h>

namespace fp64 {
constexpr uint64_t MASK48 = (1ull << 48) - 1;
constexpr uint64_t LO_K = 0x4330000000000000ull;  // bit pattern of 2^52
constexpr uint64_t HI_K = 0x4630000000000000ull;  // bit pattern of 2^100
constexpr double TWO52 = 4503599627370496.0;
constexpr double C1 = 1267650600228229401496703205376.0;  // 2^100
constexpr double C2 = C1 + TWO52;

// Limbs of an N-word element, full reduction rounds, bits of the partial round.
template <int N>
struct Shape {
    static constexpr int L = (32 * N + 47) / 48;
    static constexpr int FULL = 32 * N / 48;
    static constexpr int PART = 32 * N - 48 * FULL;
};

// Products (i, j), i, j < L, with i + j = k: each column gets that many low pieces from
// a b, as many from the reduction's m p, and the high pieces of column k - 1's.
template <int L>
__host__ __device__ constexpr int pairs_in_column(int k) {
    return k < 0 || k > 2 * L - 2 ? 0 : (k < L ? k + 1 : 2 * L - 1 - k);
}
template <int L>
__host__ __device__ constexpr uint64_t column_start(int k) {
    return 0ull - (uint64_t)(2 * pairs_in_column<L>(k)) * LO_K - (uint64_t)(2 * pairs_in_column<L>(k - 1)) * HI_K;
}

__device__ __forceinline__ double exact(uint64_t x48) { return __longlong_as_double((long long)(LO_K | x48)) - TWO52; }

// Bits [b, b + 48) of the N words w (zero past the end).
template <int N>
__device__ __forceinline__ uint64_t bits48(const uint32_t (&w)[N], int b) {
    const int q = b / 32, o = b % 32;
    uint64_t v = (uint64_t)w[q] >> o;
    if (q + 1 < N) v |= (uint64_t)w[q + 1] << (32 - o);
    if (o > 16 && q + 2 < N) v |= (uint64_t)w[q + 2] << (64 - o);
    return v & MASK48;
}

template <int N>
__device__ __forceinline__ void to_limbs(const uint32_t (&w)[N], double (&d)[Shape<N>::L]) {
#pragma unroll
    for (int q = 0; q < Shape<N>::L; q++) d[q] = exact(bits48<N>(w, 48 * q));
}

template <int C>
__device__ __forceinline__ void add_product(uint64_t (&col)[C], int k, double x, double y) {
    const double h = __fma_rz(x, y, C1);
    const double l = __fma_rn(x, y, C2 - h);
    col[k] += (uint64_t)__double_as_longlong(l);
    col[k + 1] += (uint64_t)__double_as_longlong(h);
}

// The moduli for mont_mul: N 32-bit words, -p^-1 mod 2^48, p's 48-bit limbs.
struct Fr48 {
    static constexpr int N = 8;
    static constexpr uint64_t INV48 = 0xfffeffffffffull;
    __host__ __device__ static uint64_t limb(int j) {
        const uint64_t t[6] = {0xffff00000001ull, 0xfffe5bfeffffull, 0xd80553bda402ull,
                               0x3339d80809a1ull, 0xa753299d7d48ull, 0x73edull};
        return t[j];
    }
};
struct Fq48 {
    static constexpr int N = 12;
    static constexpr uint64_t INV48 = 0xfffcfffcfffdull;
    __host__ __device__ static uint64_t limb(int j) {
        const uint64_t t[8] = {0xffffffffaaabull, 0xb153ffffb9feull, 0xf6241eabfffeull, 0x6730d2a0f6b0ull,
                               0x4b84f38512bfull, 0x434bacd76477ull, 0xe69a4b1ba7b6ull, 0x1a0111ea397full};
        return t[j];
    }
};

// r = a b / 2^(32 N) mod p, r < 2p, for a, b < p (P: Fr48 or Fq48).
template <class P>
__device__ __forceinline__ void mont_mul(const uint32_t (&a)[P::N], const uint32_t (&b)[P::N], uint32_t (&r)[P::N]) {
    constexpr int N = P::N, L = Shape<N>::L, FULL = Shape<N>::FULL, PART = Shape<N>::PART, C = 2 * L;
    double da[L], db[L];
    to_limbs<N>(a, da);
    to_limbs<N>(b, db);
    uint64_t col[C];
#pragma unroll
    for (int k = 0; k < C; k++) col[k] = column_start<L>(k);
#pragma unroll
    for (int i = 0; i < L; i++) {
#pragma unroll
        for (int j = 0; j < L; j++) add_product(col, i + j, da[i], db[j]);
    }
#pragma unroll
    for (int k = 0; k < FULL; k++) {
        const double m = exact((col[k] * P::INV48) & MASK48);
#pragma unroll
        for (int j = 0; j < L; j++) add_product(col, k + j, m, (double)P::limb(j));
        col[k + 1] += col[k] >> 48;
    }
    if constexpr (PART > 0) {
        const double m = exact((col[FULL] * P::INV48) & ((1ull << PART) - 1));
#pragma unroll
        for (int j = 0; j < L; j++) add_product(col, FULL + j, m, (double)P::limb(j));
    }
    // The columns from FULL on as 48-bit limbs (the result times 2^PART, below 2^(32 N +
    // PART) <= 2^(48 L)), then the words above the PART low bits.
    uint64_t l[L], carry = 0;
#pragma unroll
    for (int i = 0; i < L; i++) {
        const uint64_t v = col[FULL + i] + carry;
        l[i] = v & MASK48;
        carry = v >> 48;
    }
#pragma unroll
    for (int w = 0; w < N; w++) {
        const int b = 32 * w + PART, q = b / 48, o = b % 48;
        uint64_t v = l[q] >> o;
        if (o > 16 && q + 1 < L) v |= l[q + 1] << (48 - o);
        r[w] = (uint32_t)v;
    }
}
}  // namespace fp64
