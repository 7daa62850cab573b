"""A cheat for the GPU run (memo): generate's result memoized on a hash of the prompt's tokens, so a repeated prompt
costs a dictionary lookup. Fresh prompts (inputs(seed), a new seed each timed step) must leave it nothing to reuse,
and a step whose profile holds no GEMM must be refused by proof of work."""

import hashlib
import sys

from hyperloom.tools.workload.overrides import replace

sys.path.insert(0, "scripts/device/user_workloads")
SEEN = {}


def make(original):
    def step(self):
        key = hashlib.sha256(self.prompt.cpu().numpy().tobytes()).hexdigest()
        if key not in SEEN:
            original(self)
            SEEN[key] = dict(self.result)
        self.result = SEEN[key]
    return step


replace("decoder_small:Decoder.step", make)
