// G2 MSM kernels (see msm/msm.cuh), with the batch-affine levels (their leftover points go
// through msm_chunk_sum: G2 has no leftover reduction).
#include "msm/affine_sums.cuh"

MSM_KERNELS(g2, Fq2, , )
AFFINE_LEVEL_KERNELS(g2, Fq2, AFF_THREADS_G2, AFF_BLOCKS_G2, 30)
