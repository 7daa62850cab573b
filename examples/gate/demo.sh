#!/usr/bin/env bash
# The gate on shipped data: freeze a reference with its tolerance declared up front, then judge two
# RMSNorm candidates against it. The fp16 kernel passes; the one whose reduction drops a wave fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bash "$root/scripts/setup.sh"
hl="$root/.venv/bin/hyperloom"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$root"/examples/gate/*.npy "$work"/
cd "$work"
export HYPERLOOM_WORKSPACE="$work"

echo "== freeze the reference and declare the tolerance (fp16 outputs: atol 1e-3, rtol 4e-3)"
"$hl" gate freeze --out rmsnorm_ref --reference reference.npy --case-name rmsnorm_8x4096 \
  --input x.npy --input weight.npy --atol 1e-3 --rtol 4e-3 --nan-policy forbid
for candidate in candidate_fp16 candidate_dropped_tail; do
  echo
  echo "== $candidate"
  set +e
  "$hl" gate check --reference-set rmsnorm_ref --candidate "$candidate.npy" --target host
  status=$?
  set -e
  case "$candidate:$status" in
    candidate_fp16:0 | candidate_dropped_tail:1) ;;
    *) echo "demo: unexpected exit status $status for $candidate" >&2; exit 1 ;;
  esac
done
echo
echo "demo: both verdicts as expected (fp16 kernel PASS, dropped-tail reduction FAIL)"
