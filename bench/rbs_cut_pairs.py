"""The pair sets of `rm pairs` in the shape RBS trains on: cut where the wrong copy departs.

`rm pairs` pairs a question with a whole true solution and a whole wrong one (a wrong final
answer, a wrong intermediate step). RBS with random splits trains on a different shape: the
prefix is a document (question and solution) up to a random point, the suffix what follows.
This writes the same pairs cut at the first number where the wrong copy differs from the
true one: the prompt is the document up to that number (`58-10=`), the chosen completion the
true rest (`48. ...`), the rejected the wrong rest (`47. ...`). A model that scores these
right computes the next result in the shape it was trained on; one that scores them right
but not the whole-solution pairs has the skill without reading whole solutions with it.

    .venv/bin/python bench/rbs_cut_pairs.py out/pairs/testbed_pairs.jsonl out/pairs/testbed_cut.jsonl
    rewardsmith rm eval -m MODEL -d out/pairs/testbed_cut.jsonl

`--likelihood testbed` also scores the pairs, whole and cut (as the policy writes them), by
the policy's own log-likelihood of each completion: whether the backbone, with no head,
already prefers the true continuation.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from rewardsmith.jsonl import read_jsonl
from rewardsmith.rm.corpora import document


def cut_row(row: dict[str, Any], as_document: bool = True) -> dict[str, Any] | None:
    """`row` with the text its two completions share moved into the prompt, cut before the
    first number that differs (never inside a number); None if they do not differ.

    `as_document`: the prompt is written as the corpus writes a document (question, blank
    line, solution: what RBS trained on); else as the policy reads and writes it (prompt and
    completion joined as they are)."""
    join = document if as_document else str.__add__
    true = join(row["prompt"], row["chosen"])
    wrong = join(row["prompt"], row["rejected"])
    common = len(os.path.commonprefix([true, wrong]))
    if common == len(true) == len(wrong):
        return None
    while common > 0 and true[common - 1].isdigit():
        common -= 1  # "116-72=4|4" -> "116-72=|44": the completion starts with the number
    return {**row, "prompt": true[:common], "chosen": true[common:], "rejected": wrong[common:]}


def cut_rows(rows: Iterable[dict[str, Any]], as_document: bool = True) -> Iterator[dict[str, Any]]:
    """Every row that can be cut, in order."""
    for row in rows:
        out = cut_row(row, as_document)
        if out is not None:
            yield out


def likelihood_scores(
    policy: str, device: str = "cpu"
) -> Callable[[Sequence[str], Sequence[str]], list[float]]:
    """A score function: the log-likelihood a policy gives a completion after a prompt (the
    backbone's own judgement of which continuation is right, with no head at all)."""
    import torch

    from rewardsmith.models.loading import pick_device
    from rewardsmith.rl.generation import token_logprobs
    from rewardsmith.rl.policies import load_policy

    where = str(pick_device(device))
    loaded = load_policy(policy, device=where)

    def encode(text: str) -> Any:
        return loaded.tokenizer(text, add_special_tokens=False, return_tensors="pt").to(where)

    def score(prompts: Sequence[str], completions: Sequence[str]) -> list[float]:
        out = []
        with torch.no_grad():
            for prompt, completion in zip(prompts, completions, strict=True):
                p, c = encode(prompt), encode(completion)
                logp = token_logprobs(
                    loaded.model, p.input_ids, p.attention_mask, c.input_ids, c.attention_mask
                )
                out.append(float(logp.sum()))
        return out

    return score


def likelihood_report(pairs: Path, policy: str) -> dict[str, dict[str, float]]:
    """Pair accuracy of `policy`'s log-likelihood on `pairs` (whole solutions after the
    question) and on the same pairs cut where they differ, each with 95% intervals over
    problems (`rm.evaluate`)."""
    import tempfile

    from rewardsmith.rm.evaluate import evaluate_sets, load_eval_set

    rows = read_jsonl(pairs)
    with tempfile.TemporaryDirectory() as tmp:
        cut = Path(tmp) / "cut.jsonl"
        cut.write_text("".join(json.dumps(r) + "\n" for r in cut_rows(rows, False)))
        sets = [load_eval_set(pairs), load_eval_set(cut)]
        return evaluate_sets(sets, likelihood_scores(policy))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pairs", type=Path, help="a pair file written by `rm pairs`")
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "--likelihood",
        metavar="POLICY",
        help="also print the pair accuracy of this policy's log-likelihood (e.g. testbed)",
    )
    args = parser.parse_args(argv)
    rows = list(cut_rows(read_jsonl(args.pairs)))
    args.out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} cut pairs -> {args.out}")
    if args.likelihood:
        for key, m in likelihood_report(args.pairs, args.likelihood).items():
            print(
                f"{args.likelihood} log-likelihood, {key}: {m['accuracy']:.3f} "
                f"[{m['ci_low']:.3f}, {m['ci_high']:.3f}] ({int(m['n'])} pairs)"
            )


if __name__ == "__main__":
    main()
