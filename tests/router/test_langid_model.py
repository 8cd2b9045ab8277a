"""py3langid's model kept inflated: a second start reads the cache and identifies languages
exactly as py3langid's own loader does; a damaged file or a loader that reads the model
differently is never used."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from py3langid.langid import MODEL_FILE, LanguageIdentifier

from rewardsmith.router import langid_model
from rewardsmith.router.langid_model import _same, cache_dir, load_identifier

# Texts in several languages and scripts, short and long: what the router ranks.
TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "Le renard brun rapide saute par-dessus le chien paresseux.",
    "敏捷的棕色狐狸跳过了懒狗。",
    "Paris",
    "",
]


@pytest.fixture(scope="module")
def reference() -> Any:
    """The identifier py3langid's own loader builds."""
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def _ranks(identifier: Any) -> list[Any]:
    return [identifier.rank(t) for t in TEXTS]


def _no_inflating(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("py3langid's own loader ran: the cache was not used")

    monkeypatch.setattr(LanguageIdentifier, "from_model_file", refuse)


def test_second_load_reads_the_cache_and_identifies_the_same(
    reference: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = load_identifier()
    assert len(list(cache_dir().glob("*.npz"))) == 1
    _no_inflating(monkeypatch)
    second = load_identifier()
    for identifier in (first, second):
        assert _same(identifier, reference)
        assert _ranks(identifier) == _ranks(reference)


def test_a_damaged_file_is_not_used_and_is_rewritten(
    reference: Any, caplog: pytest.LogCaptureFixture
) -> None:
    load_identifier()
    (path,) = cache_dir().glob("*.npz")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        identifier = load_identifier()
    assert "does not match its digest" in caplog.text
    assert _ranks(identifier) == _ranks(reference)
    assert path.read_bytes() != bytes(data)  # written again, whole


def test_a_loader_that_reads_the_model_differently_is_not_cached(
    reference: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = langid_model._from_inflated

    def off_by_one(raw: bytes, norm_probs: bool) -> Any:
        identifier = real(raw, norm_probs)
        identifier.nb_pc = identifier.nb_pc + 1  # one slot differs from py3langid's own
        return identifier

    monkeypatch.setattr(langid_model, "_from_inflated", off_by_one)
    assert _ranks(load_identifier()) == _ranks(reference)
    assert list(cache_dir().glob("*.npz")) == []
