# decode_attention and decode_gemv on the H200 (about 380 s): roof_decode's A/B of the attention's split and of the
# RMSNorms folded into the GEMVs, then the 1.2B decoder of decoder_roof.py
# frozen with no tolerance declared (the twin rule), benched with static_cache + decode_loop + fuse_projections and the
# same with the two kernel levers: the derived gate on their changed bits, their engagement from the replayed graph's
# device kernels, the A/B.
source scripts/device/env.sh
python3 scripts/device/roof_decode.py "$out/roof_b1" --batches 1 --attribute --stacks fused,fused+attn,fused+attn+gemv-nofold,fused+attn+gemv 2>&1 | grep -v Warning | tail -7
bash scripts/device/user_workloads.sh decoder_roof '["static_cache", "decode_loop", "fuse_projections"]' \
  '["static_cache", "decode_loop", "fuse_projections", "decode_attention", "decode_gemv"]' 2>&1 | tail -12
python3 -c "
import json; r = json.load(open('$out/decoder_roof.bench.json'))
for c in r['candidates']:
    print('+'.join(c['levers']), c['verdict'], c.get('speedup'), [(e['lever'], e['engaged'], e['evidence'][:200]) for e in c['engagement']])
    print('   ', [(o['output'], o['passed'], o['detail'][:220]) for o in c['outputs']][:3])
"
cd "$out" && tar czf /tmp/run26.tgz . && rm -rf ./* && mv /tmp/run26.tgz .
