"""The tool classes synthesis stores in the library.

- `CodeVerifierTool`: a synthesized `def reward(...)` program (CodeVerify, offline or LLM),
  admitted by the 4-stage check and run in the sandbox like every `reward_function` tool.
- `MathComposedTool`: an offline composition whose comparator is math equivalence. Its
  extractors and normalizers run in this process (they are rewardsmith's own primitive
  source, compiled in the restricted namespace; never code from a model or a user) and the
  comparison is the built-in `math` tool's (math-verify, in its worker processes). Like a
  rendered program, it refuses hedges: when the completion offers several answers
  (`rewardsmith.answers`), each must be equivalent to the reference.
- `CalibratedModelTool` (WrapLLM): a local sequence-classification reward model whose raw
  score is mapped to [0, 1] by a logistic calibration fitted on examples; records the model
  id and revision it wraps.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rewardsmith.answers import hedge_reason, read_answers, read_final, split_for
from rewardsmith.errors import ConfigError
from rewardsmith.synth.catalogue import ANY_STYLE
from rewardsmith.tools.base import make_reward, score_batch
from rewardsmith.tools.reward_fn import RewardFunctionTool
from rewardsmith.types import Reward, RewardTool, Sample, ToolSpec

# The end of a completion that holds its answer (as `primitives.MAX_COMPLETION_CHARS`).
READ_CHARS = 20_000

CODE_VERIFIER_FACTORY = "rewardsmith.synth.tools:CodeVerifierTool"
MATH_COMPOSED_FACTORY = "rewardsmith.synth.tools:MathComposedTool"
CALIBRATED_MODEL_FACTORY = "rewardsmith.synth.tools:CalibratedModelTool"


class CodeVerifierTool(RewardFunctionTool):
    """A synthesized reward program run in the sandbox (see the module docstring)."""

    def __init__(
        self,
        spec: ToolSpec,
        source: str,
        bounds: Sequence[float] | None = (0.0, 1.0),
        timeout: float = 10.0,
        memory_mb: int = 256,
        workers: int = 1,
        composition: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(spec, source, bounds, timeout, memory_mb, workers)
        from rewardsmith.synth.primitives import Composition

        # An offline CodeVerify program is `render(composition)`: its reasons can be read
        # in this process from the same trusted primitives; LLM-written code has none.
        self.composition = None if composition is None else Composition.from_dict(composition)

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        """The sandbox's scores, each with a reason (`explain`) when the program is a
        composition of rewardsmith's primitives."""
        rewards = super().score(samples)
        if self.composition is None:
            return rewards
        out = []
        for sample, r in zip(samples, rewards, strict=True):
            if r.status == "ok" and not r.reason and r.score is not None:
                reason = explain(self.composition, sample, r.score)
                r = make_reward(self.spec, r.score, r.status, reason, r.components)
            out.append(r)
        return out


def explain(composition: Any, sample: Sample, score: float) -> str:
    """Why a composed verifier gave `score`: what it read, from which style, and which
    comparison decided (read again here with the same primitives, in this process)."""
    from rewardsmith.synth.primitives import NORMALIZERS, shared_evaluator

    text = (sample.completion or "")[-READ_CHARS:]
    as_written = ANY_STYLE not in composition.extractors
    found = read_final(text, not as_written)
    if found is None:
        return "no final answer found in any common style"
    style, answer = found
    ev = shared_evaluator()
    if sample.reference is not None and ev.hedges(composition, text, sample.reference, answer):
        return f"read {answer[:80]!r} ({style}), but the completion offers other answers too"
    norms = ", ".join(NORMALIZERS[n].summary for n in composition.normalizers)
    how = composition.comparator.replace("_", " ") + (f" after {norms}" if norms else "")
    verdict = "matches" if score >= 0.5 else "does not match"
    return f"read {answer[:80]!r} ({style}); {how}: {verdict} the reference"


# A word of three letters or more that is no LaTeX command: prose, not a value.
PROSE_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")


def math_value(c: Any, completion: str, answer: str) -> bool:
    """Whether `answer` may go to the math tool: any answer in a marker, but one read from
    an unmarked line only when it holds no prose ("Simplify 6/10." echoes the prompt: the
    math tool would read 6/10 out of it)."""
    if ANY_STYLE not in c.extractors:
        return True
    found = read_final(completion)
    if found is None or found[0] not in ("last_line", "label_colon"):
        return True
    return PROSE_WORD.search(answer) is None


class MathComposedTool(RewardTool):
    """A composition with the `math_equivalent` comparator (see the module docstring)."""

    def __init__(
        self,
        spec: ToolSpec,
        composition: Mapping[str, Any],
        source: str = "",
        timeout_seconds: float = 5.0,
        workers: int | None = None,
    ) -> None:
        from rewardsmith.synth.primitives import Composition
        from rewardsmith.tools.math import MathTool

        self.spec = spec
        try:
            self.composition = Composition.from_dict(composition)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"tool {spec.name!r}: bad composition: {exc}") from exc
        if self.composition.comparator != "math_equivalent":
            raise ConfigError(
                f"tool {spec.name!r}: MathComposedTool needs the math_equivalent comparator; "
                "other compositions are CodeVerifierTool programs"
            )
        self.source = source
        self.math = MathTool(
            ToolSpec(
                name=f"{spec.name}.math",
                domains=("math",),
                reference_format="latex",
                ref_format="latex",
            ),
            timeout_seconds=timeout_seconds,
            workers=workers,
        )

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        from rewardsmith.synth.primitives import shared_evaluator

        ev = shared_evaluator()
        c = self.composition
        rewards: list[Reward | None] = [None] * len(samples)
        # (sample index, its answers to check: the composition's, then every other offered)
        todo: list[tuple[int, list[Sample]]] = []
        for i, s in enumerate(samples):
            reference: Any = s.reference
            if reference is not None and c.reference_extractor:
                reference = ev.apply(c.reference_extractor, reference)
            answer = ev.extract(c, s.completion or "")
            if isinstance(answer, str) and not math_value(c, s.completion or "", answer):
                answer = None  # a sentence on the last line is no value to compare
            for name in c.normalizers:
                if isinstance(answer, str) and isinstance(reference, str):
                    answer, reference = ev.apply(name, answer), ev.apply(name, reference)
            if not isinstance(answer, str) or not isinstance(reference, str):
                rewards[i] = make_reward(self.spec, 0.0, reason="no answer found")
                continue
            offered, _, negated = read_answers(s.completion or "", split_for(reference))
            if not offered and negated:
                rewards[i] = make_reward(self.spec, 0.0, reason="every answer is negated")
                continue
            # The math tool reads a \boxed{} answer before anything else in a completion.
            answers = [answer, *(offered if len(offered) > 1 else [])]
            todo.append(
                (i, [Sample(completion=f"\\boxed{{{a}}}", reference=reference) for a in answers])
            )
        flat = [sample for _, checks in todo for sample in checks]
        scored = iter(score_batch(self.math, flat) if flat else [])
        for i, checks in todo:
            results = [next(scored) for _ in checks]
            r = results[0]
            if len(results) > 1 and any(x.score != 1.0 for x in results[1:]):
                offered = [chk.completion[7:-1] for chk in checks[1:]]
                r = make_reward(self.spec, 0.0, reason=hedge_reason(offered))
            rewards[i] = make_reward(self.spec, r.score, r.status, r.reason, r.components)
        return [r or make_reward(self.spec, 0.0, "error", reason="not scored") for r in rewards]

    def close(self) -> None:
        self.math.close()


def calibrate(score: float, a: float, b: float) -> float:
    """The logistic calibration `1 / (1 + exp(-(a * score + b)))` (Platt 1999)."""
    z = a * score + b
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


class CalibratedModelTool(RewardTool):
    """A local reward model (any `ModelTool` directory) with its raw score calibrated to
    [0, 1]; components keep the raw `logit`. `model_id` and `revision` say exactly which
    weights were wrapped."""

    def __init__(
        self,
        spec: ToolSpec,
        *,
        path: str,
        model_id: str,
        revision: str,
        calibration: Mapping[str, float],
        batch_size: int = 16,
        device: str = "auto",
        prompt_max_tokens: int | None = None,
        completion_max_tokens: int | None = None,
        threads: int | None = None,
    ) -> None:
        from rewardsmith.tools.model import ModelTool

        self.spec = spec
        self.model_id = model_id
        self.revision = revision
        try:
            self.a, self.b = float(calibration["a"]), float(calibration["b"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"tool {spec.name!r}: calibration needs numbers 'a' and 'b': {exc}"
            ) from exc
        if not (math.isfinite(self.a) and math.isfinite(self.b)):
            raise ConfigError(f"tool {spec.name!r}: calibration must be finite")
        self.model = ModelTool(
            spec,
            path=path,
            batch_size=batch_size,
            device=device,
            prompt_max_tokens=prompt_max_tokens,
            completion_max_tokens=completion_max_tokens,
            threads=threads,
        )

    def raw_scores(self, samples: Sequence[Sample]) -> list[Reward]:
        """The model's uncalibrated rewards (what the calibration is fitted on)."""
        return self.model.score(samples)

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        out = []
        for r in self.raw_scores(samples):
            if r.status != "ok" or r.score is None:
                out.append(r)
                continue
            p = calibrate(r.score, self.a, self.b)
            out.append(
                make_reward(
                    self.spec,
                    p,
                    reason=f"reward model {self.model_id}@{self.revision[:12]}, calibrated",
                    components={"logit": r.score, "calibrated": p},
                )
            )
        return out

    def close(self) -> None:
        self.model.close()
