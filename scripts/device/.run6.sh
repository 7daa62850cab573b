source scripts/device/env.sh
python3 scripts/device/stall_probe.py 2>&1 | grep -v Warning | tail -8
DEADLINE_S=230 TIMEOUT_S=150 bash scripts/device/user_campaign.sh conv_resnet 2>&1 | tail -45
