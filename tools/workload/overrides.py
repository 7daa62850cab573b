"""The name an overrides module imports `replace` by (integrate writes it, a user writes it by hand); the code is the
worker's (worker/overrides.py), where the module runs.

    from hyperloom.tools.workload.overrides import replace
"""

from hyperloom.tools.workload.worker.overrides import (calls, kernel_names, kernels, launches, note_call, replace, resolve,
                                                       wrapper_overhead_us)

__all__ = ["calls", "kernel_names", "kernels", "launches", "note_call", "replace", "resolve", "wrapper_overhead_us"]
