/* <hip/hip_bf16.h> for HIP sources built by nvcc: __hip_bfloat16 is CUDA's __nv_bfloat16, and the conversions
 * (__float2bfloat16, __bfloat162float) share their names. */
#pragma once
#include <cuda_bf16.h>
typedef __nv_bfloat16 __hip_bfloat16;
typedef __nv_bfloat162 __hip_bfloat162;
