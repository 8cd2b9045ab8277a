"""Core types shared by every part of rewardsmith (docs/architecture.md, Design, "Core
types").

A trainer hands rewardsmith `Sample`s; a `RewardTool` answers with one `Reward` per
sample, always in the same order and always of the same type.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["ok", "not_applicable", "timeout", "error", "invalid_reference"]
STATUSES: tuple[Status, ...] = ("ok", "not_applicable", "timeout", "error", "invalid_reference")

ToolKind = Literal["verifier", "code", "model", "judge", "composite"]
TOOL_KINDS: tuple[ToolKind, ...] = ("verifier", "code", "model", "judge", "composite")

# `synth`: made by synthesis (CodeVerify or WrapLLM, which one is in `validation["synth"]`).
# `codeverify` and `wrapllm` are what libraries written before `synth` existed may hold.
Provenance = Literal["builtin", "synth", "codeverify", "wrapllm", "search", "user"]
PROVENANCES: tuple[Provenance, ...] = (
    "builtin",
    "synth",
    "codeverify",
    "wrapllm",
    "search",
    "user",
)

CostClass = Literal["cheap", "moderate", "expensive"]

# The two layouts of a reward's JSON (`Reward.to_dict`): an output line's, the HTTP API's.
RewardLayout = Literal["line", "api"]

# The reference formats the router tells apart (`router.features` reads a sample's; a tool's
# is `ToolSpec.ref_format`): none, a number, LaTeX, an option letter, an option index among
# the options a prompt lists, unit tests, a reasoning-gym dataset entry, any other JSON,
# free text.
RefFormat = Literal[
    "none",
    "number",
    "latex",
    "choice",
    "choice_index",
    "unit_tests",
    "json_entry",
    "json",
    "free_text",
]
REF_FORMATS: tuple[RefFormat, ...] = (
    "none",
    "number",
    "latex",
    "choice",
    "choice_index",
    "unit_tests",
    "json_entry",
    "json",
    "free_text",
)

Message = Mapping[str, Any]
Prompt = str | Sequence[Message]


@dataclass(frozen=True)
class Sample:
    """One (prompt, completion, reference) triple to score.

    `prompt` is a string or chat messages (`[{"role": ..., "content": ...}]`);
    `reference` is the gold answer, unit tests, reference translation... or None;
    `task` is an optional data-source hint used to pick a tool.
    """

    completion: str
    prompt: Prompt | None = None
    reference: str | None = None
    task: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None

    def prompt_text(self) -> str:
        """The prompt as plain text (chat messages joined by role)."""
        if self.prompt is None:
            return ""
        if isinstance(self.prompt, str):
            return self.prompt
        return "\n".join(f"{m.get('role', 'user')}: {m.get('content', '')}" for m in self.prompt)


@dataclass(frozen=True)
class Reward:
    """The answer for one sample.

    `score` is None only when the status is `not_applicable` or the reference is invalid;
    `components` holds every part of a composite score; `tool` is `name@version`;
    `reason` says in a few words why this score.
    """

    score: float | None
    status: Status = "ok"
    components: Mapping[str, float] = field(default_factory=dict)
    tool: str = ""
    reason: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown reward status {self.status!r}; expected one of {STATUSES}")
        if self.score is not None and not math.isfinite(self.score):
            raise ValueError(f"reward score must be finite, got {self.score!r}")

    def to_dict(self, layout: RewardLayout = "line") -> dict[str, Any]:
        """The one JSON form of a reward, wherever one leaves a process: output and rollout
        lines, the HTTP API, the server's and the verifier pool's workers (docs/architecture.md,
        Design, "JSONL in/out"). Two layouts of the same values, both read by users and kept
        as they are: `line`, an output line's `reward, status, tool, components, reason`
        (also what the workers send), and `api`, an item of the HTTP API's `rewards`, `score,
        status, components, tool, reason`. A component is a float, null when it is not a
        finite number (JSON has no NaN)."""
        components = {str(k): _finite(v) for k, v in self.components.items()}
        if layout == "api":
            return {
                "score": self.score,
                "status": self.status,
                "components": components,
                "tool": self.tool,
                "reason": self.reason,
            }
        return {
            "reward": self.score,
            "status": self.status,
            "tool": self.tool,
            "components": components,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], layout: RewardLayout = "line") -> Reward:
        """The reward `to_dict(layout)` wrote (`components` null are left out: they were
        not finite). Anything else raises `ValueError` naming the field; the caller says
        where the data came from."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a reward must be an object, got {type(data).__name__}")
        key = "score" if layout == "api" else "reward"
        score = data.get(key)
        if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
            raise ValueError(f"'{key}' must be a number or null, got {score!r:.40}")
        status = data.get("status")
        if status not in STATUSES:
            raise ValueError(f"'status' must be one of {', '.join(STATUSES)}, got {status!r:.40}")
        parts = data.get("components", {})
        if not isinstance(parts, Mapping) or not all(
            v is None or (isinstance(v, int | float) and not isinstance(v, bool))
            for v in parts.values()
        ):
            raise ValueError("'components' must be an object of numbers (null: not finite)")
        tool, reason = data.get("tool", ""), data.get("reason", "")
        if not isinstance(tool, str) or not isinstance(reason, str):
            raise ValueError("'tool' and 'reason' must be strings")
        return cls(
            None if score is None else float(score),
            status,
            {str(k): float(v) for k, v in parts.items() if v is not None},
            tool,
            reason,
        )


def _finite(value: float) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None


@dataclass(frozen=True)
class ToolSpec:
    """What a tool is, what it needs and where it came from (stored in the library).

    `reference_format` is prose for people (`tools list`, the LLM router's prompt);
    `ref_format` is the key the router matches a sample's format against. Whether the tool
    needs a reference is one fact, `ref_format != "none"`, and `needs_reference` always
    agrees with it: `needs_reference=False` alone means `none`; with a format other than
    `none` or the default it is a contradiction and refused.
    """

    name: str
    version: int = 1
    kind: ToolKind = "verifier"
    domains: tuple[str, ...] = ()
    description: str = ""
    needs_reference: bool = True
    reference_format: str = "free text"
    cost: CostClass = "cheap"
    provenance: Provenance = "builtin"
    validation: Mapping[str, Any] = field(default_factory=dict)
    exemplars: tuple[str, ...] = ()
    ref_format: RefFormat = "free_text"

    def __post_init__(self) -> None:
        if self.kind not in TOOL_KINDS:
            raise ValueError(f"unknown tool kind {self.kind!r}; expected one of {TOOL_KINDS}")
        if self.provenance not in PROVENANCES:
            raise ValueError(
                f"unknown provenance {self.provenance!r}; expected one of {PROVENANCES}"
            )
        if self.ref_format not in REF_FORMATS:
            raise ValueError(
                f"unknown reference format {self.ref_format!r}; expected one of {REF_FORMATS}"
            )
        if not self.needs_reference and self.ref_format not in ("none", "free_text"):
            raise ValueError(
                f"tool {self.name!r} needs no reference but names the reference format "
                f"{self.ref_format!r}; drop one of the two"
            )
        if not self.needs_reference:
            object.__setattr__(self, "ref_format", "none")
        object.__setattr__(self, "needs_reference", self.ref_format != "none")

    @property
    def ref(self) -> str:
        """`name@version`, the form written into every `Reward.tool`."""
        return f"{self.name}@{self.version}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "kind": self.kind,
            "domains": list(self.domains),
            "description": self.description,
            "needs_reference": self.needs_reference,
            "reference_format": self.reference_format,
            "ref_format": self.ref_format,
            "cost": self.cost,
            "provenance": self.provenance,
            "validation": dict(self.validation),
            "exemplars": list(self.exemplars),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolSpec:
        """A spec from its `to_dict` form. A spec written before `ref_format` existed (an
        older library row, a tools file) gets the key its prose names, read once here."""
        needs_reference = bool(data.get("needs_reference", True))
        prose = data.get("reference_format", "free text")
        key: Any = data.get("ref_format")  # checked in __post_init__
        if key is None and not needs_reference:
            key = "none"
        elif key is None:
            key = legacy_ref_format(prose) if isinstance(prose, str) else "free_text"
        return cls(
            name=data["name"],
            version=int(data.get("version", 1)),
            kind=data.get("kind", "verifier"),
            domains=tuple(data.get("domains", ())),
            description=data.get("description", ""),
            needs_reference=needs_reference,
            reference_format=prose,
            cost=data.get("cost", "cheap"),
            provenance=data.get("provenance", "builtin"),
            validation=dict(data.get("validation", {})),
            exemplars=tuple(data.get("exemplars", ())),
            ref_format=key,
        )


# How specs written before `ref_format` existed named their format in prose, first match
# wins (what the router read back by substring until then; only `from_dict` reads it now).
_LEGACY_FORMAT_WORDS: tuple[tuple[str, RefFormat], ...] = (
    ("unit test", "unit_tests"),
    ("test", "unit_tests"),
    ("reasoning-gym", "json_entry"),
    ("reasoning_gym", "json_entry"),
    ("dataset entry", "json_entry"),
    ("json entry", "json_entry"),  # what synthesis wrote for a reasoning-gym entry
    ("json", "json"),
    ("index", "choice_index"),
    ("choice", "choice"),
    ("letter", "choice"),
    ("latex", "latex"),
    ("number", "number"),
    ("numeric", "number"),
    ("none", "none"),
)


def legacy_ref_format(prose: str) -> RefFormat:
    """The `RefFormat` an old spec's free-form `reference_format` names (for loading specs
    written without `ref_format`; new specs carry the key itself)."""
    text = prose.lower()
    return next((fmt for word, fmt in _LEGACY_FORMAT_WORDS if word in text), "free_text")


class RewardTool(ABC):
    """A reward tool: batch first, one return type.

    `score` returns exactly one `Reward` per sample, in order. Bad model output scores 0.0
    with a reason, never an exception; a bad reference gives `invalid_reference`; a bad
    config raises `ConfigError` at construction.
    """

    spec: ToolSpec

    @abstractmethod
    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        """Score a batch of samples."""

    def close(self) -> None:  # noqa: B027 - optional hook, most tools hold nothing
        """Release worker processes or models the tool holds."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec.ref}>"
