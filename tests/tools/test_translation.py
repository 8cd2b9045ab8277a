"""TranslationTool: sacrebleu sentence chrF / BLEU against WMT23 reference translations."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from sacrebleu.metrics import BLEU, CHRF

from rewardsmith.errors import ConfigError
from rewardsmith.library.registry import BUILTINS, build_tool
from rewardsmith.tools.translation import TranslationTool
from rewardsmith.types import Reward, Sample, ToolSpec

SPEC = ToolSpec(name="translation")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "translation"
SOURCES = (FIXTURES / "generaltest2023.de-en.head20.src.de").read_text("utf-8").splitlines()
REFERENCES = (FIXTURES / "generaltest2023.de-en.head20.ref.refA.en").read_text("utf-8").splitlines()
# Line 1: "Diego Cocca wird neuer Nationaltrainer von Mexiko"
REF = REFERENCES[0]  # "Diego Cocca will become the new national team trainer for Mexico"


def score_one(completion: str, reference: str | None, metric: str = "chrf") -> Reward:
    tool = TranslationTool(spec=SPEC, metric=metric)
    return tool.score([Sample(completion, reference=reference)])[0]


def test_fixture_is_line_aligned() -> None:
    assert len(SOURCES) == len(REFERENCES) == 20


@pytest.mark.parametrize("metric", ["chrf", "bleu"])
def test_reference_itself_scores_one(metric: str) -> None:
    # every reference translation scores 1.0 against itself
    tool = TranslationTool(spec=SPEC, metric=metric)
    rewards = tool.score([Sample(ref, reference=ref) for ref in REFERENCES])
    assert [r.score for r in rewards] == [1.0] * len(REFERENCES)


@pytest.mark.parametrize("metric", ["chrf", "bleu"])
def test_untranslated_source_scores_lower_than_a_paraphrase(metric: str) -> None:
    # copying the German source is worse than a close English paraphrase
    paraphrase = "Diego Cocca becomes the new national coach of Mexico"
    untranslated = score_one(SOURCES[0], REF, metric).score
    close = score_one(paraphrase, REF, metric).score
    assert untranslated is not None and close is not None
    assert 0.0 <= untranslated < close < 1.0


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        # the score is sacrebleu's sentence score / 100 and the component its raw value
        ("chrf", CHRF().sentence_score("Diego Cocca becomes Mexico's national coach", [REF]).score),
        (
            "bleu",
            BLEU(effective_order=True)
            .sentence_score("Diego Cocca becomes Mexico's national coach", [REF])
            .score,
        ),
    ],
)
def test_score_is_sacrebleu_over_100(metric: str, expected: float) -> None:
    reward = score_one("Diego Cocca becomes Mexico's national coach", REF, metric)
    assert reward.score == pytest.approx(expected / 100)
    assert reward.components == {metric: pytest.approx(expected)}


@pytest.mark.parametrize(
    "completion",
    [
        # whitespace and a leading label are not part of the translation
        f"  {REF}\n",
        f"Translation: {REF}",
        f"English translation:\n{REF}",
        f"**Translation:** {REF}",
    ],
)
def test_label_and_whitespace_are_stripped(completion: str) -> None:
    assert score_one(completion, REF).score == 1.0


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        # several references: matching any one of them fully scores 1.0
        ("Diego Cocca is Mexico's new national coach", 1.0),
        (REF, 1.0),
        # matching none of them scores below 1.0
        ("Somebody else will coach Mexico", None),
    ],
)
def test_multi_reference(completion: str, expected: float | None) -> None:
    reference = json.dumps([REF, "Diego Cocca is Mexico's new national coach"])
    reward = score_one(completion, reference)
    if expected is None:
        assert reward.score is not None and reward.score < 0.6
    else:
        assert reward.score == expected


def test_reference_starting_with_bracket_is_plain_text() -> None:
    # not JSON: a translation that happens to start with "["
    text = "[Applause] Thank you all for coming."
    assert score_one(text, text).score == 1.0


@pytest.mark.parametrize(
    "completion",
    [
        # nothing to score: 0.0, status ok
        "",
        "   \n",
        "Translation:",
    ],
)
def test_empty_translation_scores_zero(completion: str) -> None:
    assert (score_one(completion, REF).score, score_one(completion, REF).status) == (0.0, "ok")


@pytest.mark.parametrize(
    "reference",
    [
        # missing or blank
        None,
        "",
        "  ",
        # a JSON list that holds no usable text, or not only strings
        "[]",
        '["", "  "]',
        '["a", 3]',
    ],
)
def test_bad_reference_is_invalid_reference(reference: str | None) -> None:
    reward = score_one(REF, reference)
    assert (reward.score, reward.status) == (None, "invalid_reference")


def test_unknown_metric_raises_config_error() -> None:
    with pytest.raises(ConfigError, match="metric"):
        TranslationTool(spec=SPEC, metric="comet")


def test_megabyte_completion_returns() -> None:
    reward = score_one("word " * 220_000, REF)
    assert reward.status == "ok"
    assert reward.score is not None and reward.score < 0.1


def test_tool_pickles_for_worker_processes() -> None:
    tool = pickle.loads(pickle.dumps(TranslationTool(spec=SPEC, metric="bleu")))
    assert tool.score([Sample(REF, reference=REF)])[0].score == 1.0


@pytest.mark.parametrize("name", ["translation", "translation_bleu"])
def test_builtins_build_from_registry(name: str) -> None:
    (builtin,) = [b for b in BUILTINS if b.spec.name == name]
    tool = build_tool(builtin.spec, builtin.config())
    assert isinstance(tool, TranslationTool)
    assert tool.score([Sample(REF, reference=REF)])[0].score == 1.0
