"""Writes the input files of the first-hour cases (run.sh) into the current folder."""
import gzip
import json
from pathlib import Path
lines = [
    {"id": 1, "task": "gsm8k", "prompt": "Tom has 3 boxes with 12 apples each and gives away 7. How many are left?", "completion": "3*12-7 = 29\n#### 29", "reference": "29"},
    {"id": 2, "task": "gsm8k", "prompt": "What is 6 times 7?", "completion": "#### 41", "reference": "42"},
]
text = "".join(json.dumps(x) + "\n" for x in lines)
Path("good.jsonl").write_text(text)
Path("good.jsonl.gz").write_bytes(gzip.compress(text.encode()))
Path("bom.jsonl").write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
Path("latin1.jsonl").write_bytes(text.encode() + json.dumps({"completion": "caf\u00e9 #### 4", "reference": "4"}, ensure_ascii=False).encode("latin-1") + b"\n")
Path("array.json").write_text(json.dumps(lines, indent=2))
Path("array.jsonl").write_text(json.dumps(lines, indent=2))
Path("empty.jsonl").write_text("")
Path("a_file").write_text("not a folder\n")
# code samples scored with --tool math: the completion returns 4; references are tests
code = [
    {"id": "mbpp", "task": "code", "prompt": "Write f(x) returning x+2.", "completion": "def f(x):\n    return 4", "reference": ["assert f(2) == 4"]},
    {"id": "mbpp2", "task": "code", "prompt": "Write f(x) returning x+2.", "completion": "def f(x):\n    return 4", "reference": {"test_list": ["assert f(2) == 4"], "test_imports": []}},
    {"id": "humaneval", "task": "code", "prompt": "def add(a, b):\n", "completion": "    return 4", "reference": {"prompt": "def add(a, b):\n", "test": "def check(candidate):\n    assert candidate(2, 2) == 4\n", "entry_point": "add"}},
]
Path("code.jsonl").write_text("".join(json.dumps(x) + "\n" for x in code))
