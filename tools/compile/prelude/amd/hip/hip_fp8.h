/* <hip/hip_fp8.h> for offline clang builds (no ROCm headers): the fnuz (MI300) and OCP fp8 types, decoded and
 * encoded in software (a kernel that wants gfx942's v_cvt_*_fp8 instructions calls their builtins itself). */
#pragma once
#include "../../common/hyperloom_fp8.h"
