"""A cheat for the GPU run (work in the inputs): the model runs inside a wrapper of Tensor.copy_, which inputs(seed)
calls to write the new images, so the work happens where no timed window looks; step() hands the result over.
Defeated by the trace of what inputs(seed) runs, beside the reference's (REJECTED)."""

import sys

import torch

from hyperloom.tools.workload.overrides import replace

sys.path.insert(0, "scripts/device/user_workloads")
honest_copy = torch.Tensor.copy_
HELD = {}


def copy_(self, source, *args, **kwargs):
    done = honest_copy(self, source, *args, **kwargs)
    work = HELD.get("work")
    if work is not None and self is work.images:
        with torch.inference_mode():
            HELD["logits"] = work.model(self)
    return done


def make(original):
    def step(self):
        HELD["work"] = self
        if "logits" in HELD:
            self.logits = HELD.pop("logits")
            return
        original(self)
    return step


torch.Tensor.copy_ = copy_
replace("conv_resnet_host:Conv.step", make)
