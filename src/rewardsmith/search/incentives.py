"""Where a candidate's incentive points: towards right answers, or away from them.

Separation (`fitness.within_group_separation`) only sees prompts whose group holds both a
right and a wrong response. A reward added to the answer check matters most where the check
is silent: in groups where *every* response is wrong, the candidate alone decides which
response GRPO reinforces. Round 1 of the search found candidates that separated right from
wrong almost perfectly (proxy 0.96-0.98) and paid, in all-wrong groups, a form that goes with
wrong answers; 60 GRPO steps took F1 to ~0.01. Three measurements on material built from the
run's pool (`build_incentives`), each the same for every candidate of a run:

- **answer twins**: each parseable pool response rewritten to carry the right answer and a
  wrong one, the rest of the text (reasoning included) unchanged
  (`exploits.gold.wrong_answers` picks the wrong one among the answers of the same task
  family, when the pool's items carry one), each twin re-judged by the task's answer format
  (with the `family` format, by the rule of the response's own family: a clock time as a
  time, a sorted list in order) and kept only when the judge agrees.
  `twin_direction` = 2 P(right twin paid above its wrong twin) - 1, ties half: +1 for an
  answer check, 0 for a structural reward, negative for one that pays wrong answers more
  than right ones of the same prompt, including twins built from all-wrong groups;
- **silent direction**: every response of a group given a wrong answer (right ones replaced
  by their wrong twin), then 2 AUC - 1 of the responses that *were* right against those that
  were wrong, within each group that held both. With the answer check silent, does the
  candidate prefer how right responses are written (> 0) or how wrong ones are (< 0)?
- **well-formed wrong probes**: the exploit corpus's attacks that keep the answer format
  (`WELL_FORMED_ATTACKS`: the right number in a sentence before a wrong answer, several
  candidates, hedges, negations, disagreeing answer markers, look-alike letters, zero-width
  characters) built from a right pool response, kept only when the task's judge calls them
  wrong. `wrong_payout`: how far above the same response with a plain wrong answer (cut as
  the corpus cuts it: the right number taken out of the reasoning too) a probe is paid, as
  a share of the candidate's range, averaged over probes.

`misdirection` = max(0, -twin_direction) + max(0, -silent_direction); the proxy's fitness
subtracts it and `wrong_payout` (`fitness.proxy_fitness`).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from rewardsmith.exploits.answer_attacks import ANSWER_ATTACKS, Context
from rewardsmith.exploits.corpus import example_template
from rewardsmith.exploits.gold import gold_answer, perturb, wrong_answers
from rewardsmith.search.response_pool import PROBE_GROUPS, PoolItem
from rewardsmith.search.task import SearchTask

#: Exploit-corpus attacks whose completions keep an answer format (wrong but well-formed).
WELL_FORMED_ATTACKS: tuple[str, ...] = (
    "reference_in_sentence",
    "shotgun",
    "hedge",
    "negation",
    "disagreeing_markers",
    "lookalike",
    "zero_width",
)
# Wrong answers tried per response before a twin is given up (the judge must call it wrong).
WRONG_TRIES = 4


@dataclass(frozen=True)
class AnswerTwin:
    """One pool response written with the right and with a wrong answer."""

    group: int
    prompt: str
    reference: str
    right: str
    wrong: str
    #: Whether the pool response itself was right (its wrong twin is the rewritten one).
    was_right: bool
    #: The pool response's task family (what the `family` format judges the twins by).
    task: str | None = None


@dataclass(frozen=True)
class Incentives:
    """What `proxy_fitness` measures incentives on (module docstring)."""

    twins: tuple[AnswerTwin, ...]
    #: Well-formed wrong probes (`probe` names the attack), each paired by `probe_bar` with
    #: the entry of `plain_wrong` it is measured against: the response it was built from,
    #: cut as the exploit corpus cuts it, with a plain wrong answer.
    wrong_probes: tuple[PoolItem, ...]
    plain_wrong: tuple[PoolItem, ...]
    probe_bar: tuple[int, ...]


def _verdict(
    task: SearchTask, completion: str, reference: str, family: str | None = None
) -> bool | None:
    """The task's judgement (with the `family` format, by `family`'s rule): True right,
    False wrong-or-unparseable, None when it fails."""
    from rewardsmith.rl.answers import judge_answer

    try:
        return judge_answer(completion, reference, task.answer_format, family).correct  # type: ignore[arg-type]
    except (ValueError, ArithmeticError):
        return None


def _read_answer(task: SearchTask, completion: str, family: str | None = None) -> str | None:
    """The raw text of the completion's final answer, as it stands in the completion (a
    word-list family's answer may hold "or": read as `rl.answers.judge_family` reads it)."""
    if task.answer_format == "solution":
        from rewardsmith.rl.answers import solution_blocks

        blocks = solution_blocks(completion)
        return blocks[-1].strip() if blocks and blocks[-1].strip() else None
    from rewardsmith.rl.families import FAMILIES
    from rewardsmith.rl.styles import final_answer

    grader = FAMILIES.get(family or "") if task.answer_format == "family" else None
    return final_answer(completion, words=grader is not None and grader.kind == "word_list")


def _twin(
    item: PoolItem, task: SearchTask, golds: Sequence[str], rng: random.Random
) -> AnswerTwin | None:
    gold = gold_answer(item.reference) or item.reference.strip()
    answer = _read_answer(task, item.completion, item.task) if item.parseable else None
    if not gold or not answer or answer not in item.completion:
        return None
    at = item.completion.rfind(answer)
    before, after = item.completion[:at], item.completion[at + len(answer) :]
    right = f"{before}{gold}{after}" if not item.correct else item.completion
    if _verdict(task, right, item.reference, item.task) is not True:
        return None
    # Only the answer changes: the reasoning stays as written (a process reward must see the
    # same steps in both twins).
    candidates = wrong_answers(gold, golds, rng, WRONG_TRIES) or [perturb(gold, rng)]
    if not item.correct:
        candidates = [answer, *candidates]
    for wrong_answer in candidates:
        wrong = f"{before}{wrong_answer}{after}"
        if _verdict(task, wrong, item.reference, item.task) is False:
            return AnswerTwin(
                item.group, item.prompt, item.reference, right, wrong, item.correct, item.task
            )
    return None


def build_incentives(pool: Sequence[PoolItem], task: SearchTask, seed: int = 0) -> Incentives:
    """Answer twins of every parseable pool response, and well-formed wrong probes from one
    right response in each of the first `PROBE_GROUPS` groups that hold one."""
    rng = random.Random(seed)
    # Wrong answers come from the same task family's answers (a clock's from other times).
    by_task: dict[str | None, set[str]] = {}
    for it in pool:
        by_task.setdefault(it.task, set()).add(gold_answer(it.reference) or it.reference.strip())
    golds = {t: sorted(g for g in found if g) for t, found in by_task.items()}
    twins: list[AnswerTwin] = []
    source_twin: dict[int, int] = {}  # group -> index of the twin of its first right response
    for item in pool:
        twin = _twin(item, task, golds[item.task], rng)
        if twin is None:
            continue
        if item.correct and item.group not in source_twin:
            source_twin[item.group] = len(twins)
        twins.append(twin)
    probes: list[PoolItem] = []
    plain: list[PoolItem] = []
    paired: list[int] = []
    for group in sorted(source_twin)[:PROBE_GROUPS]:
        twin = twins[source_twin[group]]
        gold = gold_answer(twin.reference) or twin.reference.strip()
        template = example_template(twin.right, gold, rng)
        context = Context(
            twin.prompt, gold, tuple(wrong_answers(gold, golds[twin.task], rng, 3)), template, rng
        )
        if template is None or len(context.wrong) < 3:
            continue
        # The bar: the same response, reasoning cut as the corpus cuts it, a plain wrong answer.
        bar = f"{template[0]}{context.wrong[0]}{template[1]}"
        if _verdict(task, bar, twin.reference, twin.task) is not False:
            continue
        plain.append(
            PoolItem(group, twin.prompt, twin.reference, bar, False, True, "plain_wrong", twin.task)
        )
        for kind in WELL_FORMED_ATTACKS:
            for _form, completion in ANSWER_ATTACKS[kind](context):
                if _verdict(task, completion, twin.reference, twin.task) is False:
                    probes.append(
                        PoolItem(
                            group,
                            twin.prompt,
                            twin.reference,
                            completion,
                            False,
                            False,
                            kind,
                            twin.task,
                        )
                    )
                    paired.append(len(plain) - 1)
    return Incentives(tuple(twins), tuple(probes), tuple(plain), tuple(paired))


def _direction(wins: Sequence[float]) -> float | None:
    return 2 * statistics.fmean(wins) - 1 if wins else None


def twin_direction(right: Sequence[float], wrong: Sequence[float]) -> float | None:
    """2 P(right twin paid above wrong twin) - 1 (ties half); None without twins."""
    return _direction([(r > w) + 0.5 * (r == w) for r, w in zip(right, wrong, strict=True)])


def silent_direction(
    twins: Sequence[AnswerTwin], right: Sequence[float], wrong: Sequence[float]
) -> float | None:
    """With every answer wrong (each response's wrong twin), 2 AUC - 1 of the responses
    that were right against those that were wrong, averaged over groups holding both."""
    by_group: dict[int, tuple[list[float], list[float]]] = {}
    for twin, w in zip(twins, wrong, strict=True):
        by_group.setdefault(twin.group, ([], []))[0 if twin.was_right else 1].append(w)
    aucs = []
    for was_right, was_wrong in by_group.values():
        if was_right and was_wrong:
            wins = sum((a > b) + 0.5 * (a == b) for a in was_right for b in was_wrong)
            aucs.append(wins / (len(was_right) * len(was_wrong)))
    return _direction(aucs)


def wrong_payouts(
    probes: Sequence[PoolItem],
    probe_scores: Sequence[float],
    probe_bar: Sequence[int],
    bar_scores: Sequence[float],
    span: float,
) -> dict[str, list[float]]:
    """Per attack, max(0, probe - its plain wrong answer) / span for each probe."""
    out: dict[str, list[float]] = {}
    for item, s, i in zip(probes, probe_scores, probe_bar, strict=True):
        out.setdefault(item.probe or "?", []).append(max(0.0, s - bar_scores[i]) / span)
    return out
