# Issue 46 by the campaign itself, resumable over several device commands (each under the 600 s limit): decoder_roof.py
# (the 1.2B decoder, plain generate of 64 tokens), no tolerance declared, `optimize start` with five levers listed. The
# listed levers meet the catalog's preconditions now: decode_loop waits for the static cache, decode_attention and
# decode_gemv for decode_loop's graphs, fuse_projections (engaged, hidden by the eager host) is tried again on the
# stack. The workspace's .hyperloom (freeze, ledger) is packed as state.tgz to resume the same campaign in a later call,
# but on the H100 (session 28) it was 107 MB, over the 16 MiB a returned file may have: it did not come back. Until the
# state is trimmed to the freeze and the ledger, a resume needs the same warm machine.
source scripts/device/env.sh
LEVER_ARGS="--lever static_cache --lever decode_loop --lever fuse_projections --lever decode_attention --lever decode_gemv" \
  DEADLINE_S=${DEADLINE_S:-480} TIMEOUT_S=150 bash scripts/device/user_campaign.sh decoder_roof 2>&1 | tail -40
python3 -c "import json; s = json.load(open('$out/decoder_roof.optimize.json'))['status']; print('by part', s.get('spent_by_part_s'))"
tar czf "$out/state.tgz" .hyperloom && ls -la "$out"
cd "$out" && tar czf /tmp/run29.tgz --exclude state.tgz --exclude run29.tgz . && find . -mindepth 1 ! -name state.tgz -delete && mv /tmp/run29.tgz .
