"""A routing decision: library tool(s) with weights and a confidence, or "synthesize".

`Decision.to_dict()` is the `route` field written by `rewardsmith route` and the detail of
the library's routing events.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Action = Literal["tool", "synthesize"]
SynthKind = Literal["code_verifier", "reward_model"]
SYNTH_KINDS: tuple[SynthKind, ...] = ("code_verifier", "reward_model")
Backend = Literal["embedded", "llm", "task_map", "rules"]


@dataclass(frozen=True)
class ToolWeight:
    """One library tool in a decision (`name@version`) and its weight in the sum."""

    tool: str
    weight: float = 1.0


@dataclass(frozen=True)
class Decision:
    """What the router decided for one task signature.

    `action == "tool"`: score with `tools` (weights sum to 1). `action == "synthesize"`: no
    library tool fits; `kind` says what to build (a code verifier when the reference can be
    checked by a program, a reward model otherwise) and `why` says what was missing.
    `confidence` is the calibrated probability that the decision is right.
    """

    action: Action
    confidence: float
    backend: Backend
    tools: tuple[ToolWeight, ...] = ()
    kind: SynthKind | None = None
    why: str = ""
    signature: str = ""
    scores: Mapping[str, float] = field(default_factory=dict)
    tokens: Mapping[str, int] = field(default_factory=dict)  # LLM backend: this call's tokens

    @property
    def primary(self) -> str | None:
        """The highest-weighted tool, or None for "synthesize"."""
        if not self.tools:
            return None
        return max(self.tools, key=lambda t: t.weight).tool

    @property
    def label(self) -> str:
        """Tool name (no version) or `synthesize`: what the bench compares with its labels."""
        primary = self.primary
        return "synthesize" if primary is None else primary.partition("@")[0]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "action": self.action,
            "tools": [{"tool": t.tool, "weight": round(t.weight, 4)} for t in self.tools],
            "confidence": round(self.confidence, 4),
            "backend": self.backend,
            "signature": self.signature,
        }
        if self.action == "synthesize":
            out["synthesize"] = {"kind": self.kind, "why": self.why}
        elif self.why:
            out["why"] = self.why
        if self.tokens:
            out["tokens"] = dict(self.tokens)
        return out


def synthesize(
    kind: SynthKind, why: str, confidence: float, backend: Backend, **kw: Any
) -> Decision:
    """A "synthesize" decision."""
    return Decision("synthesize", confidence, backend, (), kind, why, **kw)
