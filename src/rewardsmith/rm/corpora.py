"""Label-free corpora of worked solutions: problems followed by their solutions, as plain text.

RBS needs nothing but text. A corpus of "problem\\n\\nsolution" documents (split at the blank
line by `--split-mode boundary`) trains pairs shaped like the (prompt, completion) pairs a
reward model scores later. Nothing here reads or writes a correctness label: a document is a
problem and the text written under it, and the model only learns which text follows which.

Sources:

- the testbed's procedural problems (`rewardsmith.rl.problems`, passed in as (prompt,
  completion) pairs by the caller: the `sft` split, which the held-out problems exclude), in
  the exact text the testbed policy reads and writes (`Question: ...\\nAnswer:` then
  `<thinking>...</thinking><solution>N</solution>`);
- GSM8K train solutions (`question`, `answer` JSONL), with the calculator annotations
  `<<48/2=24>>` removed (they are not prose; GSM8K's own final line `#### N` stays).

`write_corpus` interleaves the sources in a seeded random order: `rm train` reads a file in
order through a shuffle buffer, so sources written one after the other would train one after
the other.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from rewardsmith.errors import InputError
from rewardsmith.files import atomic_write
from rewardsmith.jsonl import iter_jsonl

#: GSM8K's calculator annotations, `<<48/2=24>>`.
CALCULATOR = re.compile(r"<<[^<>]*>>")
#: What separates a problem from its solution in a document (`--split-mode boundary`).
SEPARATOR = "\n\n"


def document(prompt: str, completion: str) -> str:
    """One "problem\\n\\nsolution" document; the prompt's trailing space is not text."""
    prompt, completion = prompt.strip(), completion.strip()
    if SEPARATOR in prompt:
        # The split takes the first blank line: a blank line inside the problem would cut it.
        prompt = re.sub(r"\n\s*\n", "\n", prompt)
    return prompt + SEPARATOR + completion


def gsm8k_solution(answer: str) -> str:
    """A GSM8K answer as prose: calculator annotations removed."""
    return CALCULATOR.sub("", answer).strip()


def gsm8k_documents(path: str | Path) -> Iterator[str]:
    """Documents of a GSM8K-style JSONL file (`question`, `answer`)."""
    path = Path(path).expanduser()
    for line_no, row in iter_jsonl(path):
        if not isinstance(row, dict) or not {"question", "answer"} <= row.keys():
            raise InputError(f"{path}:{line_no}: expected an object with question and answer")
        yield document(str(row["question"]), gsm8k_solution(str(row["answer"])))


def worked_documents(pairs: Iterable[tuple[str, str]]) -> Iterator[str]:
    """Documents of (prompt, completion) pairs, e.g. the testbed's problems."""
    for prompt, completion in pairs:
        yield document(prompt, completion)


def write_corpus(
    out: str | Path, sources: Mapping[str, Iterable[str]], seed: int = 0
) -> dict[str, int]:
    """Write every source's documents to `out` (JSONL, one `text` field) in a seeded random
    order; returns the number of documents per source."""
    tagged = [(name, text) for name, docs in sources.items() for text in docs]
    random.Random(seed).shuffle(tagged)
    out = Path(out).expanduser()
    counts = dict.fromkeys(sources, 0)
    for name, _ in tagged:
        counts[name] += 1
    atomic_write(out, "".join(json.dumps({"text": text}) + "\n" for _, text in tagged))
    return counts
