"""Packed prefix/suffix batches of a decoder reward model (`rm.packing`) and row-chunked
training (`rm.train.backward_batch`): the same scores and gradients as the plain passes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from rewardsmith.rm.data import Pair
from rewardsmith.rm.model import CrossEncoder, Windows, init_scorer
from rewardsmith.rm.train import TrainConfig, add_lora, backward_batch, disable_dropout

PROMPTS = [
    "Question: Mia has 14 pens. She buys 3 boxes with 6 pens each. How many pens now?\nAnswer:",
    "Question: Tom has 2 apples.\nAnswer:",
    "Q: 5+5?",
    "Question: Ava picks 7 shells on Monday, 4 on Tuesday and 9 on Wednesday, then loses 3.",
]
SOLUTIONS = [
    "<thinking>3*6=18. 14+18=32.</thinking><solution>32</solution>",
    "<thinking>2+0=2.</thinking><solution>2</solution>",
    "<solution>10</solution>",
    "<thinking>7+4=11. 11+9=20. 20-3=17.</thinking><solution>17</solution>",
]


def _decoder(path: Path) -> CrossEncoder:
    torch.manual_seed(0)
    scorer = init_scorer(
        str(path), "cross", Windows(completion_side="end"), 0, "cpu", input_format="chat"
    )
    assert isinstance(scorer, CrossEncoder) and scorer.decoder
    with torch.no_grad():  # a random head gives scores ~1e-2: make differences visible
        scorer.model.score.weight.mul_(50)
    disable_dropout(scorer)
    return scorer.train()


def _plain_rows(scorer: CrossEncoder, negatives: torch.Tensor) -> torch.Tensor:
    """Every (prompt, chosen or negative) text scored alone: the unshared reference."""
    cols = torch.cat([torch.arange(len(PROMPTS))[:, None], negatives], dim=1)
    texts = [
        scorer.render([PROMPTS[i]], [SOLUTIONS[int(j)]])[0]
        for i, row in enumerate(cols)
        for j in row
    ]
    return scorer._forward_texts(texts)[0].view(len(PROMPTS), -1)


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal up to float32 sums taken in another order (relative to the tensor's size)."""
    return float((a - b).norm()) <= 1e-5 * float(b.norm()) + 1e-7


def _grads(scorer: Any) -> list[torch.Tensor]:
    return [p.grad.clone() for p in scorer.parameters() if p.grad is not None]


@pytest.mark.parametrize("lora", [False, True])
def test_shared_prompts_give_the_plain_scores_and_gradients(tiny_decoder: Path, lora: bool) -> None:
    scorer = _decoder(tiny_decoder)
    if lora:
        add_lora(scorer, rank=4, alpha=8)
        with torch.no_grad():  # LoRA's B starts at 0: move it so the adapters matter
            for name, p in scorer.named_parameters():
                if "lora_B" in name:
                    p.normal_(0, 0.1)
    negatives = torch.tensor([[1, 2], [0, 3], [3, 1], [2, 0]])
    pos, neg, tokens = scorer.score_batch(PROMPTS, SOLUTIONS, negatives)
    plain = _plain_rows(scorer, negatives)
    assert torch.allclose(torch.cat([pos[:, None], neg], dim=1), plain, atol=1e-5)
    (pos.sum() + (neg * 2).sum()).backward()
    shared = _grads(scorer)
    scorer.zero_grad()
    (plain[:, 0].sum() + (plain[:, 1:] * 2).sum()).backward()
    assert all(_close(a, b) for a, b in zip(shared, _grads(scorer), strict=True))
    # the prompt was read once per row: fewer tokens than the 12 texts read whole
    whole = sum(
        len(scorer.tokenizer(t, add_special_tokens=False)["input_ids"])
        for i in range(4)
        for t in scorer.render(
            [PROMPTS[i]] * 3, [SOLUTIONS[i], *(SOLUTIONS[int(j)] for j in negatives[i])]
        )
    )
    assert tokens < whole


def test_identical_texts_still_read_their_last_token(tiny_decoder: Path) -> None:
    # A row whose texts are all the same shares all but the last token, which is scored.
    scorer = _decoder(tiny_decoder)
    same = ["<solution>1</solution>"] * 2
    pos, neg, _ = scorer.score_batch(["Q"] * 2, same, torch.tensor([[1], [0]]))
    assert torch.allclose(pos, neg[:, 0], atol=1e-6)
    assert torch.allclose(pos, scorer.score_pairs(["Q"], same[:1]), atol=1e-5)


@pytest.mark.parametrize("backbone", ["tiny_backbone", "tiny_decoder"])
def test_row_chunks_give_the_whole_batch_gradient(backbone: str, request: Any) -> None:
    path = request.getfixturevalue(backbone)
    batch = [Pair(p, s, i, 10, 10) for i, (p, s) in enumerate(zip(PROMPTS, SOLUTIONS, strict=True))]
    grads, logged = [], []
    for max_sequences in (0, 3):  # whole batch in one pass; then one row (1 + k = 3) a pass
        torch.manual_seed(0)
        scorer = init_scorer(str(path), "cross", None, 0, "cpu", input_format="chat")
        disable_dropout(scorer)
        scorer.train()
        config = TrainConfig(
            backbone=str(path), batch_size=4, negatives=2, max_sequences=max_sequences
        )
        got, _, comparisons = backward_batch(
            scorer, batch, torch.tensor([[1, 2], [0, 3], [3, 1], [2, 0]]), config
        )
        assert comparisons == 8
        grads.append(_grads(scorer))
        logged.append(got)
    assert all(_close(a, b) for a, b in zip(*grads, strict=True))
    assert logged[0] == pytest.approx(logged[1], abs=1e-6)
