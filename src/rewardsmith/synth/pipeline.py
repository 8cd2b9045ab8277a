"""CodeVerify end to end: examples in, a gated tool (or a stored rejection) out.

`codeverify(examples, name, library)` splits the examples (a third held out), writes a
candidate from the fit part (offline search, or an LLM), and hands it to the admission gate
(`rewardsmith.synth.admission`). The offline search gets the `math` comparator when the
references are mostly numbers or LaTeX.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rewardsmith.errors import ConfigError, InvalidReferenceError
from rewardsmith.library.store import Library
from rewardsmith.router.features import reference_format
from rewardsmith.synth.admission import SynthOutcome, admit, synth_spec
from rewardsmith.synth.codeverify import CodeCandidate, synthesize_offline
from rewardsmith.synth.examples import Example, check_examples
from rewardsmith.synth.gate import GateConfig
from rewardsmith.synth.primitives import Evaluator
from rewardsmith.synth.tools import CODE_VERIFIER_FACTORY, MATH_COMPOSED_FACTORY
from rewardsmith.tools.math import MathTool

if TYPE_CHECKING:
    from rewardsmith.llm.client import LLMClient

log = logging.getLogger(__name__)

BACKENDS = ("offline", "llm")
# Share of references that must look like numbers or LaTeX before the search tries math
# equivalence (it needs math-verify and is the costliest comparator).
MATH_SHARE = 0.5


_MATH: MathTool | None = None


def _math_equivalent(answer: str, reference: str) -> bool:
    """The `math` tool's decision (math-verify) for one answer, in this process: its own
    extract, reference parse and compare, so the search and the tool never disagree."""
    global _MATH
    if _MATH is None:
        _MATH = MathTool(workers=0)
    found = _MATH.extract(f"\\boxed{{{answer}}}")
    if not found:
        return False
    try:
        gold = _MATH.parse_reference(reference)
    except InvalidReferenceError:
        return False
    return _MATH.compare(found, gold).score == 1.0


def _evaluator_for(examples: Sequence[Example]) -> Evaluator | None:
    mathy = sum(reference_format(e.reference) in ("number", "latex") for e in examples)
    if mathy < MATH_SHARE * len(examples):
        return None
    return Evaluator(host={"math_equivalent": _math_equivalent})


def code_config(candidate: CodeCandidate) -> dict[str, Any]:
    """The library config of a CodeVerify candidate."""
    comp = candidate.composition
    if comp is not None and comp.host:
        return {
            "factory": MATH_COMPOSED_FACTORY,
            "params": {"composition": comp.to_dict(), "source": candidate.source},
        }
    params: dict[str, Any] = {"source": candidate.source, "bounds": [0.0, 1.0]}
    if comp is not None:
        params["composition"] = comp.to_dict()  # the reasons of its rewards
    return {"factory": CODE_VERIFIER_FACTORY, "params": params}


def codeverify(
    examples: Sequence[Example],
    name: str,
    library: Library,
    *,
    backend: str = "offline",
    gate_config: GateConfig | None = None,
    llm_client: LLMClient | None = None,
    max_attempts: int | None = None,
    llm_max_tokens: int | None = None,
    title: str | None = None,
    extra_details: dict[str, Any] | None = None,
) -> SynthOutcome:
    """Synthesize a verifier called `name` from `examples`, gate it, store it.
    `extra_details` join the synthesis record kept in the tool's spec."""
    if backend not in BACKENDS:
        raise ConfigError(f"unknown CodeVerify backend {backend!r}; expected one of {BACKENDS}")
    check_examples(examples)
    if backend == "offline":
        candidate = synthesize_offline(examples, title or name, _evaluator_for(examples))
    else:
        from rewardsmith.synth.codeverify_llm import DEFAULT_ATTEMPTS, MAX_TOKENS, synthesize_llm

        candidate = synthesize_llm(
            examples,
            title or name,
            client=llm_client,
            max_attempts=max_attempts or DEFAULT_ATTEMPTS,
            max_tokens=llm_max_tokens or MAX_TOKENS,
        )
    description = _description(candidate)
    spec = synth_spec(name, "code", description, examples)
    if candidate.source is None or not candidate.source.strip():
        config: dict[str, Any] = {"factory": CODE_VERIFIER_FACTORY, "params": {"source": ""}}
    else:
        config = code_config(candidate)
    return admit(
        library,
        spec,
        config,
        held_out=candidate.held_out,
        all_examples=examples,
        method=candidate.method,
        details={
            **candidate.details,
            "examples": len(examples),
            "fit_examples": len(candidate.fit),
            "held_out_examples": len(candidate.held_out),
            **(extra_details or {}),
        },
        source=candidate.source,
        gate_config=gate_config,
    )


def _description(candidate: CodeCandidate) -> str:
    how = candidate.composition.describe() if candidate.composition else "written by an LLM"
    return f"Synthesized verifier ({candidate.method}): {how}."
