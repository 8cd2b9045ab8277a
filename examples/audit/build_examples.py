"""Write the examples files `rewardsmith audit` is run on for the table in docs/audit.md.

    python examples/audit/build_examples.py      # rewrites examples/audit/*.jsonl

Every line is `{"prompt", "reference"}` and, where a right completion shows the answer
style a tool expects, `"completion"` with `"label": 1`. Sources (all bundled with the
repository's tests, so this runs offline):

- gsm8k.jsonl, gsm8k_with_format.jsonl: the 16 GSM8K test lines of
  tests/fixtures/synth/gsm8k_examples.jsonl (the second with each completion written in the
  `<thinking>...</thinking><solution>#### N</solution>` format `gsm8k_with_format` gates on);
- math.jsonl: the 16 MATH-500 lines of tests/fixtures/synth/math500_examples.jsonl;
- multiple_choice.jsonl: 12 general-knowledge questions written for this file, options
  A-D in the prompt, the letter as reference;
- reasoning_gym.jsonl: 16 entries of four reasoning-gym datasets (seed 23);
- translation.jsonl: the first 12 lines of the WMT23 de-en slice in
  tests/fixtures/translation;
- code.jsonl: the HumanEval and MBPP records of tests/fixtures/code, the reference the
  record as JSON.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
OUT = Path(__file__).resolve().parent

QUESTIONS = [
    ("Which planet is known as the Red Planet?", ["Venus", "Mars", "Jupiter", "Mercury"], "B"),
    ("What is the chemical symbol for gold?", ["Ag", "Gd", "Au", "Go"], "C"),
    ("How many sides does a hexagon have?", ["Six", "Five", "Seven", "Eight"], "A"),
    (
        "Which gas do plants absorb for photosynthesis?",
        ["Oxygen", "Nitrogen", "Helium", "Carbon dioxide"],
        "D",
    ),
    (
        "Who wrote 'Pride and Prejudice'?",
        ["Charlotte Bronte", "Jane Austen", "Mary Shelley", "George Eliot"],
        "B",
    ),
    ("What is the largest ocean on Earth?", ["Atlantic", "Indian", "Pacific", "Arctic"], "C"),
    ("Which number is prime?", ["21", "27", "33", "29"], "D"),
    (
        "What is the boiling point of water at sea level in Celsius?",
        ["100", "90", "110", "120"],
        "A",
    ),
    ("Which organ pumps blood through the body?", ["Liver", "Heart", "Lung", "Kidney"], "B"),
    ("In which continent is Kenya?", ["Asia", "South America", "Africa", "Europe"], "C"),
    ("What is 7 x 8?", ["54", "56", "58", "64"], "B"),
    ("Which metal is liquid at room temperature?", ["Mercury", "Iron", "Copper", "Tin"], "A"),
]
RG_DATASETS = ("basic_arithmetic", "chain_sum", "letter_counting", "word_sorting")


def write(name: str, rows: list[dict[str, Any]]) -> None:
    with (OUT / name).open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def gsm8k() -> None:
    rows = [
        {"prompt": r["prompt"], "reference": r["reference"]}
        for r in read(FIXTURES / "synth" / "gsm8k_examples.jsonl")
    ]
    write("gsm8k.jsonl", rows)
    formatted = []
    for row in rows:
        answer = row["reference"].rpartition("####")[2].strip()
        steps = re.sub(r"<<[^>]*>>", "", row["reference"].rpartition("####")[0]).strip()
        completion = f"<thinking>{steps}</thinking>\n<solution>#### {answer}</solution>"
        formatted.append({**row, "completion": completion, "label": 1})
    write("gsm8k_with_format.jsonl", formatted)


def math() -> None:
    rows = [
        {"prompt": r["prompt"], "reference": r["reference"]}
        for r in read(FIXTURES / "synth" / "math500_examples.jsonl")
    ]
    write("math.jsonl", rows)


def multiple_choice() -> None:
    rows = []
    for question, options, letter in QUESTIONS:
        listed = "\n".join(f"({'ABCD'[i]}) {text}" for i, text in enumerate(options))
        rows.append(
            {"prompt": f"{question}\n{listed}\nAnswer with the letter.", "reference": letter}
        )
    write("multiple_choice.jsonl", rows)


def reasoning_gym() -> None:
    import reasoning_gym as rg

    rows = []
    for name in RG_DATASETS:
        for entry in rg.create_dataset(name, size=4, seed=23):
            rows.append({"prompt": entry["question"], "reference": json.dumps(entry)})
    write("reasoning_gym.jsonl", rows)


def translation() -> None:
    folder = FIXTURES / "translation"
    sources = (folder / "generaltest2023.de-en.head20.src.de").read_text().splitlines()
    refs = (folder / "generaltest2023.de-en.head20.ref.refA.en").read_text().splitlines()
    rows = [
        {"prompt": f"Translate to English:\n{src}", "reference": ref}
        for src, ref in list(zip(sources, refs, strict=True))[:12]
    ]
    write("translation.jsonl", rows)


def code() -> None:
    rows = []
    for record in read(FIXTURES / "code" / "humaneval_slice.jsonl"):
        rows.append({"prompt": record["prompt"], "reference": json.dumps(record)})
    for record in json.loads((FIXTURES / "code" / "mbpp_sanitized_slice.json").read_text()):
        rows.append({"prompt": record["prompt"], "reference": json.dumps(record)})
    write("code.jsonl", rows)


if __name__ == "__main__":
    gsm8k()
    math()
    multiple_choice()
    reasoning_gym()
    translation()
    code()
