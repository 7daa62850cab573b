"""roofline: measured ceilings from microbenchmarks, datasheet ceilings tagged ASSUMED, kernels placed on the roof."""
