# Session 33's last device command (about 400 s): (1) decode_gemv's few-row calls after session 33's batch-8 regression
# (the kept stack 4.87 ms a token at batch 8 against 1.92 without the GEMV): the kept stack as the lever now runs it
# (a few rows on cuBLAS) beside the few-row tile reloaded along K (FEW_ROWS), at batch 8 and 32 in one process;
# (2) issue 44's conv net campaign (no levers listed); its levers phase times compile and reduce-overhead in the same
# session (the hand bench of session 24, `.run16.sh`'s first line, did not fit the budget left). Session 33 ran (1) alone
# (its start failed twice); ROOF_S=0 skips it:   ROOF_S=0 DEADLINE_S=200 bash scripts/device/.run32.sh
source scripts/device/env.sh
[ "${ROOF_S:-150}" -gt 0 ] && timeout ${ROOF_S:-150} python3 scripts/device/roof_decode.py "$out/roof_b8_32" --batches 8,32 --attribute \
  --stacks plain,fused+attn+gemv-act+combo,fused+attn+gemv-act-few+combo 2>&1 | grep -v -i warn | tee "$out/roof_b8_32.log"
DEADLINE_S=${DEADLINE_S:-200} TIMEOUT_S=120 bash scripts/device/user_campaign.sh conv_resnet 2>&1 | tail -24
cd "$out" && tar czf /tmp/run32.tgz . && rm -rf ./* && mv /tmp/run32.tgz .
