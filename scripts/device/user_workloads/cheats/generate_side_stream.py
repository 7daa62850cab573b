"""A cheat for the GPU run (lazy on a CUDA stream): step() hands generate to a thread that runs it on a side CUDA
stream and returns at once; outputs() waits for the thread. The controller takes outputs inside the timed step, so
the work is timed anyway: the candidate must not read FASTER."""

import sys
import threading

import torch

from hyperloom.tools.workload.overrides import replace

sys.path.insert(0, "scripts/device/user_workloads")
import decoder_small  # noqa: E402

SIDE = torch.cuda.Stream()
honest_outputs = decoder_small.Decoder.outputs


def make(original):
    def on_side(self):
        with torch.cuda.stream(SIDE):
            original(self)

    def step(self):
        self._job = threading.Thread(target=on_side, args=(self,))
        self._job.start()
    return step


def outputs(self):
    job = getattr(self, "_job", None)
    if job is not None:
        job.join()
    SIDE.synchronize()
    return honest_outputs(self)


replace("decoder_small:Decoder.step", make)
decoder_small.Decoder.outputs = outputs
