#!/usr/bin/env bash
# Run ON THE DEVICE (one NVIDIA H200, no network), after lab/device-runs/serve_prepare.sh here, carrying .whl and
# .serve-device. Three phases, each inside one 10-minute command; the machine must stay warm between them (the
# build is cached in /tmp/hyperloom-llama, and a build cut off by the time limit resumes where it stopped):
#   bash lab/device-runs/serve_h200.sh build   llama-server with CUDA for sm_90 (about 190 nvcc units on 16 cores)
#   bash lab/device-runs/serve_h200.sh sweep   a Llama-3-8B-shaped random-weight GGUF (f16, about 15 GB), then
#                                             serve_sweep 1 ... 256 streams of synthetic prompts against llama-server
#                                             -np 256 -c 262144 (1,024 tokens a slot)
#   bash lab/device-runs/serve_h200.sh trace   the same model, serve_sweep of the default agent trace (multi-turn
#                                             sessions sharing a 2,048-token prefix, growing to about 7,400 tokens)
#                                             1 ... 64 streams against llama-server -np 64 -c 524288 (8,192 a slot)
# What comes back in $OUT (results/h200/serve/ here): env.txt (GPU, nvcc, cmake, build and model times, the server
# command), then for sweep serve_sweep.json/.png/.svg, serve_sweep_report.txt (the CLI's table and its stderr) and
# server_log_tail.txt; for trace the same under agent_trace_*; build_log_tail.txt when the build fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
phase="${1:?usage: serve_h200.sh build|sweep|trace}"
out="${OUT:-/tmp/serve-out}"; mkdir -p "$out"
env_txt="$out/env.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
export HYPERLOOM_LLAMA_CACHE=/tmp/hyperloom-llama
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nvcc --version | tail -2; cmake --version | head -1; } > "$env_txt"

started=$(date +%s)
if ! server=$(bash scripts/serve/llama_server.sh --cuda --arch 90 --source .serve-device/llama.cpp-src.tar.xz 2>> "$env_txt"); then
  tail -n 80 "$HYPERLOOM_LLAMA_CACHE"/build-*.log > "$out/build_log_tail.txt" 2>/dev/null || true
  echo "the CUDA build failed or was cut off after $(( $(date +%s) - started )) s; run the build phase again to resume" | tee -a "$env_txt" >&2
  exit 1
fi
echo "llama-server: $server, ready after $(( $(date +%s) - started )) s in this command" | tee -a "$env_txt"
[ "$phase" = build ] && exit 0

model=/tmp/llama8b-random.gguf
if [ ! -f "$model" ]; then
  written=$(date +%s)
  python3 scripts/serve/write_gguf.py --out "$model" --preset llama-8b 2>> "$env_txt"
  echo "model written in $(( $(date +%s) - written )) s: $(stat -c %s "$model") bytes" >> "$env_txt"
fi
# One sweep in its own workspace (its folder is the only one under .hyperloom/serve/); outputs prefixed by its name.
run_sweep() {
  local name="$1" slots="$2" context="$3"; shift 3
  local ws="/tmp/serve-ws-$name" prefix=""; [ "$name" = synthetic ] || prefix="${name}_"
  mkdir -p "$ws"
  local command=("$server" -m "$model" --host 127.0.0.1 --port 8080 -np "$slots" -c "$context" -ngl 99 -fa on -t 8 --metrics --no-ui)
  echo "$name server command: ${command[*]}" >> "$env_txt"
  echo "$name sweep: hyperloom serve sweep --base-url http://127.0.0.1:8080/v1 $* --ready-timeout-s 300 -- <server command>" >> "$env_txt"
  # timeout: the device ends a command at 600 s; stopping the sweep first leaves time to copy what it wrote
  (cd "$ws" && timeout -s INT "${SWEEP_LIMIT_S:-470}" python3 -m hyperloom.cli.main serve sweep --base-url http://127.0.0.1:8080/v1 "$@" --ready-timeout-s 300 -- "${command[@]}") \
    > "$out/${prefix}serve_sweep_report.txt" 2>&1 || echo "serve sweep exited with $?" >> "$out/${prefix}serve_sweep_report.txt"
  local folder; folder=$(ls -d "$ws"/.hyperloom/serve/*/ | head -n 1)
  for f in serve_sweep.json serve_sweep.png serve_sweep.svg; do cp "$folder/$f" "$out/${prefix}$f" 2>/dev/null || true; done
  tail -n 300 "$folder/server.log" > "$out/${prefix}server_log_tail.txt" 2>/dev/null || true
}
# 256 slots is llama.cpp's sequence cap; -c is shared by the slots: 262144 gives each 1,024 tokens, room for 120 + 128
# (131072 gave 512, and the old calibration's first guess of 120 words was 556 tokens: the sweep's first request failed).
if [ "$phase" = sweep ]; then
  run_sweep synthetic 256 262144 --max-concurrency 256 --input-tokens 120 --output-tokens 128 --max-duration-s 300
fi
# The agent trace's sessions grow to about 7,400 tokens: 64 slots of 8,192 (KV cache 64 GiB at f16 beside the 15 GB model).
if [ "$phase" = trace ]; then
  run_sweep agent_trace 64 524288 --workload agent_trace --max-concurrency 64 --max-duration-s 300
fi
