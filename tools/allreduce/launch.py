"""Start N rank processes on this host, wait for them with a deadline, and collect what they wrote.

Each rank is `python -m hyperloom.tools.allreduce.worker JOB RANK` (an argument list, no shell),
rendezvousing through a file store in a private folder: no port to pick, nothing on the network.
A rank that hangs or dies takes the others down with it; its stderr tail goes into the error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Literal

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.allreduce.distributed import require_torch

Backend = Literal["gloo", "nccl"]
WORKER = "hyperloom.tools.allreduce.worker"
FAILURE_GRACE_S = 10.0


def check_backend(backend: Backend, ranks: int) -> str:
    """The device string the ranks will use; refuses a backend this host cannot run."""
    torch = require_torch()
    if backend == "gloo":
        return "cpu"
    available = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if available < ranks:
        raise HyperloomError(
            f"backend 'nccl' needs one GPU per rank: {ranks} ranks, {available} CUDA/ROCm GPU(s) visible to torch",
            "run on a host with that many GPUs (check CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES), use fewer ranks, or backend='gloo'",
        )
    return "cuda"


def run_ranks(job: dict[str, Any], ranks: int, folder: Path, timeout_s: float) -> list[dict[str, Any]]:
    """Run every rank of `job` (a JSON-able dict the worker reads) and return each rank's report."""
    job_file = folder / "job.json"
    job_file.write_text(json.dumps({**job, "ranks": ranks, "store": str(folder / "store"), "folder": str(folder)}))
    env = dict(os.environ)
    if job["backend"] == "gloo":
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")  # one host: loopback only
    env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // ranks))
    procs = []
    for rank in range(ranks):
        log = (folder / f"rank{rank}.stderr").open("wb")
        procs.append(subprocess.Popen(
            [sys.executable, "-m", WORKER, str(job_file), str(rank)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
        ))
        log.close()
    _wait(procs, timeout_s)
    reports = [folder / f"rank{rank}.json" for rank in range(ranks)]
    data = [json.loads(r.read_text()) if r.is_file() else None for r in reports]
    for item in data:  # a rank's own error explains the others' exits better than their exit codes
        if item is not None and "error" in item:
            raise HyperloomError(item["error"]["cause"], item["error"]["next_step"])
    for rank, (proc, item) in enumerate(zip(procs, data, strict=True)):
        if proc.returncode != 0 or item is None:
            tail = " | ".join((folder / f"rank{rank}.stderr").read_text(errors="replace").strip().splitlines()[-6:]) or "no output"
            raise HyperloomError(f"rank {rank} exited with code {proc.returncode}: {tail}",
                                 "read the message; fix the input or the installation")
    return data


def _wait(procs: list[subprocess.Popen], timeout_s: float) -> None:
    """Wait for every rank; once one fails, the rest get a short grace before they are killed."""
    deadline = time.monotonic() + timeout_s
    try:
        while any(p.poll() is None for p in procs):
            if any(p.returncode not in (None, 0) for p in procs):
                deadline = min(deadline, time.monotonic() + FAILURE_GRACE_S)
            if time.monotonic() > deadline:
                if all(p.returncode in (None, 0) for p in procs):
                    raise HyperloomError(
                        f"the {len(procs)}-rank run did not finish within {timeout_s:g} s", "raise timeout_s, or run fewer elements"
                    )
                return
            time.sleep(0.05)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
