"""Documents -> (prefix, suffix) pairs: formats, windows, modes, determinism, streaming."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardsmith.errors import ConfigError, InputError
from rewardsmith.rm.data import PairStream, SplitConfig, batches, iter_documents, split_document

SENTENCES = [
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "A second sentence follows, with several more words to split on.",
    "Prices rose by 12 percent in May, then fell back to 48 dollars.",
    "Finally the answer is computed as 48 + 24 = 72 clips in total.",
]


def doc(i: int) -> str:
    return f"Document {i} begins here. " + " ".join(SENTENCES)


def test_jsonl_fields_are_joined(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(
        json.dumps({"question": "Q?", "answer": "A."})
        + "\n\n"
        + json.dumps({"question": "Q2?"})
        + "\n"
    )
    assert list(iter_documents(path, "question,answer")) == ["Q?\n\nA.", "Q2?"]


def test_jsonl_corpus_gzip_arrays_and_bad_lines(tmp_path: Path) -> None:
    import gzip

    with gzip.open(tmp_path / "c.jsonl.gz", "wt") as fh:
        fh.write(json.dumps({"text": "zipped"}) + "\n")
    assert list(iter_documents(tmp_path / "c.jsonl.gz")) == ["zipped"]
    array = tmp_path / "c.json"  # a .json corpus may be one JSON array
    array.write_text(json.dumps([{"text": "one"}, {"text": "two"}], indent=2))
    assert list(iter_documents(array)) == ["one", "two"]
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps({"text": "fine"}) + "\n{not json\n")
    with pytest.raises(InputError, match=r"broken.jsonl:2: not valid JSON"):
        list(iter_documents(broken))


def test_text_file_blank_lines_separate_documents(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_text("one\nline two\n\n\nsecond doc\n")
    assert list(iter_documents(path)) == ["one\nline two\n", "second doc\n"]
    assert list(iter_documents(path, per_file=True)) == ["one\nline two\n\n\nsecond doc\n"]


def test_parquet_and_datasets_sources(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "c.parquet"
    pq.write_table(pa.table({"text": ["a b c", "d e f"], "other": [1, 2]}), path)
    assert list(iter_documents(path)) == ["a b c", "d e f"]
    with pytest.raises(InputError, match="no column"):
        list(iter_documents(path, "body"))
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"text": ["x y", "z w"]})
    assert list(iter_documents(ds)) == ["x y", "z w"]


def test_split_respects_windows_and_word_boundaries(minilm_tokenizer) -> None:  # type: ignore[no-untyped-def]
    config = SplitConfig(prefix_min=8, prefix_max=20, suffix_min=5, suffix_max=12)
    rng = random.Random(0)
    text = doc(1)
    for _ in range(50):
        pair = split_document(text, minilm_tokenizer, config, rng)
        assert pair is not None
        assert 8 <= pair.prefix_tokens <= 20 and 5 <= pair.suffix_tokens <= 12
        # Pieces are verbatim slices of the document, the suffix starts a word.
        assert pair.prefix in text and pair.suffix in text
        start = text.index(pair.suffix)
        assert start == 0 or text[start - 1].isspace()
        assert (
            len(minilm_tokenizer(pair.suffix, add_special_tokens=False)["input_ids"])
            == pair.suffix_tokens
        )


def test_sentence_mode_splits_only_after_sentence_ends(minilm_tokenizer) -> None:  # type: ignore[no-untyped-def]
    config = SplitConfig(prefix_min=4, prefix_max=64, suffix_min=4, suffix_max=64, mode="sentence")
    rng = random.Random(1)
    for _ in range(30):
        pair = split_document(doc(2), minilm_tokenizer, config, rng)
        assert pair is not None
        assert pair.prefix.rstrip()[-1] in ".!?:;"
        assert pair.suffix[0].isupper()


def test_short_documents_give_no_pair(minilm_tokenizer) -> None:  # type: ignore[no-untyped-def]
    assert split_document("too short", minilm_tokenizer, SplitConfig(), random.Random(0)) is None
    stream = PairStream([["too short", "also short"]], minilm_tokenizer, SplitConfig())
    with pytest.raises(InputError, match="no pairs"):
        next(iter(stream))


def test_stream_is_deterministic_per_seed(minilm_tokenizer) -> None:  # type: ignore[no-untyped-def]
    docs = [doc(i) for i in range(40)]

    def first(seed: int) -> list[tuple[str, str]]:
        config = SplitConfig(prefix_min=8, suffix_min=8, seed=seed, shuffle_buffer=16)
        stream = PairStream([docs], minilm_tokenizer, config)
        return [(p.prefix, p.suffix) for p in itertools.islice(stream, 80)]

    assert first(0) == first(0)
    assert first(0) != first(1)
    # Epoch 2 re-splits the same documents at new points.
    pairs = first(0)
    assert set(pairs[:40]) != set(pairs[40:80])


def test_stream_reads_lazily(minilm_tokenizer) -> None:  # type: ignore[no-untyped-def]
    consumed = 0

    def source() -> Iterator[str]:
        nonlocal consumed
        for i in range(10_000):
            consumed += 1
            yield doc(i)

    stream = PairStream([source()], minilm_tokenizer, SplitConfig(shuffle_buffer=8))
    next(iter(stream))
    assert consumed <= 9  # a buffer's worth, not the corpus


def test_batches_keep_documents_distinct(minilm_tokenizer) -> None:  # type: ignore[no-untyped-def]
    docs = [doc(i) for i in range(5)] + [doc(0)]  # doc 0 twice
    config = SplitConfig(prefix_min=8, suffix_min=8, shuffle_buffer=1)
    stream = PairStream([docs], minilm_tokenizer, config, epochs=1)
    (batch,) = list(batches(stream, 5))
    assert len({p.doc for p in batch}) == 5
    with pytest.raises(ConfigError):
        next(batches(stream, 1))


def test_bad_config_is_refused() -> None:
    with pytest.raises(ConfigError):
        SplitConfig(mode="paragraph")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        SplitConfig(prefix_min=10, prefix_max=5)
