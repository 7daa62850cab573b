#!/usr/bin/env bash
# Run HERE (a machine with network and clang) before a device batch: what the GPU machine (no network, no clang,
# Python 3.12, x86-64) needs, in folders to carry, git-ignored through .git/info/exclude:
#   .whl/     the hyperloom wheel and the Python packages the device image lacks (every device script installs from it)
#   .device-ws/, .device-carry/  a campaign's workspace on the device and its packed state for a cold machine (optimize_h200.sh)
#   .device/  the foreign kernels (tests/fixtures/foreign, not committed) drafted by spec_init and filled (bench/onboarding.py --prepare)
# On the device: python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
#                export PYTHONPATH=/tmp/site
set -euo pipefail
cd "$(dirname "$0")/../.."
for folder in /.whl/ /.device/ /.device-ws/ /.device-carry/; do grep -qx "$folder" .git/info/exclude 2>/dev/null || echo "$folder" >> .git/info/exclude; done
python=.venv/bin/python
rm -rf .whl .device && mkdir -p .whl .device
"$python" -m pip wheel --quiet --no-deps --no-build-isolation -w .whl .
# The image has numpy, pyyaml, msgpack, matplotlib, anyio, typing-extensions, attrs, tqdm, packaging, cuda-bindings, torch, triton.
"$python" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
  optuna==5.0.0 sqlalchemy==2.1.9 alembic==1.20.1 mako==1.4.3 colorlog==6.12.0 cmaes==0.13.1 orjson==3.13.0 \
  jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1 \
  py-spy==0.4.3 ml-dtypes==0.6.0 \
  liger-kernel==0.8.5  # py-spy: where the loop's process spends its GIL (tune_h200.sh profile); ml-dtypes: bfloat16 and fp8 arrays (0.6: the image's may be 0.7, whose import takes a second); liger-kernel: pure Python: the two Triton kernels written outside Hyperloom that bench/triton_outside.py reads at run time
# mcp and what it needs (the image has none of it): the device scripts that drive the tools over MCP, as an agent does
"$python" -m pip download --quiet --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl mcp==2.3.0
"$python" bench/onboarding.py --prepare .device/onboarding --target sm_90
du -sh .whl .device
