"""A pass over several workloads spread with Ray: one task per workload's campaign, each on the GPU Ray gives it
(Ray sets CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES for a task that asks for one), results merged by the pass's
status as in a pass run in turn. `ray: local` starts a Ray on this machine for the pass and ends it after; an address
joins a running cluster (`ray start --head` prints it), whose machines must see the workspace at the same path (a
shared file system): each campaign writes its ledger there, so status, resume and report work as they do here.

Nothing here schedules: Ray places the tasks; a task that fails is recorded against its workload and the pass goes on.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace
from hyperloom.tools.optimize.stops import Control
from hyperloom.tools.optimize.models import OptimizeRequest
from hyperloom.tools.optimize.one_campaign import run_campaign

WAIT_S = 1.0  # how often the pass looks at its stop flag while tasks run
PROBE_S = 5.0
UNANSWERED = "start the cluster (ray start --head prints its address) and pass that address, pass ray: local, or leave ray unset"
INSTALL = "pip install 'hyperloom[cluster]' (ray), or leave ray unset to run the workloads in turn here"


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise HyperloomError(f"a pass on Ray needs the ray package ({exc})", INSTALL) from exc
    return ray


def _campaign(request: dict[str, Any], root: str) -> str | None:
    """A Ray task: one workload's campaign, run to its close in the task's process; its refusal as text, or None."""
    try:
        run_campaign(OptimizeRequest.model_validate(request), Workspace.at(Path(root)))
    except HyperloomError as exc:
        return str(exc)
    return None


def _answers(address: str) -> None:
    """A host:port address is probed first: Ray itself retries an address that does not answer for a minute or more."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # "auto" and other forms Ray resolves itself
    try:
        socket.create_connection((host, int(port)), timeout=PROBE_S).close()
    except OSError as exc:
        raise HyperloomError(f"Ray at {address!r} did not answer: nothing accepts connections at {host}:{port} ({exc.strerror or exc})",
                             UNANSWERED) from exc


def connect(address: str) -> tuple[Any, bool]:
    """(the ray module, whether this pass started it): a Ray here for `local`, else the cluster at `address`."""
    ray = _ray()
    if ray.is_initialized():
        return ray, False
    if address != "local":
        _answers(address)
    try:
        if address == "local":
            ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    except Exception as exc:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError or its own for an address that does not answer
        raise HyperloomError(f"Ray at {address!r} did not answer: {type(exc).__name__}: {str(exc)[:300]}",
                             UNANSWERED) from exc
    return ray, True


def spread(address: str, jobs: list[tuple[str, OptimizeRequest]], workspace: Workspace,
           control: Control) -> Iterator[tuple[str, str | None]]:
    """Run each (member, request) as a Ray task; yield (member, its refusal or None) as each ends. A stop cancels the rest."""
    ray, started = connect(address)
    try:
        gpus = float(ray.cluster_resources().get("GPU", 0))
        task = ray.remote(num_cpus=1, num_gpus=1 if gpus >= 1 else 0, max_retries=0)(_campaign)
        refs = {task.remote(request.model_dump(), str(workspace.root)): member for member, request in jobs}
        control.opened.set()
        pending = list(refs)
        while pending:
            if control.stop.is_set():
                for ref in pending:
                    ray.cancel(ref, force=True)
                for ref in pending:
                    yield refs[ref], "stopped before it finished (optimize stop)"
                return
            done, pending = ray.wait(pending, num_returns=1, timeout=WAIT_S)
            for ref in done:
                try:
                    yield refs[ref], ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a task that died (its worker killed, out of memory) is that workload's failure
                    yield refs[ref], f"its Ray task failed: {type(exc).__name__}: {str(exc)[:300]}"
    finally:
        if started:
            ray.shutdown()
