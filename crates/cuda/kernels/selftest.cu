// Kernels off the production path, loaded only by tests and gpu_bench
// (Gpu::open_selftest): the field self-tests, out[i] = op(x[i], y[i]) over Fr, Fq and Fq2
// compared with blstrs on the host (tests/field.rs), and gpu_bench's random scalars.
#include "ff/ops.cuh"

// out[i] = field_op(x[i], y[i], op) over Fr and over Fq.
extern "C" __global__ void fr_test_op(Fr* out, const Fr* x, const Fr* y, uint32_t n, uint32_t op) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = field_op(x[i], y[i], op);
}
extern "C" __global__ void fq_test_op(Fq* out, const Fq* x, const Fq* y, uint32_t n, uint32_t op) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = field_op(x[i], y[i], op);
}

// out[i] = field_op(x[i], y[i], op) on Montgomery Fq2 values.
extern "C" __global__ void fq2_test_op(Fq2* out, const Fq2* x, const Fq2* y, uint32_t n, uint32_t op) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = field_op(x[i], y[i], op);
}

__device__ __forceinline__ unsigned long long splitmix64(unsigned long long x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Synthetic scalars for benchmarks (Montgomery form). mode 0: uniform; mode 1: a Filecoin
// witness mix (51 % zero, 47 % one, 2 % uniform).
extern "C" __global__ void fr_random(Fr* out, uint32_t n, unsigned long long seed, uint32_t mode) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long h = splitmix64(seed ^ ((unsigned long long)i << 20));
    if (mode == 1) {
        uint32_t r = (uint32_t)(h % 100);
        if (r < 51) { out[i] = Fr::zero(); return; }
        if (r < 98) { out[i] = Fr::one(); return; }
    }
    Fr v;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        h = splitmix64(h + k);
        v.v[2 * k] = (uint32_t)h;
        v.v[2 * k + 1] = (uint32_t)(h >> 32);
    }
    v.v[7] &= 0x7fffffffu;  // < 2^255 < 2r
    out[i] = Fr::reduce_once(v).to_mont();
}
