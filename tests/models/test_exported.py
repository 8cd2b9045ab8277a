"""The router's MiniLM as an ONNX export (`models.exported`): the same tokens and the same
vectors as the torch model, exported once, and a stored file used only when it is intact."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from rewardsmith.models import exported
from rewardsmith.models.loading import load_tokenizer, minilm_dir
from rewardsmith.router.embedder import MiniLMEmbedder

pytest.importorskip("onnxruntime")
pytest.importorskip("transformers")

# Texts of the shapes routing meets: empty, one word, math, code, non-Latin scripts, JSON,
# and longer than the 64-piece limit (truncation), in one batch of mixed lengths.
TEXTS = [
    "",
    "x",
    "What is 17 * 23? Show your work.",
    "def add(a, b):\n    return a + b\n\nassert add(2, 3) == 5",
    "Übersetze ins Englische: Der Hund läuft schnell über die Straße.",
    "把这句话翻译成英文：今天天气很好。",
    '{"source_dataset": "basic_arithmetic", "answer": "42"}',
    "Sort these numbers in descending order: " + ", ".join(str(i) for i in range(200)),
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture
def own_cache(cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REWARDSMITH_MODEL_CACHE", str(cache))
    return cache


def test_the_export_tokenizes_as_transformers_does(own_cache: Path) -> None:
    encoder = exported.load_exported(minilm_dir(), "tokens", 64)
    assert encoder is not None
    reference = load_tokenizer(minilm_dir())(
        TEXTS, padding=True, truncation=True, max_length=64, return_tensors="np"
    )
    encodings = encoder._tokenizer.encode_batch(TEXTS)
    assert [e.ids for e in encodings] == reference["input_ids"].tolist()
    assert [e.attention_mask for e in encodings] == reference["attention_mask"].tolist()


def test_onnx_and_torch_give_the_same_vectors(
    own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_onnx = MiniLMEmbedder()
    vectors_onnx = on_onnx.encode(TEXTS)
    assert on_onnx._exported is not None and on_onnx._model is None
    onnx_identity = on_onnx.identity()
    monkeypatch.setattr(exported, "onnx_available", lambda: False)
    on_torch = MiniLMEmbedder()
    vectors_torch = on_torch.encode(TEXTS)
    assert on_torch._model is not None and on_torch._exported is None
    assert np.abs(vectors_onnx - vectors_torch).max() < 1e-5
    # one batch or one text at a time: padding changes nothing
    alone = np.stack([MiniLMEmbedder().encode([t])[0] for t in TEXTS[:3]])
    assert np.abs(alone - vectors_onnx[:3]).max() < 1e-5
    # the exemplar cache never mixes vectors of the two runtimes
    assert onnx_identity != on_torch.identity()


def test_a_stored_export_is_reused_without_torch(
    own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert exported.load_exported(minilm_dir(), "tokens", 64) is not None

    def no_export(*args: object) -> bytes:
        raise AssertionError("exported again")

    monkeypatch.setattr(exported, "_export", no_export)
    assert exported.load_exported(minilm_dir(), "tokens", 64) is not None


# A stored file that is not what was written: each is exported again, never loaded. (The
# export itself is the real one made above, handed back by a counting stand-in: seconds each.)
@pytest.mark.parametrize(
    "damage", ["flip a byte", "truncate", "drop the digest", "a symlink to another file"]
)
def test_a_damaged_export_is_made_again(
    own_cache: Path,
    damage: str,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert exported.load_exported(minilm_dir(), "tokens", 64) is not None
    good = (exported.cache_folder("tokens") / "model.onnx").read_bytes()
    exports: list[int] = []

    def counted(*args: object) -> bytes:
        exports.append(1)
        return good

    monkeypatch.setattr(exported, "_export", counted)
    identity = f"damage-{damage}"
    assert exported.load_exported(minilm_dir(), identity, 64) is not None
    folder = exported.cache_folder(identity)
    model = folder / "model.onnx"
    if damage == "flip a byte":
        model.write_bytes(good[:1000] + bytes([good[1000] ^ 1]) + good[1001:])
    elif damage == "truncate":
        model.write_bytes(good[: len(good) // 2])
    elif damage == "drop the digest":
        (folder / "model.onnx.sha256").unlink()
    else:
        planted = tmp_path / "planted.onnx"  # another model's bytes under this name
        planted.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
        model.unlink()
        model.symlink_to(planted)
    with caplog.at_level(logging.WARNING, logger="rewardsmith.models.exported"):
        assert exported.load_exported(minilm_dir(), identity, 64) is not None
    assert "exporting again" in caplog.text
    assert len(exports) == 2
    assert model.read_bytes() == good and not model.is_symlink()
    # and intact, it is read back, not exported a third time
    assert exported.load_exported(minilm_dir(), identity, 64) is not None
    assert len(exports) == 2


def test_without_onnxruntime_the_torch_model_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exported, "onnx_available", lambda: False)
    assert exported.load_exported(minilm_dir(), "absent", 64) is None


def test_a_failed_export_falls_back_to_torch(
    own_cache: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: object) -> bytes:
        raise RuntimeError("exporter removed")

    monkeypatch.setattr(exported, "_export", broken)
    with caplog.at_level(logging.WARNING, logger="rewardsmith.models.exported"):
        assert exported.load_exported(minilm_dir(), "broken", 64) is None
    assert "using torch" in caplog.text
