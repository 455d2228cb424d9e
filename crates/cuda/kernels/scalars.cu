// Scalar-side helpers: u32 exclusive scan (bucket offsets, density prefixes) and the
// gather of the witness values whose density bit is set. The MSMs' own scalar passes are
// in msm/msm_scalars.cu.
#include "ff/bls12_381.cuh"

#define SCAN_BLOCK 1024

// Exclusive scan of 1024-element chunks; block_sums[b] = the chunk's total.
extern "C" __global__ void scan_blocks(const uint32_t* in, uint32_t* out, uint32_t n, uint32_t* block_sums) {
    __shared__ uint32_t sm[SCAN_BLOCK];
    uint32_t i = blockIdx.x * SCAN_BLOCK + threadIdx.x;
    uint32_t x = i < n ? in[i] : 0;
    sm[threadIdx.x] = x;
    __syncthreads();
    for (uint32_t off = 1; off < SCAN_BLOCK; off <<= 1) {
        uint32_t y = threadIdx.x >= off ? sm[threadIdx.x - off] : 0;
        __syncthreads();
        sm[threadIdx.x] += y;
        __syncthreads();
    }
    if (i < n) out[i] = sm[threadIdx.x] - x;
    if (threadIdx.x == SCAN_BLOCK - 1) block_sums[blockIdx.x] = sm[threadIdx.x];
}

// In-place exclusive scan of the block sums, by one block in chunks with a carry.
extern "C" __global__ void scan_sums(uint32_t* s, uint32_t n) {
    __shared__ uint32_t sm[SCAN_BLOCK];
    __shared__ uint32_t carry;
    if (threadIdx.x == 0) carry = 0;
    for (uint32_t base = 0; base < n; base += SCAN_BLOCK) {
        uint32_t i = base + threadIdx.x;
        uint32_t x = i < n ? s[i] : 0;
        sm[threadIdx.x] = x;
        __syncthreads();
        for (uint32_t off = 1; off < SCAN_BLOCK; off <<= 1) {
            uint32_t y = threadIdx.x >= off ? sm[threadIdx.x - off] : 0;
            __syncthreads();
            sm[threadIdx.x] += y;
            __syncthreads();
        }
        if (i < n) s[i] = carry + sm[threadIdx.x] - x;
        __syncthreads();
        if (threadIdx.x == SCAN_BLOCK - 1) carry += sm[threadIdx.x];
        __syncthreads();
    }
}

extern "C" __global__ void scan_add(uint32_t* out, uint32_t n, const uint32_t* block_sums) {
    uint32_t i = blockIdx.x * SCAN_BLOCK + threadIdx.x;
    if (i < n) out[i] += block_sums[blockIdx.x];
}

extern "C" __global__ void density_popcount(const unsigned long long* words, uint32_t nwords, uint32_t* out) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nwords) out[i] = __popcll(words[i]);
}

// dst[rank of bit i among set bits] = src[i] for every set bit i < nbits.
extern "C" __global__ void density_gather(const Fr* src, const unsigned long long* words, const uint32_t* prefix,
                                          uint32_t nbits, Fr* dst) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nbits) return;
    unsigned long long w = words[i >> 6];
    uint32_t b = i & 63;
    if (!((w >> b) & 1ull)) return;
    uint32_t below = __popcll(w & ((1ull << b) - 1ull));
    dst[prefix[i >> 6] + below] = src[i];
}
