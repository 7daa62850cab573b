# Session 22's acceptance runs (about 420 s): the conv campaign with the search's own cut and the rivals' order, the
# gate's cost of the eager-generate candidate with proof of work only for unreviewed code, and the decode_loop stack's
# trace for issue 46's attribution fixture.
source scripts/device/env.sh
DEADLINE_S=230 TIMEOUT_S=150 bash scripts/device/user_campaign.sh conv_resnet 2>&1 | tail -40
bash scripts/device/user_workloads.sh decoder_small '["sdpa_math"]' '["static_cache", "decode_loop"]' 2>&1 | tail -16
HYPERLOOM_WORKSPACE="$PWD" python3 scripts/device/stack_trace.py decoder_small "$OUT" static_cache decode_loop 2>&1 | tail -4
cd "$OUT" && tar czf run8.tgz --exclude run8.tgz . && find . -type f ! -name run8.tgz ! -name env.txt -delete  # one file back: more than 8 are left out
