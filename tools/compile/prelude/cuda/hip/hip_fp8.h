/* <hip/hip_fp8.h> for HIP sources built by nvcc: the four fp8 types in software (NVIDIA has no fnuz format; the
 * OCP ones hold the same bytes as CUDA's __nv_fp8_e4m3 and __nv_fp8_e5m2). */
#pragma once
#include "../../common/hyperloom_fp8.h"
