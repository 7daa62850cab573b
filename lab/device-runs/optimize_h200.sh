#!/usr/bin/env bash
# Run ON THE DEVICE (one H200, no network), after scripts/device/prepare.sh here, carrying .whl. Issue 32's figures:
# one optimize campaign over a transformers decoder through the MCP tools (optimize_h200.py), a 30-minute budget by
# default. Outputs in $OUT/optimize/ (report.md, breakdown.json, campaign.png, calls-LABEL.json, state.tgz) and
# $OUT/optimize-LABEL.log.
#
# A device command lasts at most 10 minutes, so a longer campaign is several commands, each resuming the session:
#   OPTIMIZE_TIMEOUT_S=560 bash lab/device-runs/optimize_h200.sh --label 1 --deadline-s 330 ...   (and again, --label 2, ...)
# The workspace lives in .device-ws/ (git-ignored, not carried: the warm machine keeps it between commands). For a
# cold machine, put the last state.tgz in .device-carry/ here and carry that folder: it is unpacked when .device-ws/ is
# missing.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
ws=.device-ws/optimize
if [ ! -d "$ws" ] && [ -f .device-carry/optimize-state.tgz ]; then
  mkdir -p .device-ws && tar xzf .device-carry/optimize-state.tgz -C .device-ws && echo "unpacked the carried campaign state into $ws"
fi
label=1; for ((i = 1; i <= $#; i++)); do [ "${!i}" = "--label" ] && { j=$((i + 1)); label="${!j}"; }; done
timeout "${OPTIMIZE_TIMEOUT_S:-1750}" python3 lab/device-runs/optimize_h200.py --workspace "$ws" "$@" 2>&1 | tee "$out/optimize-$label.log" | tail -60
mkdir -p "$out/optimize"
# what a resume needs (the ledger, the frozen workload, integrate's overrides, the profile's report), not the workers' folders or traces
tar czf "$out/optimize/state.tgz" -C .device-ws --exclude='*/runs' --exclude='trace.json' --exclude='*.json.gz' optimize && du -h "$out/optimize/state.tgz"
