"""Where a candidate worker's build goes, for issue 44's cost (run ON THE DEVICE): the seconds to import torch and
transformers, to build a user workload, to deep-copy it (what a worker serving several candidates would do instead of
building again), to run its first and a warm step, and to reset dynamo. Prints one JSON line.
    python3 lab/worker-build-cost/build_probe.py scripts/device/user_workloads/decoder_llama.py"""

import copy
import importlib.util
import json
import sys
import time

began = time.perf_counter()
marks = {}


def mark(name):
    marks[name] = round(time.perf_counter() - began - sum(marks.values()), 3)


import torch  # noqa: E402

torch.cuda.init()
mark("import_torch_and_cuda_init_s")
import transformers  # noqa: E402,F401

mark("import_transformers_s")
spec = importlib.util.spec_from_file_location("probe_workload", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
workload = module.build()
torch.cuda.synchronize()
mark("build_s")
twin = copy.deepcopy(workload)
torch.cuda.synchronize()
mark("deepcopy_s")
del twin
torch.cuda.empty_cache()
workload.inputs(1)
workload.step()
torch.cuda.synchronize()
mark("first_step_s")
workload.inputs(2)
workload.step()
torch.cuda.synchronize()
mark("warm_step_s")
torch._dynamo.reset()
mark("dynamo_reset_s")
print(json.dumps({"workload": sys.argv[1], **marks, "gpu_bytes": torch.cuda.max_memory_allocated()}))
