# fuse_projections through the gate on the H200 (about 400 s): the 1.2B decoder of decoder_roof.py frozen with no
# tolerance declared (the twin rule), benched with static_cache + decode_loop and the same with fuse_projections:
# the derived gate on its changed bits, its engagement from the replayed graph's GEMM kernels, the A/B.
source scripts/device/env.sh
bash scripts/device/user_workloads.sh decoder_roof '["static_cache", "decode_loop"]' '["static_cache", "decode_loop", "fuse_projections"]' 2>&1 | tail -16
python3 -c "
import json; r = json.load(open('$out/decoder_roof.bench.json'))
for c in r['candidates']:
    print('+'.join(c['levers']), c['verdict'], [(e['lever'], e['engaged'], e['evidence'][:160]) for e in c['engagement']])
"
cd "$out" && tar czf /tmp/run22.tgz . && rm -rf ./* && mv /tmp/run22.tgz .
