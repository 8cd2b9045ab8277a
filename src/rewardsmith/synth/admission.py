"""From a candidate tool to a library entry: build it, gate it, store it.

An admitted candidate becomes a new version of its name, with provenance `synth` and the
gate's report and the synthesis details in its spec's `validation`. The gate event names the
digest of the config it admitted (`config_digest`): a stored tool counts as gated only when
such an event matches its config (`is_gated`), whatever its spec claims. A rejected candidate is
stored too, retired, with the same record, so its source and reasons stay readable
(`tools show`): under its own name when no admitted version of that name is in use, else
under `NAME.rejected`, so that a failed attempt never takes a working tool out of use.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rewardsmith.errors import RewardsmithError, UnknownToolError
from rewardsmith.library.names import MAX_NAME_CHARS, check_tool_name
from rewardsmith.library.registry import build_tool
from rewardsmith.library.store import Library
from rewardsmith.router.features import sample_ref_format
from rewardsmith.synth.examples import Example, prompts_of
from rewardsmith.synth.gate import GateConfig, GateReport, build_failure, gate_tool, log_gate
from rewardsmith.types import RefFormat, Sample, ToolSpec

# Prompts kept as a new tool's router exemplars.
EXEMPLARS = 16
REJECTED_SUFFIX = ".rejected"

# How a new tool's `reference_format` (prose for people) says its `ref_format` key.
FORMAT_PROSE: dict[RefFormat, str] = {
    "none": "none",
    "number": "number",
    "latex": "latex",
    "choice": "choice letter",
    "choice_index": "option index (number or roman numeral of a listed option)",
    "unit_tests": "unit tests",
    "json_entry": "reasoning-gym entry (JSON)",
    "json": "JSON",
    "free_text": "free text",
}


@dataclass
class SynthOutcome:
    """What a synthesis produced: admitted or not, where it was stored, the gate's report."""

    name: str
    admitted: bool
    stored_as: str  # name@version in the library
    method: str
    report: GateReport
    details: dict[str, Any] = field(default_factory=dict)
    source: str | None = None

    @property
    def reason(self) -> str:
        return self.report.reason

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "admitted": self.admitted,
            "stored_as": self.stored_as,
            "method": self.method,
            "reason": self.report.reason,
            "gate": self.report.to_dict(),
            "synth": {"method": self.method, **self.details},
            "source": self.source,
        }


def config_digest(config: Mapping[str, Any]) -> str:
    """SHA-256 of a tool config (JSON, sorted keys): what a gate event says it admitted."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()


def is_gated(library: Library, name: str, config: Mapping[str, Any]) -> bool:
    """Whether a gate event admitted exactly this config under `name` (provenance `synth`
    is read from the spec, which a tools file can write; the event log only the gate does)."""
    digest = config_digest(config)
    return any(
        e.detail.get("admitted") is True and e.detail.get("config_sha256") == digest
        for e in library.history(name, kind="gate")
    )


def examples_format(examples: Sequence[Example]) -> RefFormat:
    """The examples' most common reference format, read as the router reads a sample's
    (`router.features.sample_ref_format`, prompt included)."""
    counts = Counter(
        sample_ref_format(Sample(completion="", prompt=e.prompt, reference=e.reference))
        for e in examples
    )
    return counts.most_common(1)[0][0] if counts else "free_text"


def synth_spec(
    name: str,
    kind: str,
    description: str,
    examples: Sequence[Example],
    *,
    needs_reference: bool = True,
    cost: str = "cheap",
) -> ToolSpec:
    """The spec of a synthesized tool: provenance `synth`, the examples' prompts as router
    exemplars (so the router learns to send this task here), their reference format as the
    typed key the router reads (`ref_format`)."""
    key = examples_format(examples) if needs_reference else "none"
    return ToolSpec(
        name=check_tool_name(name),  # before any work is done for a name the library refuses
        kind=kind,  # type: ignore[arg-type]
        domains=("synthesized",),
        description=description,
        needs_reference=needs_reference,
        reference_format=FORMAT_PROSE[key],
        ref_format=key,
        cost=cost,  # type: ignore[arg-type]
        provenance="synth",
        exemplars=prompts_of(examples, EXEMPLARS),
    )


def rejected_name(library: Library, name: str) -> str:
    """Where a rejected candidate for `name` is stored (see the module docstring)."""
    try:
        record = library.record(name)
    except UnknownToolError:
        return name
    if record.retired:
        return name
    return name[: MAX_NAME_CHARS - len(REJECTED_SUFFIX)] + REJECTED_SUFFIX


def evaluate(
    library: Library,
    spec: ToolSpec,
    config: Mapping[str, Any],
    *,
    held_out: Sequence[Example],
    all_examples: Sequence[Example],
    method: str,
    gate_config: GateConfig | None = None,
) -> GateReport:
    """Build the candidate and run the gate on `held_out` (a `gate` event either way)."""
    try:
        tool = build_tool(spec, config, resolve=library.get)
    except (RewardsmithError, OSError) as exc:
        report = build_failure(spec.name, str(exc))
        log_gate(library, spec.name, report, {"method": method})
        return report
    try:
        return gate_tool(
            tool,
            held_out,
            all_examples=all_examples,
            config=gate_config,
            library=library,
            name=spec.name,
            extra={"method": method, "config_sha256": config_digest(config)},
        )
    finally:
        tool.close()


def store(
    library: Library,
    spec: ToolSpec,
    config: Mapping[str, Any],
    report: GateReport,
    *,
    method: str,
    details: Mapping[str, Any] | None = None,
    source: str | None = None,
) -> SynthOutcome:
    """Store a gated candidate: admitted, or retired with its reasons (module docstring)."""
    details = dict(details or {})
    validation = {"gate": report.to_dict(), "synth": {"method": method, **details}}
    note = f"{method}: {report.reason}"
    if report.admitted:
        stored = library.add(replace(spec, validation=validation), config, note=note)
    else:
        where = rejected_name(library, spec.name)
        stored = library.add(
            replace(spec, name=where, validation=validation), config, note=note, retired=True
        )
    return SynthOutcome(spec.name, report.admitted, stored.ref, method, report, details, source)


def admit(
    library: Library,
    spec: ToolSpec,
    config: Mapping[str, Any],
    *,
    held_out: Sequence[Example],
    all_examples: Sequence[Example],
    method: str,
    details: Mapping[str, Any] | None = None,
    source: str | None = None,
    gate_config: GateConfig | None = None,
) -> SynthOutcome:
    """`evaluate` then `store`: build the candidate, gate it on `held_out`, keep it."""
    report = evaluate(
        library,
        spec,
        config,
        held_out=held_out,
        all_examples=all_examples,
        method=method,
        gate_config=gate_config,
    )
    return store(library, spec, config, report, method=method, details=details, source=source)
