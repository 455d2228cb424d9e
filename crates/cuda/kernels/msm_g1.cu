// G1 MSM kernels (see ec/msm.cuh) and Fq self-test kernels.
#include "ec/msm.cuh"

MSM_KERNELS(g1, Fq, MSM_SUM_BOUNDS, MSM_REDUCE_BOUNDS_G1)

// out[i] = op(x[i], y[i]) on Montgomery Fq values. op: 0 mul, 1 add, 2 sub, 3 neg(x),
// 4 from_mont(x), 5 to_mont(x), 6 sqr(x)
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
        default: r = a.sqr(); break;
    }
    out[i] = r;
}
