#!/usr/bin/env bash
# Prepare a fresh Debian/Ubuntu machine: system packages, a virtual environment, the package.
#   scripts/setup.sh           the package into .venv (enough for the gate example)
#   scripts/setup.sh --llvm    also LLVM 19 (AMDGPU assembler and compiler: census, compile, verify, demo)
#   scripts/setup.sh --test    LLVM 19, the test extra and a CPU build of torch (the 2-rank gloo
#                              all-reduce tests)
set -euo pipefail
cd "$(dirname "$0")/.."

with_tests=0
with_llvm=0
for arg in "$@"; do
  case "$arg" in
    --test) with_tests=1; with_llvm=1 ;;
    --llvm) with_llvm=1 ;;
    *) echo "setup.sh: unknown option $arg (use --llvm, --test or nothing)" >&2; exit 2 ;;
  esac
done

packages=()
python3 -c 'import venv, ensurepip' 2>/dev/null || packages+=(python3-venv python3-pip)
if [ "$with_llvm" = 1 ]; then
  command -v llvm-mc-19 >/dev/null || packages+=(llvm-19)
  command -v clang-19 >/dev/null || packages+=(clang-19)
  command -v ld.lld-19 >/dev/null || packages+=(lld-19)
fi
if [ "${#packages[@]}" -gt 0 ]; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "setup.sh: installing ${packages[*]} with apt-get" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${packages[@]}" >/dev/null
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
extra=""; [ "$with_tests" = 1 ] && extra="[test]"
.venv/bin/python -m pip install --quiet --disable-pip-version-check ".${extra}"
if [ "$with_tests" = 1 ]; then
  # Pinned: this version resolves to a CPU-only wheel here; an unpinned torch pulls a multi-GB CUDA build.
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "torch==2.13.0"
fi
echo "setup.sh: ready: $(.venv/bin/hyperloom --version) in $(pwd)/.venv" >&2
echo "setup.sh: to put hyperloom, hyperloom-mcp and python on PATH in a shell, run: . $(pwd)/.venv/bin/activate" >&2
