#!/usr/bin/env bash
# Run ON THE DEVICE (one H200, no network), after scripts/device/prepare.sh here, carrying .whl. Issue 32's figures:
# one optimize campaign over a transformers decoder through the MCP tools (optimize_h200.py), a 30-minute budget by
# default. Outputs in $OUT/optimize/ (report.md, breakdown.json, campaign.png, calls.json) and $OUT/optimize.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
timeout "${OPTIMIZE_TIMEOUT_S:-1750}" python3 scripts/device/optimize_h200.py "$@" 2>&1 | tee "$out/optimize.log" | tail -60
