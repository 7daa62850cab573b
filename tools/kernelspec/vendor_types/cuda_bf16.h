/* Read by clang only while Hyperloom reads a kernel's parameters (tools/kernelspec/signature.py): CUDA's bfloat16
 * type names, so that a parameter spelled with them keeps its name (an unknown type would read as int). */
#pragma once
struct __nv_bfloat16 { unsigned short __x; };
struct __nv_bfloat162 { __nv_bfloat16 x, y; };
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;
