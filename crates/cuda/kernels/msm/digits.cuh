// Pippenger's digits: c bits of a scalar (an integer, out of Montgomery form) from bit
// `pos`; msm/msm.cuh and msm/bin_scatter.cuh turn them into signed digits.
#pragma once
#include "ff/bls12_381.cuh"

__device__ __forceinline__ uint32_t scalar_bits(const Fr& k, uint32_t pos, uint32_t c) {
    uint32_t w = pos >> 5, b = pos & 31;
    if (w >= 8) return 0;
    uint64_t lo = k.v[w];
    if (w + 1 < 8) lo |= (uint64_t)k.v[w + 1] << 32;
    return (uint32_t)(lo >> b) & ((1u << c) - 1);
}
