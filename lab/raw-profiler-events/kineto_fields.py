"""What torch.profiler's raw (kineto) events say on a GPU, for building proof of work's Trace in the worker without a
Chrome JSON (issue 45: writing and reading that JSON is most of the gate's cost on an eager generate). Run ON THE
DEVICE: one linear layer's step profiled with shapes; every event's fields printed, one JSON line each, beside the
Chrome export's event for the same op or kernel, so the linking (an op's external id, a kernel's linked correlation)
can be read off both.
    python3 lab/raw-profiler-events/kineto_fields.py"""

import json
import tempfile
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

FIELDS = ("name", "activity_type", "device_type", "device_index", "device_resource_id", "start_ns", "duration_ns", "correlation_id",
          "linked_correlation_id", "external_id", "start_thread_id", "shapes", "dtypes", "concrete_inputs", "flops", "nbytes")

model = torch.nn.Linear(256, 128, device="cuda", dtype=torch.bfloat16)
x = torch.randn(4, 256, device="cuda", dtype=torch.bfloat16)
model(x)
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
    model(x).float().sum().item()
for event in prof.profiler.kineto_results.events():
    row = {}
    for field in FIELDS:
        try:
            value = getattr(event, field)()
        except Exception as exc:  # noqa: BLE001 - a field this torch does not fill
            value = f"<{type(exc).__name__}>"
        row[field] = value if isinstance(value, int | float | str | list | type(None)) else str(value)
    print(json.dumps(row, default=str))
trace = Path(tempfile.mkdtemp()) / "trace.json"
prof.export_chrome_trace(str(trace))
for event in json.loads(trace.read_text())["traceEvents"]:
    if event.get("cat") in ("cpu_op", "kernel", "cuda_runtime", "gpu_memcpy", "ac2g"):
        print("chrome", json.dumps({k: event.get(k) for k in ("cat", "name", "ts", "dur", "id", "args")}, default=str)[:400])
