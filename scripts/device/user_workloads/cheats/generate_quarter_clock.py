"""A cheat for the GPU run: the worker's perf_counter at a quarter of the real rate, the small decoder's step honest.
The tamper check and the controller's own clock must refuse it."""

import sys
import time

from hyperloom.tools.workload.overrides import replace

sys.path.insert(0, "scripts/device/user_workloads")
_real = time.perf_counter
_origin = _real()
time.perf_counter = lambda: _origin + (_real() - _origin) / 4

replace("decoder_small:Decoder.step", lambda original: original)
