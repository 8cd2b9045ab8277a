"""The hard slice of `rewardsmith bench routing --hard`: tasks written *without* the surface
markers the main set carries, so a router must decide from content.

Every item is a labeled JSONL record as in routing_data.py. Each source is split by record
index exactly as routing_data.py splits it (every `FIT_EVERY`-th record to *fit*, the rest to
*eval*), so the eval part is never seen by a fit, and its phrasings (hard_phrasings.py) are
disjoint from the fit part's: a router fitted on the fit part meets new wording on eval.

In-library:
- `math_plain`: MATH-500 (eval) / AIME, AMC, Minerva and MATH-500's fit records (fit), with
  no `\\boxed` anywhere: the problem as written, or with its LaTeX turned into plain text
  (`\\frac{3}{4}` -> `(3)/(4)`, `$` dropped), the completion the dataset's solution without
  `\\boxed`; references as LaTeX, as plain math, or integers only.
- `gsm8k_plain`: GSM8K test (eval) / train (fit) questions with no `####`: a bare number as
  the reference, the worked solution ending in a sentence or in nothing special.
- `translation_plain`: WMT23 de-en and en-de lines and software-message translations in 15
  languages (bench/data/ui_translations.jsonl: the `shadow` and `Linux-PAM` gettext
  catalogs, see bench/data/SOURCES.md), in both directions, with no "translate" word and no
  `English:`-style line labels: a request in the target or source language, or the bare
  passage with no instruction at all.
- `choice_letters`: GSM8K questions and LLMBar pairs with lettered options in other styles
  (`a)`, `[B]`, `Option C:`, inline lists), the reference in a form the choice tool reads.
- `rg_other`: reasoning-gym entries of datasets the main set does not use (real entries,
  with their metadata).

Out of library ("synthesize"):
- `choice_index`: the same questions with options numbered `1)`/`(i)` and the index as the
  reference (the choice tool reads letters).
- `open_task_words`: open-ended requests that contain task words ("translate an idea into a
  plan", "the answer is to ask"): LLMBar instructions with such words and their better
  output as a free-text reference, and written ones with no reference or a same-language
  answer.
- `json_not_entry`: JSON references that are data, not dataset entries: `{"answer": ...}`,
  extraction records, reasoning-gym entries stripped of their metadata or naming an unknown
  dataset.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from rewardsmith.bench import hard_phrasings as ph
from rewardsmith.bench import routing_data
from rewardsmith.bench.routing_data import (
    FIT_EVERY,
    Item,
    _boxed,
    _chat,
    _clean_gsm8k,
    _gsm8k_number,
    _item,
    _jsonl,
)

T = TypeVar("T")
UI_TRANSLATIONS = Path(__file__).resolve().parent / "data" / "ui_translations.jsonl"
LANGUAGE_NAMES = {
    "en": "English", "de": "German", "fr": "French", "es": "Spanish", "it": "Italian",
    "pt": "Portuguese", "nl": "Dutch", "pl": "Polish", "ru": "Russian", "sv": "Swedish",
    "cs": "Czech", "ja": "Japanese", "zh": "Chinese", "ko": "Korean", "tr": "Turkish",
    "vi": "Vietnamese", "fi": "Finnish",
}  # fmt: skip
# Records per source and split (the eval part of the slice has ~490 items).
PER_SOURCE = {
    "math": 100,
    "gsm8k": 80,
    "wmt": 25,
    "ui": 60,
    "choice": 60,
    "open": 30,
    "json": 40,
    "rg": 30,
}
# The fit part has more math: competition problems without markers are where the router's
# content features are weakest, so they need the most fitting examples.
FIT_MATH = 220
RG_OTHER_TASKS = (
    "base_conversion",
    "count_bits",
    "fraction_simplification",
    "prime_factorization",
    "simple_equations",
    "power_function",
    "calendar_arithmetic",
    "number_filtering",
    "string_insertion",
    "isomorphic_strings",
)
_LATEX_PLAIN: tuple[tuple[str, str], ...] = (
    (r"\\[dt]?frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)"),
    (r"\\sqrt\[([^]]*)\]\{([^{}]*)\}", r"(\2)^(1/\1)"),
    (r"\\sqrt\{([^{}]*)\}", r"sqrt(\1)"),
    (r"\\(?:text|mathrm|textbf|mbox|operatorname|mathbf|overline|mathit)\{([^{}]*)\}", r"\1"),
    (r"\\begin\{[a-z*]*\}", "("),
    (r"\\end\{[a-z*]*\}", ")"),
    (r"\\\\", ", "),
    (r"\^\\circ", " degrees"),
    (r"\\(?:cdot|times)", "*"),
    (r"\\(?:leq?|leqslant)\b", "<="),
    (r"\\(?:geq?|geqslant)\b", ">="),
    (r"\\neq?\b", "!="),
    (r"\\infty", "infinity"),
    (r"\\l(floor|ceil)\b", r"\1("),
    (r"\\r(?:floor|ceil)\b", ")"),
    (r"\\(?:left|right|displaystyle|quad|qquad|overline|mathbf|limits)\b", " "),
    (r"\\[,;!:]", " "),
    (r"\\([%$#&{}])", r"\1"),
    (r"\\([a-zA-Z]+)", r"\1"),
    (r"[$]|\\\(|\\\)|\\\[|\\\]", ""),
)


def plain_math(text: str) -> str:
    """LaTeX math as a person types it without LaTeX: `\\frac{3}{4}` -> `(3)/(4)`, no `$`."""
    for _ in range(3):  # nested \frac / \sqrt unwrap from the inside out
        for pattern, repl in _LATEX_PLAIN[:3]:
            text = re.sub(pattern, repl, text)
    for pattern, repl in _LATEX_PLAIN[3:]:
        text = re.sub(pattern, repl, text)
    text = re.sub(r"\{([^{}]*)\}", r"\1", text)
    return re.sub(r"[ \t]+", " ", text).strip()


def _split(records: list[Any], split: str, rng: random.Random) -> list[tuple[int, Any]]:
    """routing_data's split rule (every `FIT_EVERY`-th record to fit), uncapped, shuffled."""
    idx = [i for i in range(len(records)) if (i % FIT_EVERY == 0) == (split == "fit")]
    rng.shuffle(idx)
    return [(i, records[i]) for i in idx]


def _pick(options: Sequence[T], k: int) -> T:
    return options[k % len(options)]


def _split_by_hash(key: str, split: str) -> bool:
    """Records without an index order (catalog lines) split by a hash of their text."""
    h = int(hashlib.sha1(key.encode()).hexdigest(), 16)
    return (h % FIT_EVERY == 0) == (split == "fit")


def math_plain(data: Path, split: str, rng: random.Random) -> Iterator[Item]:
    recs = [r for _, r in _split(_jsonl(data / "math" / "math500.jsonl"), split, rng)]
    limit = PER_SOURCE["math"]
    if split == "fit":  # all of MATH-500's fit records, then competition problems
        extra = []
        for name in ("aime24.test.jsonl", "amc23.test.jsonl", "minerva_math.test.jsonl"):
            for r in _jsonl(data / "math" / name):
                ans = r.get("answer") or _boxed(r.get("solution", "") or "")
                if ans is not None:
                    extra.append({"problem": r.get("problem") or r.get("question"), "answer": ans})
        rng.shuffle(extra)
        recs += extra
        limit = FIT_MATH
    suffixes = ph.MATH_SUFFIXES[split]
    for k, r in enumerate(recs[:limit]):
        problem = re.sub(r"\\boxed\{", "{", str(r["problem"]))
        answer = str(r["answer"])
        solution = str(r.get("solution") or "")
        body = re.sub(r"\\boxed\{", "{", solution) if solution else ""
        style = k % 3
        if style == 2 and not re.fullmatch(r"-?\d+", answer):
            style = 1  # the integer-only variant needs an integer answer
        if style == 0:  # as written (inline LaTeX), no \boxed anywhere
            text, ref = problem, answer
            completion = body or f"Working through it, the answer is ${answer}$."
        else:  # typed without LaTeX
            text, ref = plain_math(problem), plain_math(answer)
            completion = plain_math(body) if body else f"So the answer is {ref}."
        text = text + _pick(suffixes, k // 3)
        prompt: Any = _chat(text) if k % 4 == 3 else text
        yield _item(prompt, completion[-1500:], ref, "math", f"math_plain_{style}")


def gsm8k_plain(data: Path, split: str, rng: random.Random) -> Iterator[Item]:
    name = "train.jsonl" if split == "fit" else "test.jsonl"
    recs = _split(_jsonl(data / "gsm8k" / name), split, rng)[: PER_SOURCE["gsm8k"]]
    endings = ph.GSM8K_ENDINGS[split]
    for k, (_, r) in enumerate(recs):
        number = _gsm8k_number(r["answer"])
        body = _clean_gsm8k(r["answer"]).rsplit("####", 1)[0].strip()
        completion = body + _pick(endings, k).format(n=number)
        text = r["question"] + _pick(ph.GSM8K_SUFFIXES[split], k // 2)
        prompt: Any = _chat(text) if k % 5 == 4 else text
        yield _item(prompt, completion, number, "gsm8k", "gsm8k_plain")


def _translation_prompt(src: str, src_lang: str, tgt_lang: str, split: str, k: int) -> str:
    """A request with no "translate" word, in English, in the target or source language, or
    no request at all (the bare passage)."""
    tgt = LANGUAGE_NAMES[tgt_lang]
    native = ph.NATIVE_REQUESTS[split]
    choices: list[str] = list(ph.TRANSLATION_REQUESTS[split])
    for lang in (tgt_lang, src_lang):
        if (lang, tgt_lang) in native:
            choices.append(native[(lang, tgt_lang)])
    choices.append("{src}")  # no instruction at all: the content alone says it
    return _pick(choices, k).format(src=src, tgt=tgt)


def translation_plain(data: Path, split: str, rng: random.Random) -> Iterator[Item]:
    base = data / "translation"
    for pair in ("de-en", "en-de"):
        src = (base / f"generaltest2023.{pair}.src.{pair[:2]}").read_text("utf-8").splitlines()
        refs = (base / f"generaltest2023.{pair}.ref.refA.{pair[3:]}").read_text("utf-8")
        lines = [
            (s, t) for s, t in zip(src, refs.splitlines(), strict=False) if 20 <= len(s) <= 300
        ]
        for k, (_, (s, t)) in enumerate(_split(lines, split, rng)[: PER_SOURCE["wmt"]]):
            text = _translation_prompt(s, pair[:2], pair[3:], split, k)
            prompt: Any = _chat(text) if k % 5 == 4 else text
            yield _item(prompt, t, t, "translation", f"translation_plain_{pair}")
    rows = [json.loads(x) for x in UI_TRANSLATIONS.read_text("utf-8").splitlines() if x.strip()]
    rows = [r for r in rows if _split_by_hash(r["en"], split)]
    rng.shuffle(rows)
    for k, r in enumerate(rows[: PER_SOURCE["ui"]]):
        if k % 2:  # from the catalog's language into English
            s, t, src_lang, tgt_lang = r["text"], r["en"], r["lang"], "en"
        else:  # from English into the catalog's language
            s, t, src_lang, tgt_lang = r["en"], r["text"], "en", r["lang"]
        text = _translation_prompt(s, src_lang, tgt_lang, split, k // 2)
        yield _item(text, t, t, "translation", "translation_plain_ui")


def _numeric_options(n: int) -> tuple[list[int], int]:
    options = sorted({n, n + 1, n * 2 + 3, max(n - 5, 0) + 7})
    while len(options) < 4:
        options.append(options[-1] + 11)
    return options[:4], options.index(n)


def choice_styles(data: Path, split: str, rng: random.Random) -> Iterator[Item]:
    name = "train.jsonl" if split == "fit" else "test.jsonl"
    recs = _split(_jsonl(data / "gsm8k" / name), split, rng)[: PER_SOURCE["choice"]]
    letter_styles, index_styles = ph.LETTER_STYLES[split], ph.INDEX_STYLES[split]
    for k, (_, r) in enumerate(recs):
        values, gold = _numeric_options(int(float(_gsm8k_number(r["answer"]))))
        q = r["question"]
        if k % 3 == 2:  # numbered options: the reference is an index
            style = _pick(index_styles, k)
            labels = ph.STYLE_LABELS[style["labels"]]
            listing = style["join"].join(
                style["item"].format(label=labels[i], option=v) for i, v in enumerate(values)
            )
            text = style["frame"].format(question=q, options=listing)
            ref = labels[gold]
            yield _item(
                text,
                f"The correct one is {ref}.",
                ref,
                "synthesize",
                "choice_index",
                "code_verifier",
            )
            continue
        style = _pick(letter_styles, k)
        labels = ph.STYLE_LABELS[style["labels"]]
        listing = style["join"].join(
            style["item"].format(label=labels[i], option=v) for i, v in enumerate(values)
        )
        text = style["frame"].format(question=q, options=listing)
        ref = style["reference"].format(label=labels[gold], option=values[gold])
        completion = _pick(ph.CHOICE_COMPLETIONS, k).format(label=labels[gold])
        yield _item(text, completion, ref, "multiple_choice", "choice_letters")
    # LLMBar pairs: "which output is better", with letters in other styles
    recs2 = []
    for path in sorted((data / "preference" / "llmbar").glob("*.json")):
        recs2.extend(json.loads(path.read_text("utf-8")))
    recs2 = [r for r in recs2 if len(r["input"]) + len(r["output_1"]) + len(r["output_2"]) < 2500]
    for k, (_, r) in enumerate(_split(recs2, split, rng)[: PER_SOURCE["choice"] // 3]):
        frame = _pick(ph.PAIR_FRAMES[split], k)
        better = "a" if r["label"] == 1 else "b"
        text = frame.format(instruction=r["input"], first=r["output_1"], second=r["output_2"])
        yield _item(
            text, f"({better}) is better.", better, "multiple_choice", "choice_letters_pair"
        )


def open_task_words(data: Path, split: str, rng: random.Random) -> Iterator[Item]:
    recs = []
    for path in sorted((data / "preference" / "llmbar").glob("*.json")):
        recs.extend(json.loads(path.read_text("utf-8")))
    recs = [r for r in recs if len(r["input"]) + len(r["output_1"]) + len(r["output_2"]) < 2500]
    seen: set[str] = set()
    n = 0
    for _, r in _split(recs, split, rng) + _split(recs, split, random.Random(1)):
        better = r["output_1"] if r["label"] == 1 else r["output_2"]
        if r["input"] in seen or not ph.TASK_WORDS.search(r["input"]):
            continue
        if len(better.split()) < 8 or re.search(r"\btranslat", r["input"], re.I):
            continue  # short answers may be numbers; translation requests are translations
        seen.add(r["input"])
        kind = "reward_model" if len(better.split()) > 30 else "code_verifier"
        yield _item(r["input"], r["output_1"], better, "synthesize", "open_llmbar", kind)
        n += 1
        if n >= PER_SOURCE["open"]:
            break
    for k, (prompt, answer) in enumerate(ph.OPEN_PROMPTS[split]):
        if k % 2:
            yield _item(prompt, answer, None, "synthesize", "open_written", "reward_model")
        else:
            kind = "reward_model" if len(answer.split()) > 30 else "code_verifier"
            yield _item(prompt, answer, answer, "synthesize", "open_written_ref", kind)


def json_not_entry(data: Path, split: str, rng: random.Random) -> Iterator[Item]:
    import reasoning_gym

    name = "train.jsonl" if split == "fit" else "test.jsonl"
    recs = _split(_jsonl(data / "gsm8k" / name), split, rng)[: PER_SOURCE["json"] // 4]
    for k, (_, r) in enumerate(recs):
        number = _gsm8k_number(r["answer"])
        answer: Any = number if k % 2 else int(float(number))
        text = r["question"] + _pick(ph.JSON_INSTRUCTIONS[split], k)
        ref = json.dumps({"answer": answer})
        yield _item(text, ref, ref, "synthesize", "json_answer", "code_verifier")
    for prompt, ref in ph.JSON_RECORDS[split]:
        yield _item(prompt, ref, ref, "synthesize", "json_record", "code_verifier")
    seed = 310_000 if split == "fit" else 370_000  # far apart: datasets seed entries seed+i
    per = PER_SOURCE["json"] // 4 // 2
    for task in RG_OTHER_TASKS[:2] if split == "eval" else RG_OTHER_TASKS[2:4]:
        for k, entry in enumerate(reasoning_gym.create_dataset(task, seed=seed, size=per)):
            broken = dict(entry)
            if k % 2:
                broken.pop("metadata", None)  # a question/answer pair is no dataset entry
            else:
                broken["metadata"] = {**entry["metadata"], "source_dataset": f"my_{task}"}
            ref = json.dumps(broken, default=str)
            completion = f"<answer>{entry['answer']}</answer>"
            yield _item(
                entry["question"], completion, ref, "synthesize", "json_rg_broken", "code_verifier"
            )


def rg_other(data: Path, split: str, rng: random.Random) -> Iterator[Item]:
    import reasoning_gym

    seed = 410_000 if split == "fit" else 430_000
    per = max(PER_SOURCE["rg"] // len(RG_OTHER_TASKS), 2)
    for task in RG_OTHER_TASKS:
        for k, entry in enumerate(reasoning_gym.create_dataset(task, seed=seed, size=per)):
            answer = str(entry["answer"])
            completion = f"<answer>{answer}</answer>" if k % 2 else f"Final answer:\n{answer}"
            ref = json.dumps(entry, default=str)
            yield _item(entry["question"], completion, ref, "reasoning_gym", "rg_other")


SOURCES: tuple[Callable[[Path, str, random.Random], Iterator[Item]], ...] = (
    math_plain,
    gsm8k_plain,
    translation_plain,
    choice_styles,
    open_task_words,
    json_not_entry,
    rg_other,
)


def build_hard(data: Path, split: str = "eval", seed: int = 0) -> list[Item]:
    """The hard slice for one split ("fit" or "eval"). The eval part drops every prompt
    that the fit parts (this slice's and the main set's) also hold."""
    if split not in ("fit", "eval"):
        raise ValueError(f"split must be 'fit' or 'eval', got {split!r}")
    items: list[Item] = []
    for source in SOURCES:
        rng = random.Random(f"{seed}:{split}:hard:{source.__name__}")
        items.extend(source(data, split, rng))
    if split == "eval":  # a prompt the fit splits hold (LLMBar repeats instructions) is dropped
        fit = build_hard(data, "fit", seed) + routing_data.build(data, "fit", seed, True)
        seen = {json.dumps(it["prompt"], sort_keys=True) for it in fit}
        items = [it for it in items if json.dumps(it["prompt"], sort_keys=True) not in seen]
    return items
