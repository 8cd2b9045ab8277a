"""Write the input of the `score --synthesize` check: examples/mixed.jsonl (built-in tasks)
plus reasoning-gym families the library has no tool for, given as a user gives them
(prompt, completion, plain answer as reference, a `task` field), with `meta.expected` from
reasoning-gym's own `score_answer` (== 1.0: correct).

    .venv/bin/python bench/build_synthesis_mix.py -o out/synth_mix.jsonl \
        [--families word_sorting,caesar_cipher,spell_backward] [--per-family 24]

Then, twice (the second run must route to the new tools, with no synthesis):

    rewardsmith score out/synth_mix.jsonl -o out/synth_mix.1.jsonl --library out/synth.db --synthesize
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rewardsmith.bench.codeverify_data import fresh_samples

MIXED = Path(__file__).resolve().parents[1] / "examples" / "mixed.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--out", type=Path, required=True)
    parser.add_argument("--families", default="word_sorting,caesar_cipher,spell_backward")
    parser.add_argument("--per-family", type=int, default=24)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rows = [json.loads(line) for line in MIXED.read_text(encoding="utf-8").splitlines()]
    for family in args.families.split(","):
        for i, s in enumerate(fresh_samples(family, args.per_family, seed=args.seed)):
            rows.append(
                {
                    "id": f"rg_{family}-{i:02d}",
                    "prompt": s["prompt"],
                    "completion": s["completion"],
                    "reference": s["reference"],
                    "task": f"rg_{family}",
                    "meta": {
                        "expected": "correct" if s["label"] else "wrong",
                        "source": {"dataset": family, "seed": 5000 + args.seed},
                        "answer_form": s["how"],
                    },
                }
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {len(rows)} lines to {args.out}")


if __name__ == "__main__":
    main()
