/* <hip/hip_bf16.h> for offline clang builds (no ROCm headers): __hip_bfloat16 and its conversions. */
#pragma once
#include "../../common/hyperloom_bf16.h"
