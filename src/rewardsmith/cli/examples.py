"""An example for every command's `--help`, kept in one place (added to the app in `main`).

Each runs as written from the project's root after `make run` (paths under examples/ and
out/); `tests/cli/test_reference.py` checks that every command has one.
"""

from __future__ import annotations

import typer
from typer.main import get_command_name

EXAMPLES: dict[str, list[str]] = {
    "score": [
        "rewardsmith score examples/mixed.jsonl -o out/scored.jsonl",
        "rewardsmith score examples/mixed.jsonl -o out/scored.jsonl --tool gsm8k",
        "rewardsmith score data.jsonl -o out/scored.jsonl --task-map gsm8k=gsm8k,mbpp=code",
    ],
    "convert": ["rewardsmith convert HumanEval.jsonl.gz -o out/humaneval.jsonl"],
    "serve": ["rewardsmith serve --tool gsm8k --port 8000 --library out/library.db"],
    "tools list": ["rewardsmith tools list --library out/library.db"],
    "tools show": ["rewardsmith tools show gsm8k --library out/library.db"],
    "tools history": ["rewardsmith tools history gsm8k -n 20 --library out/library.db"],
    "tools retire": ["rewardsmith tools retire my_tool --reason 'paid out on padding'"],
    "tools add": ["rewardsmith tools add my_tool.json --note 'first version'"],
    "rm train": [
        "rewardsmith rm train --corpus corpus.jsonl --field text --out-dir out/rm --max-steps 200"
    ],
    "rm corpus": [
        "rewardsmith rm corpus -o out/corpus.jsonl --testbed 20000 --gsm8k gsm8k/train.jsonl"
    ],
    "rm pairs": ["rewardsmith rm pairs --out-dir out/pairs --testbed 300 --gsm8k gsm8k/test.jsonl"],
    "rm eval": ["rewardsmith rm eval -m out/rm -d pairs.jsonl -o out/rm_eval.json"],
    "grpo train": [
        "rewardsmith grpo train --policy testbed --reward gsm8k,format_tags --steps 200 "
        "--out-dir out/grpo",
        "rewardsmith grpo train --policy testbed-multi --data examples/stream.jsonl --synthesize "
        "--library out/library.db --steps 200 --out-dir out/loop",
    ],
    "grpo eval": [
        "rewardsmith grpo eval -p testbed -p out/grpo/model -o out/grpo_eval.json",
        "rewardsmith grpo eval -p testbed-multi --n 200 -o out/multi_eval.json",
    ],
    "grpo testbed": [
        "rewardsmith grpo testbed --preset testbed-multi",
        "rewardsmith grpo testbed --preset testbed --rebuild",
    ],
    "route run": [
        "rewardsmith route examples/mixed.jsonl -o out/routed.jsonl",
        "rewardsmith route examples/mixed.jsonl -o out/routed.jsonl --backend llm "
        "--llm-url http://127.0.0.1:8000/v1",
    ],
    "search run": [
        "rewardsmith search run --task testbed --rounds 5 --per-round 10 --generator offline "
        "--fidelity auto --out runs/search",
        "rewardsmith search run --task testbed --rounds 1 --per-round 4 --fidelity proxy "
        "--out runs/quick",
        "rewardsmith search run --generator llm --llm-url http://127.0.0.1:8000/v1 --rounds 2 "
        "--per-round 3 --fidelity proxy --out runs/llm",
    ],
    "search ensemble": ["rewardsmith search ensemble runs/search --sizes 3,5 --seeds 3"],
    "search audit": ["rewardsmith search audit runs/search"],
    "search report": ["rewardsmith search report runs/search"],
    "search promote": ["rewardsmith search promote runs/search r2_03_answer_correct"],
    "report": [
        "rewardsmith report out/grpo",
        "rewardsmith report out/rm -o out/rm_report.md",
    ],
    "route fit": ["rewardsmith route fit labeled.jsonl --library out/library.db"],
    "bench routing": ["rewardsmith bench routing --hard --json out/routing.json"],
    "synth codeverify": ["rewardsmith synth codeverify examples.jsonl --name reverse_word"],
    "synth gate": ["rewardsmith synth gate --tool reverse_word --examples examples.jsonl"],
    "synth wrapllm": [
        "rewardsmith synth wrapllm --task 'helpful answers' --examples prefs.jsonl "
        "--name helpful --model-dir out/rm"
    ],
}


def epilog(lines: list[str]) -> str:
    """The `--help` footer: one example per line (Typer's rich help keeps `\\n\\n` breaks)."""
    return "Examples:\n\n" + "\n\n".join(f"  $ {line}" for line in lines)


def add_examples(app: typer.Typer, prefix: str = "") -> None:
    """Give every command of `app` (and of its sub-apps) its example, unless it has one."""
    for info in app.registered_commands:
        own = info.name or (get_command_name(info.callback.__name__) if info.callback else "")
        name = f"{prefix} {own}".strip()
        if name in EXAMPLES and not info.epilog:
            info.epilog = epilog(EXAMPLES[name])
    for group in app.registered_groups:
        if group.typer_instance is not None and group.name:
            add_examples(group.typer_instance, (prefix + " " + group.name).strip())
