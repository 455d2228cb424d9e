// Self-test kernels of the field arithmetic, loaded only by tests (Gpu::open_selftest):
// out[i] = op(x[i], y[i]) over Fr, Fq and Fq2, compared with blstrs on the host
// (tests/field.rs).
#include "ff/bls12_381.cuh"
#include "ff/inverse.cuh"

// out[i] = op(x[i], y[i]) on Montgomery Fr values.
// op: 0 mul, 1 add, 2 sub, 3 neg(x), 4 from_mont(x), 5 to_mont(x), 6 sqr(x)
extern "C" __global__ void fr_test_op(Fr* out, const Fr* x, const Fr* y, uint32_t n, uint32_t op) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Fr a = x[i], b = y[i], r;
    switch (op) {
        case 0: r = a * b; break;
        case 1: r = a + b; break;
        case 2: r = a - b; break;
        case 3: r = a.neg(); break;
        case 4: r = a.from_mont(); break;
        case 5: r = a.to_mont(); break;
        default: r = a.sqr(); break;
    }
    out[i] = r;
}

// out[i] = op(x[i], y[i]) on Montgomery Fq values. op: 0 mul, 1 add, 2 sub, 3 neg(x),
// 4 from_mont(x), 5 to_mont(x), 6 sqr(x), 7 x^-1 (0 for 0)
extern "C" __global__ void fq_test_op(Fq* out, const Fq* x, const Fq* y, uint32_t n, uint32_t op) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Fq a = x[i], b = y[i], r;
    switch (op) {
        case 0: r = a * b; break;
        case 1: r = a + b; break;
        case 2: r = a - b; break;
        case 3: r = a.neg(); break;
        case 4: r = a.from_mont(); break;
        case 5: r = a.to_mont(); break;
        case 6: r = a.sqr(); break;
        default: r = field_inverse(a); break;
    }
    out[i] = r;
}

// out[i] = op(x[i], y[i]) on Montgomery Fq2 values. op: 0 mul, 1 add, 2 sub, 3 neg(x), 6 sqr(x)
extern "C" __global__ void fq2_test_op(Fq2* out, const Fq2* x, const Fq2* y, uint32_t n, uint32_t op) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Fq2 a = x[i], b = y[i], r;
    switch (op) {
        case 0: r = a * b; break;
        case 1: r = a + b; break;
        case 2: r = a - b; break;
        case 3: r = a.neg(); break;
        default: r = a.sqr(); break;
    }
    out[i] = r;
}
