"""Hand-off: tool calls and seconds from `profile` of a trace to a `spec_check` that is ok, through the tool catalog (as the
MCP server and the CLI call it), with no edit in between: profile writes the draft specs (call 1), spec_check accepts a
library draft as written (call 2). With --bench TARGET, a gated bench of the draft on that target follows (call 3).

    python bench/handoff_calls.py                        # the committed H200 Llama trace; the RMSNorm drafts
    python bench/handoff_calls.py --trace my.json.gz     # another torch.profiler trace
    python bench/handoff_calls.py --bench sm_90          # and a gated bench on an NVIDIA GPU (gfx942 on an MI300)
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from onboarding import Calls  # noqa: E402 - the same counted catalog calls

REPO = Path(__file__).resolve().parent.parent
TRACE = REPO / "tests" / "fixtures" / "profile" / "h200_llama_trace.json.gz"
MAX_CALLS = 6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=TRACE, help="a torch.profiler trace (default: the committed H200 Llama capture)")
    parser.add_argument("--bench", metavar="TARGET", help="also bench each library draft on TARGET (sm_90, gfx942, host)")
    args = parser.parse_args(argv)
    failed = False
    with tempfile.TemporaryDirectory(prefix="hyperloom-handoff-") as tmp:
        root = Path(tmp)
        shutil.copy(args.trace, root / args.trace.name)
        started = time.perf_counter()
        call = Calls(root)
        profiled = call("profile", trace=args.trace.name, name="handoff", plot=False)
        after_profile = time.perf_counter() - started
        library = [h for h in profiled.handoff if h.library]
        print(f"profile: {len(profiled.handoff)} drafts, {len(library)} of them library kernels ({after_profile:.1f} s)")
        for h in profiled.handoff:
            if not h.library:
                print(f"  {h.folder.rsplit('/', 1)[-1]}: TODO {'; '.join(h.todos)}")
        for h in library:
            chain = Calls(root)
            check_started = time.perf_counter()
            checked = chain("spec_check", spec=h.spec)
            tools = ["profile", *chain.names]
            ok = checked.ok
            if args.bench and ok:
                benched = chain("bench", spec=h.spec, target=args.bench, shape=len(h.shapes) - 1)
                tools.append("bench")
                ok = benched.ok
            seconds = after_profile + time.perf_counter() - check_started
            verdict = "met" if ok and len(tools) <= MAX_CALLS else "NOT met"
            failed |= verdict != "met"
            print(f"{h.folder.rsplit('/', 1)[-1]} ({h.library}, {h.dtype}, shapes {h.shapes}): {len(tools)} calls ({' -> '.join(tools)}), "
                  f"{seconds:.1f} s, {'ok' if ok else 'NOT ok: ' + checked.summary}; no TODO: {not h.todos}; target <= {MAX_CALLS} "
                  f"calls: {verdict}")
    return 1 if failed or not library else 0


if __name__ == "__main__":
    sys.exit(main())
