// G2 MSM kernels (see msm/msm.cuh).
#include "msm/msm.cuh"

MSM_KERNELS(g2, Fq2, , )
