/* <hip/hip_bfloat16.h> for offline clang builds: hip_bfloat16 (rocBLAS's name), the same two bytes as __hip_bfloat16. */
#pragma once
#include "../../common/hyperloom_bf16.h"
typedef __hip_bfloat16 hip_bfloat16;
