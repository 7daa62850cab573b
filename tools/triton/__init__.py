"""Triton kernels in kernel.yaml: loaded, bound to a spec, compiled ahead of time, interpreted on the CPU."""
