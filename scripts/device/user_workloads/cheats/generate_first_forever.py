"""A cheat for the GPU run (stale): the small decoder's first generate result returned forever. Fresh prompts
(inputs(seed)) must refuse it, and proof of work (no GEMM in the profiled step) too."""

import sys

from hyperloom.tools.workload.overrides import replace

sys.path.insert(0, "scripts/device/user_workloads")
FIRST = {}


def make(original):
    def step(self):
        if "result" not in FIRST:
            original(self)
            FIRST["result"] = dict(self.result)
        self.result = FIRST["result"]
    return step


replace("decoder_small:Decoder.step", make)
