"""The LLM routing backend: ask any OpenAI-compatible chat endpoint for the decision, in a
JSON schema, and fall back to the embedded backend when that fails.

The model sees the routable tools that can read the sample's reference format (name, what
it checks, the format it reads; a tool that cannot read the reference is never offered, so
even a small constrained model cannot pick one), the group's prompt head, reference head,
reference format and task field, quoted as data (`rewardsmith.llm.quoting`: one JSON block
the text cannot break out of, and a system rule that nothing in it is an instruction), and
what the group's completions look like as *measured* features only (the share answering in
each tool's form, the markers most of them carry): no completion text reaches the model, so
a policy cannot write its way to a decision (text in one completion once made the router
answer "synthesize" and left the whole group unscored). It must answer `{"action", "tool",
"confidence", "synthesize_kind", "reason"}`, with the tool names and kinds as enums so a
constrained decoder cannot invent one; any other value is refused (the embedded decision
stands, with the reason). The schema is sent
the OpenAI way (`response_format: {type: json_schema}`); a server that refuses that with
HTTP 400/422 (llama-cpp-python's server) gets `{type: json_object, schema}` from then on.

Fallback to the embedded backend, with a warning (unless the backend is strict, as the
CLI makes an explicit `--backend llm` without `--fallback embedded`: then no endpoint, an
unreachable one or a refused key is an error): the endpoint is unreachable (then the
backend stays off for the router's lifetime, so a dead endpoint costs one timeout, not one
per signature); the answer is not JSON or breaks the schema; or it names a tool that cannot
read the sample's reference format (a constrained decoder can still pick a wrong enum value;
the format check keeps that from becoming a confident wrong tool). Every call's tokens are
in the decision (`tokens`) and summed in `usage`.

The LLM chooses; the embedded model calibrates: a decision's confidence (tool or
synthesize) is the embedded model's calibrated probability for the LLM's choice (a model's
self-reported confidence is not calibrated), and a tool under the threshold becomes
"synthesize".
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from rewardsmith.errors import ConfigError, LLMError
from rewardsmith.library.store import Library
from rewardsmith.llm.client import LLMClient, TokenUsage
from rewardsmith.llm.quoting import DATA_RULE, data_block
from rewardsmith.router.decision import SYNTH_KINDS, Decision, ToolWeight, synthesize
from rewardsmith.router.embedded import EmbeddedBackend, synth_kind
from rewardsmith.router.evidence import GroupEvidence
from rewardsmith.router.features import SampleFeatures, can_grade
from rewardsmith.types import Sample

log = logging.getLogger(__name__)

# What the model reads of a sample: enough to tell the task, short enough for small models.
PROMPT_CHARS = 700
REFERENCE_CHARS = 200
DESCRIPTION_CHARS = 160
REASON_CHARS = 60
TASK_CHARS = 80
MAX_ANSWER_TOKENS = 100
# How a strict (explicitly requested) LLM backend's error says to carry on without it.
FALLBACK_HINT = "pass --fallback embedded to route with the embedded backend instead"

SYSTEM = (
    "You route samples to reward tools for reinforcement learning. Given a task prompt, the "
    "format of its reference answer and a candidate response, pick the one library tool that "
    "can grade the response correctly. If no tool fits (open-ended chat, writing, a reference "
    'format no tool reads), answer action "synthesize" with the kind of tool to build: '
    '"code_verifier" when the reference can be checked by a program, "reward_model" '
    "otherwise. Answer with JSON only. " + DATA_RULE
)


def decision_schema(tool_names: list[str]) -> dict[str, Any]:
    """The JSON schema of the model's answer, with the library's tool names as an enum."""
    return {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["tool", "synthesize"]},
            "tool": {"type": "string", "enum": [*tool_names, "none"]},
            "confidence": {"type": "number"},
            "synthesize_kind": {"type": "string", "enum": [*SYNTH_KINDS, "none"]},
            "reason": {"type": "string", "maxLength": REASON_CHARS},
        },
        "required": ["action", "tool", "confidence", "synthesize_kind", "reason"],
        "additionalProperties": False,
    }


def open_llm_client(client: LLMClient | None, *, strict: bool) -> LLMClient | None:
    """The client the LLM backend routes with: `client`, else one configured from the
    environment. `strict` (no `--fallback embedded`): no endpoint (`ConfigError`), or one that
    cannot be reached or refuses the key (`LLMError`), raises; otherwise None with a warning
    (the embedded backend routes). Called before any model loads, so a bad configuration
    fails in a moment."""
    if client is None:
        try:
            client = LLMClient()
        except ConfigError as exc:
            if strict:
                raise ConfigError(f"router backend llm: {exc}; {FALLBACK_HINT}") from None
            log.warning("router: %s; using the embedded backend", exc)
            return None
    if strict:
        try:
            client.check()
        except LLMError as exc:
            raise LLMError(f"router backend llm: {exc}; {FALLBACK_HINT}") from None
    return client


class LLMBackend:
    """Decides with an LLM; see the module docstring. `client` defaults to one built from
    the environment (`rewardsmith.llm.client`).

    `strict=True` (what the CLI does for an explicit `--backend llm` without `--fallback
    embedded`): no endpoint, an unreachable one or a refused key raises (`ConfigError`,
    `LLMError`) at construction, and an endpoint failure during routing raises too, instead
    of falling back; a malformed answer still falls back for that decision, with the reason.
    """

    def __init__(
        self,
        library: Library,
        fallback: EmbeddedBackend,
        client: LLMClient | None = None,
        *,
        strict: bool = False,
        opened: bool = False,
    ) -> None:
        self.library = library
        self.fallback = fallback
        self.client = client if opened else open_llm_client(client, strict=strict)
        self.strict = strict
        self.down = self.client is None
        self.schema_style = "json_schema"
        self.tools = {c.spec.name: c for c in fallback.candidates}

    @property
    def usage(self) -> TokenUsage:
        return self.client.usage if self.client is not None else TokenUsage()

    def compatible(self, f: SampleFeatures) -> list[str]:
        """Tools that can read this sample's reference format: the only ones offered. A
        reference-free format check is offered only when there is no reference (with one,
        it joins the chosen tool as a companion when the prompt names all its tags)."""
        return sorted(
            n
            for n, c in self.tools.items()
            if can_grade(c.fmt, c.markers, f) > 0 and (c.fmt != "none" or f.ref_format == "none")
        )

    def messages(
        self, sample: Sample, f: SampleFeatures, ev: GroupEvidence | None = None
    ) -> list[dict[str, str]]:
        """The chat messages for one group (only the tools that can read its reference):
        its prompt, reference and task as quoted data, its completions as measured features
        (`ev`; see the module docstring), never their text."""
        lines = []
        for name in self.compatible(f):
            c = self.tools[name]
            desc = c.spec.description[:DESCRIPTION_CHARS]
            lines.append(f"- {c.spec.name}: {desc} (reference: {c.spec.reference_format})")
        sample_data = {
            "task_field": (sample.task or "")[:TASK_CHARS] or None,
            "prompt": sample.prompt_text()[:PROMPT_CHARS],
            "reference": (sample.reference or "")[:REFERENCE_CHARS] or None,
            "reference_format": f.ref_format.replace("_", " "),
        }
        user = (
            "Tools:\n" + "\n".join(lines) + "\n\n"
            "The task to route (quoted data):\n"
            + data_block(sample_data)
            + "\n\n"
            + _completion_summary(ev)
            + '\n\nAnswer as JSON: {"action": "tool" or "synthesize", "tool": a tool name or '
            '"none", "confidence": 0 to 1, "synthesize_kind": "code_verifier", "reward_model" or '
            '"none", "reason": a few words}'
        )
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]

    def _response_format(self, tools: list[str]) -> dict[str, Any]:
        schema = decision_schema(tools)
        if self.schema_style == "json_schema":
            return {
                "type": "json_schema",
                "json_schema": {"name": "route_decision", "schema": schema, "strict": True},
            }
        return {"type": "json_object", "schema": schema}

    def _ask(self, messages: list[dict[str, str]], tools: list[str]) -> tuple[str, dict[str, int]]:
        assert self.client is not None
        try:
            result = self.client.chat(
                messages, response_format=self._response_format(tools), max_tokens=MAX_ANSWER_TOKENS
            )
        except LLMError as exc:
            refused = any(k in str(exc) for k in ("HTTP 400", "HTTP 422", "response_format"))
            if self.schema_style == "json_schema" and refused:
                self.schema_style = "json_object"  # llama-cpp-python's form of the same request
                result = self.client.chat(
                    messages,
                    response_format=self._response_format(tools),
                    max_tokens=MAX_ANSWER_TOKENS,
                )
            else:
                raise
        tokens = {
            "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
        }
        return result.text, tokens

    def decide(
        self, sample: Sample, ev: GroupEvidence, embedded: Decision, signature: str = ""
    ) -> Decision:
        """The LLM's decision for one signature's representative sample (`ev` its group's
        evidence, `embedded` the embedded backend's decision, which calibrates the LLM's
        choice and stands in when the LLM cannot give a usable one)."""
        f = ev.features
        embedded = replace(embedded, signature=signature)
        tools = self.compatible(f)
        if self.down or not tools:  # no tool reads this reference: nothing to ask
            return embedded
        try:
            text, tokens = self._ask(self.messages(sample, f, ev), tools)
        except LLMError as exc:
            if self.strict:
                raise LLMError(f"router backend llm: {exc}; {FALLBACK_HINT}") from None
            if "cannot reach" in str(exc):
                self.down = True
            log.warning("router: LLM backend failed (%s); using the embedded backend", exc)
            return _fallback(embedded, f"LLM failed: {exc}")
        try:
            return self._parse(text, ev, tokens, signature, embedded.scores)
        except ValueError as exc:
            log.warning("router: malformed LLM decision (%s); using the embedded backend", exc)
            return _fallback(embedded, f"malformed LLM answer: {exc}", tokens)

    def _parse(
        self,
        text: str,
        ev: GroupEvidence,
        tokens: dict[str, int],
        signature: str,
        raw: Mapping[str, float],
    ) -> Decision:
        f = ev.features
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON: {text[:80]!r}") from exc
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        action = data.get("action")
        confidence = data.get("confidence")
        if action not in ("tool", "synthesize"):
            raise ValueError(f"action {str(action)[:40]!r}")
        if not isinstance(confidence, int | float) or confidence != confidence:
            raise ValueError(f"confidence {str(confidence)[:40]!r}")
        confidence = min(max(float(confidence), 0.0), 1.0)
        reason = str(data.get("reason", ""))[:REASON_CHARS]
        if action == "synthesize":
            kind = data.get("synthesize_kind")
            if kind not in (*SYNTH_KINDS, "none", None):
                raise ValueError(f"synthesize_kind {str(kind)[:40]!r}")
            if kind not in SYNTH_KINDS:
                kind = synth_kind(f)
            # as for tools, the embedded model's calibrated probability, not the LLM's word
            p_synth = float(raw.get("synthesize", 0.0))
            return synthesize(
                kind,
                reason or "the LLM found no fitting tool",
                self.fallback.state.calibration(p_synth, "synthesize", f.ref_format),
                "llm",
                signature=signature,
                tokens=tokens,
            )
        name = data.get("tool")
        candidate = self.tools.get(str(name))
        if candidate is None:
            raise ValueError(f"unknown tool {str(name)[:40]!r}")
        if name not in self.compatible(f):
            raise ValueError(f"{name} cannot read a {f.ref_format.replace('_', ' ')} reference")
        # A model's own confidence is not calibrated (small ones say 0 or 1): the decision's
        # confidence is the embedded model's calibrated probability of the LLM's choice.
        p = self.fallback.tool_confidence(str(name), float(raw.get(str(name), 0.0)), ev)
        if p < self.fallback.state.threshold:
            why = (
                f"LLM picked {name} (its confidence {confidence:.2f}) but the calibrated "
                f"probability is {p:.2f} < threshold"
            )
            return synthesize(
                synth_kind(f),
                why,
                self.fallback.state.calibration.deferral(p),
                "llm",
                signature=signature,
                tokens=tokens,
            )
        return Decision(
            "tool",
            p,
            "llm",
            (ToolWeight(candidate.spec.ref, 1.0),),
            why=reason,
            signature=signature,
            tokens=tokens,
        )

    def close(self) -> None:
        if self.client is not None and self.usage.calls:
            log.info("router: LLM usage %s", self.usage.to_dict())


def _completion_summary(ev: GroupEvidence | None) -> str:
    """What the group's completions look like, as numbers the router measured (their text
    is never shown: it could carry instructions)."""
    if ev is None:
        return "The responses: not shown."
    fits = ", ".join(
        f"{fmt.replace('_', ' ')} {v:.2f}" for fmt, v in sorted(ev.completion_fit.items())
    )
    marks = ", ".join(sorted(ev.completion_markers)) or "none"
    return (
        f"The responses ({ev.size}, measured, not shown): share answering in each reference "
        f"format's form: {fits or 'not measured'}; markers most of them carry: {marks}."
    )


def _fallback(d: Decision, why: str, tokens: dict[str, int] | None = None) -> Decision:
    """The embedded decision, with why the LLM's was not used."""
    note = f"fallback ({why[:120]})"
    return replace(d, why=f"{d.why}; {note}" if d.why else note, tokens=tokens or {})
