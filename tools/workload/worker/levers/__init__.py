"""The levers whose code runs inside the model, worker side: the decode loop, the static cache and channels_last, fused
projections, weight-only quantization and the library kernels routed in (kernel_route.py)."""
