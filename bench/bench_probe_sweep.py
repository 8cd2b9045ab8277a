"""Sweep: the validation gate's attack probes, drawn with many seeds, against built-in tools.

The gate draws its probes afresh each run (`rewardsmith.exploits.corpus`), and the test suite
draws one seed per test so that a run repeats. This sweep draws `--seeds` of them and gates
the `gsm8k` and `math` tools on their bundled examples (`tests/fixtures/synth/`) with each,
so a probe shape a tool pays shows up here before a user's fresh draw finds it. It prints every
failing seed with the gate's reason, then the failure rate per tool; exit 1 if any failed.

Run from the repository root:

    .venv/bin/python bench/bench_probe_sweep.py [--seeds N] [--first S]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from rewardsmith.library.store import Library
from rewardsmith.synth.examples import load_examples
from rewardsmith.synth.gate import gate_tool

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "synth"
TOOLS = {"gsm8k": "gsm8k_examples.jsonl", "math": "math500_examples.jsonl"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=50, help="how many seeds (default 50)")
    parser.add_argument("--first", type=int, default=0, help="the first seed (default 0)")
    args = parser.parse_args()
    examples = {tool: load_examples(FIXTURES / name) for tool, name in TOOLS.items()}
    failed = {tool: 0 for tool in TOOLS}
    with tempfile.TemporaryDirectory() as home:
        library = Library(Path(home) / "library.db")
        try:
            for seed in range(args.first, args.first + args.seeds):
                for tool, held_out in examples.items():
                    report = gate_tool(library.get(tool), held_out, library=library, seed=seed)
                    if not report.admitted:
                        failed[tool] += 1
                        print(f"seed {seed} {tool}: {report.reason}", flush=True)
        finally:
            library.close()
    for tool, count in failed.items():
        print(f"{tool}: {count}/{args.seeds} seeds failed the gate ({count / args.seeds:.1%})")
    return 1 if any(failed.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
