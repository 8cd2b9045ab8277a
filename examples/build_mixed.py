"""Build examples/mixed.jsonl: a small multi-task batch for `rewardsmith score` (`make run`).

Every line is `{"id", "prompt", "completion", "reference", "task", "meta"}`. Prompts and
references are real records, sliced from ../shared/data and generated with reasoning-gym;
the completions are *simulated policy outputs* written by this script from the gold answers
(the gold answer itself, a wrong number, a broken format...), so that every tool sees both
right and wrong answers. `meta` says where each record came from (`source`: file and
0-based record/line index, or reasoning-gym dataset, seed and index), what the completion
is (`variant`) and what a correct tool should conclude (`expected`: `correct`, `wrong`, or
`partial` for a translation with words dropped).

The output is deterministic for a given `--seed` and data. Run from the repository root:

    .venv/bin/python examples/build_mixed.py            # reads ../shared/data
    .venv/bin/python examples/build_mixed.py --data DIR --out examples/mixed.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import reasoning_gym

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data"
DEFAULT_OUT = REPO_ROOT / "examples" / "mixed.jsonl"
PER_TASK = 12

# Short records keep the example file readable and cheap to score.
MAX_MATH_SOLUTION_CHARS = 900
MAX_CHOICE_CHARS = 700
TRANSLATION_CHARS = (40, 260)

Line = dict[str, Any]


def line(
    task: str,
    prompt: str,
    completion: str,
    reference: str | None,
    source: dict[str, Any],
    variant: str,
    expected: str,
) -> Line:
    meta = {"source": source, "variant": variant, "expected": expected, "simulated": True}
    return {
        "prompt": prompt,
        "completion": completion,
        "reference": reference,
        "task": task,
        "meta": meta,
    }


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(text) for text in f if text.strip()]


def plan(rng: random.Random, variants: dict[str, int]) -> list[str]:
    """`variants` expanded to a list (name repeated count times), shuffled."""
    names = [name for name, count in variants.items() for _ in range(count)]
    rng.shuffle(names)
    return names


def shifted(number: str, rng: random.Random) -> str:
    """A different number of the same kind (integer stays integer)."""
    delta = rng.choice([1, 2, 3, 5, 10, -1, -2])
    value = float(number)
    if value >= 0 > value + delta:  # counts and prices stay non-negative
        delta = -delta
    try:
        return str(int(number) + delta)
    except ValueError:
        return f"{value + delta:g}"


# -- gsm8k: worked solutions ending in "#### N" -------------------------------------------


def build_gsm8k(data: Path, rng: random.Random) -> Iterator[Line]:
    rel = "gsm8k/test.jsonl"
    records = read_jsonl(data / rel)
    indices = rng.sample(range(len(records)), PER_TASK)
    variants = plan(rng, {"gold_solution": 6, "wrong_final_number": 5, "no_number": 1})
    for index, variant in zip(indices, variants, strict=True):
        record = records[index]
        # Policies do not write GSM8K's calculator annotations (<<2*3=6>>).
        solution = re.sub(r"<<[^>]*>>", "", record["answer"])
        body, _, final = solution.rpartition("####")
        final = final.strip().replace(",", "")
        if variant == "gold_solution":
            completion, expected = solution, "correct"
        elif variant == "wrong_final_number":
            completion, expected = f"{body}#### {shifted(final, rng)}", "wrong"
        else:
            completion = "I need more information about the quantities to solve this problem."
            expected = "wrong"
        source = {"file": rel, "index": index}
        yield line(
            "gsm8k", record["question"], completion, record["answer"], source, variant, expected
        )


# -- math500: competition problems, reference = final answer -------------------------------


def build_math500(data: Path, rng: random.Random) -> Iterator[Line]:
    rel = "math/math500.jsonl"
    records = read_jsonl(data / rel)
    short = [
        i
        for i, r in enumerate(records)
        if len(r["solution"]) <= MAX_MATH_SOLUTION_CHARS and "[asy]" not in r["solution"]
    ]
    fraction = re.compile(r"^\\frac\{(\d+)\}\{(\d+)\}$")
    # The equivalent-form sample needs an answer of the form \frac{a}{b}, written a/b.
    equiv_index = rng.choice([i for i in short if fraction.match(records[i]["answer"])])
    pool = [i for i in short if i != equiv_index]
    indices = rng.sample(pool, PER_TASK - 1)
    variants = plan(rng, {"gold_solution": 7, "wrong_answer": 4})
    answers = [records[i]["answer"] for i in pool]
    for index, variant in [*zip(indices, variants, strict=True), (equiv_index, "equivalent_form")]:
        record = records[index]
        answer = record["answer"]
        if variant == "gold_solution":
            completion, expected = record["solution"], "correct"
        elif variant == "wrong_answer":
            wrong = shifted(answer, rng) if answer.lstrip("-").isdigit() else answer
            while wrong == answer:
                wrong = rng.choice(answers)
            head = record["solution"].split("\\boxed")[0]
            head = head[: head.rfind(". ") + 1] if ". " in head else ""
            completion = f"{head} So the answer is ${wrong}$.".strip()
            expected = "wrong"
        else:
            match = fraction.match(answer)
            assert match is not None
            completion = (
                "Carrying out the computation and simplifying, the final answer is "
                f"$\\boxed{{{match.group(1)}/{match.group(2)}}}$."
            )
            expected = "correct"
        source = {"file": rel, "index": index, "unique_id": record["unique_id"]}
        yield line("math500", record["problem"], completion, answer, source, variant, expected)


# -- format: <thinking>...</thinking><solution>...</solution>, no reference ----------------

FORMAT_INSTRUCTION = (
    "\n\nThink step by step inside <thinking></thinking>, then give only the final answer "
    "inside <solution></solution>."
)

# (variant, template, expected): {t} is the reasoning, {s} the final answer
FORMATS: list[tuple[str, str, str]] = [
    ("well_formed", "<thinking>{t}</thinking>\n<solution>{s}</solution>", "correct"),
    ("well_formed", "<thinking>\n{t}\n</thinking>\n\n<solution>\n{s}\n</solution>", "correct"),
    ("well_formed", "<thinking>{t}</thinking><solution>{s}</solution>", "correct"),
    ("no_tags", "{t}\nThe answer is {s}.", "wrong"),
    ("unclosed_thinking", "<thinking>{t}\n<solution>{s}</solution>", "wrong"),
    ("think_instead_of_thinking", "<think>{t}</think>\n<solution>{s}</solution>", "wrong"),
    (
        "two_solutions",
        "<thinking>{t}</thinking>\n<solution>{s}</solution><solution>{s}</solution>",
        "wrong",
    ),
    ("solution_first", "<solution>{s}</solution>\n<thinking>{t}</thinking>", "wrong"),
    ("missing_solution", "<thinking>{t}</thinking>\nThe answer is {s}.", "wrong"),
]


def build_format(data: Path, rng: random.Random) -> Iterator[Line]:
    rel = "gsm8k/train.jsonl"
    records = read_jsonl(data / rel)
    indices = rng.sample(range(len(records)), PER_TASK)
    good = [f for f in FORMATS if f[2] == "correct"]
    bad = [f for f in FORMATS if f[2] == "wrong"]
    chosen = [good[i % len(good)] for i in range(6)] + bad
    chosen = chosen[:PER_TASK]
    rng.shuffle(chosen)
    for index, (variant, template, expected) in zip(indices, chosen, strict=True):
        record = records[index]
        body, _, final = re.sub(r"<<[^>]*>>", "", record["answer"]).rpartition("####")
        completion = template.format(t=body.strip(), s=final.strip())
        source = {"file": rel, "index": index}
        prompt = record["question"] + FORMAT_INSTRUCTION
        yield line("format", prompt, completion, None, source, variant, expected)


# -- multiple_choice: LLMBar pairs as an A/B question ---------------------------------------

CHOICE_FILES = ("Natural", "Adversarial_Neighbor", "Adversarial_GPTOut", "Adversarial_Manual")
PHRASINGS = [
    "The answer is ({L})",
    "{L}",
    "Answer: {L}",
    "I think the answer is ({L}).",
    "Output ({L}) follows the instruction more closely.\nAnswer: {L}",
    "\\boxed{{{L}}}",
]


def choice_prompt(record: dict[str, Any]) -> str:
    return (
        "Which output better follows the instruction?\n\n"
        f"Instruction:\n{record['input']}\n\n"
        f"(A) {record['output_1']}\n\n(B) {record['output_2']}\n\n"
        "Answer with A or B."
    )


def build_multiple_choice(data: Path, rng: random.Random) -> Iterator[Line]:
    candidates: list[tuple[str, int, dict[str, Any]]] = []
    for name in CHOICE_FILES:
        rel = f"preference/llmbar/{name}.json"
        records = json.loads((data / rel).read_text(encoding="utf-8"))
        for i, r in enumerate(records):
            if len(r["input"]) + len(r["output_1"]) + len(r["output_2"]) <= MAX_CHOICE_CHARS:
                candidates.append((rel, i, r))
    picked = rng.sample(candidates, PER_TASK)
    variants = plan(rng, {"right_letter": 8, "wrong_letter": 4})
    for k, ((rel, index, record), variant) in enumerate(zip(picked, variants, strict=True)):
        gold = "A" if record["label"] == 1 else "B"
        letter = gold if variant == "right_letter" else {"A": "B", "B": "A"}[gold]
        completion = PHRASINGS[k % len(PHRASINGS)].format(L=letter)
        expected = "correct" if letter == gold else "wrong"
        source = {"file": rel, "index": index, "label": record["label"]}
        yield line(
            "multiple_choice", choice_prompt(record), completion, gold, source, variant, expected
        )


# -- translation: WMT23 German -> English, reference = refA --------------------------------


def drop_words(text: str, rng: random.Random) -> str:
    """The text with about a third of its words dropped (at least one)."""
    words = text.split()
    keep = [w for w in words if rng.random() > 0.33]
    if len(keep) == len(words):
        keep.pop(rng.randrange(len(keep)))
    return " ".join(keep)


def build_translation(data: Path, rng: random.Random) -> Iterator[Line]:
    src_rel = "translation/generaltest2023.de-en.src.de"
    ref_rel = "translation/generaltest2023.de-en.ref.refA.en"
    sources = (data / src_rel).read_text(encoding="utf-8").splitlines()
    refs = (data / ref_rel).read_text(encoding="utf-8").splitlines()
    assert len(sources) == len(refs), "source and reference files must be line-aligned"
    lo, hi = TRANSLATION_CHARS
    pool = [i for i, s in enumerate(sources) if lo <= len(s) <= hi and refs[i].strip()]
    for index in rng.sample(pool, PER_TASK // 3):
        src, ref = sources[index], refs[index]
        source = {"file": src_rel, "reference_file": ref_rel, "index": index}
        prompt = f"Translate to English: {src}"
        for variant, completion, expected in [
            ("reference_translation", ref, "correct"),
            ("words_dropped", drop_words(ref, rng), "partial"),
            ("untranslated_source", src, "wrong"),
        ]:
            yield line("translation", prompt, completion, ref, source, variant, expected)


# -- reasoning-gym: procedural tasks, reference = the entry as JSON ------------------------


def rg_builder(dataset: str) -> Callable[[Path, random.Random], Iterator[Line]]:
    def build(data: Path, rng: random.Random) -> Iterator[Line]:
        seed = rng.randrange(10_000)
        entries = reasoning_gym.create_dataset(dataset, size=PER_TASK, seed=seed)
        variants = plan(
            rng,
            {"tagged_correct": 5, "untagged_correct": 1, "tagged_wrong": 4, "untagged_wrong": 2},
        )
        for index, variant in enumerate(variants):
            entry = entries[index]
            gold = entry["answer"]
            answer = gold if variant.endswith("_correct") else shifted(gold, rng)
            if variant.startswith("tagged"):
                completion = (
                    f"<think>Working it out step by step.</think>\n<answer>{answer}</answer>"
                )
            else:
                # No tags: the tool falls back to the last non-empty line.
                completion = f"Working it out step by step.\n{answer}"
            expected = "correct" if answer == gold else "wrong"
            source = {
                "generator": f"reasoning_gym {reasoning_gym_version()}",
                "dataset": dataset,
                "seed": seed,
                "size": PER_TASK,
                "index": index,
            }
            task = f"rg_{dataset}"
            yield line(
                task, entry["question"], completion, json.dumps(entry), source, variant, expected
            )

    return build


# -- word_reversal: a task no built-in grades (plain-text references, no dataset entry) -------

REVERSAL_STYLES = [
    "<answer>{a}</answer>",
    "Reversed, the list reads:\n{a}",
    "The answer is {a}.",
    "Final answer: {a}",
]


def build_word_reversal(data: Path, rng: random.Random) -> Iterator[Line]:
    """reasoning-gym's `word_sequence_reversal` with the answer itself as the reference (not
    the JSON entry the `reasoning_gym` tool reads): no built-in tool grades it, so `score
    --synthesize` writes one (`make run`)."""
    seed = rng.randrange(10_000)
    dataset = "word_sequence_reversal"
    entries = reasoning_gym.create_dataset(dataset, size=PER_TASK, seed=seed, max_words=5)
    variants = plan(rng, {"reversed": 7, "not_reversed": 3, "word_dropped": 2})
    for index, variant in enumerate(variants):
        entry = entries[index]
        gold = entry["answer"]
        words = gold.split(", ")
        if variant == "reversed":
            answer = gold
        elif variant == "not_reversed":
            answer = ", ".join(reversed(words))
        else:
            answer = ", ".join(words[:-1])
        completion = REVERSAL_STYLES[index % len(REVERSAL_STYLES)].format(a=answer)
        expected = "correct" if answer == gold else "wrong"
        source = {
            "generator": f"reasoning_gym {reasoning_gym_version()}",
            "dataset": dataset,
            "seed": seed,
            "size": PER_TASK,
            "config": {"max_words": 5},
            "index": index,
        }
        yield line("word_reversal", entry["question"], completion, gold, source, variant, expected)


def reasoning_gym_version() -> str:
    from importlib.metadata import version

    return version("reasoning-gym")


BUILDERS: dict[str, Callable[[Path, random.Random], Iterator[Line]]] = {
    "gsm8k": build_gsm8k,
    "math500": build_math500,
    "format": build_format,
    "multiple_choice": build_multiple_choice,
    "translation": build_translation,
    "rg_basic_arithmetic": rg_builder("basic_arithmetic"),
    "rg_letter_counting": rg_builder("letter_counting"),
    "word_reversal": build_word_reversal,
}


def build(data: Path, seed: int) -> list[Line]:
    """Every task's lines, in task order, with ids `task-NN`."""
    out: list[Line] = []
    for task, builder in BUILDERS.items():
        # One generator per task: adding a task does not change the others' samples.
        rng = random.Random(f"{seed}:{task}")
        for n, item in enumerate(builder(data, rng)):
            out.append({"id": f"{task}-{n:02d}", **item})
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="shared data directory")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output JSONL file")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not (args.data / "SOURCES.md").exists():
        parser.error(f"{args.data} does not look like the shared data directory (no SOURCES.md)")
    lines = build(args.data, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as f:
        for item in lines:
            f.write(json.dumps(item, ensure_ascii=False) + "\n")
    counts: dict[str, int] = {}
    for item in lines:
        counts[item["task"]] = counts.get(item["task"], 0) + 1
    print(
        f"wrote {len(lines)} lines to {args.out}: "
        + ", ".join(f"{t}={n}" for t, n in counts.items())
    )


if __name__ == "__main__":
    main()
