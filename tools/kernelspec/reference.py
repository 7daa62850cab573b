"""Run a spec's reference in a worker process: its outputs on staged inputs, or one clear error.

The reference is user code: it may raise, call sys.exit, crash or hang. It runs through
hyperloom.core.worker with a timeout, and every such ending is a HyperloomError naming the
spec's `reference` field, what happened (with the file and line where it raised) and the next step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


from hyperloom.core.errors import HyperloomError
from hyperloom.core.worker import run_worker
from hyperloom.tools.kernelspec.load import LoadedSpec, buffer_shape, output_buffers

REFERENCE_TIMEOUT_S = 600.0
CONTRACT = ("the reference takes (inputs: dict of name -> numpy array, shape: dict of name -> int) and returns a dict of output "
            "name -> array")


@dataclass(frozen=True)
class ReferenceRun:
    elapsed_s: float  # the reference function's own time, without the worker's start-up
    nan: dict[str, int]  # NaN count per output
    shapes: dict[str, list[int]]  # the shape each output was returned in (before the reshape to the declared one)


def run_reference(loaded: LoadedSpec, shape: Mapping[str, int], inputs_dir: Path, out_dir: Path, *,
                  timeout_s: float = REFERENCE_TIMEOUT_S) -> ReferenceRun:
    """Compute ref_<output>.npy in `out_dir` from in_<arg>.npy in `inputs_dir`, in a worker process."""
    return run_references(loaded, shape, [(inputs_dir, out_dir)], timeout_s=timeout_s)[0]


def run_references(loaded: LoadedSpec, shape: Mapping[str, int], sets: Sequence[tuple[Path, Path]], *,
                   timeout_s: float = REFERENCE_TIMEOUT_S) -> list[ReferenceRun]:
    """run_reference for several staged sets (inputs folder, output folder) of one shape, in one worker process."""
    outputs = [{"name": a.name, "dtype": a.dtype, "dims": list(buffer_shape(a, shape))} for a in output_buffers(loaded.spec)]
    outcome = run_worker(
        "hyperloom.tools.kernelspec.reference_worker:compute",
        {"file": str(loaded.reference_file), "function": loaded.reference_name, "spec_name": loaded.spec.name, "shape": dict(shape),
         "sets": [{"inputs_dir": str(i), "out_dir": str(o)} for i, o in sets], "outputs": outputs},
        timeout_s=timeout_s, cwd=loaded.folder,
    )
    field = f"reference {loaded.spec.reference!r} at shape {dict(shape)}"
    if outcome.ok:
        return [ReferenceRun(elapsed_s=float(report["elapsed_s"]), nan={k: int(v["nan"]) for k, v in report["outputs"].items()},
                             shapes={k: list(v["returned_shape"]) for k, v in report["outputs"].items()})
                for report in outcome.result["sets"]]
    if outcome.error_type == "ReferenceContractError":
        raise HyperloomError(f"{field}: {outcome.message.split(': ', 1)[-1]}",
                             f"fix the reference: {CONTRACT} for every output and inout buffer")
    if outcome.status == "TIMEOUT":
        raise HyperloomError(f"{field} {outcome.message}",
                             "make the reference faster (vectorize with numpy), or check it for an endless loop")
    if outcome.status == "EXITED":
        raise HyperloomError(f"{field} ended its process: {outcome.describe()}", "a reference returns its outputs; remove the exit")
    if outcome.status == "CRASH":
        raise HyperloomError(f"{field} crashed the worker: {outcome.describe()}", "run the reference alone in Python to find the crash")
    raise HyperloomError(f"{field} raised {outcome.describe()}", f"fix the reference ({CONTRACT})")
