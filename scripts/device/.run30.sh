# Issue 46 by the campaign itself, resumed over several device commands (each under the 600 s limit): decoder_roof.py
# (the 1.2B decoder, plain generate of 64 tokens), no tolerance declared, `optimize start` with six levers listed (the
# catalog's preconditions: decode_loop waits for the static cache, decode_attention and decode_gemv for its graphs,
# inductor_combo_kernels for compiled code).
# The campaign's state comes back trimmed to what a resume reads (the freeze's workload.json and frozen sets, the
# session's ledger and manifest; no runs, no profiles), split in 15 MB parts (a returned file may have 16 MiB; on the
# H100 the state was 45 MB compressed; its frozen sets hold the teacher-forced logits over a 128,256-token vocabulary,
# the baseline's and the twin's). To
# resume on a fresh machine: `cat state.tgz.part-* | tar xzf -` here, then carry `.hyperloom/workload/decoder_roof` and
# `.hyperloom/optimize/decoder_roof` (a warm machine keeps them: no carry needed).
#   DEADLINE_S=440 bash scripts/device/.run30.sh      (session 29 on the H100: 540 s, then a resume of 310 s)
source scripts/device/env.sh
ls -d .hyperloom/optimize/decoder_roof 2>/dev/null && echo "resuming: $(ls .hyperloom/optimize/decoder_roof)"
LEVER_ARGS="--lever static_cache --lever decode_loop --lever fuse_projections --lever decode_attention --lever decode_gemv --lever inductor_combo_kernels" \
  DEADLINE_S=${DEADLINE_S:-440} TIMEOUT_S=150 bash scripts/device/user_campaign.sh decoder_roof 2>&1 | tail -40
python3 -c "import json; s = json.load(open('$out/decoder_roof.optimize.json'))['status']; print('by part', s.get('spent_by_part_s'))"
du -sh .hyperloom/workload/decoder_roof/* .hyperloom/workload/decoder_roof/frozen/* 2>/dev/null | sort -h | tail -12  # what the state holds
tar czf /tmp/state.tgz --exclude=runs --exclude=profiled .hyperloom/workload/decoder_roof .hyperloom/optimize/decoder_roof \
  && split -b 15M /tmp/state.tgz "$out/state.tgz.part-" && rm -f /tmp/state.tgz && ls -la "$out"
cd "$out" && tar czf /tmp/run30.tgz --exclude 'state.tgz.part-*' . && find . -mindepth 1 ! -name 'state.tgz.part-*' -delete && mv /tmp/run30.tgz .
