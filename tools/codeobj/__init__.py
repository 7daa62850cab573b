"""Code objects: what a file is, which kernels it holds, their instructions and resource usage."""
