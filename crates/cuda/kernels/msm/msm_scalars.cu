// The MSMs' curve-independent scalar passes: the split MSM's classification, the
// canonical form the digit passes read, and the binned scatter of msm/bin_scatter.cuh.
#include "ff/bls12_381.cuh"
#include "msm/bin_scatter.cuh"

// Split-MSM classification: the indices of the scalars equal to 1 (Montgomery one) go to
// ones[], those neither 0 nor 1 to others[]; counts[0] / counts[1] count them (zeroed by the
// caller). Block-aggregated: each warp counts its classes by ballots, the block's first
// thread sums the warps' counts and takes the block's places in each list with one atomic
// per class (one per warp contended on the two counters and made this pass a sixth as
// fast as its memory allows). Any block size that is a multiple of 32 up to 1,024. The
// order inside a list is not fixed; the sums over them do not depend on it.
extern "C" __global__ void __launch_bounds__(1024) classify_scalars(const Fr* s, uint32_t n, uint32_t* counts, uint32_t* ones,
                                            uint32_t* others) {
    __shared__ uint32_t warp_base[2][32];
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t cls = 0;
    if (i < n) {
        const Fr x = s[i];
        cls = x.is_zero() ? 0 : (x == Fr::one() ? 1 : 2);
    }
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5, below = (1u << lane) - 1;
    const uint32_t m1 = __ballot_sync(0xffffffffu, cls == 1), m2 = __ballot_sync(0xffffffffu, cls == 2);
    if (lane == 0) {
        warp_base[0][warp] = __popc(m1);
        warp_base[1][warp] = __popc(m2);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        // The warps' counts become their offsets; the block's totals are added to the
        // counters, whose old values are the block's bases.
        uint32_t t1 = 0, t2 = 0;
        for (uint32_t w = 0; w < blockDim.x >> 5; w++) {
            const uint32_t c1 = warp_base[0][w], c2 = warp_base[1][w];
            warp_base[0][w] = t1;
            warp_base[1][w] = t2;
            t1 += c1;
            t2 += c2;
        }
        const uint32_t b1 = t1 ? atomicAdd(&counts[0], t1) : 0, b2 = t2 ? atomicAdd(&counts[1], t2) : 0;
        for (uint32_t w = 0; w < blockDim.x >> 5; w++) {
            warp_base[0][w] += b1;
            warp_base[1][w] += b2;
        }
    }
    __syncthreads();
    if (cls == 1) ones[warp_base[0][warp] + __popc(m1 & below)] = i;
    if (cls == 2) others[warp_base[1][warp] + __popc(m2 & below)] = i;
}

// The scalars of a Pippenger MSM as integers, in entry order: out[i] = s[idx[i]] (or s[i]
// without a list) out of Montgomery form. The digit passes (msm/msm.cuh) read these.
extern "C" __global__ void msm_canonical(const Fr* s, const uint32_t* idx, uint32_t n, Fr* out) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        out[i] = s[idx ? idx[i] : i].from_mont();
    }
}
