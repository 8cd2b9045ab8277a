"""The labeled mixed-task set of `rewardsmith bench routing`.

Built from `../shared/data` and reasoning-gym, deterministic for a seed. Every item is a
JSONL record (`prompt`, `completion`, `reference`, `task`) plus `label` (the right tool's
name, or `synthesize`) and `kind` (for "synthesize": `code_verifier` or `reward_model`).
Each source is split by record index into a *fit* part (for `route fit`) and an *eval*
part, so a fitted router is never scored on what it learned from.

In-library tasks, each in several phrasings (plain, `Question: ... Answer:`, with an
answer-format instruction, as chat messages): GSM8K (reference: worked solution or the bare
number), competition math (MATH-500 / AIME / AMC: LaTeX or numbers), multiple choice (GSM8K
questions with four options; LLMBar pairs as "which output is better"), translation (WMT23
de-en and en-de, instructions in English and German), the <thinking>/<solution> and <think>
formats (no reference), reasoning-gym entries (JSON reference), and code with unit tests
when the library has a `code` tool.

Out-of-library tasks, which no built-in tool can grade, so the right answer is
"synthesize": HH-RLHF dialogues (a reward model), LLMBar instructions with no reference or
with a reference *answer* in free text (a reward model; chrF against one possible answer
would be the wrong tool), open-ended writing requests, reasoning-gym tasks whose answer is
free text presented without the JSON entry (a string-matching verifier must be written:
translation's chrF would be wrong), and code with unit tests when there is no `code` tool.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rewardsmith.jsonl import read_jsonl

Item = dict[str, Any]

# Records drawn per source and split; the bench set has ~1,000 eval items.
PER_SOURCE = 70
# Every FIT_EVERY-th record of a source goes to the fit split, the rest to eval.
FIT_EVERY = 4

MATH_SUFFIXES = (
    "",
    "\nPut your final answer within \\boxed{}.",
    "\n\nPlease reason step by step, and put your final answer within \\boxed{}.",
)
GSM8K_SUFFIXES = ("", "\nLet's think step by step.", "\nGive the final answer after ####.")
FORMAT_INSTRUCTIONS = (
    "Think step by step inside <thinking></thinking>, then give only the final answer inside "
    "<solution></solution>.",
    "Show your work in <thinking> </thinking> tags and put the final answer in <solution> "
    "</solution> tags.",
    "Format: <thinking>reasoning</thinking><solution>answer</solution>",
)
THINK_INSTRUCTIONS = (
    "Think it through inside <think></think> first, then answer.",
    "Put your reasoning between <think> and </think>, followed by the final answer.",
)
WRITING_FORMS = ("poem", "short story", "blog post", "speech", "letter", "product review")
WRITING_TOPICS = (
    "a rainy afternoon in Lisbon",
    "learning to ride a bicycle",
    "the first day at a new job",
    "a robot who wants to be a gardener",
    "why libraries still matter",
    "a family recipe passed down for generations",
    "the view from a mountain hut",
    "saying goodbye to an old dog",
)
WRITING_TEMPLATES = (
    "Write a {form} about {topic}.",
    "Compose a {form} on {topic}.",
    "Could you draft a {form} about {topic}? Keep it under 300 words.",
    "I need a {form} about {topic} for my class. Make it vivid.",
)
RG_JSON_TASKS = (
    "basic_arithmetic",
    "letter_counting",
    "chain_sum",
    "gcd",
    "leg_counting",
    "word_sorting",
    "spell_backward",
    "caesar_cipher",
    "family_relationships",
    "number_sorting",
)
RG_FREE_TEXT_TASKS = (
    "word_sorting",
    "spell_backward",
    "caesar_cipher",
    "letter_jumble",
    "sentence_reordering",
    "word_ladder",
    "family_relationships",
)


def _chat(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def _item(
    prompt: Any,
    completion: str,
    reference: str | None,
    label: str,
    source: str,
    kind: str | None = None,
    task: str | None = None,
) -> Item:
    return {
        "prompt": prompt,
        "completion": completion,
        "reference": reference,
        "task": task,
        "label": label,
        "kind": kind,
        "source": source,
    }


def _split(records: list[Any], split: str, rng: random.Random) -> list[tuple[int, Any]]:
    idx = [i for i in range(len(records)) if (i % FIT_EVERY == 0) == (split == "fit")]
    rng.shuffle(idx)
    return [(i, records[i]) for i in idx[:PER_SOURCE]]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    """Records of a JSONL file or JSON array (`rewardsmith.jsonl`: errors name path and line)."""
    records: list[dict[str, Any]] = read_jsonl(path, allow_array=True)
    return records


def _gsm8k_number(answer: str) -> str:
    return answer.rsplit("####", 1)[-1].strip().replace(",", "")


def _clean_gsm8k(answer: str) -> str:
    return re.sub(r"<<[^>]*>>", "", answer)


def gsm8k(data: Path, split: str, rng: random.Random) -> Iterator[Item]:
    name = "train.jsonl" if split == "fit" else "test.jsonl"
    for k, (_, rec) in enumerate(_split(_jsonl(data / "gsm8k" / name), split, rng)):
        q = rec["question"]
        prompt: Any = [q + GSM8K_SUFFIXES[0], f"Question: {q}\nAnswer:", q + GSM8K_SUFFIXES[1]]
        prompt = prompt[k % 3] if k % 4 else _chat(q + rng.choice(GSM8K_SUFFIXES))
        ref = rec["answer"] if k % 2 else _gsm8k_number(rec["answer"])
        completion = _clean_gsm8k(rec["answer"])
        if k % 3 == 2:  # not every policy writes "#### N"
            body = completion.rsplit("####", 1)[0].strip()
            completion = f"{body}\nThe answer is {_gsm8k_number(rec['answer'])}."
        yield _item(prompt, completion, ref, "gsm8k", "gsm8k")
        if k % 3 == 0:  # the same questions as multiple choice
            n = int(float(_gsm8k_number(rec["answer"])))
            options = sorted({n, n + 1, n * 2 + 3, max(n - 5, 0) + 7})
            while len(options) < 4:
                options.append(options[-1] + 11)
            letters = "ABCD"
            body = "\n".join(f"({letters[i]}) {v}" for i, v in enumerate(options[:4]))
            gold = letters[options.index(n)]
            style = k % 2
            text = (
                f"{q}\n\n{body}\n\nAnswer with the letter of the correct option."
                if style
                else f"Question: {q}\nOptions:\n{body}\nAnswer:"
            )
            yield _item(text, f"The answer is ({gold}).", gold, "multiple_choice", "gsm8k_mc")
        if k % 3 == 1:  # and with a format instruction, no reference
            if k % 2:
                instr = rng.choice(FORMAT_INSTRUCTIONS)
                yield _item(f"{q}\n\n{instr}", "", None, "format_tags", "format_tags")
            else:
                instr = rng.choice(THINK_INSTRUCTIONS)
                yield _item(f"{q}\n\n{instr}", "", None, "think_format", "think_format")


def _boxed(solution: str) -> str | None:
    start = solution.rfind("\\boxed{")
    if start < 0:
        return None
    depth, i = 0, start + len("\\boxed{") - 1
    for j in range(i, len(solution)):
        depth += {"{": 1, "}": -1}.get(solution[j], 0)
        if depth == 0:
            return solution[i + 1 : j]
    return None


def math(data: Path, split: str, rng: random.Random) -> Iterator[Item]:
    if split == "fit":
        recs = []
        for name in ("aime24.test.jsonl", "amc23.test.jsonl", "minerva_math.test.jsonl"):
            for r in _jsonl(data / "math" / name):
                ans = r.get("answer") or _boxed(r.get("solution", "") or "")
                if ans is not None:
                    recs.append({"problem": r.get("problem") or r.get("question"), "answer": ans})
        chosen = [r for _, r in _split(recs * FIT_EVERY, "eval", rng)]
    else:
        chosen = [r for _, r in _split(_jsonl(data / "math" / "math500.jsonl"), split, rng)]
    for k, rec in enumerate(chosen):
        problem, answer = rec["problem"], str(rec["answer"])
        text = problem + MATH_SUFFIXES[k % 3]
        prompt: Any = _chat(text) if k % 5 == 4 else (f"Problem: {text}" if k % 4 == 3 else text)
        completion = (
            rec.get("solution") or f"Working through it, the answer is \\boxed{{{answer}}}."
        )
        if k % 3 == 2:  # not every policy writes \boxed{}
            completion = completion.split(". ")[0] + f". So the answer is ${answer}$."
        yield _item(prompt, completion, answer, "math", "math")


def translation(data: Path, split: str, rng: random.Random) -> Iterator[Item]:
    base = data / "translation"
    for pair, src_lang, tgt_lang in (
        ("de-en", "German", "English"),
        ("en-de", "English", "German"),
    ):
        src = (base / f"generaltest2023.{pair}.src.{pair[:2]}").read_text("utf-8").splitlines()
        ref = (base / f"generaltest2023.{pair}.ref.refA.{pair[3:]}").read_text("utf-8")
        refs = ref.splitlines()
        lines = [(s, r) for s, r in zip(src, refs, strict=False) if 20 <= len(s) <= 300]
        for k, (_, (s, r)) in enumerate(_split(lines, split, rng)[: PER_SOURCE // 2]):
            german_target = "Deutsche" if tgt_lang == "German" else "Englische"
            templates = (
                f"Translate to {tgt_lang}: {s}",
                f"Translate the following {src_lang} text into {tgt_lang}:\n\n{s}",
                f"{src_lang}: {s}\n{tgt_lang}:",
                f"Übersetze ins {german_target}: {s}",
            )
            text = templates[k % 4]
            prompt: Any = _chat(text) if k % 5 == 4 else text
            yield _item(prompt, r, r, "translation", f"translation_{pair}")


def llmbar(data: Path, split: str, rng: random.Random) -> Iterator[Item]:
    recs = []
    for path in sorted((data / "preference" / "llmbar").glob("*.json")):
        recs.extend(_jsonl(path))
    recs = [r for r in recs if len(r["input"]) + len(r["output_1"]) + len(r["output_2"]) < 2500]
    for k, (_, r) in enumerate(_split(recs, split, rng)):
        better = r["output_1"] if r["label"] == 1 else r["output_2"]
        if k % 3 == 0:  # framed as a choice between two outputs: multiple choice
            gold = "A" if r["label"] == 1 else "B"
            text = (
                "Which output better follows the instruction?\n\nInstruction:\n"
                f"{r['input']}\n\n(A) {r['output_1']}\n\n(B) {r['output_2']}"
            )
            yield _item(text, f"Answer: {gold}", gold, "multiple_choice", "llmbar_mc")
        elif k % 3 == 1:  # the instruction alone: a reward model is needed
            yield _item(r["input"], better, None, "synthesize", "llmbar", "reward_model")
        else:  # with a reference answer in free text: still a reward model's job
            yield _item(
                r["input"], r["output_1"], better, "synthesize", "llmbar_ref", "reward_model"
            )


def hh_rlhf(data: Path, split: str, rng: random.Random) -> Iterator[Item]:
    recs = _jsonl(data / "preference" / "hh_rlhf_harmless_base_test.jsonl.gz")
    for k, (_, r) in enumerate(_split(recs, split, rng)):
        convo = r["chosen"]
        head, sep, last = convo.rpartition("\n\nAssistant:")
        if not sep:
            continue
        if k % 2:
            prompt: Any = head + sep
        else:
            turns = re.split(r"\n\n(Human|Assistant): ", head)
            prompt = [
                {"role": "user" if role == "Human" else "assistant", "content": text}
                for role, text in zip(turns[1::2], turns[2::2], strict=False)
            ]
        yield _item(prompt, last.strip(), None, "synthesize", "hh_rlhf", "reward_model")


def writing(data: Path, split: str, rng: random.Random) -> Iterator[Item]:
    combos = [(t, f, p) for t in WRITING_TEMPLATES for f in WRITING_FORMS for p in WRITING_TOPICS]
    for _, (t, f, p) in _split(combos, split, rng)[: PER_SOURCE // 2]:
        yield _item(
            t.format(form=f, topic=p),
            "Once upon a time...",
            None,
            "synthesize",
            "writing",
            "reward_model",
        )


def reasoning_gym_items(data: Path, split: str, rng: random.Random) -> Iterator[Item]:
    import reasoning_gym

    seed = 11 if split == "fit" else 23
    per = max(PER_SOURCE // len(RG_JSON_TASKS), 4)
    for name in RG_JSON_TASKS:
        for entry in reasoning_gym.create_dataset(name, seed=seed, size=per):
            ref = json.dumps(entry, default=str)
            answer = str(entry["answer"])
            yield _item(
                entry["question"], f"<answer>{answer}</answer>", ref, "reasoning_gym", "rg_json"
            )
    per = max(PER_SOURCE // len(RG_FREE_TEXT_TASKS), 4)
    for name in RG_FREE_TEXT_TASKS:
        for entry in reasoning_gym.create_dataset(name, seed=seed + 1, size=per):
            answer = str(entry["answer"])
            yield _item(
                entry["question"], answer, answer, "synthesize", "rg_free_text", "code_verifier"
            )


def code(data: Path, split: str, rng: random.Random, has_code_tool: bool) -> Iterator[Item]:
    """MBPP and HumanEval with their tests as the reference, in the JSON the `code` tool
    reads (`{test_list, test_imports}`, `{prompt, test, entry_point}`)."""
    label = "code" if has_code_tool else "synthesize"
    kind = None if has_code_tool else "code_verifier"
    mbpp = _jsonl(data / "code" / "sanitized-mbpp.json")
    for k, (_, r) in enumerate(_split(mbpp, split, rng)[: PER_SOURCE // 2]):
        tests = "\n".join(r["test_list"])
        ref = json.dumps({"test_list": r["test_list"], "test_imports": r["test_imports"]})
        text = (
            f"{r['prompt']} Your code should pass these tests:\n\n{tests}"
            if k % 2
            else f"{r['prompt']}\nYour code should pass this test: {r['test_list'][0]}"
        )
        prompt: Any = _chat(text) if k % 4 == 3 else text
        yield _item(prompt, f"```python\n{r['code']}\n```", ref, label, "mbpp", kind)
    he = _jsonl(data / "code" / "HumanEval.jsonl.gz")
    for k, (_, r) in enumerate(_split(he, split, rng)[: PER_SOURCE // 2]):
        ref = json.dumps({key: r[key] for key in ("prompt", "test", "entry_point")})
        text = r["prompt"] if k % 2 else f"Complete the following Python function.\n\n{r['prompt']}"
        yield _item(text, r["canonical_solution"], ref, label, "humaneval", kind)


def build(
    data: Path, split: str = "eval", seed: int = 0, has_code_tool: bool = False
) -> list[Item]:
    """The labeled set for one split ("fit" or "eval")."""
    if split not in ("fit", "eval"):
        raise ValueError(f"split must be 'fit' or 'eval', got {split!r}")
    items: list[Item] = []
    sources: list[Callable[[Path, str, random.Random], Iterator[Item]]] = [
        gsm8k,
        math,
        translation,
        llmbar,
        hh_rlhf,
        writing,
        reasoning_gym_items,
    ]
    for source in sources:
        items.extend(source(data, split, random.Random(f"{seed}:{split}:{source.__name__}")))
    items.extend(code(data, split, random.Random(f"{seed}:{split}:code"), has_code_tool))
    return items


def with_task(item: Item) -> Item:
    """The item with a `task` field naming its data source (as trainers often pass)."""
    return {**item, "task": item["source"]}
