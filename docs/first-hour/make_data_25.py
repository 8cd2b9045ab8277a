"""Writes the inputs of issue 25's first-hour cases (run_25.sh) into the current folder."""
import json
from pathlib import Path


def jsonl(name, rows):
    Path(name).write_text("".join(json.dumps(r) + "\n" for r in rows))


# code tests given as a JSON list of assert strings (MBPP's test_list without its object)
jsonl("code_list.jsonl", [
    {"id": "right", "prompt": "Write f(x) returning 2x.", "completion": "def f(x):\n    return 2 * x", "reference": ["assert f(2) == 4", "assert f(3) == 6"]},
    {"id": "wrong", "prompt": "Write f(x) returning 2x.", "completion": "def f(x):\n    return 4", "reference": ["assert f(2) == 4", "assert f(3) == 6"]},
])
# samples the router does not score: matrix answers (no library tool reads them), and a
# gsm8k sample that it does
jsonl("matrix.jsonl", [
    {"id": "m1", "prompt": "Multiply the matrices A = [[1, 2], [3, 4]] and B = [[5, 6], [7, 8]]. Give AB as a matrix.", "completion": "AB = [[19, 22], [43, 50]]", "reference": "[[19, 22], [43, 50]]"},
    {"id": "m2", "prompt": "Transpose the matrix [[1, 2, 3], [4, 5, 6]].", "completion": "[[1, 4], [2, 5], [3, 6]]", "reference": "[[1, 4], [2, 5], [3, 6]]"},
    {"id": "g1", "prompt": "Tom has 3 boxes with 12 apples each and gives away 7. How many are left?", "completion": "3*12-7 = 29\n#### 29", "reference": "29"},
])
# what OpenRLHF posts (one rollout per request)
Path("openrlhf.json").write_text(json.dumps({"query": ["Q: 6 times 7? A: #### 42"], "prompts": ["Q: 6 times 7? A: "], "labels": ["42"]}))
# docs/server.md's curl example, as it was (no task)
Path("score_no_task.json").write_text(json.dumps({"samples": [{"prompt": "Natalia sold 48 clips in April and half as many in May. How many in total?", "completion": "48 + 24 = 72. #### 72", "reference": "72"}]}))
# a corpus for a 3-step reward model
jsonl("corpus.jsonl", [{"text": f"Question: Tom has {a} boxes with {b} apples in each box, and he buys {a + b} more apples at the market on Sunday. How many apples does Tom have now?\n\nAnswer: The boxes hold {a} * {b} = {a * b} apples. Adding the {a + b} apples he bought gives {a * b} + {a + b} = {a * b + a + b}. So Tom has {a * b + a + b} apples now."} for a in range(2, 14) for b in range(2, 8)])
# a search run folder (what `search run --out` leaves)
Path("search_run").mkdir(exist_ok=True)
Path("search_run/run.json").write_text(json.dumps({"task": "testbed"}))
Path("search_run/results.jsonl").write_text("")
# three steps of GRPO metrics, for the plot's step axis
Path("grpo_run").mkdir(exist_ok=True)
jsonl("grpo_run/metrics.jsonl", [{"step": s, "reward": 0.1 * s, "accuracy": 0.2, "parseable": 0.9, "completion_length": 30} for s in (1, 2, 3)])
