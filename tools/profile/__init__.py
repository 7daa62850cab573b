"""profile: a workload's kernel and fusion hotspots from a torch.profiler or rocprofv3 trace, placed on the measured roof."""
