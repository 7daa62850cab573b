/* <hip/hip_bfloat16.h> for HIP sources built by nvcc: hip_bfloat16 is CUDA's __nv_bfloat16. */
#pragma once
#include "hip_bf16.h"
typedef __nv_bfloat16 hip_bfloat16;
