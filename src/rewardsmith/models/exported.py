"""A sentence encoder exported to ONNX once and run with onnxruntime: a start without torch.

Importing torch and transformers and building a BERT took most of a routed `score` or
`serve` start (about 12 of 14 s on 2 cores), to embed a handful of prompts with MiniLM-L6.
The encoder is exported once, with torch's exporter, to `<model cache>/<key>/model.onnx`
(`config.model_cache_dir`: `$REWARDSMITH_MODEL_CACHE`, or `$REWARDSMITH_HOME/cache/onnx`); every later start loads that file with
onnxruntime and tokenizes with `tokenizers` (the same `tokenizer.json` transformers reads,
with the same truncation and padding), so neither torch nor transformers is imported.

- **The key** is a SHA-256 of the caller's identity string (model files, sizes, mtimes,
  library versions, token limit): other weights or another torch give another file.
- **Same vectors**: the exported graph computes what the torch model computes (mean-pooled
  vectors agree to ~1e-7; tests/models/test_exported.py compares them on a table of texts).
- **Untrusted on read**: the file is read as a regular file of bounded size and used only
  when its SHA-256 equals the one written beside it; onnxruntime then loads those very
  bytes (no second open of the path). A damaged or swapped file is logged and exported again.
- **Optional**: without onnxruntime or onnx, or when the export fails (an exporter a future
  torch drops), `load_exported` returns None and the caller runs the torch model as before.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import tempfile
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rewardsmith.config import model_cache_dir
from rewardsmith.errors import InputError
from rewardsmith.files import read_text, read_verified, write_verified
from rewardsmith.models.loading import load_model, load_tokenizer, quiet_transformers

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

#: Bumped when the export recipe changes (inputs, outputs, opset).
EXPORT_FORMAT = 1
OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# MiniLM-L6 is 90 MB in float32; a BERT-base twice that. Far above both, far below a disk.
MAX_MODEL_BYTES = 1024 * 2**20


#: What running an export imports (what a server's forkserver preloads for its workers).
RUNTIME_MODULES = ("onnxruntime", "tokenizers")


def onnx_available() -> bool:
    """Whether onnxruntime and tokenizers are installed (checked without importing them)."""
    return all(importlib.util.find_spec(name) is not None for name in RUNTIME_MODULES)


def cache_folder(identity: str) -> Path:
    """Where the export for `identity` lives (read now, not at import)."""
    blob = json.dumps([EXPORT_FORMAT, OPSET, identity]).encode("utf-8")
    return model_cache_dir() / hashlib.sha256(blob).hexdigest()[:32]


class ExportedEncoder:
    """An encoder's last hidden states from onnxruntime, tokenized as transformers does."""

    def __init__(self, model_bytes: bytes, model_dir: Path, max_tokens: int) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only: the exporter's shapes warn harmlessly
        self._session = onnxruntime.InferenceSession(
            model_bytes, options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = _tokenizer(Tokenizer, model_dir, max_tokens)

    def hidden_states(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(last hidden states [batch, tokens, dim], attention mask [batch, tokens])."""
        import numpy as np

        encodings = self._tokenizer.encode_batch(texts)
        feed = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        (hidden,) = self._session.run(["last_hidden_state"], feed)
        return hidden, feed["attention_mask"]


def load_exported(model_dir: Path, identity: str, max_tokens: int) -> ExportedEncoder | None:
    """The encoder of the transformers model in `model_dir` on onnxruntime, exported on the
    first call for this `identity`; None when onnxruntime is missing or the export fails."""
    if not onnx_available():
        return None
    folder = cache_folder(identity)
    model_bytes = _read_verified(folder)
    try:
        if model_bytes is None:
            model_bytes = _export(model_dir, max_tokens)
            _store(folder, model_bytes)
        return ExportedEncoder(model_bytes, model_dir, max_tokens)
    except Exception as exc:  # the exporter or onnxruntime fail with their own error types;
        # each means the same here: run the torch model
        log.warning("ONNX encoder unavailable (%s: %s); using torch", type(exc).__name__, exc)
        return None


def _tokenizer(tokenizer_cls: Any, model_dir: Path, max_tokens: int) -> Any:
    """`tokenizer.json` set up as `tokenizer(texts, padding=True, truncation=True,
    max_length=max_tokens)` runs it: truncated on the right, padded to the batch's longest."""
    tokenizer = tokenizer_cls.from_str(read_text(model_dir / "tokenizer.json", MAX_MODEL_BYTES))
    config = json.loads(read_text(model_dir / "tokenizer_config.json"))
    pad_token = str(config.get("pad_token", "[PAD]"))
    pad_id = tokenizer.token_to_id(pad_token)
    if pad_id is None:
        raise InputError(f"{model_dir}: pad token {pad_token!r} is not in tokenizer.json")
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token)
    return tokenizer


def _export(model_dir: Path, max_tokens: int) -> bytes:
    """The model exported to ONNX (torch, transformers and onnx are imported here only)."""
    import torch

    tokenizer = load_tokenizer(model_dir)
    model = load_model("AutoModel", model_dir, quiet=True).eval()

    class LastHidden(torch.nn.Module):
        """Positional inputs in INPUTS order; one output (the exporter's calling form)."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, ids: Any, mask: Any, types: Any) -> Any:
            out = self.model(input_ids=ids, attention_mask=mask, token_type_ids=types)
            return out.last_hidden_state

    sample = tokenizer(
        ["a short text", "a longer text to trace with, " * 4],
        padding=True,
        truncation=True,
        max_length=max_tokens,
        return_tensors="pt",
    )
    axes = {"batch": 0, "tokens": 1}
    # the tracer warns about BERT's mask code (Python booleans it records as constants: the
    # mask is never absent and the model never causal here); the vectors test covers it
    with (
        tempfile.TemporaryDirectory(prefix="rewardsmith-onnx-") as tmp,
        quiet_transformers(),
        torch.inference_mode(),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        target = Path(tmp) / "model.onnx"
        torch.onnx.export(
            LastHidden(),
            tuple(sample[name] for name in INPUTS),
            str(target),
            input_names=list(INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes={
                name: {v: k for k, v in axes.items()} for name in (*INPUTS, "last_hidden_state")
            },
            opset_version=OPSET,
            dynamo=False,
        )
        return target.read_bytes()


def _read_verified(folder: Path) -> bytes | None:
    """The stored model's bytes when they match the digest written beside them, else None."""
    path = folder / "model.onnx"
    if not path.exists():
        return None
    try:
        return read_verified(path, MAX_MODEL_BYTES)
    except (InputError, OSError) as exc:
        log.warning("ONNX encoder not used (%s); exporting again", exc)
        return None


def _store(folder: Path, model_bytes: bytes) -> None:
    """Write the model, then its digest (a reader trusts the model only once both exist)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_verified(folder / "model.onnx", model_bytes)
    except (InputError, OSError) as exc:  # a read-only home: the next start exports again
        log.warning("ONNX encoder not stored (%s)", exc)
