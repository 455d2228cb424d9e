// G2 MSM kernels (see msm/msm.cuh), with the batch-affine levels (their leftover points go
// through msm_chunk_sum: G2 has no leftover reduction).
#include "msm/affine_sums.cuh"

MSM_KERNELS(g2, Fq2, , )

typedef Affine<Fq2> G2A;

extern "C" __global__ void g2_msm_affine_halve(const uint32_t* off, uint32_t nb, uint32_t* counts) {
    msm_affine_halve(off, nb, counts);
}
extern "C" __global__ void __launch_bounds__(AFF_THREADS_G2, AFF_BLOCKS_G2)
    g2_msm_affine_level(const G2A* pts, const uint32_t* sorted, const uint32_t* in_off, const uint32_t* out_off,
                        uint32_t nb, G2A* out, Fq2* pre, uint32_t* src_a, uint32_t* src_b, uint8_t* kind,
                        uint32_t max_slots) {
    msm_affine_level<Fq2, AFF_THREADS_G2>(pts, sorted, in_off, out_off, nb, out, pre, src_a, src_b, kind, max_slots);
}
