#!/bin/bash
# Issue 17's "Why" cases as a user meets them: | case | command | exit | first line |.
# Usage: docs/first-hour/run.sh [SRC_DIR] > table.md
# SRC_DIR: the rewardsmith sources to run (default: this checkout's src), with its .venv;
# point it at another checkout's src (e.g. a `git worktree` of an older commit) for "before".
# Uses ports 18431, 18432 (scripted LLM endpoints) and 18499.
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
SRC=${1:-$ROOT/src}
W=$(mktemp -d); cp "$HERE"/*.py "$W"/; cd "$W"
export PATH=$ROOT/.venv/bin:$PATH PYTHONPATH=$SRC REWARDSMITH_HOME=$W/home NO_COLOR=1 COLUMNS=400
unset OPENAI_BASE_URL OPENAI_API_KEY REWARDSMITH_LLM_BASE_URL REWARDSMITH_LLM_MODEL REWARDSMITH_LLM_API_KEY
python make_data.py
python -c "import json; print(json.dumps({'completion': 'def f(x):\n    return 4', 'reference': json.dumps({'test_list': ['assert f(2) == 4']})}))" > mbpp_str.jsonl
mkdir -p home outs/a_dir
python fake_server.py ok 18431 & S1=$!
python fake_server.py refuse_key 18432 & S2=$!
sleep 1
LIB="--library home/lib.db"
case_() {  # id, then the command
  local id=$1; shift
  local out; out=$(eval "$@" 2>&1 < /dev/null); local rc=$?
  local first; first=$(printf '%s\n' "$out" | grep -v '^\s*$' | grep -v '━\|^\s*[┏┃┡│└]' | head -1 | cut -c1-160 | sed 's/|/\\|/g')
  printf '| %s | `%s` | %s | %s |\n' "$id" "$(echo "$*" | sed 's/|/\\|/g')" "$rc" "$first"
}
statuses() { python -c "import json,sys; print(' '.join(f\"{r.get('id','-')}:{r['status']}:{r['reward']}\" for r in map(json.loads, open(sys.argv[1]))))" "$1" 2>&1; }
echo '| case | command | exit | first line |'
echo '|---|---|---|---|'
case_ 1.gz      rewardsmith score good.jsonl.gz -o outs/gz.jsonl -t gsm8k $LIB -q
case_ 1.gz.rows statuses outs/gz.jsonl
case_ 1.latin1  rewardsmith score latin1.jsonl -o outs/l1.jsonl -t gsm8k $LIB -q
case_ 1.bom-crlf rewardsmith score bom.jsonl -o outs/bom.jsonl -t gsm8k $LIB -q
case_ 1.bom-crlf.rows statuses outs/bom.jsonl
case_ 1.array   rewardsmith score array.jsonl -o outs/arr.jsonl -t gsm8k $LIB -q
case_ 1.pipe    rewardsmith score "<(cat good.jsonl)" -o outs/pipe.jsonl -t gsm8k $LIB -q
case_ 1.empty   rewardsmith score empty.jsonl -o outs/empty.jsonl -t gsm8k $LIB -q
case_ 1.empty.out "test -f outs/empty.jsonl && echo written || echo 'no output file'"
case_ 1.out-under-file rewardsmith score good.jsonl -o a_file/out.jsonl -t gsm8k $LIB -q
case_ 1.out-is-dir rewardsmith score good.jsonl -o outs/a_dir -t gsm8k $LIB -q
case_ 1.out-cannot-create rewardsmith score good.jsonl -o /proc/rewardsmith/out.jsonl -t gsm8k $LIB -q
case_ 1.route-empty rewardsmith route empty.jsonl -o outs/re.jsonl -b rules $LIB -q
case_ 1.route-out-under-file rewardsmith route good.jsonl -o a_file/r.jsonl -b rules $LIB -q
case_ 2.math-on-code rewardsmith score code.jsonl -o outs/code-math.jsonl -t math $LIB -q
case_ 2.math-on-code.rows statuses outs/code-math.jsonl
case_ 2.math-on-code.reason "python -c \"import json; print(json.loads(open('outs/code-math.jsonl').readline())['reason'])\""
case_ 2.math-on-mbpp-text rewardsmith score mbpp_str.jsonl -o outs/mbpp-math.jsonl -t math $LIB -q
case_ 2.math-on-mbpp-text.rows statuses outs/mbpp-math.jsonl
case_ 2.gsm8k-on-code rewardsmith score code.jsonl -o outs/code-gsm8k.jsonl -t gsm8k $LIB -q
case_ 2.gsm8k-on-code.rows statuses outs/code-gsm8k.jsonl
case_ 2.translation-on-code rewardsmith score code.jsonl -o outs/code-tr.jsonl -t translation $LIB -q
case_ 2.translation-on-code.rows statuses outs/code-tr.jsonl
case_ 2.taskmap-typo rewardsmith score good.jsonl -o outs/tm.jsonl --task-map gsm8kk=gsm8k $LIB -q
case_ 2.taskmap-unmapped "cat good.jsonl code.jsonl > mixed.jsonl; rewardsmith score mixed.jsonl -o outs/tm2.jsonl --task-map gsm8k=gsm8k $LIB -q"
case_ 4.flags rewardsmith route good.jsonl -o outs/l0.jsonl -b llm --llm-url http://127.0.0.1:18431/v1 $LIB -q
case_ 4.flags.backend "python -c \"import json; print([json.loads(l)['route']['backend'] for l in open('outs/l0.jsonl')])\""
case_ 4.openai-env "OPENAI_BASE_URL=http://127.0.0.1:18431/v1 rewardsmith route good.jsonl -o outs/l1.jsonl -b llm $LIB -q"
case_ 4.openai-env.backend "python -c \"import json; print([json.loads(l)['route']['backend'] for l in open('outs/l1.jsonl')])\""
case_ 4.model-default "REWARDSMITH_LLM_BASE_URL=http://127.0.0.1:18431/v1 rewardsmith route good.jsonl -o outs/l2.jsonl -b llm $LIB -q"
case_ 4.model-default.sent "tail -1 requests-18431.log"
case_ 4.unreachable "REWARDSMITH_LLM_BASE_URL=http://127.0.0.1:9/v1 rewardsmith route good.jsonl -o outs/l3.jsonl -b llm $LIB -q"
case_ 4.unreachable-fallback "REWARDSMITH_LLM_BASE_URL=http://127.0.0.1:9/v1 rewardsmith route good.jsonl -o outs/l4.jsonl -b llm --fallback embedded $LIB -q"
case_ 4.key-refused "OPENAI_BASE_URL=http://127.0.0.1:18432/v1 OPENAI_API_KEY=sk-wrong rewardsmith route good.jsonl -o outs/l5.jsonl -b llm $LIB -q"
case_ 4.score-llm-unreachable "REWARDSMITH_LLM_BASE_URL=http://127.0.0.1:9/v1 rewardsmith score good.jsonl -o outs/l6.jsonl --router llm $LIB -q"
case_ 4.serve-llm-unreachable "timeout 60 rewardsmith serve --router llm --llm-url http://127.0.0.1:9/v1 --port 18499 $LIB"
case_ 4.synth-llm-flags rewardsmith synth codeverify $ROOT/tests/fixtures/synth/gsm8k_examples.jsonl --name g2 --backend llm --llm-url http://127.0.0.1:9/v1 $LIB
case_ 6.score-progress "python -c \"from rewardsmith import score; calls=[]; score([{'completion': '4', 'reference': '4'}]*600, 'gsm8k', library='home/lib.db', progress=lambda d, t: calls.append(d)); print('progress calls:', calls)\""
mkdir -p run && python -c "import json; ci={'value': 0.5, 'low': 0.35, 'high': 0.65}; p=lambda n: {'policy': n, 'n': 40, 'correct': 20, 'parseable': 36, 'precision': 0.56, 'accuracy': ci, 'f1': ci, 'seconds': 3.0}; json.dump({'data': 'testbed', 'n': 40, 'policies': [p('testbed'), p('run/model')], 'comparisons': [{'baseline': 'testbed', 'policy': 'run/model', 'b': 2, 'c': 12, 'p_value': 0.013, 'p_bonferroni': 0.013, 'comparisons': 1}], 'items': []}, open('run/eval.json', 'w'))"
case_ 6.report "rewardsmith report run && ls run"
kill $S1 $S2 2>/dev/null
cd /; rm -rf "$W"
