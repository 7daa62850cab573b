source scripts/device/env.sh
DEADLINE_S=230 TIMEOUT_S=150 bash scripts/device/user_campaign.sh conv_resnet 2>&1 | tail -45
bash scripts/device/user_workloads.sh decoder_small '["compile"]' '["static_cache", "decode_loop"]' '["sdpa_math"]' 2>&1 | tail -30
