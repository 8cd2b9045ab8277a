"""Build examples/stream.jsonl: a multi-task training stream for `grpo train --synthesize`.

Each line is `{"task", "prompt", "reference", "meta"}`: one problem of the multi-task testbed's
`rl` split (`rewardsmith.rl.multitask`, seed 0), the split its GRPO runs train on. Seven task
families; three of them (`sort_numbers`, `clock`, `word_reversal`) have no built-in tool, so
a run with `--synthesize` grows the library while it trains:

    rewardsmith grpo train --policy testbed-multi --data examples/stream.jsonl --synthesize \\
        --library out/library.db --steps 100 --out-dir out/loop

`meta.source` says where a problem comes from (`rewardsmith` for the procedural families,
`reasoning_gym:<dataset>` for reasoning-gym's, generated with its own seeded generators).
Deterministic: the same rewardsmith version writes the same file. Run from the repository root:

    .venv/bin/python examples/build_stream.py [--n 400] [--out examples/stream.jsonl]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rewardsmith.rl.families import family
from rewardsmith.rl.multitask import draw

DEFAULT_OUT = Path(__file__).resolve().parent / "stream.jsonl"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=400, help="problems (the first n of the split)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    tasks = draw(args.n, 0, "rl")
    with args.out.open("w", encoding="utf-8") as fh:
        for index, t in enumerate(tasks):
            meta = {"source": family(t.family).source, "split": "rl", "seed": 0, "index": index}
            row = {"task": t.family, "prompt": t.question, "reference": t.reference, "meta": meta}
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(tasks)} lines to {args.out}")


if __name__ == "__main__":
    main()
