source scripts/device/env.sh
python3 scripts/device/build_probe.py scripts/device/user_workloads/decoder_llama.py 2>&1 | tail -3 | tee $OUT/build_probe.log
c=scripts/device/user_workloads/cheats
bash scripts/device/user_workloads.sh decoder_small '["static_cache", "decode_loop"]' '["compile"]' \
  "[\"overrides:$c/generate_memo.py\"]" "[\"overrides:$c/generate_first_forever.py\"]" "[\"overrides:$c/generate_side_stream.py\"]" \
  "[\"overrides:$c/generate_quarter_clock.py\"]" "[\"overrides:$c/generate_prefill_only.py\"]" 2>&1 | tail -60
ls $OUT
