"""The pair sets of `rm pairs` in the shape RBS trains on: cut where the wrong copy departs.

`rm pairs` pairs a question with a whole true solution and a whole wrong one (a wrong final
answer, a wrong intermediate step). RBS with random splits trains on a different shape: the
prefix is a document (question and solution) up to a random point, the suffix what follows.
This writes the same pairs cut at the first number where the wrong copy differs from the
true one: the prompt is the document up to that number (`58-10=`), the chosen completion the
true rest (`48. ...`), the rejected the wrong rest (`47. ...`). A model that scores these
right computes the next result in the shape it was trained on; one that scores them right
but not the whole-solution pairs has the skill without reading whole solutions with it.

    .venv/bin/python bench/rbs_cut_pairs.py out/pairs/testbed_pairs.jsonl out/pairs/testbed_cut.jsonl
    rewardsmith rm eval -m MODEL -d out/pairs/testbed_cut.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from rewardsmith.jsonl import read_jsonl
from rewardsmith.rm.corpora import document


def cut_row(row: dict[str, Any]) -> dict[str, Any] | None:
    """`row` with the text its two completions share moved into the prompt, cut before the
    first number that differs (never inside a number); None if they do not differ."""
    true = document(row["prompt"], row["chosen"])
    wrong = document(row["prompt"], row["rejected"])
    common = len(os.path.commonprefix([true, wrong]))
    if common == len(true) == len(wrong):
        return None
    while common > 0 and true[common - 1].isdigit():
        common -= 1  # "116-72=4|4" -> "116-72=|44": the completion starts with the number
    return {**row, "prompt": true[:common], "chosen": true[common:], "rejected": wrong[common:]}


def cut_rows(rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every row that can be cut, in order."""
    for row in rows:
        out = cut_row(row)
        if out is not None:
            yield out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pairs", type=Path, help="a pair file written by `rm pairs`")
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    rows = list(cut_rows(read_jsonl(args.pairs)))
    args.out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} cut pairs -> {args.out}")


if __name__ == "__main__":
    main()
