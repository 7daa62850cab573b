# Session 23's second device command (about 560 s): issue 44's other two workloads in the same session as the conv
# net's campaign (.run11.sh): the Llama-shaped decoder, then the BERT encoder, one `optimize start` each.
source scripts/device/env.sh
DEADLINE_S=300 TIMEOUT_S=120 bash scripts/device/user_campaign.sh decoder_llama 2>&1 | tail -24
DEADLINE_S=130 TIMEOUT_S=100 bash scripts/device/user_campaign.sh encoder_bert 2>&1 | tail -20
cd "$OUT" && tar czf /tmp/run12.tgz . && rm -rf ./* && mv /tmp/run12.tgz .
