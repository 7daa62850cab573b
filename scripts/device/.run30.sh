# Issue 46 by the campaign itself, resumed over several device commands (each under the 600 s limit): decoder_roof.py
# (the 1.2B decoder, plain generate of 64 tokens), no tolerance declared, `optimize start` with five levers listed (the
# catalog's preconditions: decode_loop waits for the static cache, decode_attention and decode_gemv for its graphs).
# The campaign's state comes back as state.tgz, trimmed to what a resume reads (the freeze's workload.json and frozen
# sets, the session's ledger and manifest; no runs, no profiles: 107 MB untrimmed on the H100); unpack it here
# (`tar xzf state.tgz`) and carry `.hyperloom/workload/decoder_roof` and `.hyperloom/optimize/decoder_roof` to resume.
#   DEADLINE_S=440 bash scripts/device/.run30.sh
source scripts/device/env.sh
ls -d .hyperloom/optimize/decoder_roof 2>/dev/null && echo "resuming: $(ls .hyperloom/optimize/decoder_roof)"
LEVER_ARGS="--lever static_cache --lever decode_loop --lever fuse_projections --lever decode_attention --lever decode_gemv" \
  DEADLINE_S=${DEADLINE_S:-440} TIMEOUT_S=150 bash scripts/device/user_campaign.sh decoder_roof 2>&1 | tail -40
python3 -c "import json; s = json.load(open('$out/decoder_roof.optimize.json'))['status']; print('by part', s.get('spent_by_part_s'))"
du -sh .hyperloom/* .hyperloom/workload/decoder_roof/* .hyperloom/optimize/decoder_roof/* 2>/dev/null | sort -h | tail -12
tar czf "$out/state.tgz" --exclude=runs --exclude=profiled .hyperloom/workload/decoder_roof .hyperloom/optimize/decoder_roof && ls -la "$out"
cd "$out" && tar czf /tmp/run30.tgz --exclude state.tgz --exclude run30.tgz . && find . -mindepth 1 ! -name state.tgz -delete && mv /tmp/run30.tgz .
