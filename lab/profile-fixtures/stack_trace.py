"""A torch.profiler trace of a frozen workload's step with a stack of levers in place, as the campaign's kernel phase
profiles it (tools/optimize/proposals.py), kept for a CPU test fixture: issue 46's attribution of the decode_loop
stack (a replayed graph per token). Run ON THE DEVICE after a freeze of NAME:
    python3 lab/profile-fixtures/stack_trace.py NAME OUT static_cache decode_loop
Writes OUT/stack_trace.json.gz (the trace without its python_function events, as the fixtures keep them), and prints
the profile's notes (its GPU busy share)."""

import gzip
import json
import sys
from pathlib import Path

from hyperloom.core.workspace import Workspace
from hyperloom.tools.optimize.proposals import profile_proposals
from hyperloom.tools.workload.gate.frozen import read_frozen

name, out, stack = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
workspace = Workspace.from_env()
found = profile_proposals(read_frozen(name, workspace), "trace", workspace, 300, stack)
print("\n".join(found.notes))
trace = workspace.state_dir("profile", "optimize-trace") / "trace.json"
events = json.loads(trace.read_text())
events["traceEvents"] = [e for e in events["traceEvents"] if e.get("cat") != "python_function"]
with gzip.open(out / "stack_trace.json.gz", "wt") as handle:
    json.dump(events, handle)
print("kept", len(events["traceEvents"]), "events")
