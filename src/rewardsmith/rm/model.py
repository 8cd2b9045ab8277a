"""Reward-model scorers on any Hugging Face backbone: cross-encoder (default) and bi-encoder.

- `CrossEncoder`: prefix and suffix are read together by an
  `AutoModelForSequenceClassification` with one output (the scalar head): a BERT-style
  encoder's pooled `[CLS]`, or a decoder's last token (`LlamaForSequenceClassification`'s
  `score` head, the convention OpenRLHF and TRL load). Scoring every (p_i, r_j) of a batch
  costs one sequence per pair: B^2 for all pairs, B(1+k) with k sampled negatives; a decoder
  reads the prompt once per row and only the suffixes per pair (`rm.packing`). Saved as a plain
  Hugging Face directory, loadable with `AutoModelForSequenceClassification.from_pretrained`.
- `BiEncoder`: B prefixes and B suffixes are encoded separately (mean pooling) and all B x B
  scores are the bilinear form s(p, r) = (W e(p)) . e(r) / sqrt(d): 2B sequences per batch
  whatever the number of pairs. Saved as the backbone plus `bi_head.safetensors`.

A cross-encoder `rm train` writes reads its input in the *chat format* (`rm.formats`): one
text rendered by the model's own chat template, which TRL and OpenRLHF apply too, clipped by
characters and truncated past `max_length` tokens. Older cross-encoders and the bi-encoder
apply token *windows* instead: a prompt keeps its last `prompt_max_tokens` tokens (the end is
what the completion continues), a completion its first `completion_max_tokens`
(`completion_side="start"`, default) or its last ones (`"end"`: where a long worked solution
concludes and states its answer). Format and windows travel in `rbs_config.json`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from rewardsmith.errors import ConfigError
from rewardsmith.files import atomic_write, written_aside
from rewardsmith.models.loading import load_model, load_tokenizer, pick_device
from rewardsmith.rm.backbones import resolve_backbone
from rewardsmith.rm.formats import ChatFormat, default_format, install, render
from rewardsmith.rm.loss import split_matrix
from rewardsmith.rm.packing import shared_prefix_scores

EncoderKind = Literal["cross", "bi"]
InputFormat = Literal["chat", "pair"]
INPUT_FORMATS: tuple[InputFormat, ...] = ("chat", "pair")
CompletionSide = Literal["start", "end"]
COMPLETION_SIDES: tuple[CompletionSide, ...] = ("start", "end")
RBS_CONFIG = "rbs_config.json"
BI_HEAD = "bi_head.safetensors"
# BERT-style backbones have 512 positions; longer ones are capped here anyway: reward-model
# inputs beyond this are clipped by the windows and cost quadratic attention on CPU.
MAX_SEQ_TOKENS = 512
# [CLS] prompt [SEP] completion [SEP]: a pair costs three special tokens of the budget.
PAIR_SPECIAL_TOKENS = 3


@dataclass(frozen=True)
class Windows:
    """How much of a prompt (its end) and of a completion (its start, or its end) it reads."""

    prompt_max_tokens: int = 128
    completion_max_tokens: int = 384
    completion_side: CompletionSide = "start"

    def __post_init__(self) -> None:
        if self.prompt_max_tokens < 1 or self.completion_max_tokens < 1:
            raise ConfigError("window sizes must be >= 1 token")
        if self.completion_side not in COMPLETION_SIDES:
            raise ConfigError(
                f"completion side must be one of {COMPLETION_SIDES}, got {self.completion_side!r}"
            )


def _clip(tokenizer: Any, texts: Sequence[str], limit: int, keep: str) -> list[str]:
    """Each text cut to `limit` tokens by character offsets (`keep` = "start" or "end")."""
    enc = tokenizer(
        list(texts), add_special_tokens=False, return_offsets_mapping=True, verbose=False
    )
    out = []
    for text, offsets in zip(texts, enc["offset_mapping"], strict=True):
        if len(offsets) <= limit:
            out.append(text)
        elif keep == "end":
            out.append(text[offsets[len(offsets) - limit][0] :])
        else:
            out.append(text[: offsets[limit - 1][1]])
    return out


class ScoringModel(nn.Module):
    """What training, evaluation and the `model` tool need from a reward model."""

    kind: EncoderKind
    tokenizer: Any
    windows: Windows
    device: torch.device

    def max_length(self) -> int:
        limit = getattr(self.backbone_config(), "max_position_embeddings", MAX_SEQ_TOKENS)
        return int(min(limit, MAX_SEQ_TOKENS))

    def backbone_config(self) -> Any:
        raise NotImplementedError

    def score_batch(
        self,
        prefixes: Sequence[str],
        suffixes: Sequence[str],
        negatives: torch.Tensor | None,
        rows: Sequence[int] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Chosen scores (R,), rejected scores (R, K) and the tokens the forward pass read.

        `negatives` is a (B, k) index tensor of sampled j != i, or None for all B - 1. `rows`
        scores only those prefixes (R of the B; all by default): the loss is a mean over rows,
        so a batch can be scored, and back-propagated, a few rows at a time.
        """
        raise NotImplementedError

    def score_pairs(self, prompts: Sequence[Any], completions: Sequence[str]) -> torch.Tensor:
        """s(prompt_i, completion_i) for aligned lists (gradients kept)."""
        raise NotImplementedError

    @torch.no_grad()
    def score_texts(
        self, prompts: Sequence[Any], completions: Sequence[str], batch_size: int = 16
    ) -> list[float]:
        """Scores of (prompt, completion) pairs, in batches, windows applied, no gradients.

        A chat-format cross-encoder also takes chat prompts (lists of messages)."""
        was_training = self.training
        self.eval()
        out: list[float] = []
        # Longest first keeps padding small; results go back in input order.
        order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]) - len(completions[i]))
        scores: dict[int, float] = {}
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            vals = self.score_pairs([prompts[i] for i in idx], [completions[i] for i in idx])
            scores.update(zip(idx, vals.float().cpu().tolist(), strict=True))
        out = [scores[i] for i in range(len(prompts))]
        self.train(was_training)
        return out

    def clip_prompts(self, prompts: Sequence[str]) -> list[str]:
        return _clip(self.tokenizer, prompts, self.windows.prompt_max_tokens, keep="end")

    def clip_completions(self, completions: Sequence[str], budget: int | None = None) -> list[str]:
        limit = self.windows.completion_max_tokens
        if budget is not None:
            limit = max(1, min(limit, budget))
        return _clip(self.tokenizer, completions, limit, keep=self.windows.completion_side)

    def save(self, out: str | Path, extra: dict[str, Any] | None = None) -> None:
        raise NotImplementedError

    def _write_config(self, out: Path, extra: dict[str, Any] | None) -> None:
        data = {"kind": self.kind, "windows": asdict(self.windows), **(extra or {})}
        atomic_write(out / RBS_CONFIG, json.dumps(data, indent=2) + "\n")


def _all_negatives(b: int) -> torch.Tensor:
    return torch.tensor([[j for j in range(b) if j != i] for i in range(b)])


class CrossEncoder(ScoringModel):
    """Prefix and suffix read together; a scalar head on the pooled output (or last token).

    `chat` is the input format of a model `rm train` wrote (`rm.formats`); None reads the
    legacy sequence pair with token windows.
    """

    kind: EncoderKind = "cross"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        windows: Windows,
        device: torch.device,
        chat: ChatFormat | None = None,
    ):
        super().__init__()
        self.model = model.to(device)
        self.tokenizer = tokenizer
        self.windows = windows
        self.device = device
        self.chat = chat
        if chat is not None:
            install(tokenizer, chat)
            # The head reads the rightmost token that is not padding: pad must be the
            # tokenizer's (never `<|im_end|>`, which ends every decoder input).
            self.model.config.pad_token_id = tokenizer.pad_token_id
        elif self.model.config.pad_token_id is None:
            self.model.config.pad_token_id = tokenizer.pad_token_id

    @property
    def decoder(self) -> bool:
        """A last-token decoder in the chat format: prompts can be shared (`rm.packing`)."""
        return self.chat is not None and self.chat.style == "chatml"

    def backbone_config(self) -> Any:
        return self.model.config

    def max_length(self) -> int:
        if self.chat is not None:
            return self.chat.max_length
        return super().max_length()

    def render(self, prompts: Sequence[Any], completions: Sequence[str]) -> list[str]:
        """The texts the model reads in the chat format (its chat template applied)."""
        return [render(self.tokenizer, p, c) for p, c in zip(prompts, completions, strict=True)]

    def _forward_texts(self, texts: Sequence[str]) -> tuple[torch.Tensor, int]:
        enc = self.tokenizer(
            list(texts),
            add_special_tokens=False,
            padding=True,
            truncation=True,
            max_length=self.max_length(),
            return_tensors="pt",
        ).to(self.device)
        logits = self.model(**enc).logits
        return logits[:, 0], int(enc["attention_mask"].sum())

    def _forward(
        self, prompts: Sequence[str], completions: Sequence[str]
    ) -> tuple[torch.Tensor, int]:
        enc = self.tokenizer(
            list(prompts),
            list(completions),
            padding=True,
            truncation="longest_first",
            max_length=self.max_length(),
            return_tensors="pt",
        ).to(self.device)
        logits = self.model(**enc).logits
        return logits[:, 0], int(enc["attention_mask"].sum())

    def score_pairs(self, prompts: Sequence[Any], completions: Sequence[str]) -> torch.Tensor:
        if self.chat is not None:
            return self._forward_texts(self.render(prompts, completions))[0]
        # The tokenizer's own truncation cuts the completion's end; when the end is the part
        # to keep, clip it here to what fits beside a full prompt window instead.
        budget = None
        if self.windows.completion_side == "end":
            budget = self.max_length() - PAIR_SPECIAL_TOKENS - self.windows.prompt_max_tokens
        clipped = self.clip_completions(completions, budget)
        scores, _ = self._forward(self.clip_prompts(prompts), clipped)
        return scores

    def score_batch(
        self,
        prefixes: Sequence[str],
        suffixes: Sequence[str],
        negatives: torch.Tensor | None,
        rows: Sequence[int] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, int]:
        b = len(prefixes)
        if negatives is None:
            negatives = _all_negatives(b)
        rows = list(range(b)) if rows is None else list(rows)
        k = negatives.shape[1]
        cols = torch.cat([torch.arange(b)[:, None], negatives.cpu()], dim=1)[rows]  # (R, 1+k)
        if self.decoder:  # one row = one prompt and its 1 + k suffixes: the prompt is shared
            texts = [
                self.render([prefixes[i]] * (k + 1), [suffixes[int(j)] for j in c])
                for i, c in zip(rows, cols, strict=True)
            ]
            scores, tokens = shared_prefix_scores(
                self.model, self.tokenizer, texts, self.max_length()
            )
            return scores[:, 0], scores[:, 1:], tokens
        ps = [prefixes[i] for i in rows for _ in range(k + 1)]
        rs = [suffixes[int(j)] for j in cols.reshape(-1)]
        if self.chat is not None:
            flat, tokens = self._forward_texts(self.render(ps, rs))
        else:
            flat, tokens = self._forward(ps, rs)
        scores = flat.view(len(rows), k + 1)
        return scores[:, 0], scores[:, 1:], tokens

    def save(self, out: str | Path, extra: dict[str, Any] | None = None) -> None:
        model = merged_copy(self.model)
        if self.chat is not None:
            # The exact input format rides in config.json too, where trainers look first.
            model.config.rbs_input_format = self.chat.describe()
            if self.decoder:
                model.config.value_head_prefix = "score"  # OpenRLHF reads it from the config
        with written_aside(out) as aside:  # never through a symlink planted in `out`
            model.save_pretrained(aside)
            self.tokenizer.save_pretrained(aside)
            fmt = {"input_format": self.chat.to_dict() if self.chat else "pair"}
            self._write_config(aside, {**fmt, **(extra or {})})


def merged_copy(model: Any) -> Any:
    """`model` itself, or for a LoRA-wrapped (peft) model a merged plain copy: saved as the
    base architecture, so `from_pretrained` needs no peft. The trained model is left as is."""
    if not hasattr(model, "merge_and_unload"):
        return model
    import copy

    return copy.deepcopy(model).merge_and_unload()


class BiEncoder(ScoringModel):
    """Prefixes and suffixes encoded apart (mean pooling); s = (W e(p)) . e(r) / sqrt(d)."""

    kind: EncoderKind = "bi"

    def __init__(
        self,
        backbone: Any,
        tokenizer: Any,
        windows: Windows,
        device: torch.device,
        head: nn.Linear | None = None,
    ):
        super().__init__()
        self.backbone = backbone.to(device)
        self.tokenizer = tokenizer
        self.windows = windows
        self.device = device
        d = int(backbone.config.hidden_size)
        if head is None:
            head = nn.Linear(d, d, bias=False)
            with torch.no_grad():  # start at the plain dot product of the embeddings
                head.weight.copy_(torch.eye(d))
        self.head = head.to(device)

    def backbone_config(self) -> Any:
        return self.backbone.config

    def embed(self, texts: Sequence[str]) -> tuple[torch.Tensor, int]:
        enc = self.tokenizer(
            list(texts),
            padding=True,
            truncation=True,
            max_length=self.max_length(),
            return_tensors="pt",
        ).to(self.device)
        hidden = self.backbone(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return pooled, int(enc["attention_mask"].sum())

    @torch.no_grad()
    def score_texts(
        self, prompts: Sequence[str], completions: Sequence[str], batch_size: int = 16
    ) -> list[float]:
        """As `ScoringModel.score_texts`, but each distinct prompt is embedded once (the N responses
        of a best-of-N problem share one question), then every pair is one dot product."""
        if not prompts:
            return []
        was_training = self.training
        self.eval()
        unique = list(dict.fromkeys(prompts))
        p = self._embed_all(self.clip_prompts(unique), batch_size)
        r = self._embed_all(self.clip_completions(completions), batch_size)
        where = {u: i for i, u in enumerate(unique)}
        rows = p[torch.tensor([where[x] for x in prompts], dtype=torch.long, device=p.device)]
        scores = self._paired(rows, r)
        self.train(was_training)
        return [float(x) for x in scores.float().cpu()]

    def _embed_all(self, texts: Sequence[str], batch_size: int) -> torch.Tensor:
        """Embeddings of `texts` in input order, batched longest first (little padding)."""
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = torch.empty(len(texts), int(self.backbone.config.hidden_size), device=self.device)
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            out[idx] = self.embed([texts[i] for i in idx])[0]
        return out

    def _matrix(self, p: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        """All scores s(p_i, r_j), (B, B)."""
        return self.head(p) @ r.T / math.sqrt(p.shape[-1])

    def _paired(self, p: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        """Row-aligned scores s(p_i, r_i), (B,): the diagonal of `_matrix`."""
        return (self.head(p) * r).sum(-1) / math.sqrt(p.shape[-1])

    def score_pairs(self, prompts: Sequence[str], completions: Sequence[str]) -> torch.Tensor:
        p, _ = self.embed(self.clip_prompts(prompts))
        r, _ = self.embed(self.clip_completions(completions))
        return self._paired(p, r)

    def score_batch(
        self,
        prefixes: Sequence[str],
        suffixes: Sequence[str],
        negatives: torch.Tensor | None,
        rows: Sequence[int] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, int]:
        if rows is not None and list(rows) != list(range(len(prefixes))):
            raise ConfigError("a bi-encoder scores all rows of a batch at once (2B encodings)")
        p, tp = self.embed(prefixes)
        r, tr = self.embed(suffixes)
        scores = self._matrix(p, r)
        if negatives is None:
            pos, neg = split_matrix(scores)
        else:
            pos = scores.diagonal()
            neg = scores.gather(1, negatives.to(scores.device))
        return pos, neg, tp + tr

    def save(self, out: str | Path, extra: dict[str, Any] | None = None) -> None:
        with written_aside(out) as aside:  # never through a symlink planted in `out`
            self.backbone.save_pretrained(aside)
            self.tokenizer.save_pretrained(aside)
            head = self.head.weight.detach().cpu().contiguous()
            save_file({"weight": head}, str(aside / BI_HEAD))
            self._write_config(aside, extra)


def init_scorer(
    backbone: str,
    kind: EncoderKind = "cross",
    windows: Windows | None = None,
    seed: int = 0,
    device: str = "auto",
    *,
    input_format: InputFormat = "pair",
    prompt_chars: int | None = None,
    completion_chars: int | None = None,
) -> ScoringModel:
    """A fresh scorer on a backbone: pretrained weights, a new head drawn from `seed`.

    Two calls with the same backbone and seed give the same head, which is how the untrained
    baseline of `rm eval` matches the trained model's starting point. A cross-encoder in the
    `chat` format reads the text its chat template renders (`rm.formats.default_format`: the
    character budgets, the completion side of `windows`); `pair` reads token windows.
    """
    if input_format not in INPUT_FORMATS:
        raise ConfigError(f"input format must be one of {INPUT_FORMATS}, got {input_format!r}")
    path = resolve_backbone(backbone)
    tokenizer = load_tokenizer(path)
    windows = windows or Windows()
    dev = pick_device(device)
    torch.manual_seed(seed)
    # quiet: "newly initialized head" warnings are the point here
    if kind == "cross":
        model = load_model("AutoModelForSequenceClassification", path, num_labels=1, quiet=True)
        chat = None
        if input_format == "chat":
            positions = int(getattr(model.config, "max_position_embeddings", MAX_SEQ_TOKENS))
            chat = default_format(
                tokenizer, positions, windows.completion_side, prompt_chars, completion_chars
            )
        return CrossEncoder(model, tokenizer, windows, dev, chat)
    if kind == "bi":
        if input_format == "chat":
            raise ConfigError("the chat input format is for cross-encoders; a bi-encoder uses pair")
        return BiEncoder(load_model("AutoModel", path, quiet=True), tokenizer, windows, dev)
    raise ConfigError(f"encoder must be 'cross' or 'bi', got {kind!r}")


def read_rbs_config(path: str | Path) -> dict[str, Any]:
    """`rbs_config.json` of a model directory, or {} for a plain Hugging Face model."""
    file = Path(path) / RBS_CONFIG
    if not file.is_file():
        return {}
    data: dict[str, Any] = json.loads(file.read_text(encoding="utf-8"))
    return data


def saved_format(rbs: dict[str, Any]) -> ChatFormat | None:
    """The chat format `rbs_config.json` records, or None for the legacy pair format."""
    fmt = rbs.get("input_format", "pair")
    return ChatFormat.from_dict(fmt) if isinstance(fmt, dict) else None


def load_scorer(
    path: str | Path, device: str = "auto", windows: Windows | None = None
) -> ScoringModel:
    """Load a reward model directory (one `rm train` wrote, or any sequence-classification
    model with a single output). `windows` overrides the saved ones (pair format only)."""
    path = Path(path).expanduser()
    if not (path / "config.json").is_file():
        raise ConfigError(f"{path} is not a Hugging Face model directory (no config.json)")
    rbs = read_rbs_config(path)
    windows = windows or Windows(**rbs.get("windows", {}))
    dev = pick_device(device)
    tokenizer = load_tokenizer(path)
    if rbs.get("kind") == "bi":
        backbone = load_model("AutoModel", path)
        d = int(backbone.config.hidden_size)
        head = nn.Linear(d, d, bias=False)
        head.weight.data.copy_(load_file(str(path / BI_HEAD))["weight"])
        return BiEncoder(backbone, tokenizer, windows, dev, head=head)
    model = load_model("AutoModelForSequenceClassification", path)
    if model.config.num_labels != 1:
        raise ConfigError(
            f"{path} has {model.config.num_labels} outputs; a reward model needs exactly 1"
        )
    return CrossEncoder(model, tokenizer, windows, dev, saved_format(rbs))
