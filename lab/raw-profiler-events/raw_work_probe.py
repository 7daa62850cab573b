"""Proof of work's step weighed two ways on a GPU, same process, same step (issue 45): from torch.profiler's raw events
(tools/profile/kineto.py) and from the Chrome JSON (the path it replaces); prints each way's seconds and its work by
class, as one JSON line each. Run ON THE DEVICE:
    python3 lab/raw-profiler-events/raw_work_probe.py"""

import json
import tempfile
import time
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from hyperloom.tools.profile import kineto
from hyperloom.tools.workload.worker import profiled_step
from hyperloom.tools.workload.models import StepWork
from hyperloom.tools.workload.work import step_work

torch.manual_seed(0)
config = LlamaConfig(hidden_size=512, intermediate_size=1536, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                     vocab_size=32000)
model = LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16).eval()
prompt = torch.randint(0, config.vocab_size, (1, 64), device="cuda")
params = int(sum(p.numel() * p.element_size() for p in model.parameters()))


def step():
    with torch.inference_mode():
        model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=16, do_sample=False, pad_token_id=0)
    torch.cuda.synchronize()


step()
folder = Path(tempfile.mkdtemp())
real_trace_of = kineto.trace_of
for way in ("raw", "json", "raw", "json"):
    kineto.trace_of = real_trace_of if way == "raw" else (lambda prof, events=None: None)
    path = folder / f"{way}.json"
    began = time.perf_counter()
    seen = profiled_step.profiled(step, True, str(path), params)
    worker_s = time.perf_counter() - began
    began = time.perf_counter()
    work = StepWork.model_validate(seen["work"]) if "work" in seen else step_work(path, params)
    controller_s = time.perf_counter() - began
    print(json.dumps({"way": way, "from_raw": "work" in seen, "worker_s": round(worker_s, 3), "controller_s": round(controller_s, 3),
                      "kernels": sum(seen["kernels"].values()),
                      "classes": {n: [c.ops, c.flops, c.bytes_moved, round(c.time_s * 1e3, 3)] for n, c in work.classes.items()},
                      "flops_by_dtype": work.compute_flops_by_dtype, "device_timed": work.device_timed}))
    path.unlink(missing_ok=True)
