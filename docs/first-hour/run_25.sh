#!/bin/bash
# Issue 25's "Why" cases as a user meets them: | case | command | exit | first line |.
# Usage: docs/first-hour/run_25.sh [SRC_DIR] > table.md
# SRC_DIR: the rewardsmith sources to run (default: this checkout's src), with this
# checkout's .venv; point it at another checkout's src for "before". Uses ports 18531-18532.
# The bench case reads ../shared/data beside the checkout (skipped when it is not there).
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
SRC=${1:-$ROOT/src}; DOCS=$(cd "$SRC/../docs" && pwd)
DATA=$ROOT/../shared/data; [ -d "$DATA" ] || DATA=/work/shared/data
W=$(mktemp -d); cp "$HERE"/make_data_25.py "$HERE"/checks_25.py "$W"/; cd "$W"
export PATH=$ROOT/.venv/bin:$PATH PYTHONPATH=$SRC REWARDSMITH_HOME=$W/home NO_COLOR=1 COLUMNS=400
unset OPENAI_BASE_URL OPENAI_API_KEY REWARDSMITH_LLM_BASE_URL REWARDSMITH_LLM_MODEL REWARDSMITH_LLM_API_KEY
python make_data_25.py; mkdir -p home outs
LIB="--library home/lib.db"
case_() {  # id, then the command
  local id=$1; shift
  local out; out=$(eval "$@" 2>&1 < /dev/null); local rc=$?
  local first; first=$(printf '%s\n' "$out" | grep -v '^\s*$' | grep -v '━\|^\s*[┏┃┡│└]' | head -1 | cut -c1-200 | sed 's/|/\\|/g')
  printf '| %s | `%s` | %s | %s |\n' "$id" "$(echo "$*" | sed 's/|/\\|/g')" "$rc" "$first"
}
statuses() { python -c "import json,sys; print(' '.join(f\"{r.get('id','-')}:{r['status']}:{r['reward']}\" for r in map(json.loads, open(sys.argv[1]))))" "$1" 2>&1; }
post() { curl -s -o body.json -w '%{http_code}' -H 'content-type: application/json' "$@"; echo " $(head -c 300 body.json)"; }
echo '| case | command | exit | first line |'
echo '|---|---|---|---|'
# 1. /v1/openrlhf on a --task-map server, no ?tool= / ?task=
rewardsmith serve --task-map gsm8k=gsm8k --port 18531 --workers 2 $LIB > server.log 2>&1 & S1=$!
for _ in $(seq 120); do curl -sf localhost:18531/health > /dev/null && break; sleep 1; done
case_ 1.openrlhf-no-task "post localhost:18531/v1/openrlhf -d @openrlhf.json"
case_ 1.openrlhf-no-task.logged "grep -c 'openrlhf refused' server.log"
case_ 1.openrlhf-task "post 'localhost:18531/v1/openrlhf?task=gsm8k' -d @openrlhf.json"
case_ 1.curl-example-no-task "post localhost:18531/v1/score -d @score_no_task.json"
kill $S1 2>/dev/null; wait $S1 2>/dev/null
# 2. the OpenRLHF flags in the docs
case_ 2.openrlhf-flags "python checks_25.py openrlhf-flags $DOCS"
# 3. code tests as a JSON list of assert strings
case_ 3.code-list rewardsmith score code_list.jsonl -o outs/code.jsonl -t code $LIB -q
case_ 3.code-list.rows statuses outs/code.jsonl
# 4. the score table for samples that were not scored
case_ 4.score-not-scored.row "rewardsmith score matrix.jsonl -o outs/matrix.jsonl $LIB | grep -E '│ - +│ (-|\(no tool\)) +│' | tr -s ' │' ' '"
case_ 4.score-not-scored.note "rewardsmith score matrix.jsonl -o outs/matrix2.jsonl $LIB | grep 'not scored:' | head -1"
# 5. TRL: one function over several tasks; veRL batch: a component that never ran
case_ 5.trl-several-tasks "python checks_25.py trl"
case_ 5.verl-batch "python checks_25.py verl"
# 6. -h and --version
case_ 6.dash-h "rewardsmith -h > /dev/null"
case_ 6.dash-h.error "rewardsmith -h 2>&1 | grep -m1 -e 'No such option' -e 'A reward engine' | tr -d '│'"
case_ 6.version "rewardsmith --version 2>&1 | grep -m1 -e 'No such option' -e '^rewardsmith ' | tr -d '│'"
# 7. --help examples: on every group, naming files that ship
case_ 7.group-examples "rewardsmith tools --help | grep -c '\\\$ rewardsmith'"
case_ 7.example-files "python checks_25.py help-examples $ROOT"
# 8. bench routing --hard: output in its first 30 s (it runs for minutes)
if [ -d "$DATA/gsm8k" ]; then
  case_ 8.bench-progress "timeout 30 rewardsmith bench routing --hard --no-timing --data $DATA"
fi
# 9. rm train with warmup longer than the run; the model card's snippet
case_ 9.rm-warmup "rewardsmith rm train --corpus corpus.jsonl --out-dir rm --max-steps 3 --warmup-steps 20 --batch-size 8 --no-register -q"
case_ 9.card-snippet "python checks_25.py card"
# 10. plots: the step axis of a 3-step run
case_ 10.integer-ticks "python checks_25.py ticks"
# 11. report on a search run folder
case_ 11.report-search "rewardsmith report search_run"
# 12. rollouts as data
case_ 12.rescore "rewardsmith rescore $ROOT/examples/rollouts.jsonl --tool gsm8k@1 -o outs/rescored.jsonl $LIB -q"
case_ 12.profile "rewardsmith profile $ROOT/examples/rollouts.jsonl --part gsm8k -q --json outs/p.json"
case_ 12.profile.dead "python -c \"import json; o=json.load(open('outs/p.json'))['overall']; print('dead groups', o['dead_groups'], 'of', o['groups'])\""
case_ 12.compare "rewardsmith tools add $ROOT/examples/tools/single_final_answer.json $LIB > /dev/null; rewardsmith tools add $ROOT/examples/tools/sound_arithmetic.json $LIB > /dev/null; rewardsmith tools add $ROOT/examples/tools/gsm8k_strict.json $LIB > /dev/null; rewardsmith compare $ROOT/examples/rollouts.jsonl --tool gsm8k@1 --against gsm8k_strict $LIB | tail -1"
cd /; rm -rf "$W"
