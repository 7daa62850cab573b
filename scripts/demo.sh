#!/usr/bin/env bash
# The main job on a fresh Debian/Ubuntu machine: install (LLVM 19 from apt, the package in .venv),
# then run `hyperloom demo`, which drives the MCP server through the loop on the shipped decode
# kernel and writes hyperloom-demo/report.md. Extra arguments go to `hyperloom demo`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/setup.sh" --llvm
exec "$root/.venv/bin/hyperloom" demo "$@"
