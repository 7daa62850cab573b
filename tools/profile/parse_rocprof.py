"""rocprofv3's kernel trace (`rocprofv3 --kernel-trace --output-format csv`) → Trace.

Columns as rocprofv3 writes them (ROCm 6.2 and later; newer releases add Stream_Id and register counts,
both are read when present): Kind, Agent_Id, Queue_Id, Thread_Id, Dispatch_Id, Kernel_Id, Kernel_Name,
Correlation_Id, Start_Timestamp, End_Timestamp (ns), Workgroup_Size_X/Y/Z, Grid_Size_X/Y/Z (work-items,
so the grid in workgroups is Grid_Size / Workgroup_Size). `<prefix>memory_copy_trace.csv` and
`<prefix>agent_info.csv` beside it add the copies and the devices' names. rocprofv3 records no
framework ops, so no kernel is linked to an op and no shape-based work model applies.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.profile.trace import Kernel, Trace

REQUIRED = ("Kernel_Name", "Start_Timestamp", "End_Timestamp")
KERNEL_TRACE_SUFFIX = "kernel_trace.csv"


def is_kernel_trace_header(line: str) -> bool:
    return all(column in line for column in REQUIRED)


def _agent(value: str) -> str:
    """'Agent 4' and '4' name the same agent."""
    return value.strip().removeprefix("Agent ").strip()


def _rows(text: str, label: str, required: tuple[str, ...]) -> list[dict[str, str]]:
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in required if c not in (reader.fieldnames or [])]
    if missing:
        raise HyperloomError(f"{label} is a CSV file but not a rocprofv3 trace (no {', '.join(missing)} column)",
                             "pass the <prefix>_kernel_trace.csv that `rocprofv3 --kernel-trace --output-format csv` writes")
    rows = []
    for number, row in enumerate(reader, start=2):
        if None in row.values() or None in row:
            raise HyperloomError(f"{label} row {number} has {len([v for v in row.values() if v is not None])} of "
                                 f"{len(reader.fieldnames or [])} columns: the file looks truncated",
                                 "capture the trace again, or pass the complete file")
        rows.append(row)
    return rows


def _ns(row: dict[str, str], column: str, label: str, number: int) -> int:
    try:
        return int(row[column])
    except ValueError as exc:
        raise HyperloomError(f"{label} row {number}: {column} {row[column]!r} is not an integer (ns)",
                             "pass the CSV as rocprofv3 wrote it") from exc


def _launch(row: dict[str, str]) -> str | None:
    try:
        block = [int(row[f"Workgroup_Size_{a}"]) for a in "XYZ"]
        work_items = [int(row[f"Grid_Size_{a}"]) for a in "XYZ"]
    except (KeyError, ValueError):
        return None
    grid = [-(-w // b) if b else w for w, b in zip(work_items, block)]
    return f"grid {'x'.join(map(str, grid))} block {'x'.join(map(str, block))}"


def parse_rocprof(text: str, path: Path, label: str) -> Trace:
    """The Trace of a kernel trace CSV's text, with the memory copies and agent names of its siblings."""
    rows = _rows(text, label, REQUIRED)
    if not rows:
        raise HyperloomError(f"{label} has a header and no kernel dispatches: no GPU kernels ran while rocprofv3 traced",
                             "check that the program launched kernels on the GPU (rocprofv3 --kernel-trace -- <program>)")
    kernels = []
    for number, row in enumerate(rows, start=2):
        start, end = _ns(row, "Start_Timestamp", label, number), _ns(row, "End_Timestamp", label, number)
        kernels.append(Kernel(
            row["Kernel_Name"], start / 1e3, max(end - start, 0) / 1e3, _agent(row.get("Agent_Id", "0")),
            row.get("Stream_Id") or row.get("Queue_Id") or "0", "kernel",
            correlation=int(row["Correlation_Id"]) if row.get("Correlation_Id", "").isdigit() else None, launch=_launch(row),
        ))
    prefix = path.name[: -len(KERNEL_TRACE_SUFFIX)] if path.name.endswith(KERNEL_TRACE_SUFFIX) else None
    names: dict[str, str] = {}
    notes = []
    if prefix is not None:
        copies = path.with_name(f"{prefix}memory_copy_trace.csv")
        if copies.is_file():
            kernels += _copies(copies)
            notes.append(f"memory copies read from {copies.name}")
        agents = path.with_name(f"{prefix}agent_info.csv")
        if agents.is_file():
            names = _agent_names(agents)
    kernels.sort(key=lambda k: k.start_us)
    window = (min(k.start_us for k in kernels), max(k.end_us for k in kernels))
    return Trace("rocprofv3", kernels, [], window, names, notes=notes)


def _copies(path: Path) -> list[Kernel]:
    label = path.name
    rows = _rows(path.read_text(errors="replace"), label, ("Direction", "Start_Timestamp", "End_Timestamp"))
    copies = []
    for number, row in enumerate(rows, start=2):
        start, end = _ns(row, "Start_Timestamp", label, number), _ns(row, "End_Timestamp", label, number)
        direction = row["Direction"].removeprefix("MEMORY_COPY_")
        device = _agent(row.get("Destination_Agent_Id", "0") if direction.endswith("TO_DEVICE") else row.get("Source_Agent_Id", "0"))
        size = row.get("Bytes") or row.get("Size") or ""
        copies.append(Kernel(f"Memcpy {direction}", start / 1e3, max(end - start, 0) / 1e3, device, row.get("Stream_Id") or "copy",
                             "memcpy", bytes=int(size) if size.isdigit() else None))
    return copies


def _agent_names(path: Path) -> dict[str, str]:
    names = {}
    for row in csv.DictReader(io.StringIO(path.read_text(errors="replace"))):
        if row.get("Agent_Type") not in (None, "GPU"):
            continue
        name = row.get("Product_Name") or row.get("Model_Name") or row.get("Name") or ""
        for key in ("Node_Id", "Logical_Node_Id"):
            if row.get(key):
                names.setdefault(_agent(row[key]), name)
    return names
