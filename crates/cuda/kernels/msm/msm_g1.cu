// G1 MSM kernels (see msm/msm.cuh), with the batch-affine levels and the leftover reduction.
#include "msm/affine_sums.cuh"
#include "msm/leftover.cuh"

MSM_KERNELS(g1, Fq, MSM_SUM_BOUNDS, MSM_REDUCE_BOUNDS_G1)

AFFINE_LEVEL_KERNELS(g1, Fq, AFF_THREADS_G1, AFF_BLOCKS_G1, 15)

extern "C" __global__ void g1_msm_leftover_heavy_counts(const uint32_t* off, uint32_t nb, uint32_t light,
                                                        uint32_t* counts) {
    msm_leftover_heavy_counts(off, nb, light, counts);
}
extern "C" __global__ void MSM_SUM_BOUNDS g1_msm_leftover_chunk_sum(const G1A* pts, const uint32_t* off,
                                                                     const uint32_t* hoff, uint32_t nb, uint32_t L,
                                                                     uint32_t chunks, G1X* buckets, G1X* head,
                                                                     G1X* tail) {
    msm_leftover_chunk_sum<Fq>(pts, off, hoff, nb, L, chunks, buckets, head, tail);
}
extern "C" __global__ void LEFTOVER_REDUCE_BOUNDS g1_msm_leftover_reduce(const G1A* pts, const uint32_t* off,
                                                                       const G1X* heavy, uint32_t light, uint32_t c,
                                                                       uint32_t S, G1X* partial) {
    msm_leftover_reduce<Fq>(pts, off, heavy, light, c, S, partial);
}
