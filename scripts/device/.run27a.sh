# Issue 46, session 27, first command (the attention check and the cold GEMV sweep; about 60 s on an H100):
source scripts/device/env.sh
python3 scripts/device/decode_attention_check.py "$out/attention" 2>&1 | tail -8
python3 scripts/device/gemv_sweep.py "$out/gemv_cold" --shapes q+k+v,o,gate+up,down 2>&1 | grep -v Warning | tail -6
cd "$out" && tar czf /tmp/run27a.tgz . && rm -rf ./* && mv /tmp/run27a.tgz .
