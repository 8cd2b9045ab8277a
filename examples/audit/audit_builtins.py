"""Audit every built-in tool on its examples file and print the table of docs/audit.md.

    python examples/audit/audit_builtins.py --seeds 1,2,3 > out/audit_table.md

Each tool is audited once per seed (a fresh corpus each time) on the examples file of its
task (examples/audit/, written by build_examples.py); the counts are pooled over the seeds
and each rate is given with its Wilson 95% interval. Tools that judge form or length, not
answers, are listed as not applicable.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from rewardsmith.audit import audit_tool, wilson_interval
from rewardsmith.jsonl import read_jsonl
from rewardsmith.library.registry import builtin_names
from rewardsmith.library.store import Library
from rewardsmith.synth.examples import parse_example

HERE = Path(__file__).resolve().parent
EXAMPLES = {
    "math": "math.jsonl",
    "multiple_choice": "multiple_choice.jsonl",
    "translation": "translation.jsonl",
    "translation_bleu": "translation.jsonl",
    "reasoning_gym": "reasoning_gym.jsonl",
    "code": "code.jsonl",
    "code_strict": "code.jsonl",
    "gsm8k_with_format": "gsm8k_with_format.jsonl",
}
HEADER = (
    "| tool | examples | attacks | false passes [95% CI] | right answers | "
    "false fails [95% CI] |\n|---|---|---|---|---|---|"
)


def cell(wrong: int, total: int) -> str:
    low, high = wilson_interval(wrong, total)
    return f"{wrong} = {wrong / total:.1%} [{low:.1%}, {high:.1%}]" if total else "-"


def row(library: Library, name: str, seeds: list[int]) -> str:
    file = EXAMPLES.get(name, "gsm8k.jsonl")
    path = HERE / file
    lines = [parse_example(r, f"{path}:{i}") for i, r in enumerate(read_jsonl(path), 1)]
    tool = library.get(name)
    attacks = passes = rights = fails = 0
    for seed in seeds:
        report = audit_tool(tool, lines, seed=seed)
        if report.not_applicable:
            return f"| `{name}` | - | - | not applicable: {report.not_applicable} | - | - |"
        attacks += report.attack_probes
        passes += report.false_passes
        ff = report.false_fail
        rights += ff.probes if ff else 0
        fails += ff.wrong if ff else 0
        print(f"{name} seed {seed}: {report.verdict()}", file=sys.stderr)
    return (
        f"| `{name}` | {file} ({len(lines)}) | {attacks} | {cell(passes, attacks)} | "
        f"{rights} | {cell(fails, rights)} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1,2,3", help="corpus seeds, comma-separated")
    seeds = [int(s) for s in parser.parse_args().seeds.split(",")]
    with tempfile.TemporaryDirectory() as folder:
        library = Library(Path(folder) / "library.db")
        try:
            print(HEADER)
            for name in builtin_names():
                print(row(library, name, seeds), flush=True)
        finally:
            library.close()


if __name__ == "__main__":
    main()
