"""Synthesis while scoring: `Scorer(..., synthesize=True)` and `rewardsmith score --synthesize`.

Samples the router sends to "synthesize" are grouped by task signature. A group whose
samples carry references (and that the router did not mark as needing a reward model) gets
an offline CodeVerify built from its own (prompt, reference) pairs: the completions lend
their answer styles, positives are each reference in those styles, negatives other samples'
references and perturbations. A group without references goes to WrapLLM over the local
model registry, each sample's own completion taken as a good response to its prompt.
Either way the candidate passes the admission gate or is stored retired.

An admitted tool scores its group and every later sample of that signature in this run.
It carries the group's prompts as router exemplars and, when the samples name a `task`, that
task's name, so a router built later (the next run) sends the task to it directly. Should a
router still ask for synthesis of a signature (or task) that an admitted synthesized tool
was built for, that tool is used again instead of writing another. A rejected group stays
`not_applicable`, with the gate's reason, for the rest of the run. A group too small to synthesize from (fewer than 4
distinct pairs) is `not_applicable` too, but its samples are kept and synthesis is tried
again when later batches bring more of that signature; a warning says why.

Samples without a `task` field are grouped by prompt template and reference shape
(`batch_groups.group_keys`), not by the router's cluster signature, so one task forms one
group. An admitted code verifier scores its group's completions at once: when it pays
none of them, or none of those in some answer style, it is *flagged* (`self.flags`, a
`synth_flag` event and a warning with the reason): it still scores, but never silently.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rewardsmith.errors import LibraryError, RewardsmithError, UnknownToolError
from rewardsmith.library.names import MAX_NAME_CHARS, tool_name_from
from rewardsmith.library.store import Library
from rewardsmith.synth.admission import REJECTED_SUFFIX, SynthOutcome, is_gated
from rewardsmith.synth.batch_groups import batch_flag, group_keys
from rewardsmith.synth.examples import MIN_EXAMPLES, Example, answer_of
from rewardsmith.synth.gate import GateConfig
from rewardsmith.synth.pipeline import codeverify
from rewardsmith.synth.wrapllm import wrapllm
from rewardsmith.types import Reward, RewardTool, Sample

if TYPE_CHECKING:
    from rewardsmith.router import Decision

log = logging.getLogger(__name__)

# Distinct (prompt, reference) pairs of a group used to build its tool: enough to fit and
# hold out, few enough that synthesis takes seconds.
MAX_GROUP_EXAMPLES = 48
PROMPT_CHARS = 200
# How a reason starts when a group is too small to synthesize from (yet).
TOO_FEW = "synthesis not possible yet"
# The library stayed locked by another process: these samples are not scored, and a later
# batch of the signature tries again.
LIBRARY_BUSY = "synthesis skipped for now"

Choice = tuple[RewardTool | None, Reward | None]


def _slug(text: str) -> str:
    # Room for `synth_` and `.rejected` within the 64 characters of a tool name.
    return tool_name_from(text, max_chars=MAX_NAME_CHARS - 15, fallback="task")


class SynthesisSession:
    """Turns "synthesize" decisions into tools, once per signature (see module docstring)."""

    def __init__(
        self, library: Library, gate_config: GateConfig | None = None, backend: str = "offline"
    ) -> None:
        """`backend`: how CodeVerify writes a verifier, `offline` (composed from primitives)
        or `llm` (an OpenAI-compatible model, `rewardsmith.synth.codeverify_llm`)."""
        self.library = library
        self.gate_config = gate_config
        self.backend = backend
        # signature -> the tool that scores it, or the reason it has none
        self.by_signature: dict[str, RewardTool | str] = {}
        # signature -> samples of a group too small to synthesize from so far
        self.pending: dict[str, list[Sample]] = {}
        self.outcomes: list[SynthOutcome] = []
        # signature -> why the batch's own completions put its admitted tool in doubt
        self.flags: dict[str, str] = {}

    def resolve(
        self, batch: Sequence[Sample], decisions: Sequence[Decision | None]
    ) -> dict[int, Choice]:
        """For every sample routed to "synthesize": (tool, None), or (None, the
        `not_applicable` reward that says why it has no tool)."""
        groups: dict[str, list[int]] = {}
        wanted = [i for i, d in enumerate(decisions) if d is not None and d.action == "synthesize"]
        # Without a task, one task is one prompt template and reference shape.
        untasked = [i for i in wanted if not batch[i].task]
        keys = dict(zip(untasked, group_keys([batch[i] for i in untasked]), strict=True))
        for i in wanted:
            d = decisions[i]
            assert d is not None
            groups.setdefault(keys.get(i) or d.signature or "-", []).append(i)
        out: dict[int, Choice] = {}
        for sig, idx in groups.items():
            target = self.by_signature.get(sig)
            if target is None:
                decision = decisions[idx[0]]
                assert decision is not None
                samples = self.pending.pop(sig, []) + [batch[i] for i in idx]
                try:
                    target = self._tool_for(sig, samples, decision)
                except LibraryError as exc:  # locked past the store's wait: the run goes on
                    target = f"{LIBRARY_BUSY}: {exc}"
                if isinstance(target, str):
                    log.warning("synthesis for %d samples (%s): %s", len(samples), sig, target)
                if isinstance(target, str) and target.startswith((TOO_FEW, LIBRARY_BUSY)):
                    # Later batches may bring enough: keep these samples and try again then.
                    self.pending[sig] = samples[-MAX_GROUP_EXAMPLES:]
                else:
                    self.by_signature[sig] = target
            for i in idx:
                if isinstance(target, str):
                    out[i] = (None, Reward(None, "not_applicable", reason=target))
                else:
                    out[i] = (target, None)
        return out

    # -- one group ---------------------------------------------------------------------------

    def _tool_for(self, sig: str, samples: list[Sample], decision: Decision) -> RewardTool | str:
        task = _shared_task(samples)
        reused = self._reuse(sig, task)
        if reused is not None:
            self.library.log_event(
                "synth_reuse", reused.spec.name, signature=sig, task=task, samples=len(samples)
            )
            return reused
        with_ref = [s for s in samples if s.reference and s.reference.strip()]
        code = len(with_ref) * 2 >= len(samples) and decision.kind != "reward_model"
        name = self._name(task, sig)
        try:
            if code:
                outcome = self._codeverify(name, sig, task, with_ref)
            else:
                outcome = self._wrapllm(name, sig, task, samples)
        except RewardsmithError as exc:  # too few or unusable samples: a reason, not a crash
            reason = f"synthesis not possible: {exc}"
            self.library.log_event("synthesize", name, signature=sig, admitted=False, reason=reason)
            return reason
        except Exception as exc:  # a synthesis bug must not take the scoring run down
            log.exception("synthesis for signature %s failed", sig)
            reason = f"synthesis failed: {type(exc).__name__}: {exc}"
            self.library.log_event("synthesize", name, signature=sig, admitted=False, reason=reason)
            return reason
        if isinstance(outcome, str):
            self.library.log_event(
                "synthesize", name, signature=sig, admitted=False, reason=outcome
            )
            return outcome
        self.outcomes.append(outcome)
        self.library.log_event(
            "synthesize",
            name,
            signature=sig,
            task=task,
            samples=len(samples),
            method=outcome.method,
            admitted=outcome.admitted,
            stored_as=outcome.stored_as,
            reason=outcome.reason,
        )
        if not outcome.admitted:
            return f"synthesized {outcome.method} tool rejected by the gate: {outcome.reason}"
        tool = self.library.get(outcome.stored_as)
        if code:
            self._check_batch(tool, sig, samples)
        return tool

    def _check_batch(self, tool: RewardTool, sig: str, samples: list[Sample]) -> None:
        """The batch's own completions as evidence (`batch_groups.batch_flag`): a verifier
        that pays none of them, or none in some style, is flagged with the reason."""
        rewards = tool.score(samples)
        flag = batch_flag(samples, [r.score for r in rewards])
        if not flag:
            return
        reason = f"synthesized tool {tool.spec.ref} flagged: {flag}"
        self.flags[sig] = reason
        log.warning("%s", reason)
        self.library.log_event("synth_flag", tool.spec.name, signature=sig, reason=reason)

    def _codeverify(
        self, name: str, sig: str, task: str | None, samples: list[Sample]
    ) -> SynthOutcome | str:
        examples = _examples(samples, lambda s: s.reference or "")
        if len({answer_of(e.reference) for e in examples}) < 2 or len(examples) < MIN_EXAMPLES:
            return (
                f"{TOO_FEW}: {len(examples)} distinct (prompt, reference) "
                f"pairs, at least {MIN_EXAMPLES} with two different answers needed"
            )
        return codeverify(
            examples,
            name,
            self.library,
            backend=self.backend,
            gate_config=self.gate_config,
            title=task or name,
            extra_details={"signature": sig, "task": task},
        )

    def _wrapllm(
        self, name: str, sig: str, task: str | None, samples: list[Sample]
    ) -> SynthOutcome | str:
        examples = _examples(samples, lambda s: s.completion or "")
        if len(examples) < MIN_EXAMPLES:
            return (
                f"{TOO_FEW}: {len(examples)} distinct (prompt, completion) "
                f"pairs, at least {MIN_EXAMPLES} needed to calibrate a reward model"
            )
        description = f"Judge responses to prompts like: {examples[0].prompt[:PROMPT_CHARS]}"
        outcome = wrapllm(
            description,
            examples,
            name,
            self.library,
            gate_config=self.gate_config,
            extra_details={"signature": sig, "task": task},
        )
        if not outcome.stored_as:
            return f"no reward model for this group: {outcome.reason}"
        return outcome

    # -- names and reuse ---------------------------------------------------------------------

    def _name(self, task: str | None, sig: str) -> str:
        """The task's name when the samples name one and it is free (or already a
        synthesized tool's), else `synth_<task or signature hash>`."""
        base = _slug(task) if task else "synth_" + hashlib.sha1(sig.encode()).hexdigest()[:10]
        try:
            record = self.library.record(base)
        except UnknownToolError:
            return base
        if record.spec.provenance == "synth" or base.startswith("synth_"):
            return base
        return f"synth_{base}"

    def _reuse(self, sig: str, task: str | None) -> RewardTool | None:
        """An admitted synthesized tool built for this signature or this task, if any: one
        whose config a gate event admitted (`is_gated`), not merely one whose spec says
        `synth` (a tools file can say that)."""
        for rec in self.library.records():
            if rec.spec.provenance != "synth" or rec.spec.name.endswith(REJECTED_SUFFIX):
                continue
            made_for: dict[str, Any] = dict(rec.spec.validation.get("synth", {}))
            if not (made_for.get("signature") == sig or (task and made_for.get("task") == task)):
                continue
            if not is_gated(self.library, rec.spec.name, rec.config):
                log.warning("%s says it was synthesized, but no gate admitted it", rec.spec.name)
                continue
            try:
                return self.library.get(rec.spec.name)
            except RewardsmithError as exc:
                log.warning("synthesized tool %s cannot be built: %s", rec.spec.name, exc)
        return None


def _shared_task(samples: Sequence[Sample]) -> str | None:
    tasks = {s.task for s in samples}
    return tasks.pop() if len(tasks) == 1 else None


def _examples(samples: Sequence[Sample], reference_of: Any) -> list[Example]:
    """Distinct (prompt, reference) examples, each keeping one completion to show its
    answer style (unlabeled)."""
    seen: dict[tuple[str, str], Example] = {}
    for s in samples:
        ref = reference_of(s)
        key = (s.prompt_text(), ref)
        if ref.strip() and key not in seen:
            seen[key] = Example(s.prompt_text(), ref, s.completion or None, None)
        if len(seen) >= MAX_GROUP_EXAMPLES:
            break
    return list(seen.values())
