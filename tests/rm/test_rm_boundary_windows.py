"""Problem/solution splits (`mode="boundary"`) and completion windows that read the end."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest
import torch

from rewardsmith.errors import ConfigError
from rewardsmith.library.store import Library
from rewardsmith.rm.data import Pair, SplitConfig, batches, split_document
from rewardsmith.rm.model import ScoringModel, Windows, init_scorer, load_scorer
from rewardsmith.rm.registry import register_trained
from rewardsmith.rm.train import TrainConfig, train
from rewardsmith.types import Sample
from support import REPO_ROOT, SHARED_DATA

QUESTION = "Natalia sold clips to 48 of her friends in April, and half as many in May. How many?"
SOLUTION = (
    "Natalia sold 48/2 = 24 clips in May.\n"
    "Natalia sold 48+24 = 72 clips altogether in April and May.\n#### 72"
)
DOC = QUESTION + "\n\n" + SOLUTION


def n_tokens(tokenizer, text: str) -> int:  # type: ignore[no-untyped-def]
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


# -- boundary splits --------------------------------------------------------------------------


def test_boundary_split_is_the_problem_and_its_solution(minilm_tokenizer) -> None:  # type: ignore[no-untyped-def]
    config = SplitConfig(prefix_min=4, suffix_min=4, suffix_max=200, mode="boundary")
    pair = split_document(DOC, minilm_tokenizer, config, random.Random(0))
    assert pair is not None
    assert (pair.prefix, pair.suffix) == (QUESTION, SOLUTION)
    # The split does not depend on the random generator: same pair for any seed.
    assert split_document(DOC, minilm_tokenizer, config, random.Random(7)) == pair


def test_boundary_suffix_side_keeps_the_start_or_the_end(minilm_tokenizer) -> None:  # type: ignore[no-untyped-def]
    start = SplitConfig(prefix_min=4, suffix_min=4, suffix_max=10, mode="boundary")
    end = SplitConfig(prefix_min=4, suffix_min=4, suffix_max=10, mode="boundary", suffix_side="end")
    first = split_document(DOC, minilm_tokenizer, start, random.Random(0))
    last = split_document(DOC, minilm_tokenizer, end, random.Random(0))
    assert first is not None and last is not None
    assert SOLUTION.startswith(first.suffix) and first.suffix_tokens == 10
    # The end keeps the final answer, starts at a word, and is at most suffix_max tokens.
    assert SOLUTION.endswith(last.suffix) and last.suffix.endswith("#### 72")
    assert SOLUTION[len(SOLUTION) - len(last.suffix) - 1].isspace()
    assert last.suffix_tokens == n_tokens(minilm_tokenizer, last.suffix) <= 10
    assert last.prefix == QUESTION


def test_boundary_needs_a_blank_line_and_long_enough_parts(minilm_tokenizer) -> None:  # type: ignore[no-untyped-def]
    config = SplitConfig(prefix_min=4, suffix_min=4, mode="boundary")
    rng = random.Random(0)
    assert split_document(QUESTION + " " + SOLUTION, minilm_tokenizer, config, rng) is None
    assert split_document("Why?\n\n" + SOLUTION, minilm_tokenizer, config, rng) is None
    assert split_document(QUESTION + "\n\n72", minilm_tokenizer, config, rng) is None


def test_end_suffix_side_needs_boundary_mode() -> None:
    with pytest.raises(ConfigError, match="boundary"):
        SplitConfig(suffix_side="end")
    with pytest.raises(ConfigError, match="suffix side"):
        SplitConfig(mode="boundary", suffix_side="middle")  # type: ignore[arg-type]


# -- completion windows --------------------------------------------------------------------


def test_windows_refuse_unknown_sides_and_empty_windows() -> None:
    with pytest.raises(ConfigError, match="completion side"):
        Windows(completion_side="middle")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=">= 1"):
        Windows(prompt_max_tokens=0)


def test_end_window_reads_only_the_end_of_a_completion(tiny_backbone: Path) -> None:
    torch.set_num_threads(1)
    ending = " so the answer is 72 clips in total."
    a = "First we think about April and write a long preamble of many words." + ending
    b = "Completely different opening words about something else entirely here." + ending
    probe = init_scorer(str(tiny_backbone), "cross", None, seed=0, device="cpu")
    k = n_tokens(probe.tokenizer, ending)
    end = init_scorer(str(tiny_backbone), "cross", Windows(16, k, "end"), seed=0, device="cpu")
    assert end.clip_completions([a, b]) == [ending.lstrip()] * 2
    s_a, s_b = end.score_texts(["How many clips?"] * 2, [a, b])
    assert s_a == pytest.approx(s_b, abs=1e-6)
    start = init_scorer(str(tiny_backbone), "cross", Windows(16, k), seed=0, device="cpu")
    assert start.clip_completions([a])[0].startswith("First we think")
    s_a, s_b = start.score_texts(["How many clips?"] * 2, [a, b])
    assert s_a != pytest.approx(s_b, abs=1e-6)


def test_end_window_leaves_room_for_the_prompt(tiny_backbone: Path) -> None:
    # 128 + 500 > 512 positions: the completion's end must survive, its start is dropped.
    scorer = init_scorer(str(tiny_backbone), "cross", Windows(128, 500, "end"), 0, "cpu")
    long = " ".join(f"w{i}" for i in range(600)) + " final answer 72"
    (clipped,) = scorer.clip_completions([long], 512 - 3 - 128)
    assert clipped.endswith("final answer 72")
    assert n_tokens(scorer.tokenizer, clipped) <= 512 - 3 - 128


def test_saved_side_travels_to_the_model_tool(tiny_backbone: Path, tmp_path: Path) -> None:
    torch.set_num_threads(1)
    out = tmp_path / "rm"
    init_scorer(str(tiny_backbone), "cross", Windows(16, 8, "end"), 0, "cpu").save(
        out, {"train": {"backbone": str(tiny_backbone), "encoder": "cross", "seed": 0}}
    )
    assert json.loads((out / "rbs_config.json").read_text())["windows"]["completion_side"] == "end"
    assert load_scorer(out, device="cpu").windows.completion_side == "end"
    # Past the tool's character cap: only an end-reading tool keeps the answer.
    head = "filler " * 5_000
    with Library(tmp_path / "lib.db") as lib:
        register_trained(out, lib, name="end_rm")
        tool = lib.get("end_rm")
        r1, r2 = tool.score(
            [
                Sample(prompt="Q?", completion=head + "the answer is 72"),
                Sample(prompt="Q?", completion="filler " * 10 + "the answer is 72"),
            ]
        )
    assert r1.status == r2.status == "ok"
    assert r1.score == pytest.approx(r2.score, abs=1e-6)


# -- the validation files of bench/rm_math_corpus.py --------------------------------------


def _corpus_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "rm_math_corpus", REPO_ROOT / "bench" / "rm_math_corpus.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# (solution, answer, wrong, expected): only standalone occurrences of the answer change.
WRONG_CASES = [
    # every occurrence of the answer, not the numbers that contain it
    (
        "48+24 = 72 clips, 172 or 72.5 stay\n#### 72",
        "72",
        75,
        "48+24 = 75 clips, 172 or 72.5 stay\n#### 75",
    ),
    # thousands separators in the text
    ("Total 1,200 dollars\n#### 1200", "1200", 1201, "Total 1201 dollars\n#### 1201"),
]


@pytest.mark.parametrize(("solution", "answer", "wrong", "expected"), WRONG_CASES)
def test_wrong_solution_replaces_the_answer(
    solution: str, answer: str, wrong: int, expected: str
) -> None:
    assert _corpus_module()._wrong_solution(solution, answer, wrong) == expected


@pytest.mark.skipif(not (SHARED_DATA / "gsm8k" / "test.jsonl").is_file(), reason="no GSM8K test")
def test_validation_files_have_one_true_solution_per_problem(tmp_path: Path) -> None:
    counts = _corpus_module().build_validation(SHARED_DATA, tmp_path, problems=20)
    assert counts == {"val_problems": 20, "val_pairs_per_file": 60, "val_boxed_problems": 20}
    for name in ("val_arith.jsonl", "val_neighbor.jsonl", "val_boxed.jsonl"):
        rows = [json.loads(line) for line in (tmp_path / name).read_text().splitlines()]
        assert len(rows) == 20
        for row in rows:
            assert sorted(row["score"]) == [False, False, False, True]
            assert len(set(row["response"])) == 4  # every negative differs from the truth


def test_boxed_span_finds_the_one_box_with_nested_braces() -> None:
    span = _corpus_module()._boxed_span
    text = r"so $x=\boxed{\frac{1}{2}}$ cm"
    start, end = span(text)
    assert text[start:end] == r"\frac{1}{2}"
    assert span(r"\boxed{1} or \boxed{2}") is None and span("no box") is None


@pytest.mark.skipif(not (SHARED_DATA / "math" / "math500.jsonl").is_file(), reason="no MATH-500")
def test_corpus_interleaves_the_sources(tmp_path: Path) -> None:
    out = tmp_path / "corpus.jsonl"
    counts = _corpus_module().build(SHARED_DATA, out, math_repeat=2, seed=0)
    texts = [json.loads(line)["text"] for line in out.read_text().splitlines()]
    written = counts["documents_written"]
    assert len(texts) == written == counts["gsm8k_train"] + 2 * counts["math500"]
    # MATH-500 solutions (LaTeX, unlike GSM8K's "#### n") reach the first 2,048 documents, the
    # shuffle buffer a short training run reads from; written in source order they did not.
    head = texts[:2048]
    share = sum("####" not in t for t in head) / len(head)
    assert 0.08 < share < 0.16  # 2 x 495 of 8,463 documents is 11.7%


# -- hard (similar-problem) batches ---------------------------------------------------------


def topic_pair(i: int, topic: str) -> Pair:
    text = f"{topic} problem {i}: how many {topic} are left?"
    return Pair(text, f"answer {i}", doc=i, prefix_tokens=8, suffix_tokens=2)


def test_similar_batches_group_alike_prefixes() -> None:
    topics = ["apples", "trains", "marbles", "candles"]
    pairs = [topic_pair(i, topics[i % 4]) for i in range(64)]  # topics interleaved
    got = list(batches(pairs, 4, similar_pool=32))
    assert len(got) == 16
    for batch in got:
        assert len({p.prefix.split()[0] for p in batch}) == 1  # one topic per batch
        assert len({p.doc for p in batch}) == 4
    assert sorted(p.doc for b in got for p in b) == list(range(64))  # every pair once
    # Random batches (the default) keep the stream order, so every batch mixes the topics.
    assert all(len({p.prefix.split()[0] for p in b}) == 4 for b in batches(pairs, 4))
    assert list(batches(pairs, 4, similar_pool=32)) == got  # deterministic


def test_similar_batches_skip_duplicate_documents() -> None:
    pairs = [topic_pair(0, "apples")] * 5 + [topic_pair(i, "apples") for i in range(1, 9)]
    for batch in batches(pairs, 4, similar_pool=8):
        assert len({p.doc for p in batch}) == 4


def test_similar_pool_must_exceed_the_batch() -> None:
    with pytest.raises(ConfigError, match="similar_pool"):
        next(batches([topic_pair(i, "x") for i in range(8)], 4, similar_pool=4))


def test_train_with_boundary_end_and_hard_batches_saves_an_end_window(
    tiny_backbone: Path, tmp_path: Path
) -> None:
    torch.set_num_threads(1)
    docs = [
        f"Sam has {i} {topic}. He buys {i + 3} more. How many {topic} now?\n\n"
        f"Sam has {i} + {i + 3} = {2 * i + 3} {topic}.\n#### {2 * i + 3}"
        for i in range(40)
        for topic in ("apples", "pears")
    ]
    split = SplitConfig(
        prefix_min=4, suffix_min=4, suffix_max=12, mode="boundary", suffix_side="end"
    )
    config = TrainConfig(
        backbone=str(tiny_backbone),
        split=split,
        batch_size=4,
        similar_pool=16,
        max_steps=3,
        warmup_steps=1,
        device="cpu",
    )
    result = train([docs], tmp_path / "rm", config, progress=False)
    assert result.steps == 3 and result.pairs == 12
    saved = json.loads((tmp_path / "rm" / "rbs_config.json").read_text())
    assert saved["windows"] == {
        "prompt_max_tokens": 128,
        "completion_max_tokens": 384,
        "completion_side": "end",
    }
    assert saved["train"]["similar_pool"] == 16 and saved["train"]["split"]["mode"] == "boundary"


def test_bi_encoder_embeds_each_prompt_once_and_scores_as_pair_by_pair(
    tiny_backbone: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch.set_num_threads(1)
    bi = init_scorer(str(tiny_backbone), "bi", Windows(16, 24, "end"), seed=0, device="cpu")
    with torch.no_grad():  # a non-identity head, so prompt and completion sides differ
        bi.head.weight.add_(0.1 * torch.randn_like(bi.head.weight))
    prompts = ["How many clips?"] * 3 + ["How many eggs in a dozen?"] * 2
    completions = ["72", "48 + 24 = 72 clips", "blue", "12 eggs", "a dozen is twelve, so 12"]
    pair_by_pair = ScoringModel.score_texts(bi, prompts, completions, batch_size=2)
    embedded: list[str] = []
    real_embed = bi.embed

    def counting(texts):  # type: ignore[no-untyped-def]
        embedded.extend(texts)
        return real_embed(texts)

    monkeypatch.setattr(bi, "embed", counting)
    fast = bi.score_texts(prompts, completions, batch_size=2)
    assert fast == pytest.approx(pair_by_pair, abs=1e-5)
    assert len(embedded) == 2 + len(completions)  # two distinct prompts, embedded once each
    assert bi.score_texts([], []) == []
