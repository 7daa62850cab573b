"""A cheat for the GPU run: the first step's logits returned forever (memoization of a fixed input). Fresh inputs
must refuse it: a timed step's logits are the first images', not its own."""

import sys

from hyperloom.tools.workload.overrides import replace

sys.path.insert(0, "scripts/device/user_workloads")
FIRST = {}


def make(original):
    def step(self):
        if "logits" not in FIRST:
            original(self)
            FIRST["logits"] = self.logits.clone()
        self.logits = FIRST["logits"]
    return step


replace("conv_resnet:Conv.step", make)
