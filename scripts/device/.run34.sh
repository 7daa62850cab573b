# Session 34's second device command (about 420 s): a float32 conv net's twin. (1) how far EfficientNet-B0's fp32
# baseline sits from its twin made as before (float32 with cuDNN's TF32 default: the model itself) and as now (float64,
# TF32 off); (2) that workload by hand (compile, channels_last, tf32) and (3) its campaign, no levers, no tolerance.
source scripts/device/env.sh
python3 scripts/device/twin_exactness.py "$OUT/twin_exactness.json" 2>&1 | grep -v -i warn | tail -12
bash scripts/device/user_workloads.sh conv_fp32 '["compile"]' '["channels_last"]' '["tf32"]' 2>&1 | tail -14
[ "${CAMPAIGN_S:-200}" -gt 0 ] && DEADLINE_S=${CAMPAIGN_S:-200} TIMEOUT_S=120 bash scripts/device/user_campaign.sh conv_fp32 2>&1 | tail -24
cd "$OUT" && tar czf /tmp/run34.tgz . && rm -rf ./* && mv /tmp/run34.tgz .
