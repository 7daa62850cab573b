"""One rank of a launched run: `python -m hyperloom.tools.allreduce.worker JOB RANK`.

Joins the process group, runs the job's mode ("run": one all-reduce of this rank's input file;
"bench": the timing sweep of bench.py), and writes rank<R>.json (and rank<R>.npy) into the job
folder. A HyperloomError is written as {"error": ...} so the launcher re-raises it unchanged.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from hyperloom.core.errors import HyperloomError


def main(argv: list[str]) -> int:
    os.dup2(2, 1)  # nothing a rank prints may reach a parent's stdout (the MCP wire)
    job = json.loads(Path(argv[0]).read_text())
    rank = int(argv[1])
    report = Path(job["folder"]) / f"rank{rank}.json"
    try:
        data = _run(job, rank)
    except HyperloomError as exc:
        report.write_text(json.dumps({"error": {"cause": exc.cause, "next_step": exc.next_step}}))
        return 3
    report.write_text(json.dumps(data))
    return 0


def _run(job: dict[str, Any], rank: int) -> dict[str, Any]:
    import torch  # the launcher checked it is installed
    import torch.distributed as dist

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    device = torch.device("cpu")
    if job["backend"] == "nccl":
        torch.cuda.set_device(rank)
        device = torch.device("cuda", rank)
    dist.init_process_group(
        job["backend"], init_method=f"file://{job['store']}", rank=rank, world_size=job["ranks"],
        timeout=dt.timedelta(seconds=job["timeout_s"]),
    )
    try:
        if job["mode"] == "bench":
            from hyperloom.tools.allreduce.bench import bench_rank

            return bench_rank(job, rank, device)
        return _allreduce_file(job, rank, device)
    finally:
        dist.destroy_process_group()


def _allreduce_file(job: dict[str, Any], rank: int, device: Any) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    from hyperloom.tools.allreduce.distributed import allreduce_int6
    from hyperloom.tools.allreduce.reference import Scheme

    stored = np.load(job["inputs"][rank], allow_pickle=False)
    tensor = torch.from_numpy(stored.view(np.int16)).view(torch.bfloat16) if job["kind"] == "bfloat16" else torch.from_numpy(stored)
    tensor = tensor.to(device)
    dist.barrier()
    start = time.perf_counter()
    outcome = allreduce_int6(tensor, Scheme(**job["scheme"]), codec_mode=job["codec"])
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elapsed_s = time.perf_counter() - start
    result = outcome.result.cpu()
    array = result.view(torch.int16).numpy().view(np.uint16) if job["kind"] == "bfloat16" else result.numpy()
    np.save(Path(job["folder"]) / f"rank{rank}.npy", array, allow_pickle=False)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    return {"wire_bytes": outcome.wire_bytes, "elapsed_s": elapsed_s, "torch": torch.__version__, "device": name, "codec": outcome.codec}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
