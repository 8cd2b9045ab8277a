"""Building the testbed policies: small Llama models rewardsmith trains itself, offline, on CPU.

Two families of presets share one recipe:

- **`testbed`** (single task): procedural arithmetic word problems (`rl.problems`) answered
  in `<thinking>...</thinking><solution>...</solution>`; a 3-layer Llama of about 0.19M
  parameters, 900 warm-start steps. Held-out greedy accuracy about 0.35-0.40 (docs/grpo.md).
- **`testbed-multi`** (testbed v2): seven task families (`rl.families`) answered in six
  styles, with or without worked steps (`rl.multitask`); a 3-layer Llama of about 0.46M
  parameters, the step-1,500 checkpoint of a 3,000-step warm start (`sft_stop`). Per-family
  accuracies (0.225-0.705 held out) and how the stop was chosen are in docs/grpo.md.

The recipe:

1. a byte-level BPE tokenizer trained on the warm-start texts with `tokenizers` (digits split
   one per token, the answer tags as single tokens);
2. a Llama initialized from the seed;
3. a supervised warm start: next-token loss on the completion only, AdamW, linear warmup then
   cosine decay to a tenth of the peak rate (transformers'
   `get_cosine_with_min_lr_schedule_with_warmup`), batches drawn by a seeded RNG;
4. greedy evaluation on held-out problems, recorded in `testbed.json`.

The same config (seed included), the same torch version and thread count give the same
weights. Builds are cached under `$REWARDSMITH_HOME/testbed/<preset>-<hash>/`
(`$REWARDSMITH_TESTBED_CACHE` overrides the folder); `testbed` also ships with the package
(`rl.shipped`), so a first run loads it instead of training; so does `testbed-multi`.
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
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, pre_tokenizers, processors, trainers
from tokenizers.models import BPE
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
    get_cosine_with_min_lr_schedule_with_warmup,
)

from rewardsmith.config import home_dir
from rewardsmith.errors import ConfigError
from rewardsmith.files import atomic_write
from rewardsmith.rl import multitask as M
from rewardsmith.rl import problems as P
from rewardsmith.rl.answers import TAGS

log = logging.getLogger(__name__)

TESTBED_FILE = "testbed.json"
#: How a saved policy is prompted and read (`rl.policies`).
POLICY_FILE = "rewardsmith_policy.json"
#: The longest a build goes without a progress line (seconds).
PROGRESS_EVERY_S = 30.0
#: Overrides where testbed builds are cached (CI caches, slow tests reusing a build).
TESTBED_CACHE_ENV = "REWARDSMITH_TESTBED_CACHE"
# Bump when the build recipe changes in a way the config does not capture: old caches are
# then rebuilt instead of silently reused.
# 2: the warm start's schedule is transformers' cosine-with-min-lr (lr 0 at the first step).
TESTBED_RECIPE_VERSION = 2
SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")
TAG_TOKENS = tuple(t for tag in TAGS for t in (f"<{tag}>", f"</{tag}>"))
#: The multi-task styles' tags (`rl.styles`), single tokens like the testbed's own.
MULTI_TAG_TOKENS = ("<think>", "</think>", "<answer>", "</answer>")


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
    #: Stop the warm start after this many steps of the `sft_steps` schedule (None: at the
    #: end). The learning rate still follows the full schedule, so a build stopped at step k
    #: is exactly the step-k checkpoint of the full build: how a preset lands inside its
    #: accuracy band without retraining.
    sft_stop: int | None = None
    batch_size: int = 64
    lr: float = 3e-3
    warmup_steps: int = 100
    weight_decay: float = 0.1
    #: Held-out problems scored (greedy) after the build, recorded in `testbed.json`
    #: (multi-task presets: per family).
    eval_problems: int = 200
    #: Task families (`rl.families`) of a multi-task preset; empty: the arithmetic testbed.
    families: tuple[str, ...] = ()

    @property
    def multitask(self) -> bool:
        return bool(self.families)

    def key(self) -> str:
        fields = asdict(self)
        if not self.families:  # the single-task testbed's hash predates the field
            del fields["families"]
        if self.sft_stop is None:  # so do the hashes of builds that run the whole schedule
            del fields["sft_stop"]
        blob = json.dumps({**fields, "recipe": TESTBED_RECIPE_VERSION}, sort_keys=True)
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
#: Testbed v2: the seven task families of `rl.families` in the styles of `rl.styles`.
TESTBED_MULTI = TestbedConfig(
    preset="testbed-multi",
    vocab_size=1024,
    hidden_size=96,
    num_layers=3,
    num_heads=4,
    intermediate_size=288,
    max_positions=256,
    tokenizer_problems=10_000,
    sft_problems=60_000,
    sft_steps=3_000,
    # The step-1,500 checkpoint of the 3,000-step schedule: every family inside the 0.2-0.7
    # band where reward choice matters (held-out, 40 a family: 0.225-0.675). At step 2,000
    # clock and leg_counting were 0.85; at 1,000 word_reversal was 0.0 (docs/grpo.md).
    sft_stop=1_500,
    batch_size=64,
    lr=3e-3,
    warmup_steps=100,
    eval_problems=200,
    families=M.MIX,
)
#: The multi-task pipeline in seconds, for tests.
TESTBED_MULTI_TINY = replace(
    TESTBED_TINY,
    preset="testbed-multi-tiny",
    vocab_size=400,
    max_positions=256,
    families=M.MIX,
)
PRESETS: dict[str, TestbedConfig] = {
    c.preset: c for c in (TESTBED, TESTBED_TINY, TESTBED_MULTI, TESTBED_MULTI_TINY)
}


def with_preset(name: str, **changes: Any) -> TestbedConfig:
    """A preset with some fields changed (`with_preset("testbed", seed=1)`)."""
    if name not in PRESETS:
        raise ConfigError(f"unknown testbed preset {name!r}; known: {sorted(PRESETS)}")
    return replace(PRESETS[name], **changes)


# -- the data ----------------------------------------------------------------------------------


def sft_pairs(config: TestbedConfig, n: int) -> list[tuple[str, str]]:
    """(prompt, completion) pairs of the warm start's `sft` split."""
    if config.multitask:
        return [(e.prompt, e.completion) for e in M.sft_examples(n, config.seed, config.families)]
    return [(p.prompt, p.completion) for p in P.generate(n, config.seed, "sft")]


# -- the build -----------------------------------------------------------------------------------


def testbed_cache() -> Path:
    """`$REWARDSMITH_TESTBED_CACHE`, else `$REWARDSMITH_HOME/testbed` (where builds are kept)."""
    env = os.environ.get(TESTBED_CACHE_ENV)
    return Path(env).expanduser() if env else home_dir() / "testbed"


def testbed_dir(config: TestbedConfig = TESTBED) -> Path:
    return testbed_cache() / config.key()


Evaluate = Callable[[Path, TestbedConfig], dict[str, Any]]


def build_testbed(
    config: TestbedConfig = TESTBED,
    *,
    cache_dir: Path | None = None,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    evaluate: Evaluate | None = None,
) -> Path:
    """Build (or reuse the cached) testbed policy; returns its model folder.

    `evaluate(folder, config)` scores the finished build on held-out problems (its result is
    recorded in `testbed.json`; `rl.policies` passes its evaluation). The folder is written
    under a temporary name and renamed when complete, so an interrupted build is never
    mistaken for a finished one.
    """
    target = (cache_dir or testbed_cache()) / config.key()
    if target.exists() and (target / TESTBED_FILE).exists() and not force:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda msg: log.info("%s", msg))
    start = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix=f".{config.key()}-", dir=target.parent))
    try:
        say(f"building the {config.preset} policy (once; cached in {target.parent})")
        pairs = sft_pairs(config, config.sft_problems)
        tokenizer = train_tokenizer(config, [p + c for p, c in pairs[: config.tokenizer_problems]])
        model = init_model(config, tokenizer)
        say(f"{config.preset}: {sum(p.numel() for p in model.parameters()):,} parameters")
        losses = warm_start(model, tokenizer, config, pairs, say)
        save_build(model, tokenizer, config, tmp)
        record: dict[str, Any] = {
            "config": asdict(config),
            "recipe": TESTBED_RECIPE_VERSION,
            "parameters": sum(p.numel() for p in model.parameters()),
            "sft_final_loss": losses[-1] if losses else None,
            "build_seconds": round(time.perf_counter() - start, 1),
            "torch_threads": torch.get_num_threads(),
            "torch_version": torch.__version__,
        }
        if config.eval_problems and evaluate is not None:
            say(f"{config.preset}: held-out evaluation")
            record["eval"] = evaluate(tmp, config)
        atomic_write(tmp / TESTBED_FILE, json.dumps(record, indent=2) + "\n")
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def save_build(model: Any, tokenizer: Any, config: TestbedConfig, path: Path) -> None:
    """The model, its tokenizer and the prompt metadata `rl.policies` loads it with."""
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    meta = {
        "name": config.preset,
        "style": "testbed",
        "system_prompt": None,
        "answer_format": "family" if config.multitask else "solution",
    }
    atomic_write(path / POLICY_FILE, json.dumps(meta, indent=2) + "\n")


def train_tokenizer(config: TestbedConfig, texts: Sequence[str]) -> Any:
    """A byte-level BPE over `texts`; digits are single tokens, tags are one each."""
    tok = Tokenizer(BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    if config.multitask:
        # Offsets without the leading space, so a word's start is found where a word starts
        # (`rm train` splits documents at word boundaries by these offsets). Not for the
        # single-task testbed: its tokenizer file stays the one its recipe always made.
        tok.post_processor = processors.ByteLevel(trim_offsets=True)
    trainer = trainers.BpeTrainer(
        vocab_size=config.vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer)
    tags = TAG_TOKENS + (MULTI_TAG_TOKENS if config.multitask else ())
    tok.add_tokens(list(tags))  # plain (not special) tokens: decoding keeps them
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        bos_token="<bos>",
        eos_token="<eos>",
        unk_token="<unk>",
        padding_side="left",
    )


def init_model(config: TestbedConfig, tokenizer: Any) -> Any:
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
    tokenizer: Any, pairs: Sequence[tuple[str, str]], max_len: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded `input_ids` and `labels` (-100 on the prompt and the padding)."""
    prompts = tokenizer([p for p, _ in pairs], add_special_tokens=False)["input_ids"]
    completions = tokenizer([c for _, c in pairs], add_special_tokens=False)["input_ids"]
    rows: list[list[int]] = []
    labels: list[list[int]] = []
    for prompt, completion in zip(prompts, completions, strict=True):
        ids = (prompt + completion + [tokenizer.eos_token_id])[:max_len]
        rows.append(ids)
        labels.append(([-100] * len(prompt) + completion + [tokenizer.eos_token_id])[:max_len])
    width = max(len(r) for r in rows)
    pad = tokenizer.pad_token_id
    ids_t = torch.tensor([r + [pad] * (width - len(r)) for r in rows])
    lab_t = torch.tensor([r + [-100] * (width - len(r)) for r in labels])
    return ids_t, lab_t


def warm_start(
    model: Any,
    tokenizer: Any,
    config: TestbedConfig,
    pairs: Sequence[tuple[str, str]],
    say: Callable[[str], None],
) -> list[float]:
    """Supervised next-token training on the completion; returns the loss every 100 steps."""
    ids, labels = encode_sft(tokenizer, pairs, config.max_positions)
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
    started = last_said = time.perf_counter()
    last = config.sft_steps if config.sft_stop is None else config.sft_stop
    if not 0 < last <= config.sft_steps:
        raise ConfigError(f"sft_stop must be in 1..sft_steps ({config.sft_steps}), got {last}")
    for step in range(1, last + 1):
        batch = rng.sample(range(len(pairs)), min(config.batch_size, len(pairs)))
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
        if step % 100 == 0 or step == last:
            n = step % 100 or 100
            losses.append(running / n)
            running = 0.0
            elapsed = time.perf_counter() - started
            left = elapsed / step * (last - step)
            say(
                f"warm start step {step}/{last}: loss {losses[-1]:.4f} "
                f"({elapsed:.0f}s, about {left:.0f}s left)"
            )
            last_said = time.perf_counter()
        elif time.perf_counter() - last_said > PROGRESS_EVERY_S:
            # on a busy CPU 100 steps take minutes: a line at least this often
            elapsed = time.perf_counter() - started
            left = elapsed / step * (last - step)
            say(f"warm start step {step}/{last} ({elapsed:.0f}s, about {left:.0f}s left)")
            last_said = time.perf_counter()
    model.eval()
    return losses


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
