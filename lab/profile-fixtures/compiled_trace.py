"""A profile of the decoder under the static KV cache, whose decode step transformers compiles (torch.compile): the
trace issue 32 item 2 needs, where the kernels run inside "Torch-Compiled Region" events. Through the tool catalog's
`profile`, as an agent calls it, on a small decoder so the trace stays a test fixture's size.

    python3 lab/profile-fixtures/compiled_trace.py OUT [--knobs '{"layers": "2", ...}']

Writes OUT/compiled_trace.json.gz (the trace profile read), OUT/compiled_profile.json (profile's answer),
OUT/compiled_report.md, and OUT/fixture.json.gz: the trace without its python_function events (with_stack's frames,
nine tenths of its size), as tests/fixtures/profile/h200_static_cache_trace.json.gz holds it.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from onboarding import Calls  # noqa: E402 - the catalog's calls, as bench/profile_to_keep.py makes them
from profile_to_keep import DECODER, PROFILED  # noqa: E402 - the decoder and its knob-bound entry

KNOBS = {"cache": "static", "layers": "2", "hidden": "512", "prompt_tokens": "32", "new_tokens": "8"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--knobs", default=json.dumps(KNOBS))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copy(DECODER, root / "decoder.py")
        (root / "profiled.py").write_text(PROFILED.format(knobs=json.loads(args.knobs)))
        profiled = Calls(root)("profile", workload="profiled:build", steps=1, warmup_steps=1, name="compiled", plot=False)
        answer = profiled.model_dump(mode="json")
        (args.out / "compiled_profile.json").write_text(json.dumps(answer, indent=1))
        traces = sorted((root / ".hyperloom").rglob("*.json"), key=lambda p: p.stat().st_size)
        trace = next(p for p in reversed(traces) if '"traceEvents"' in p.read_text(errors="replace")[:4096])
        with trace.open("rb") as source, gzip.open(args.out / "compiled_trace.json.gz", "wb") as sink:
            shutil.copyfileobj(source, sink)
        doc = json.loads(trace.read_text())
        doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") != "python_function"]
        with gzip.open(args.out / "fixture.json.gz", "wt") as sink:
            json.dump(doc, sink, separators=(",", ":"))
        for report in (root / ".hyperloom").rglob("report.md"):
            shutil.copy(report, args.out / "compiled_report.md")
        print(answer["summary"])
        for hotspot in answer.get("hotspots", [])[:5]:
            print(" ", hotspot["label"], f"{hotspot['percent_of_device_time']:.0f} % of device time,", hotspot["calls"], "calls")


if __name__ == "__main__":
    main()
