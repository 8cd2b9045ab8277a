"""RBS training: plain text in, a Hugging Face reward model out (`rewardsmith rm train`).

The loop: stream (prefix, suffix) pairs (`rm.data`), score each prefix against its own suffix
and k sampled (or all B - 1) other suffixes of the batch (`rm.model`), minimize the in-batch
Bradley-Terry loss with score centering (`rm.loss`) with AdamW, linear warmup then linear
decay (transformers' `get_linear_schedule_with_warmup`), gradient accumulation and gradient
clipping. A cross-encoder's batch is scored and back-propagated a few rows at a time
(`max_sequences` sequences per pass): the loss is a mean over rows, so the gradient is the
same and the activations held at once are a fraction of the batch's (at batch 8 on MiniLM,
64 sequences of up to 230 tokens held 2.1 GB of activations in one pass). LoRA (`lora_rank`,
through peft) trains adapters on every linear layer and the head; the saved model is merged.
Every `save_every` steps a checkpoint (weights, optimizer, scheduler, step) lands
in `OUT/checkpoints/step-N` (`rewardsmith.models.checkpoints`); `resume=True`
continues from the newest one, regenerating the seeded data stream and skipping the batches
already seen. `OUT/metrics.jsonl` gets one line per logged step.

At the end `OUT` holds the model (`from_pretrained`-ready), its tokenizer (with the chat
template of its input format, `rm.formats`), `rbs_config.json` (format, windows, training
config, summary) and a model card `README.md` (`rm.export`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm
from transformers import get_linear_schedule_with_warmup

from rewardsmith.errors import ConfigError, InputError
from rewardsmith.models.checkpoints import (
    METRICS_FILE,
    STATE_FILE,
    append_metrics,
    latest_checkpoint,
    load_trainer_state,
    truncate_metrics,
    writing_checkpoint,
)
from rewardsmith.models.loading import pick_device
from rewardsmith.rm.backbones import is_testbed
from rewardsmith.rm.data import Pair, PairStream, SplitConfig, batches
from rewardsmith.rm.export import write_model_card
from rewardsmith.rm.loss import rbs_loss, sample_negatives
from rewardsmith.rm.model import (
    INPUT_FORMATS,
    CrossEncoder,
    EncoderKind,
    InputFormat,
    ScoringModel,
    Windows,
    init_scorer,
    load_scorer,
)

log = logging.getLogger(__name__)

# Older checkpoints are deleted: each holds a full model and optimizer (~250 MB for MiniLM).
KEEP_CHECKPOINTS = 2


@dataclass(frozen=True)
class TrainConfig:
    """Everything that decides a training run (stored in the model's `rbs_config.json`).

    `negatives=None` scores every other suffix of the batch (B(B-1) pairs); an int k samples
    k per prefix (cheaper for the cross-encoder, which pays one forward pass per pair).
    `similar_pool=P` builds each batch from the pairs of a pool of P whose prefixes look most
    alike (hard in-batch negatives, `rm.data.batches`); 0 keeps random batches.
    `eval_windows` are the windows the saved model applies when scoring (prompt end,
    completion start or end); by default the training windows, with completions up to 384
    tokens read from the side the training suffixes were cut from (`split.suffix_side`).
    `input_format` is `chat` (a cross-encoder's default: its chat template, `rm.formats`, with
    `prompt_chars` / `completion_chars`, None for the backbone's default) or `pair`
    (token windows; the bi-encoder's only format). `max_sequences` caps the sequences of one
    forward/backward pass of a cross-encoder (0: the whole batch at once). `lora_rank > 0`
    trains LoRA adapters (and the head) instead of every weight. `dropout=False` (default,
    as TRL's `RewardConfig.disable_dropout`) turns the backbone's dropout off: a reward model
    compares scores, and on CPU a dropout-free attention runs the fused kernel that does not
    keep the attention matrix (training with it took 1.7x the memory at batch 8 on MiniLM).
    """

    backbone: str = "minilm"
    encoder: EncoderKind = "cross"
    split: SplitConfig = field(default_factory=SplitConfig)
    batch_size: int = 16
    similar_pool: int = 0
    negatives: int | None = None
    centering: float = 0.01
    lr: float = 3e-5
    weight_decay: float = 0.01
    warmup_steps: int = 20
    grad_accum: int = 1
    max_grad_norm: float = 1.0
    max_steps: int = 200
    time_limit_s: float | None = None
    save_every: int = 50
    log_every: int = 1
    seed: int = 0
    device: str = "auto"
    eval_windows: Windows | None = None
    input_format: InputFormat | None = None
    prompt_chars: int | None = None
    completion_chars: int | None = None
    max_sequences: int = 16
    lora_rank: int = 0
    lora_alpha: int = 32
    dropout: bool = False

    def __post_init__(self) -> None:
        if self.encoder not in ("cross", "bi"):
            raise ConfigError(f"encoder must be 'cross' or 'bi', got {self.encoder!r}")
        if self.batch_size < 2:
            raise ConfigError("batch_size must be >= 2: the rest of the batch are the negatives")
        if self.similar_pool and self.similar_pool <= self.batch_size:
            raise ConfigError("similar_pool must be 0 (random batches) or exceed batch_size")
        if self.negatives is not None and not 1 <= self.negatives < self.batch_size:
            raise ConfigError(f"negatives must be in [1, batch_size - 1], got {self.negatives}")
        if self.max_steps < 0 or self.grad_accum < 1 or self.save_every < 1:
            raise ConfigError("need max_steps >= 0, grad_accum >= 1, save_every >= 1")
        if self.centering < 0:
            raise ConfigError("the centering coefficient must be >= 0")
        if self.input_format is not None and self.input_format not in INPUT_FORMATS:
            raise ConfigError(f"input format must be one of {INPUT_FORMATS}")
        if self.encoder == "bi" and self.input_format == "chat":
            raise ConfigError("the chat input format is for cross-encoders (--encoder cross)")
        if self.max_sequences < 0 or self.lora_rank < 0:
            raise ConfigError("max_sequences and lora_rank must be >= 0")
        if self.lora_rank and self.encoder != "cross":
            raise ConfigError("LoRA is for cross-encoders (--encoder cross)")

    def format(self) -> InputFormat:
        """The input format of the model: `chat` for a cross-encoder unless told otherwise."""
        if self.input_format is not None:
            return self.input_format
        if is_testbed(self.backbone):
            return "pair"  # its tokenizer has no chat template (`rm.backbones`)
        return "chat" if self.encoder == "cross" else "pair"

    def windows(self) -> Windows:
        if self.eval_windows is not None:
            return self.eval_windows
        return Windows(
            self.split.prefix_max, max(self.split.suffix_max, 384), self.split.suffix_side
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TrainResult:
    """What a run did: where the model is, how long it took, what it read, where it ended."""

    out: Path
    steps: int
    pairs: int  # (prefix, chosen) pairs seen
    comparisons: int  # (chosen, rejected) comparisons in the loss
    tokens: int  # tokens through the backbone (all forward passes, padding excluded)
    corpus_tokens: int  # prefix + suffix tokens of the pairs seen
    seconds: float
    final: dict[str, float]
    stopped: str  # "max_steps" or "time_limit"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["out"] = str(self.out)
        return d


def _save_checkpoint(
    out: Path, scorer: ScoringModel, state: dict[str, Any], config: TrainConfig
) -> None:
    with writing_checkpoint(out, state["step"], KEEP_CHECKPOINTS) as path:
        scorer.save(path, {"train": config.to_dict()})
        torch.save(state, path / STATE_FILE)


def _fresh_scorer(config: TrainConfig) -> ScoringModel:
    scorer = init_scorer(
        config.backbone,
        config.encoder,
        config.windows(),
        config.seed,
        config.device,
        input_format=config.format(),
        prompt_chars=config.prompt_chars,
        completion_chars=config.completion_chars,
    )
    if config.lora_rank:
        add_lora(scorer, config.lora_rank, config.lora_alpha)
    return scorer


def disable_dropout(module: torch.nn.Module) -> None:
    """Every dropout of `module` off (p = 0; the saved config keeps its own values)."""
    for m in module.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0


def add_lora(scorer: ScoringModel, rank: int, alpha: int) -> ScoringModel:
    """Wrap a cross-encoder's model with LoRA adapters on every linear layer (peft); the
    head is trained whole (peft's sequence-classification task keeps it trainable)."""
    try:
        import peft
    except ImportError as exc:
        raise ConfigError("LoRA needs peft: pip install 'rewardsmith[rl]'") from exc
    if not isinstance(scorer, CrossEncoder):
        raise ConfigError("LoRA is for cross-encoders (--encoder cross)")
    lora = peft.LoraConfig(
        r=rank, lora_alpha=alpha, target_modules="all-linear", task_type="SEQ_CLS"
    )
    scorer.model = peft.get_peft_model(scorer.model, lora)
    return scorer


def _lora_state(scorer: ScoringModel) -> dict[str, torch.Tensor]:
    import peft

    model: Any = scorer.model
    return dict(peft.get_peft_model_state_dict(model))


def _row_groups(batch_size: int, per_row: int, max_sequences: int) -> list[list[int]] | None:
    """Rows scored together in one pass (None: the whole batch in one pass)."""
    if not max_sequences or batch_size * per_row <= max_sequences:
        return None
    step = max(1, max_sequences // per_row)
    return [list(range(i, min(batch_size, i + step))) for i in range(0, batch_size, step)]


def backward_batch(
    scorer: ScoringModel, batch: Sequence[Pair], negatives: torch.Tensor | None, config: TrainConfig
) -> tuple[dict[str, float], int, int]:
    """Score one micro-batch, back-propagate its loss (scaled by 1 / grad_accum), and return
    the logged loss parts, the tokens read and the comparisons made.

    A cross-encoder goes `max_sequences` sequences at a time, a few rows per pass: the loss
    (`rm.loss.rbs_loss`) is a mean over rows that all have K negatives, so the row groups'
    losses weighted by their share of rows add up to the batch loss, and so do their
    gradients. The bi-encoder needs the whole batch (every prefix meets every suffix).
    """
    b = len(batch)
    k = b - 1 if negatives is None else int(negatives.shape[1])
    prefixes, suffixes = [p.prefix for p in batch], [p.suffix for p in batch]
    groups = _row_groups(b, 1 + k, config.max_sequences) if scorer.kind == "cross" else None
    logged = {"loss": 0.0, "bt": 0.0, "center": 0.0, "acc": 0.0, "margin": 0.0}
    tokens = 0
    passes: list[list[int] | None] = list(groups) if groups else [None]
    for rows in passes:
        pos, neg, read = scorer.score_batch(prefixes, suffixes, negatives, rows)
        parts = rbs_loss(pos, neg, config.centering)
        share = len(pos) / b
        (parts.loss * share / config.grad_accum).backward()
        tokens += read
        for key, value in (
            ("loss", float(parts.loss.detach())),
            ("bt", parts.bradley_terry),
            ("center", parts.centering),
            ("acc", parts.accuracy),
            ("margin", parts.margin),
        ):
            logged[key] += share * value
    return logged, tokens, b * k


def _release_freed_memory() -> None:
    """Hand freed heap pages back to the OS (glibc keeps them after each step's activations
    are freed, so the resident size would otherwise ratchet up with the longest batch)."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _libc() -> Any:
    """glibc, when this process runs on it (malloc_trim is a glibc function)."""
    name = ctypes.util.find_library("c")
    lib = ctypes.CDLL(name) if name else None
    return lib if lib is not None and hasattr(lib, "malloc_trim") else None


_LIBC = _libc()


def train(
    corpus: Sequence[str | Path | Iterable[Any]],
    out: str | Path,
    config: TrainConfig | None = None,
    *,
    field: str = "text",
    per_file: bool = False,
    resume: bool = False,
    progress: bool = True,
    on_log: Callable[[dict[str, Any]], None] | None = None,
) -> TrainResult:
    """Train an RBS reward model on `corpus` and save it to `out` (see the module doc).

    `max_steps=0` saves the untrained model (pretrained backbone, fresh head drawn from
    `seed`): the baseline `rm eval` compares against.
    """
    config = config or TrainConfig()
    for source in corpus:  # before minutes of model loading, not after
        if isinstance(source, str | Path) and not Path(source).expanduser().exists():
            raise InputError(f"corpus {source} does not exist")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ckpt = latest_checkpoint(out) if resume else None
    saved: dict[str, Any] | None = None
    if ckpt is not None:
        saved = load_trainer_state(ckpt / STATE_FILE, map_location="cpu")
    if ckpt is not None and not config.lora_rank:
        scorer = load_scorer(ckpt, device=config.device, windows=config.windows())
    else:
        scorer = _fresh_scorer(config)
        if saved is not None:  # LoRA: the adapters and head of the checkpoint, exactly
            import peft

            model: Any = scorer.model
            peft.set_peft_model_state_dict(model, saved["lora"])
    if not config.dropout:
        disable_dropout(scorer)
    scorer.train()
    device = pick_device(config.device)
    trainable = [(n, p) for n, p in scorer.named_parameters() if p.requires_grad]
    decay = [p for n, p in trainable if p.dim() >= 2 and "LayerNorm" not in n]
    no_decay = [p for n, p in trainable if not (p.dim() >= 2 and "LayerNorm" not in n)]
    optimizer = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": config.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=config.lr,
    )
    scheduler = get_linear_schedule_with_warmup(optimizer, config.warmup_steps, config.max_steps)
    gen = torch.Generator().manual_seed(config.seed)
    state: dict[str, Any] = {
        "step": 0,
        "micro": 0,
        "pairs": 0,
        "comparisons": 0,
        "tokens": 0,
        "corpus_tokens": 0,
        "seconds": 0.0,
    }
    if ckpt is not None and saved is not None:
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        gen.set_state(saved["generator"])
        torch.set_rng_state(saved["torch_rng"])  # dropout masks continue as if never stopped
        state.update({k: saved[k] for k in state})
        truncate_metrics(out / METRICS_FILE, state["step"])
        log.info("resuming from %s (step %d)", ckpt, state["step"])
    elif (out / METRICS_FILE).exists():
        (out / METRICS_FILE).unlink()

    stream = PairStream(corpus, scorer.tokenizer, config.split, field=field, per_file=per_file)
    micro_batches = itertools.islice(
        batches(stream, config.batch_size, config.similar_pool), state["micro"], None
    )
    start = time.monotonic() - state["seconds"]
    stopped = "max_steps"
    last: dict[str, float] = {}
    window: list[dict[str, float]] = []
    bar = _progress(progress, config.max_steps, state["step"])
    try:
        while state["step"] < config.max_steps:
            if config.time_limit_s is not None and time.monotonic() - start >= config.time_limit_s:
                stopped = "time_limit"
                break
            for _ in range(config.grad_accum):
                batch = next(micro_batches)
                state["micro"] += 1
                negs = (
                    None
                    if config.negatives is None
                    else sample_negatives(len(batch), config.negatives, gen)
                )
                logged, tokens, comparisons = backward_batch(scorer, batch, negs, config)
                state["pairs"] += len(batch)
                state["comparisons"] += comparisons
                state["tokens"] += tokens
                state["corpus_tokens"] += sum(p.prefix_tokens + p.suffix_tokens for p in batch)
                window.append(logged)
            grad_norm = torch.nn.utils.clip_grad_norm_(
                [p for _, p in trainable], config.max_grad_norm
            )
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            _release_freed_memory()
            state["step"] += 1
            state["seconds"] = time.monotonic() - start
            if state["step"] % config.log_every == 0 or state["step"] == config.max_steps:
                last = {k: sum(w[k] for w in window) / len(window) for k in window[0]}
                row = {
                    "step": state["step"],
                    **last,
                    "grad_norm": float(grad_norm),
                    "lr": scheduler.get_last_lr()[0],
                    "pairs": state["pairs"],
                    "tokens": state["tokens"],
                    "seconds": round(state["seconds"], 2),
                }
                window = []
                append_metrics(out / METRICS_FILE, row)
                if on_log is not None:
                    on_log(row)
            if bar is not None:
                bar.update(
                    1, loss=last.get("loss", float("nan")), acc=last.get("acc", float("nan"))
                )
            if state["step"] % config.save_every == 0 and state["step"] < config.max_steps:
                extra = {"lora": _lora_state(scorer)} if config.lora_rank else {}
                _save_checkpoint(
                    out,
                    scorer,
                    {
                        **state,
                        "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(),
                        "generator": gen.get_state(),
                        "torch_rng": torch.get_rng_state(),
                        **extra,
                    },
                    config,
                )
    finally:
        if bar is not None:
            bar.close()
    result = TrainResult(
        out=out,
        steps=state["step"],
        pairs=state["pairs"],
        comparisons=state["comparisons"],
        tokens=state["tokens"],
        corpus_tokens=state["corpus_tokens"],
        seconds=round(time.monotonic() - start, 2),
        final=last,
        stopped=stopped,
    )
    scorer.save(
        out,
        {
            "train": config.to_dict(),
            "result": result.to_dict(),
            "corpus": [str(c) for c in corpus if isinstance(c, str | Path)],
            "field": field,
            "device": str(device),
        },
    )
    fmt = getattr(scorer, "chat", None)
    write_model_card(
        out,
        backbone=config.backbone,
        encoder=config.encoder,
        fmt=fmt.describe() if fmt is not None else None,
        training=config.to_dict(),
        result=result.to_dict(),
        corpus=[str(c) for c in corpus if isinstance(c, str | Path)],
        field=field,
    )
    return result


class _Bar:
    """A tqdm bar showing the running loss and in-batch accuracy."""

    def __init__(self, total: int, initial: int) -> None:
        self._bar = tqdm(total=total, initial=initial, desc="rm train", unit="step")

    def update(self, n: int, loss: float, acc: float) -> None:
        self._bar.set_postfix(loss=f"{loss:.4f}", acc=f"{acc:.3f}", refresh=False)
        self._bar.update(n)

    def close(self) -> None:
        self._bar.close()


def _progress(enabled: bool, total: int, initial: int) -> _Bar | None:
    return _Bar(total, initial) if enabled and total > 0 else None
