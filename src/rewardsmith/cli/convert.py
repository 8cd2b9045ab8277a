"""`rewardsmith convert INPUT -o OUTPUT`: HumanEval/MBPP files to samples for `--tool code`.

    rewardsmith convert ../shared/data/code/HumanEval.jsonl.gz -o humaneval.jsonl
    rewardsmith score humaneval.jsonl --tool code -o scored.jsonl

The field mapping is in `rewardsmith.tools.code.dataset`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rewardsmith.cli.terminal import PlainConsole
from rewardsmith.jsonl import atomic_output, write_line
from rewardsmith.tools.code.dataset import COMPLETION_CHOICES, read_dataset, to_samples

console = PlainConsole()


def convert(
    input_path: Annotated[
        Path, typer.Argument(metavar="INPUT", help="HumanEval .jsonl(.gz) or MBPP .json/.jsonl.")
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write samples.")],
    completion: Annotated[
        str,
        typer.Option(
            "--completion",
            help="Completion to fill in: canonical (the dataset's solution), return_none "
            "(a negative control) or empty.",
        ),
    ] = "canonical",
) -> None:
    """Convert code-benchmark records into JSONL samples scored by the `code` tool."""
    if completion not in COMPLETION_CHOICES:
        raise typer.BadParameter(f"--completion must be one of {', '.join(COMPLETION_CHOICES)}")
    records = read_dataset(input_path)
    count = 0
    with atomic_output(output) as handle:
        for sample in to_samples(records, completion):
            write_line(handle, sample)
            count += 1
    console.print(f"wrote {count} samples to {output}")
