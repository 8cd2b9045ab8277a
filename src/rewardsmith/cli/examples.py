"""An example for every command's `--help`, kept in one place (added to the app in `main`).

Each runs as written from the project's root (files under examples/, outputs under out/ and
runs/); `tests/cli/test_reference.py` checks that every command and group has one, and
`tests/cli/test_help_examples.py` that they run.
"""

from __future__ import annotations

import typer
from typer.main import get_command_name

# Every file an example reads ships in examples/ or is written by an example before it (under
# out/ or runs/); `tests/cli/test_help_examples.py` checks the paths and runs every example in
# `RUN_ORDER`. Commands take `--library out/library.db` so they do not touch ~/.rewardsmith.
LIB = "--library out/library.db"
ROLLOUTS = "examples/rollouts.jsonl"

EXAMPLES: dict[str, list[str]] = {
    # groups and the root: the first thing to try
    "": [
        f"rewardsmith score examples/mixed.jsonl -o out/scored.jsonl {LIB}",
        f"rewardsmith profile {ROLLOUTS} --by task",
    ],
    "audit": [
        f"rewardsmith audit gsm8k --examples examples/audit/gsm8k.jsonl {LIB}",
        "rewardsmith audit examples/audit/contains_reference.py --examples "
        "examples/audit/gsm8k.jsonl --json out/audit.json",
        "rewardsmith audit math --examples examples/audit/math.jsonl --attacks hedge,shotgun",
    ],
    "tools": [f"rewardsmith tools list {LIB}", f"rewardsmith tools show gsm8k {LIB}"],
    "rm": ["rewardsmith rm corpus -o out/corpus.jsonl --testbed 2000"],
    "grpo": [
        "rewardsmith grpo train --policy testbed --reward gsm8k,format_tags --steps 20 "
        f"--log-completions-every 5 --out-dir out/grpo {LIB}"
    ],
    "route": [f"rewardsmith route examples/mixed.jsonl -o out/routed.jsonl {LIB}"],
    "bench": ["rewardsmith bench routing --hard --json out/routing.json"],
    "synth": [
        f"rewardsmith synth codeverify examples/synth/word_sort.jsonl --name word_sort {LIB}"
    ],
    "search": [
        "rewardsmith search run --task testbed --rounds 1 --per-round 4 --fidelity proxy "
        f"--out runs/quick {LIB}"
    ],
    # commands
    "score": [
        f"rewardsmith score examples/mixed.jsonl -o out/scored.jsonl {LIB}",
        f"rewardsmith score examples/mixed.jsonl -o out/gsm8k.jsonl --tool gsm8k {LIB}",
        "rewardsmith score examples/mixed.jsonl -o out/mapped.jsonl "
        f"--task-map gsm8k=gsm8k,math500=math,format=format_tags {LIB}",
    ],
    "rescore": [f"rewardsmith rescore {ROLLOUTS} --tool gsm8k@1 -o out/rescored.jsonl {LIB}"],
    "compare": [
        f"rewardsmith compare {ROLLOUTS} --tool gsm8k@1 --against gsm8k_strict "
        f"--json out/compare.json --plot out/compare.png {LIB}"
    ],
    "profile": [
        f"rewardsmith profile {ROLLOUTS} --json out/profile.json --plot out/profile.png",
        f"rewardsmith profile {ROLLOUTS} --by step",
    ],
    "convert": ["rewardsmith convert examples/code/humaneval_head.jsonl -o out/humaneval.jsonl"],
    "serve": [f"rewardsmith serve --tool gsm8k --port 8000 --request-log out/requests.jsonl {LIB}"],
    "tools list": [f"rewardsmith tools list {LIB}"],
    "tools show": [f"rewardsmith tools show gsm8k {LIB}"],
    "tools history": [f"rewardsmith tools history gsm8k -n 20 {LIB}"],
    "tools retire": [f"rewardsmith tools retire gsm8k_strict --reason 'too strict' {LIB}"],
    "tools add": [
        f"rewardsmith tools add examples/tools/single_final_answer.json --note 'no hedges' {LIB}",
        f"rewardsmith tools add examples/tools/sound_arithmetic.json {LIB}",
        f"rewardsmith tools add examples/tools/gsm8k_strict.json {LIB}",
    ],
    "rm train": [
        "rewardsmith rm train --corpus out/corpus.jsonl --field text --out-dir out/rm "
        f"--max-steps 5 --batch-size 4 --warmup-steps 1 {LIB}"
    ],
    "rm corpus": ["rewardsmith rm corpus -o out/corpus.jsonl --testbed 2000"],
    "rm pairs": ["rewardsmith rm pairs --out-dir out/pairs --testbed 50 --gsm8k-problems 0"],
    "rm eval": [
        "rewardsmith rm eval -m out/rm -d out/pairs/testbed_pairs.jsonl --limit 40 "
        "-o out/rm/eval.json"
    ],
    "grpo train": [
        "rewardsmith grpo train --policy testbed --reward gsm8k,format_tags --steps 20 "
        f"--log-completions-every 5 --out-dir out/grpo {LIB}",
        # a task stream: tasks the library cannot grade get synthesized tools while it trains
        "rewardsmith grpo train --policy testbed-multi --data examples/stream.jsonl --synthesize "
        f"--steps 4 --out-dir out/loop {LIB}",
    ],
    "grpo eval": [
        "rewardsmith grpo eval -p testbed -p out/grpo/model --n 100 -o out/grpo/eval.json"
    ],
    "grpo testbed": ["rewardsmith grpo testbed --preset testbed"],
    "route run": [
        f"rewardsmith route examples/mixed.jsonl -o out/routed.jsonl {LIB}",
        f"rewardsmith route examples/mixed.jsonl -o out/routed_rules.jsonl --backend rules {LIB}",
    ],
    "route fit": [f"rewardsmith route fit examples/route_labels.jsonl {LIB}"],
    "search run": [
        "rewardsmith search run --task testbed --rounds 1 --per-round 4 --fidelity proxy "
        f"--out runs/quick {LIB}"
    ],
    "search ensemble": ["rewardsmith search ensemble runs/quick --sizes 2 --seeds 1 --steps 5"],
    "search audit": ["rewardsmith search audit runs/quick"],
    "search report": ["rewardsmith search report runs/quick"],
    # candidate names are `r<round>_<index>_<name>`; this run's (seed 0) second is this one
    "search promote": [
        f"rewardsmith search promote runs/quick r1_02_answer_is_number --as answer_is_number {LIB}"
    ],
    "report": [
        "rewardsmith report out/grpo",
        "rewardsmith report out/rm -o out/rm_report.md",
    ],
    "bench routing": ["rewardsmith bench routing --hard --json out/routing.json"],
    "synth codeverify": [
        f"rewardsmith synth codeverify examples/synth/word_sort.jsonl --name word_sort {LIB}"
    ],
    "synth gate": [
        f"rewardsmith synth gate --tool word_sort --examples examples/synth/word_sort.jsonl {LIB}"
    ],
    "synth wrapllm": [
        "rewardsmith synth wrapllm --task 'worked arithmetic solutions' "
        f"--examples examples/synth/word_sort.jsonl --name rbs_judge --model-dir out/rm {LIB}"
    ],
}


def epilog(lines: list[str]) -> str:
    """The `--help` footer: one example per line (Typer's rich help keeps `\\n\\n` breaks)."""
    return "Examples:\n\n" + "\n\n".join(f"  $ {line}" for line in lines)


def add_examples(app: typer.Typer, prefix: str = "") -> None:
    """Give `app` (the root when `prefix` is "", else the group `prefix`), every command of it
    and every sub-app its examples, unless it has some."""
    if prefix in EXAMPLES and not isinstance(app.info.epilog, str):
        app.info.epilog = epilog(EXAMPLES[prefix])
    for info in app.registered_commands:
        own = info.name or (get_command_name(info.callback.__name__) if info.callback else "")
        name = f"{prefix} {own}".strip()
        if name in EXAMPLES and not info.epilog:
            info.epilog = epilog(EXAMPLES[name])
    for group in app.registered_groups:
        if group.typer_instance is not None and group.name:
            add_examples(group.typer_instance, (prefix + " " + group.name).strip())
