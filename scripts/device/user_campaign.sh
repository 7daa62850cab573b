#!/usr/bin/env bash
# Run ON THE DEVICE (one H200, no network), carrying .whl. Issue 44's acceptance: one `optimize start` per user
# workload (scripts/device/user_workloads/NAME.py), as a user would start it: no levers listed, no tolerance declared
# (the twin rule derives one at freeze), a wall-clock deadline per campaign. Outputs: $OUT/NAME.optimize.json (the
# report model), $OUT/NAME.report.md, $OUT/NAME.breakdown.json (only where it differs from NAME.optimize.json),
# $OUT/user_campaign.log (progress lines, one per candidate).
#   DEADLINE_S=540 bash scripts/device/user_campaign.sh decoder_llama
#   DEADLINE_S=240 bash scripts/device/user_campaign.sh conv_resnet encoder_bert
#   LEVER_ARGS="--lever static_cache --lever decode_loop" ...     # levers listed (default: the whole catalog)
#   FREEZE_ARGS="--k 4" DEADLINE_S=540 bash scripts/device/user_campaign.sh decoder_roof    # a looser tolerance declared: lossy levers tried
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
export HYPERLOOM_WORKSPACE="$PWD"
log="$out/user_campaign.log"
for name in "$@"; do
  started=$(date +%s)
  source_args=(--workload "scripts/device/user_workloads/$name.py:build" --session "$name")
  if [ -n "${FREEZE_ARGS:-}" ] && [ ! -f ".hyperloom/optimize/$name/ledger.sqlite" ]; then  # a tolerance declared first (e.g. --k 4); a resume keeps its freeze
    python3 -m hyperloom.cli.main workload freeze --workload "scripts/device/user_workloads/$name.py:build" --name "$name" --overwrite $FREEZE_ARGS \
      --json > "$out/$name.freeze.json" 2>>"$log"
    echo "$name: freeze ($FREEZE_ARGS) exit $? after $(( $(date +%s) - started )) s" | tee -a "$log"
  fi
  if [ -n "${FREEZE_ARGS:-}" ]; then source_args=(--session "$name"); fi
  python3 -m hyperloom.cli.main optimize start "${source_args[@]}" ${LEVER_ARGS:-} \
    --deadline-s "${DEADLINE_S:-540}" --timeout-s "${TIMEOUT_S:-150}" --json > "$out/$name.optimize.json" 2>>"$log"
  echo "$name: optimize exit $? after $(( $(date +%s) - started )) s" | tee -a "$log"
  python3 - "$out" "$name" <<'PY' 2>&1 | tee -a "$log"
import json, shutil, sys
from pathlib import Path
out, name = Path(sys.argv[1]), sys.argv[2]
report = json.loads((out / f"{name}.optimize.json").read_text())
print(report["status"]["summary"])
for r in report["records"]:
    result = r["result"]
    print(f"  #{r['seq']} {r['phase']:<10} {'+'.join(result['levers']) or 'A/A':<48} {r['decision']:<9} {result['verdict']:<10} "
          f"{result.get('speedup') or 0:6.3g}x {r['device_s']:6.1f} s gate {result.get('gate_s') or 0:5.1f} s turn {result.get('worker_turn', 1)}  {result['reason'][:150]}")
gated = [(r["result"].get("gate_s"), r["result"].get("trial_s")) for r in report["records"]]
gated = [(g, t) for g, t in gated if g and t]
if gated:
    print(f"  gate cost: {sum(g for g, _ in gated):.1f} of {sum(t for _, t in gated):.1f} trial-s ({100 * sum(g for g, _ in gated) / sum(t for _, t in gated):.1f} %), "
          f"per trial at most {100 * max(g / t for g, t in gated):.1f} %")
for r in report["records"]:
    if r["result"].get("gate_parts_s"):
        print(f"  #{r['seq']} gate parts", {k: round(v, 1) for k, v in r["result"]["gate_parts_s"].items()})
for note in report["notes"]:
    print("  note:", note[:220])
for key, suffix in (("report_md", "report.md"), ("breakdown_json", "breakdown.json")):
    same = suffix == "breakdown.json" and report.get(key) and Path(report[key]).read_bytes() == (out / f"{name}.optimize.json").read_bytes()
    if report.get(key) and not same:  # the breakdown is the answer itself, byte for byte: one copy comes back
        shutil.copy(report[key], out / f"{name}.{suffix}")
PY
done
