// G2 MSM kernels (see ec/msm.cuh) and Fq2 self-test kernels.
#include "ec/msm.cuh"

MSM_KERNELS(g2, Fq2, , )

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
