#!/usr/bin/env bash
# Run ON THE DEVICE (one NVIDIA H200, no network), after scripts/device/serve_prepare.sh here, carrying .whl and
# .serve-device. Two phases, each inside one 10-minute command; the machine must stay warm between them (the
# build is cached in /tmp/hyperloom-llama, and a build cut off by the time limit resumes where it stopped):
#   bash scripts/device/serve_h200.sh build   llama-server with CUDA for sm_90 (about 190 nvcc units on 16 cores)
#   bash scripts/device/serve_h200.sh sweep   a Llama-3-8B-shaped random-weight GGUF (f16, about 15 GB), then
#                                             serve_sweep 1 ... 256 streams against llama-server -np 256
# What comes back in $OUT (at most 7 files; results/h200/serve/ here): env.txt (GPU, nvcc, cmake, build and model
# times, the server command), serve_sweep.json/.png/.svg, serve_sweep_report.txt (the CLI's table and its stderr),
# server_log_tail.txt, and build_log_tail.txt when the build fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
phase="${1:?usage: serve_h200.sh build|sweep}"
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
mkdir -p /tmp/serve-ws && cd /tmp/serve-ws
# 256 slots is llama.cpp's sequence cap; 131072 tokens of context give each slot 512, enough for 120 + 128.
command=("$server" -m "$model" --host 127.0.0.1 --port 8080 -np 256 -c 131072 -ngl 99 -fa on -t 8 --metrics --no-ui)
echo "server command: ${command[*]}" >> "$env_txt"
echo "sweep: hyperloom serve sweep --base-url http://127.0.0.1:8080/v1 --max-concurrency 256 --input-tokens 120 --output-tokens 128 --max-duration-s 400 -- <server command>" >> "$env_txt"
python3 -m hyperloom.cli.main serve sweep --base-url http://127.0.0.1:8080/v1 --max-concurrency 256 \
  --input-tokens 120 --output-tokens 128 --max-duration-s 400 --ready-timeout-s 300 -- "${command[@]}" \
  > "$out/serve_sweep_report.txt" 2>&1 || echo "serve sweep exited with $?" >> "$out/serve_sweep_report.txt"
folder=$(ls -d .hyperloom/serve/*/ | head -n 1)
cp "$folder"/serve_sweep.json "$folder"/serve_sweep.png "$folder"/serve_sweep.svg "$out"/ 2>/dev/null || true
tail -n 300 "$folder/server.log" > "$out/server_log_tail.txt" 2>/dev/null || true
