#!/usr/bin/env bash
# Run HERE (a machine with network) before scripts/device/triton_h200.sh: what the device image lacks for issue 19's
# Triton runs (Python 3.12, x86-64), in .triton-device/ (git-ignored through .git/info/exclude), which the device call
# carries: the hyperloom wheel of this checkout; pydantic and its three; optuna and its four (imported by tune's
# proposers); Liger-Kernel's wheel (pure Python: the two Triton kernels written outside Hyperloom that
# bench/triton_outside.py measures, read from the installed package at run time, never committed here).
# The image has torch, triton, numpy, pyyaml, packaging, msgpack and cuda-bindings.
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.triton-device/' .git/info/exclude 2>/dev/null || echo '/.triton-device/' >> .git/info/exclude
python=.venv/bin/python
rm -rf .triton-device && mkdir -p .triton-device
"$python" -m pip wheel --quiet --no-deps --no-build-isolation -w .triton-device .
"$python" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .triton-device \
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
  optuna==5.0.0 alembic==1.20.1 colorlog==6.12.0 sqlalchemy==2.1.9 mako==1.4.3 liger-kernel==0.8.5
ls .triton-device && du -sh .triton-device
