"""Sweep results kept in the workspace, one folder per cache key under .hyperloom/serve/.

The key is the sha256 of everything that decides the figures: the model, the server (for a started one its
arguments, its program's sha256 and its files' sizes and times; for a running one its kind, version or build,
slots and KV size, and address), the device, the workload (API, kind, lengths, the prompts or trace file's sha256 or the trace spec's,
forced length, seed) and the sweep settings (levels, requests, limits). Only a complete sweep is served again; a partial one
(failures, interruption) stays on disk, labelled, and is measured again next time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.hashing import sha256_json
from hyperloom.core.workspace import Workspace
from hyperloom.tools.serve.models import ServeSweepRequest, ServeSweepResult

RESULT_NAME = "serve_sweep.json"
FORMAT_VERSION = 2  # 2: prompts sized by the server's tokenizer; agent traces
# Request fields that change what is measured; the rest (refresh, plot, timeouts of starting) do not.
_MEASURING_FIELDS = (
    "api", "workload", "input_tokens", "output_tokens", "force_output_length", "max_concurrency", "requests_per_level", "warmup_requests",
    "level_duration_s", "request_timeout_s", "max_error_rate", "max_ttft_s", "max_itl_s", "max_e2e_s", "latency_percentile",
    "knee_fraction", "rise_threshold", "max_duration_s", "seed",
)


def cache_key(request: ServeSweepRequest, server: dict[str, Any], model: str | None, device: str, prompts_sha256: str | None) -> str:
    settings = {name: getattr(request, name) for name in _MEASURING_FIELDS}
    if request.prompts_file is not None or request.workload == "agent_trace":
        settings.pop("input_tokens")
    if request.workload == "agent_trace":
        settings.pop("output_tokens")  # the trace's turns say their lengths
    return sha256_json({"format": FORMAT_VERSION, "model": model, "server": server, "device": device,
                        "prompts_sha256": prompts_sha256, "settings": settings})


def folder_for(workspace: Workspace, key: str) -> Path:
    return workspace.state_dir("serve", key[:16])


def lookup(folder: Path, key: str) -> ServeSweepResult | None:
    """The complete result stored under `key`, or None (absent, partial, unreadable or another key's)."""
    path = folder / RESULT_NAME
    try:
        result = ServeSweepResult.model_validate_json(path.read_bytes())
    except (OSError, ValidationError):
        return None
    return result if result.complete and result.cache_key == key else None


def store(folder: Path, result: ServeSweepResult) -> Path:
    path = folder / RESULT_NAME
    write_bytes_atomic(path, result.model_dump_json(indent=2).encode())
    return path
