source scripts/device/env.sh
DEADLINE_S=530 TIMEOUT_S=200 bash scripts/device/user_campaign.sh decoder_llama 2>&1 | tail -40
cp -r .hyperloom/optimize/decoder_llama/report.md $OUT/ 2>/dev/null; true
