"""Batched generation and per-token log-probabilities for any Hugging Face causal LM.

Prompts are left-padded so every completion starts at the same column; a completion ends at
its first EOS (kept, so the policy learns to stop) or at `max_new_tokens` (truncated).
Position ids follow the attention mask, as in `generate`, so the log-probs of the update pass
are those of the sampling pass.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class Rollout:
    """A batch of prompts with one or more completions each (rows in prompt order)."""

    prompt_ids: torch.Tensor  # (N, Lp), left-padded
    prompt_mask: torch.Tensor  # (N, Lp)
    completion_ids: torch.Tensor  # (N, Lc), right-padded
    completion_mask: torch.Tensor  # (N, Lc), 1 up to and including the first EOS
    texts: list[str]  # decoded completions, special tokens removed
    truncated: torch.Tensor  # (N,) bool: no EOS within max_new_tokens

    @property
    def lengths(self) -> torch.Tensor:
        return self.completion_mask.sum(dim=1)

    def select(self, rows: torch.Tensor) -> Rollout:
        """The rollout restricted to `rows` (indices), in that order."""
        keep = rows.tolist()
        return Rollout(
            self.prompt_ids[rows],
            self.prompt_mask[rows],
            self.completion_ids[rows],
            self.completion_mask[rows],
            [self.texts[i] for i in keep],
            self.truncated[rows],
        )


def encode_prompts(tokenizer: Any, prompts: Sequence[str], device: Any = "cpu") -> Any:
    enc = tokenizer(list(prompts), return_tensors="pt", padding=True, add_special_tokens=False).to(
        device
    )
    return enc


def _cache_keyword(model: Any) -> str:
    """transformers 5 renamed `past_key_values` to `cache`; use whichever the model takes."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    params = inspect.signature(type(base).forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _next_token(
    logits: torch.Tensor, greedy: bool, temperature: float, top_k: int, top_p: float
) -> torch.Tensor:
    if greedy:
        return logits.argmax(dim=-1)
    logits = logits.float() / temperature
    if top_k > 0:
        kth = torch.topk(logits, min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        # drop a token when the tokens before it already hold top_p of the mass
        drop = probs.cumsum(dim=-1) - probs > top_p
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        logits = torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)
    return torch.multinomial(torch.softmax(logits, dim=-1), 1).squeeze(-1)


@torch.no_grad()
def generate(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    *,
    num_return: int = 1,
    max_new_tokens: int = 64,
    greedy: bool = False,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
) -> Rollout:
    """Sample (or greedily decode) `num_return` completions per prompt, from torch's global
    RNG (seed it for reproducible rollouts).

    A plain KV-cache loop rather than `model.generate`: every sampling step is visible here
    (temperature, top-k, top-p, EOS handling), which the log-prob pass must mirror. It is as
    fast as `generate` (testbed, 64 rows, 26 tokens, 1 thread: 0.08 s against 0.09 s).
    """
    device = next(model.parameters()).device
    enc = encode_prompts(tokenizer, prompts, device)
    prompt_ids = enc["input_ids"].repeat_interleave(num_return, dim=0)
    prompt_mask = enc["attention_mask"].repeat_interleave(num_return, dim=0)
    n = prompt_ids.shape[0]
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    cache_kw = _cache_keyword(model)
    was_training = model.training
    model.eval()
    positions = (prompt_mask.cumsum(dim=1) - 1).clamp(min=0)
    out = model(
        input_ids=prompt_ids, attention_mask=prompt_mask, position_ids=positions, use_cache=True
    )
    mask = prompt_mask
    last = positions[:, -1]
    done = torch.zeros(n, dtype=torch.bool, device=device)
    tokens: list[torch.Tensor] = []
    for _ in range(max_new_tokens):
        nxt = _next_token(out.logits[:, -1, :], greedy, temperature, top_k, top_p)
        nxt = torch.where(done, torch.full_like(nxt, pad), nxt)
        tokens.append(nxt)
        done |= nxt == eos
        if bool(done.all()):
            break
        mask = torch.cat([mask, torch.ones_like(nxt)[:, None]], dim=1)
        last = last + 1
        cache = out.get(cache_kw)
        if cache is None:  # transformers 4.x outputs
            cache = out.past_key_values
        out = model(
            input_ids=nxt[:, None],
            attention_mask=mask,
            position_ids=last[:, None],
            use_cache=True,
            **{cache_kw: cache},
        )
    model.train(was_training)
    if tokens:
        completion_ids = torch.stack(tokens, dim=1)
    else:
        completion_ids = torch.empty((n, 0), dtype=torch.long, device=device)
    is_eos = completion_ids == eos
    has_eos = is_eos.any(dim=1)
    first = torch.where(has_eos, is_eos.int().argmax(dim=1), completion_ids.shape[1])
    cols = torch.arange(completion_ids.shape[1], device=device)
    completion_mask = (cols[None, :] <= first[:, None]).long()
    completion_ids = torch.where(
        completion_mask.bool(), completion_ids, torch.full_like(completion_ids, pad)
    )
    texts = tokenizer.batch_decode(completion_ids, skip_special_tokens=True)
    return Rollout(prompt_ids, prompt_mask, completion_ids, completion_mask, texts, ~has_eos)


def token_logprobs(
    model: Any,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    completion_ids: torch.Tensor,
    completion_mask: torch.Tensor,
    temperature: float = 1.0,
) -> torch.Tensor:
    """log pi(o_t | q, o_<t) for every completion token, shape (N, Lc) (0 where masked),
    from logits divided by the sampling temperature (the distribution that was sampled)."""
    ids = torch.cat([prompt_ids, completion_ids], dim=1)
    mask = torch.cat([prompt_mask, completion_mask], dim=1)
    positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
    logits = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits
    width = prompt_ids.shape[1]
    # the logits at position t predict token t + 1
    logits = logits[:, width - 1 : -1, :].float() / temperature
    logp = torch.log_softmax(logits, dim=-1)
    picked = logp.gather(-1, completion_ids.unsqueeze(-1)).squeeze(-1)
    return picked * completion_mask
