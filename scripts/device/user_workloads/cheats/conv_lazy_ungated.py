"""A cheat for the GPU run (lazy where not gated): inside a timed leg, run the model on one step in four and hand back
the last logits on the others, betting that only a leg's last step is copied and gated. Defeated by the gated step
drawn after the leg and by every step's output digest against the reference's of the same inputs (REJECTED)."""

import inspect
import sys

from hyperloom.tools.workload.overrides import replace

sys.path.insert(0, "scripts/device/user_workloads")
SEEN = {"calls": 0}


def make(original):
    def step(self):
        timed = any(frame.function == "time_steps" for frame in inspect.stack(0))
        SEEN["calls"] += 1
        if not timed or SEEN["calls"] % 4 == 1 or "logits" not in SEEN:
            original(self)
            SEEN["logits"] = self.logits
        self.logits = SEEN["logits"]
    return step


replace("conv_resnet_host:Conv.step", make)
