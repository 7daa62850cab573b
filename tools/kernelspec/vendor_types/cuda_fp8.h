/* Read by clang only while Hyperloom reads a kernel's parameters (tools/kernelspec/signature.py): CUDA's fp8 type names. */
#pragma once
typedef unsigned char __nv_fp8_storage_t;
struct __nv_fp8_e4m3 { __nv_fp8_storage_t __x; };
struct __nv_fp8_e5m2 { __nv_fp8_storage_t __x; };
struct __nv_fp8x2_e4m3 { unsigned short __x; };
struct __nv_fp8x2_e5m2 { unsigned short __x; };
struct __nv_fp8x4_e4m3 { unsigned int __x; };
struct __nv_fp8x4_e5m2 { unsigned int __x; };
