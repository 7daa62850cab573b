#!/usr/bin/env bash
# Run HERE (a machine with network) before scripts/device/tune_h200.sh: the Python packages the device image lacks for
# tune (Python 3.12, x86-64), in .tune-device/ (git-ignored through .git/info/exclude), which the device call carries:
#   the hyperloom wheel of this checkout; pydantic and its three; optuna and its four (only --strategy tpe needs them).
# The image has numpy, pyyaml, tqdm, packaging, typing-extensions, MarkupSafe, msgpack, pytest and cuda-bindings.
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.tune-device/' .git/info/exclude 2>/dev/null || echo '/.tune-device/' >> .git/info/exclude
python=.venv/bin/python
rm -rf .tune-device && mkdir -p .tune-device
"$python" -m pip wheel --quiet --no-deps --no-build-isolation -w .tune-device .
"$python" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .tune-device \
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
  optuna==5.0.0 alembic==1.20.1 colorlog==6.12.0 sqlalchemy==2.1.9 mako==1.4.3
ls .tune-device && du -sh .tune-device
