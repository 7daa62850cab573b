# Issue 45's GPU corpus rerun on what landed since session 21 (about 300 s): the small user decoder (a transformers
# Llama, plain greedy generate, no tolerance declared: the twin rule), benched beside two honest levers and the five
# GPU-relevant cheats as overrides modules (memo, stale, lazy on a side CUDA stream, the worker's clock at a quarter,
# one real token then padded), 5 pairs of 2 steps; the gate's share of each trial.
source scripts/device/env.sh
c=scripts/device/user_workloads/cheats
bash scripts/device/user_workloads.sh decoder_small '["static_cache", "decode_loop"]' '["compile"]' \
  "[\"overrides:$c/generate_memo.py\"]" "[\"overrides:$c/generate_first_forever.py\"]" "[\"overrides:$c/generate_side_stream.py\"]" \
  "[\"overrides:$c/generate_quarter_clock.py\"]" "[\"overrides:$c/generate_prefill_only.py\"]" 2>&1 | tail -40
cd "$out" && tar czf /tmp/run28.tgz . && rm -rf ./* && mv /tmp/run28.tgz .
