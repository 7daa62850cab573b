#!/usr/bin/env bash
# Development only: point .venv's `hyperloom` at this working tree through a folder of symlinks laid out
# as the wheel lays the package out (src/hyperloom, tools/, mcp_server/, validators/, skill/, kernels/…),
# so a change is live in the venv without a reinstall. `bash scripts/setup.sh` undoes it (a real install).
set -euo pipefail
cd "$(dirname "$0")/.."
here=$(pwd)
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
farm="$here/.venv/hyperloom-dev/hyperloom"
rm -rf "$site/hyperloom" "$here/.venv/hyperloom-dev"
mkdir -p "$farm/kernels"
for entry in src/hyperloom/*; do ln -s "$here/$entry" "$farm/$(basename "$entry")"; done
for folder in tools mcp_server validators skill; do ln -s "$here/$folder" "$farm/$folder"; done
for kernels in microbench decode allreduce runtime examples triton; do ln -s "$here/kernels/$kernels" "$farm/kernels/$kernels"; done
echo "$here/.venv/hyperloom-dev" > "$site/hyperloom-dev.pth"
echo "dev_link.sh: .venv imports hyperloom from $here" >&2
