#!/usr/bin/env bash
# Run HERE (a machine with network) before scripts/device/serve_h200.sh: what the device, which has no network,
# needs for a serve_sweep on the GPU, in two folders to carry (both git-ignored through .git/info/exclude):
#   .whl/           the hyperloom wheel and the Python packages the device image lacks (Python 3.12, x86-64)
#   .serve-device/  llama.cpp's source, stripped (about 10 MB), from llama-cpp-python's PyPI sdist
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
grep -qx '/.serve-device/' .git/info/exclude 2>/dev/null || echo '/.serve-device/' >> .git/info/exclude
python=.venv/bin/python
rm -rf .whl && mkdir -p .whl .serve-device
"$python" -m pip wheel --quiet --no-deps --no-build-isolation -w .whl .
# The device image has numpy, anyio, idna, h11, typing-extensions, matplotlib, pyyaml, requests and tqdm already.
"$python" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
  httpx2==2.16.2 httpcore2==2.16.2 truststore==0.10.5 gguf==0.19.0
bash scripts/serve/llama_server.sh --pack-source .serve-device/llama.cpp-src.tar.xz >/dev/null
du -sh .whl .serve-device
