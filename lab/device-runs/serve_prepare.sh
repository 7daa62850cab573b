#!/usr/bin/env bash
# Run HERE (a machine with network) before lab/device-runs/serve_h200.sh: what the device, which has no network,
# needs for a serve_sweep on the GPU, in two folders to carry (both git-ignored through .git/info/exclude):
#   .whl/           scripts/device/prepare.sh's wheels (it writes .device/ too) and the serving client's and gguf's
#   .serve-device/  llama.cpp's source, stripped (about 10 MB), from llama-cpp-python's PyPI sdist
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
grep -qx '/.serve-device/' .git/info/exclude 2>/dev/null || echo '/.serve-device/' >> .git/info/exclude
# The device scripts' common set (the wheel, pydantic, mcp, ml-dtypes, ...), then what serving adds.
bash scripts/device/prepare.sh >/dev/null
.venv/bin/python -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
  httpx2==2.16.2 httpcore2==2.16.2 truststore==0.10.5 gguf==0.19.0
mkdir -p .serve-device
bash scripts/serve/llama_server.sh --pack-source .serve-device/llama.cpp-src.tar.xz >/dev/null
du -sh .whl .serve-device
