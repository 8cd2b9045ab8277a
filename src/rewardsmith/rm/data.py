"""Unlabeled documents -> (prefix, suffix) pairs for RBS training.

Rule followed (RBS: reward models from plain text): split each document at a random point;
the text before is the *prefix* (the "prompt"), the text after is the *suffix* (the chosen
"response"); suffixes of the other documents in a batch are the rejected responses. By
default the split point breaks sentences, the paper's harder negatives: a rejected suffix
then starts mid-sentence too, so "does it start a sentence" gives nothing away. `mode=
"sentence"` splits only at sentence boundaries. `mode="boundary"` splits every document at
its first blank line, for corpora of "problem\n\nsolution" documents: the pairs are then
shaped like the (prompt, completion) pairs the model scores later, and `suffix_side="end"`
keeps the last tokens of a long solution (where it concludes) instead of the first.

Documents are streamed: text files (blank-line-separated documents, or one per file), JSONL
(one or more fields joined), parquet (row batches), a Hugging Face `datasets` object or any
iterable of strings. A shuffle buffer mixes them; nothing holds the whole corpus in memory.
Every random choice comes from one seeded generator per epoch, so a stream is reproducible
and `skip` fast-forwards it on resume.
"""

from __future__ import annotations

import gzip
import random
import re
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from rewardsmith.errors import ConfigError, InputError
from rewardsmith.jsonl import iter_jsonl

SplitMode = Literal["random", "sentence", "boundary"]
SPLIT_MODES: tuple[SplitMode, ...] = ("random", "sentence", "boundary")
SuffixSide = Literal["start", "end"]
SUFFIX_SIDES: tuple[SuffixSide, ...] = ("start", "end")
# What `mode="boundary"` splits at: the first blank line ("problem\n\nsolution").
BOUNDARY = "\n\n"

# A split needs word boundaries from the tokenizer's offsets; a megabyte "document" (a dump
# without blank lines) would be tokenized whole for one pair, so longer ones are clipped.
MAX_DOC_CHARS = 50_000
# Ends of sentences: a split right after one of these (then whitespace) is a sentence boundary.
_SENTENCE_MARKS = ".!?:;"
# Spaces (no line break) between a sentence's mark and a split that still count as its end.
MAX_SPACE_AFTER_SENTENCE = 64
_CLOSERS = "'\")]"
TEXT_SUFFIXES = (".txt", ".md", ".text")
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".json")


class Tokenizer(Protocol):
    """What the splitter needs from a Hugging Face fast tokenizer: offsets."""

    def __call__(self, text: str, **kwargs: Any) -> Any: ...


@dataclass(frozen=True)
class SplitConfig:
    """How documents become pairs. Lengths are tokens of the backbone's tokenizer.

    A document needs at least `prefix_min + suffix_min` tokens; the prefix keeps at most
    `prefix_max` tokens before the split (the ones nearest to it), the suffix at most
    `suffix_max` after it, its length drawn uniformly from `[suffix_min, suffix_max]`.

    `mode="boundary"` splits at the first blank line instead of a random point, and the
    suffix is the whole rest, clipped to `suffix_max` tokens from its start or, with
    `suffix_side="end"`, from its end (the way a completion window reads a response); the
    prefix before the blank line and the rest after it need `prefix_min` and `suffix_min`
    tokens, and a document without a blank line gives no pair.
    """

    prefix_min: int = 16
    prefix_max: int = 128
    suffix_min: int = 16
    suffix_max: int = 96
    mode: SplitMode = "random"
    seed: int = 0
    shuffle_buffer: int = 2048
    suffix_side: SuffixSide = "start"

    def __post_init__(self) -> None:
        if self.mode not in SPLIT_MODES:
            raise ConfigError(f"split mode must be one of {SPLIT_MODES}, got {self.mode!r}")
        if self.suffix_side not in SUFFIX_SIDES:
            raise ConfigError(
                f"suffix side must be one of {SUFFIX_SIDES}, got {self.suffix_side!r}"
            )
        if self.suffix_side == "end" and self.mode != "boundary":
            raise ConfigError(
                "suffix_side='end' needs mode='boundary': a random split's suffix is the text "
                "right after the split, so only its start exists"
            )
        if not 1 <= self.prefix_min <= self.prefix_max:
            raise ConfigError("need 1 <= prefix_min <= prefix_max")
        if not 1 <= self.suffix_min <= self.suffix_max:
            raise ConfigError("need 1 <= suffix_min <= suffix_max")
        if self.shuffle_buffer < 1:
            raise ConfigError("shuffle_buffer must be >= 1")


@dataclass(frozen=True)
class Pair:
    """One training example: a document's prefix and its true continuation."""

    prefix: str
    suffix: str
    doc: int  # CRC-32 of the document: two pairs of one document never share a batch
    prefix_tokens: int
    suffix_tokens: int


# -- documents -----------------------------------------------------------------------------


def _fields(field: str | Sequence[str]) -> list[str]:
    names = [f.strip() for f in field.split(",")] if isinstance(field, str) else list(field)
    if not names or not all(names):
        raise ConfigError(f"bad field spec {field!r}: expected NAME or NAME1,NAME2")
    return names


def _join(row: Any, names: list[str], where: str) -> str | None:
    if not isinstance(row, dict):
        raise InputError(f"{where}: expected an object with fields {names}")
    parts = [row.get(n) for n in names]
    texts = [p for p in parts if isinstance(p, str) and p.strip()]
    return "\n\n".join(texts) if texts else None


def _text_documents(path: Path, per_file: bool) -> Iterator[str]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        if per_file:
            yield fh.read(MAX_DOC_CHARS)
            return
        block: list[str] = []
        for line in fh:
            if line.strip():
                block.append(line)
            elif block:
                yield "".join(block)
                block = []
        if block:
            yield "".join(block)


def _jsonl_documents(path: Path, names: list[str]) -> Iterator[str]:
    # A `.json` file may be one JSON array of records instead of JSON Lines.
    array = path.name.lower().endswith(".json")
    for line_no, row in iter_jsonl(path, allow_array=array):
        text = _join(row, names, f"{path}:{line_no}")
        if text is not None:
            yield text


def _parquet_documents(path: Path, names: list[str]) -> Iterator[str]:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ConfigError("reading parquet needs pyarrow: `pip install pyarrow`") from exc
    pf = pq.ParquetFile(path)
    missing = [n for n in names if n not in pf.schema_arrow.names]
    if missing:
        raise InputError(f"{path}: no column {missing}; columns: {pf.schema_arrow.names}")
    for batch in pf.iter_batches(batch_size=1024, columns=names):
        for row in batch.to_pylist():
            text = _join(row, names, str(path))
            if text is not None:
                yield text


def iter_documents(
    source: str | Path | Iterable[Any], field: str | Sequence[str] = "text", per_file: bool = False
) -> Iterator[str]:
    """Documents of one source, streamed.

    `source` is a file (`.txt`/`.md`: blank-line-separated documents, or one per file with
    `per_file=True`; `.jsonl[.gz]`: `field`, several fields joined by a blank line, e.g.
    `"question,answer"`; `.parquet`: the same columns), a directory (its files, sorted), a
    Hugging Face `datasets.Dataset`/`IterableDataset` (rows with `field`) or an iterable of
    strings or dicts.
    """
    names = _fields(field)
    if isinstance(source, str | Path):
        path = Path(source).expanduser()
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file()):
                yield from iter_documents(child, field, per_file)
            return
        if not path.is_file():
            raise InputError(f"corpus {path} does not exist")
        name = path.name.lower()
        if name.endswith(".parquet"):
            yield from _parquet_documents(path, names)
        elif name.endswith(JSONL_SUFFIXES):
            yield from _jsonl_documents(path, names)
        else:
            yield from _text_documents(path, per_file)
        return
    for i, item in enumerate(source):
        if isinstance(item, str):
            if item.strip():
                yield item
        else:
            text = _join(dict(item), names, f"row {i}")
            if text is not None:
                yield text


# -- splitting -----------------------------------------------------------------------------


def _word_start(offsets: list[tuple[int, int]], i: int, stop: int) -> int:
    """The first token at or after `i` (before `stop`) that begins a word."""
    while i < stop and i > 0 and offsets[i][0] <= offsets[i - 1][1]:
        i += 1
    return i


def _inside_word(text: str, offsets: list[tuple[int, int]], t: int, spaced: bool) -> bool:
    """Whether a split before token `t` cuts a word. A tokenizer that leaves spaces out of
    its tokens (`spaced`: BERT's WordPiece) cuts a word wherever two tokens touch. One that
    keeps them in (byte-level BPE: " Ada", the testbed's digits one by one) leaves no gaps,
    so there a word is cut only between two letters or digits: "58-10=|48" and "| 5" are
    splits, "4|8" and "Ad|a" are not."""
    if offsets[t][0] > offsets[t - 1][1]:
        return False
    if spaced:
        return True
    at = offsets[t][0]
    return 0 < at < len(text) and text[at - 1].isalnum() and text[at].isalnum()


def _split_at_boundary(
    text: str, offsets: list[tuple[int, int]], config: SplitConfig
) -> Pair | None:
    """`mode="boundary"`: prefix before the first blank line, suffix after it (see SplitConfig)."""
    cut = text.find(BOUNDARY)
    if cut < 0:
        return None
    n = len(offsets)
    t = next((i for i, (a, _) in enumerate(offsets) if a >= cut), n)
    if t < config.prefix_min or n - t < config.suffix_min:
        return None
    start = _word_start(offsets, max(0, t - config.prefix_max), t - config.prefix_min)
    if config.suffix_side == "start":
        first, end = t, min(n, t + config.suffix_max)
    else:
        first, end = _word_start(offsets, max(t, n - config.suffix_max), n - 1), n
    return Pair(
        prefix=text[offsets[start][0] : offsets[t - 1][1]],
        suffix=text[offsets[first][0] : offsets[end - 1][1]],
        doc=zlib.crc32(text.encode("utf-8", "replace")),
        prefix_tokens=t - start,
        suffix_tokens=end - first,
    )


def split_document(
    text: str, tokenizer: Tokenizer, config: SplitConfig, rng: random.Random
) -> Pair | None:
    """Split one document at a random word boundary (or sentence boundary, or its first blank
    line); None if too short.

    The pieces are sliced from the original text with the tokenizer's character offsets, so
    no detokenization artifacts reach the model.
    """
    text = text[:MAX_DOC_CHARS]
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    offsets: list[tuple[int, int]] = enc["offset_mapping"]
    if config.mode == "boundary":
        return _split_at_boundary(text, offsets, config)
    n = len(offsets)
    if n < config.prefix_min + config.suffix_min:
        return None
    spaced = any(offsets[i][0] > offsets[i - 1][1] for i in range(1, n))
    candidates = []
    for t in range(config.prefix_min, n - config.suffix_min + 1):
        if _inside_word(text, offsets, t, spaced):
            continue  # the suffix would start with a word piece
        if config.mode == "sentence" and not _ends_sentence(text, offsets[t][0]):
            continue
        candidates.append(t)
    if not candidates:
        return None
    t = rng.choice(candidates)
    start = _word_start(offsets, max(0, t - config.prefix_max), t - config.prefix_min)
    length = rng.randint(config.suffix_min, min(config.suffix_max, n - t))
    end = t + length
    return Pair(
        prefix=text[offsets[start][0] : offsets[t - 1][1]],
        suffix=text[offsets[t][0] : offsets[end - 1][1]],
        doc=zlib.crc32(text.encode("utf-8", "replace")),
        prefix_tokens=t - start,
        suffix_tokens=length,
    )


class PairStream:
    """An endless (or `epochs`-long), seeded stream of pairs from one or more sources.

    Each epoch re-reads the sources, shuffles them through a buffer of
    `config.shuffle_buffer` documents and splits each document anew (a fresh split point per
    epoch). Training resumes by regenerating the stream and dropping the batches already seen.
    """

    def __init__(
        self,
        sources: Sequence[str | Path | Iterable[Any]],
        tokenizer: Tokenizer,
        config: SplitConfig | None = None,
        field: str | Sequence[str] = "text",
        per_file: bool = False,
        epochs: int | None = None,
    ) -> None:
        if not sources:
            raise ConfigError("no corpus given: pass at least one file, directory or dataset")
        self.sources = list(sources)
        self.tokenizer = tokenizer
        self.config = config or SplitConfig()
        self.field = field
        self.per_file = per_file
        self.epochs = epochs

    def _documents(self) -> Iterator[str]:
        for source in self.sources:
            yield from iter_documents(source, self.field, self.per_file)

    def epoch(self, epoch: int) -> Iterator[Pair]:
        """The pairs of one epoch, in order."""
        rng = random.Random(f"rbs:{self.config.seed}:{epoch}")
        buffer: list[str] = []

        def emit(text: str) -> Pair | None:
            return split_document(text, self.tokenizer, self.config, rng)

        for text in self._documents():
            buffer.append(text)
            if len(buffer) >= self.config.shuffle_buffer:
                pair = emit(buffer.pop(rng.randrange(len(buffer))))
                if pair is not None:
                    yield pair
        rng.shuffle(buffer)
        for text in buffer:
            pair = emit(text)
            if pair is not None:
                yield pair

    def __iter__(self) -> Iterator[Pair]:
        epoch = 0
        while self.epochs is None or epoch < self.epochs:
            produced = False
            for pair in self.epoch(epoch):
                produced = True
                yield pair
            if not produced:
                raise InputError(
                    "the corpus gave no pairs: every document is shorter than "
                    f"prefix_min + suffix_min = {self.config.prefix_min + self.config.suffix_min}"
                    " tokens (lower them, or check --field)"
                )
            epoch += 1


def batches(pairs: Iterable[Pair], batch_size: int, similar_pool: int = 0) -> Iterator[list[Pair]]:
    """Group pairs into batches of `batch_size` distinct documents.

    Two pairs of one document in a batch would make its own text a "rejected" answer; the
    second is dropped (this happens across an epoch boundary and for duplicated documents).

    `similar_pool=0` keeps the stream order (random batches). `similar_pool=P` (P > batch_size)
    makes *hard* batches: from a pool of the next P pairs, the oldest pair is batched with the
    `batch_size - 1` pairs whose prefixes share the most words with its own (Jaccard over
    lowercase words and numbers), so the rejected suffixes answer similar problems and telling
    them from the true one takes more than the topic. Deterministic given the stream.
    """
    if batch_size < 2:
        raise ConfigError("batch_size must be >= 2: the other pairs of a batch are the negatives")
    if similar_pool:
        if similar_pool <= batch_size:
            raise ConfigError(
                f"similar_pool must exceed batch_size ({batch_size}), got {similar_pool}"
            )
        yield from _similar_batches(pairs, batch_size, similar_pool)
        return
    batch: list[Pair] = []
    docs: set[int] = set()
    for pair in pairs:
        if pair.doc in docs:
            continue
        batch.append(pair)
        docs.add(pair.doc)
        if len(batch) == batch_size:
            yield batch
            batch, docs = [], set()


def _ends_sentence(text: str, end: int) -> bool:
    """Does `text[:end]` end a sentence: a mark (`.!?:;`, then closing quotes or brackets) or
    a line break, then only whitespace? Read backwards from `end`: a regex searched over the
    prefix would cost the prefix's length at every split."""
    stop = end
    while stop > 0 and text[stop - 1].isspace():
        if text[stop - 1] == "\n":
            return True
        if end - stop >= MAX_SPACE_AFTER_SENTENCE:
            return False  # the splits inside a long run of spaces would each rescan it
        stop -= 1
    while stop > 0 and text[stop - 1] in _CLOSERS:
        stop -= 1
    return stop > 0 and text[stop - 1] in _SENTENCE_MARKS


_WORDS = re.compile(r"[a-z]{3,}|\d+")
# Words too common in problem statements to say two problems are alike.
_STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        "the and for are was were has have had how many much what with that this from each will "
        "does did she her his him they their them you your its who which there than then into "
        "per one two all more less total",
    )
)


def _word_set(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORDS.findall(text.lower()) if w not in _STOPWORDS)


def _similar_batches(
    pairs: Iterable[Pair], batch_size: int, pool_size: int
) -> Iterator[list[Pair]]:
    pool: list[tuple[Pair, frozenset[str]]] = []
    it = iter(pairs)
    done = False
    while True:
        while not done and len(pool) < pool_size:
            pair = next(it, None)
            if pair is None:
                done = True
            else:
                pool.append((pair, _word_set(pair.prefix)))
        if len(pool) < batch_size:
            return
        anchor, words = pool[0]
        sims = [len(words & w) / max(1, len(words | w)) for _, w in pool]
        ranked = sorted(range(1, len(pool)), key=lambda i: -sims[i])  # stable: ties keep order
        chosen, docs = [0], {anchor.doc}
        for i in ranked:
            if pool[i][0].doc not in docs:
                chosen.append(i)
                docs.add(pool[i][0].doc)
                if len(chosen) == batch_size:
                    break
        if len(chosen) < batch_size and done:
            return
        if len(chosen) == batch_size:
            yield [pool[i][0] for i in chosen]
            taken = set(chosen)
        else:  # duplicates of the anchor's document fill the pool: drop the anchor, go on
            taken = {0}
        pool = [item for i, item in enumerate(pool) if i not in taken]
