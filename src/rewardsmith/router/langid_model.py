"""py3langid's language identifier, its model kept decompressed between runs.

py3langid ships its model as an LZMA-compressed `.npz` (4.6 MB, 68 MB inflated), and
inflating it took 0.7-1 s of every routed start that reads a prompt's language. The inflated
`.npz` is stored once in `$REWARDSMITH_HOME/cache/langid/<key>.npz` and read back on the
next start:

- **The key** is a SHA-256 of py3langid's version and of its model file (path, size, mtime):
  another release or another model file reads its own file, never a stale one.
- **The same identifier**: a hit is read with the steps of py3langid's own loader
  (`modelio.load_model` after its LZMA step: `np.load` without pickles, the same
  conversions, the same constructor). A file is written only when the identifier read back
  from it equals, array for array, the one py3langid's own loader built in the same process,
  so a py3langid whose loader changed is never cached wrong: it is just not cached.
- **Untrusted on read**: the file is read as a regular file of bounded size and used only
  when its SHA-256 equals the digest written beside it; anything else is logged and the
  model loaded by py3langid as before (and the file written again).
- **Optional**: a home that cannot be written costs the next start the inflation time.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import json
import logging
from pathlib import Path
from typing import Any

from rewardsmith.config import home_dir
from rewardsmith.errors import InputError
from rewardsmith.files import read_bytes, read_verified, write_verified

log = logging.getLogger(__name__)

#: Bumped when the file layout or the key's recipe changes.
CACHE_FORMAT = 1
# The inflated model is 68 MB; far above it, far below a disk.
MAX_MODEL_BYTES = 512 * 2**20


def cache_dir() -> Path:
    """`$REWARDSMITH_HOME/cache/langid` (read now, not at import)."""
    return home_dir() / "cache" / "langid"


def load_identifier(norm_probs: bool = True) -> Any:
    """py3langid's `LanguageIdentifier` of its shipped model (`from_model_file(MODEL_FILE,
    norm_probs=...)`), from the inflated copy when a valid one is stored."""
    from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier

    model_path = MODEL_DIR / MODEL_FILE
    key = _key(model_path)
    path = cache_dir() / f"{key}.npz"
    raw = _read(path) if path.exists() else None
    if raw is not None:
        try:
            return _from_inflated(raw, norm_probs)
        except Exception as exc:  # numpy's or zipfile's parsers fail with their own errors
            log.warning("router: language model cache %s unusable (%s)", path, exc)
    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=norm_probs)
    _store(path, model_path, identifier, norm_probs)
    return identifier


def _key(model_path: Path) -> str:
    stat = model_path.stat()
    try:
        version = importlib.metadata.version("py3langid")
    except importlib.metadata.PackageNotFoundError:
        version = "-"
    blob = [CACHE_FORMAT, version, str(model_path), stat.st_size, stat.st_mtime_ns]
    return hashlib.sha256(json.dumps(blob).encode("utf-8")).hexdigest()


def _from_inflated(raw: bytes, norm_probs: bool) -> Any:
    """`LanguageIdentifier.from_model_file` on the inflated bytes: py3langid's
    `modelio.load_model` without its LZMA step, then the same constructor call."""
    import numpy as np
    from py3langid.langid import LanguageIdentifier
    from py3langid.modelio import _to_array

    with np.load(io.BytesIO(raw), allow_pickle=False) as data:
        ptc, pc, classes = data["ptc"], data["pc"], data["classes"].tolist()
        nextmove, row = _to_array(data["nextmove"]), _to_array(data["nextmove_row"])
        output = data["out_feat"].tolist()
    return LanguageIdentifier(
        np.asarray(ptc), np.asarray(pc), classes, nextmove, output, norm_probs, tk_row=row
    )


def _read(path: Path) -> bytes | None:
    """The stored bytes when they match the digest beside them, else None (logged)."""
    try:
        return read_verified(path, MAX_MODEL_BYTES)
    except (InputError, OSError) as exc:
        log.warning("router: language model cache not used (%s)", exc)
        return None


def _store(path: Path, model_path: Path, identifier: Any, norm_probs: bool) -> None:
    """Write the inflated model (then its digest) when it reads back as `identifier`."""
    import lzma

    try:
        raw = lzma.decompress(read_bytes(model_path, MAX_MODEL_BYTES))
        same = _same(_from_inflated(raw, norm_probs), identifier)
    except Exception as exc:  # a loader this module does not know: load it as py3langid does
        log.info("router: language model not cached (%s: %s)", type(exc).__name__, exc)
        return
    if not same:
        log.info("router: language model not cached (py3langid reads it differently)")
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_verified(path, raw)
    except (InputError, OSError) as exc:  # a read-only home: the next start inflates again
        log.warning("router: language model cache not written (%s)", exc)


def _same(a: Any, b: Any) -> bool:
    """Whether two identifiers hold equal values in every slot (arrays element by element,
    with their dtypes)."""
    import numpy as np

    def equal(x: Any, y: Any) -> bool:
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            return (
                isinstance(x, np.ndarray)
                and isinstance(y, np.ndarray)
                and x.dtype == y.dtype
                and np.array_equal(x, y)
            )
        if isinstance(x, tuple | list) and isinstance(y, tuple | list):
            return (
                type(x) is type(y)
                and len(x) == len(y)
                and all(equal(p, q) for p, q in zip(x, y, strict=True))
            )
        return type(x) is type(y) and bool(x == y)

    slots = type(b).__slots__
    return type(a) is type(b) and all(equal(getattr(a, s), getattr(b, s)) for s in slots)
