// The MSMs' curve-independent scalar passes: the split MSM's classification, the
// canonical form the digit passes read, and the binned scatter of msm/bin_scatter.cuh.
#include "ff/bls12_381.cuh"
#include "msm/bin_scatter.cuh"

// Split-MSM classification: the indices of the scalars equal to 1 (Montgomery one) go to
// ones[], those neither 0 nor 1 to others[]; counts[0] / counts[1] count them (zeroed by the
// caller). Warp-aggregated: one atomic per warp and class. The order inside a list is not
// fixed; the sums over them do not depend on it.
extern "C" __global__ void classify_scalars(const Fr* s, uint32_t n, uint32_t* counts, uint32_t* ones,
                                            uint32_t* others) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t cls = 0;
    if (i < n) {
        Fr x = s[i];
        cls = x.is_zero() ? 0 : (x == Fr::one() ? 1 : 2);
    }
    const uint32_t lane = threadIdx.x & 31, below = (1u << lane) - 1;
    const uint32_t m1 = __ballot_sync(0xffffffffu, cls == 1), m2 = __ballot_sync(0xffffffffu, cls == 2);
    uint32_t b1 = 0, b2 = 0;
    if (lane == 0) {
        if (m1) b1 = atomicAdd(&counts[0], __popc(m1));
        if (m2) b2 = atomicAdd(&counts[1], __popc(m2));
    }
    b1 = __shfl_sync(0xffffffffu, b1, 0);
    b2 = __shfl_sync(0xffffffffu, b2, 0);
    if (cls == 1) ones[b1 + __popc(m1 & below)] = i;
    if (cls == 2) others[b2 + __popc(m2 & below)] = i;
}

// The scalars of a Pippenger MSM as integers, in entry order: out[i] = s[idx[i]] (or s[i]
// without a list) out of Montgomery form. The digit passes (msm/msm.cuh) read these.
extern "C" __global__ void msm_canonical(const Fr* s, const uint32_t* idx, uint32_t n, Fr* out) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        out[i] = s[idx ? idx[i] : i].from_mont();
    }
}
