"""The router's exemplar embeddings, kept on disk between runs.

Embedding the library's descriptions and exemplars (a few hundred texts) took most of a
routed `score` or `serve` start: the same texts, the same model, the same vectors every
time. They are stored once in `$REWARDSMITH_HOME/cache/router/<key>.npz` and read back on
the next start; the model itself then loads only when a prompt needs embedding.

- **The key** is a SHA-256 of the embedder's identity (model files, their sizes and mtimes,
  the torch and transformers versions, the token limit) and of the exemplar texts in order
  (each candidate's, then "synthesize"'s): a new tool, a `route fit`, another model or
  another torch gives another file, never a stale one.
- **Byte-identical**: the file holds exactly the vectors the embedder computed on the miss,
  and a hit puts them back into the embedder's text cache in the same order, so prompts,
  exemplars and decisions come out as if the texts had been embedded in this process.
- **Untrusted on read**: a cache file is read as a regular file of bounded size, as an
  `.npz` without pickles, and used only when its stored key equals the expected one, its
  digest matches its vectors, and every vector is finite and unit-length. Anything else (a
  truncated write, a flipped bit, a file copied under another key's name) is logged and
  recomputed, and the file replaced. Writes are atomic (`files.atomic_write`): a reader
  sees the old file or the new one, and a symlink planted at the path is replaced.
- **Optional**: a folder that cannot be written costs the next start the embedding time,
  never a routing decision.

Delete the folder (`rm -r ~/.rewardsmith/cache/router`) to clear it; it is rebuilt on the
next routed start.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rewardsmith.config import home_dir
from rewardsmith.errors import InputError
from rewardsmith.files import atomic_write, read_bytes

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

#: Bumped when the file layout or the key's recipe changes.
CACHE_FORMAT = 1
# Far above any real library (a few thousand exemplars x 384 floats is a few MB).
MAX_CACHE_BYTES = 256 * 2**20
# A stored vector must be L2-normalized (the embedder normalizes every one).
NORM_TOLERANCE = 1e-3


class CachingEmbedder(Protocol):
    """What the cache needs from an embedder (`embedded.MiniLMEmbedder`)."""

    dim: int

    def identity(self) -> str: ...

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...

    def cached_vector(self, text: str) -> np.ndarray: ...

    def remember(self, texts: Sequence[str], vectors: np.ndarray) -> None: ...


def cache_dir() -> Path:
    """`$REWARDSMITH_HOME/cache/router` (read now, not at import)."""
    return home_dir() / "cache" / "router"


def cache_key(identity: str, groups: Sequence[Sequence[str]]) -> str:
    """The file's key: the embedder's identity and every exemplar text, in order."""
    blob = json.dumps([CACHE_FORMAT, identity, [list(g) for g in groups]], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def exemplar_vectors(
    embedder: CachingEmbedder, groups: Sequence[Sequence[str]]
) -> list[np.ndarray]:
    """One matrix per group of texts (`embedder.encode(group)`, group after group), read
    from the cache when a valid file holds them, else embedded and stored."""
    key = cache_key(embedder.identity(), groups)
    path = cache_dir() / f"{key}.npz"
    texts = list(dict.fromkeys(t for g in groups for t in g))  # first appearance order
    stored = _read(path, key, len(texts), embedder.dim) if path.exists() else None
    if stored is not None:
        embedder.remember(texts, stored)
        row = {t: stored[i] for i, t in enumerate(texts)}
        return [_stack([row[t] for t in g], embedder.dim) for g in groups]
    out = [embedder.encode(g) for g in groups]
    if texts:
        _write(path, key, _stack([embedder.cached_vector(t) for t in texts], embedder.dim))
    return out


def _stack(rows: Sequence[np.ndarray], dim: int) -> np.ndarray:
    import numpy as np

    return np.stack(rows) if rows else np.zeros((0, dim), dtype=np.float32)


def _digest(key: str, vectors: np.ndarray) -> str:
    return hashlib.sha256(key.encode("ascii") + vectors.tobytes()).hexdigest()


def _read(path: Path, key: str, rows: int, dim: int) -> np.ndarray | None:
    """The file's vectors, or None (with a warning) when it fails any check."""
    import numpy as np

    try:
        with np.load(io.BytesIO(read_bytes(path, MAX_CACHE_BYTES)), allow_pickle=False) as data:
            stored_key = str(data["key"])
            digest = str(data["digest"])
            vectors = np.array(data["vectors"])
    except Exception as exc:  # a damaged file fails in numpy's or zipfile's parsers with
        # any of a dozen errors; each means the same here: embed again
        problem = f"is unreadable ({type(exc).__name__}: {str(exc)[:120]})"
    else:
        problem = _problem(key, rows, dim, stored_key, digest, vectors)
    if problem:
        log.warning("router: exemplar cache %s %s; embedding the exemplars again", path, problem)
        return None
    return vectors


def _problem(
    key: str, rows: int, dim: int, stored_key: str, digest: str, vectors: np.ndarray
) -> str:
    """Why a parsed cache file must not be used ("" when it may)."""
    import numpy as np

    if stored_key != key:
        return "holds another key than the one its name promises"
    if vectors.dtype != np.float32 or vectors.shape != (rows, dim):
        return f"holds {vectors.dtype} {vectors.shape}, not float32 {(rows, dim)}"
    if digest != _digest(key, vectors):
        return "has a digest that does not match its vectors"
    norms = np.linalg.norm(vectors, axis=1) if rows else np.ones(0)
    if not np.all(np.isfinite(vectors)) or not np.all(np.abs(norms - 1.0) < NORM_TOLERANCE):
        return "holds vectors that are not finite and unit-length"
    return ""


def _write(path: Path, key: str, vectors: np.ndarray) -> None:
    import numpy as np

    buffer = io.BytesIO()
    np.savez(buffer, key=np.array(key), digest=np.array(_digest(key, vectors)), vectors=vectors)
    try:
        atomic_write(path, buffer.getvalue())
    except InputError as exc:  # a read-only home: the next start embeds again
        log.warning("router: exemplar cache not written (%s)", exc)
