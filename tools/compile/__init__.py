"""compile_kernel: HIP, assembly or CUDA source → code object, with resource usage and a cache."""
