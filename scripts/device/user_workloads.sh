#!/usr/bin/env bash
# Run ON THE DEVICE (one H200, no network), carrying .whl (the hyperloom wheel and what the image lacks). Issue 44's
# user workloads (scripts/device/user_workloads/: a Llama-family decoder with a plain generate, a BERT encoder, a
# ResNet-50), each frozen with no tolerance declared (the twin rule derives one) and benched beside the levers named,
# through the CLI as a user would call it. Outputs: $OUT/NAME.freeze.json, $OUT/NAME.bench.json, $OUT/user_workloads.log.
#   bash scripts/device/user_workloads.sh conv_resnet '["compile"]' '["channels_last"]' ...
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
export HYPERLOOM_WORKSPACE="$PWD"
name=$1; shift
candidates=(); for c in "$@"; do candidates+=(--candidate "$c"); done
log="$out/user_workloads.log"
started=$(date +%s)
python3 -m hyperloom.cli.main workload freeze --workload "scripts/device/user_workloads/$name.py:build" --name "$name" --overwrite --json > "$out/$name.freeze.json" 2>>"$log"
echo "$name: freeze exit $? after $(( $(date +%s) - started )) s" | tee -a "$log"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(r.get('summary')); [print(' ', o['name'], o['tolerance'].get('derived')) for o in r.get('outputs', [])]" "$out/$name.freeze.json" 2>&1 | tee -a "$log"
python3 -m hyperloom.cli.main workload bench --name "$name" "${candidates[@]}" --pairs 5 --steps-per-leg 2 ${BENCH_ARGS:-} --json > "$out/$name.bench${TAG:-}.json" 2>>"$log"
echo "$name: bench exit $? after $(( $(date +%s) - started )) s" | tee -a "$log"
python3 -c "
import json, sys
r = json.load(open(sys.argv[1])); print(r.get('summary'))
for c in r.get('candidates', []):
    print(' ', '+'.join(c['levers']), c['verdict'], (c.get('speedup') or 0), c['reason'][:200])
    print('     trial', round(c.get('trial_s') or 0, 1), 's gate', round(c.get('gate_s') or 0, 1), 's', {k: round(v, 1) for k, v in (c.get('gate_parts_s') or {}).items()}, 'turn', c.get('worker_turn'))
    for o in c['outputs']:
        print('     ', o['output'], o['passed'], o['detail'][:220])
" "$out/$name.bench${TAG:-}.json" 2>&1 | tee -a "$log"
