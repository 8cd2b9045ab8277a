"""The built-in tools: metadata, factory and default parameters, registered on first use.

A tool in the library is a `ToolSpec` plus a *config*: `{"factory": "module:Class",
"params": {...}}`. `build_tool` turns a config into a live `RewardTool`. Composite tools name
their parts in `params["parts"]`; `build_tool` resolves those names through the library.

A factory names a `RewardTool` class of rewardsmith's own tool modules
(`rewardsmith.tools.*`, `rewardsmith.synth.tools`) or one a plugin registers as an entry
point in the group `rewardsmith.tools` (`ENTRY_POINT_GROUP`; the factory string is the entry
point's value, `my_pkg.tools:MyTool`). Anything else is refused *before* anything is
imported: a library row, or a tools file, naming `this:x` or a module in the working
directory runs no code of it (`resolve_factory`).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from rewardsmith.errors import ConfigError
from rewardsmith.library import exemplars
from rewardsmith.types import RewardTool, ToolSpec

Resolver = Callable[[str], RewardTool]
# Plugins register tool classes here: `[project.entry-points."rewardsmith.tools"]`.
ENTRY_POINT_GROUP = "rewardsmith.tools"
_FACTORY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z][A-Za-z0-9_]*")
_OWN_TOOL_MODULE = re.compile(r"rewardsmith\.tools\.[a-z][a-z0-9_]*|rewardsmith\.synth\.tools")


@dataclass(frozen=True)
class Builtin:
    """A built-in tool: its spec, the class that implements it and its parameters."""

    spec: ToolSpec
    factory: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def config(self) -> dict[str, Any]:
        return {"factory": self.factory, "params": dict(self.params)}


def build_tool(
    spec: ToolSpec, config: Mapping[str, Any], resolve: Resolver | None = None
) -> RewardTool:
    """Instantiate the tool described by `config` (`{"factory", "params"}`).

    Classes that combine other tools declare `uses_other_tools = True` and receive
    `resolve`, which maps a tool name to a built tool.
    """
    cls = resolve_factory(spec.name, config.get("factory"))
    params = dict(config.get("params") or {})
    if getattr(cls, "uses_other_tools", False):
        if resolve is None:
            raise ConfigError(
                f"tool {spec.name!r} combines other tools and needs a library to resolve them"
            )
        params["resolve"] = resolve
    try:
        tool: RewardTool = cls(spec=spec, **params)  # type: ignore[call-arg]
    except TypeError as exc:
        raise ConfigError(f"tool {spec.name!r}: bad parameters {sorted(params)}: {exc}") from exc
    return tool


def resolve_factory(tool: str, factory: object) -> type[RewardTool]:
    """The `RewardTool` class `factory` names (see the module docstring); `ConfigError` for
    a factory that is malformed, not allowed (nothing is imported then) or does not load."""
    if not isinstance(factory, str) or not _FACTORY.fullmatch(factory):
        raise ConfigError(
            f"tool {tool!r}: config needs 'factory' as 'module:Class', got {factory!r}"
        )
    module_name, _, attr = factory.partition(":")
    try:
        if _OWN_TOOL_MODULE.fullmatch(module_name):
            cls = getattr(importlib.import_module(module_name), attr)
        else:
            plugin = next((ep for ep in _plugins() if ep.value.replace(" ", "") == factory), None)
            if plugin is None:
                raise ConfigError(
                    f"tool {tool!r}: factory {factory!r} is not allowed: a factory is a class "
                    "of rewardsmith's tool modules (rewardsmith.tools.*, "
                    "rewardsmith.synth.tools) or of a plugin registered as an entry point in "
                    f"the group {ENTRY_POINT_GROUP!r} (nothing was imported)"
                )
            cls = plugin.load()
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"tool {tool!r}: cannot load factory {factory!r}: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, RewardTool)):
        raise ConfigError(f"tool {tool!r}: factory {factory!r} is not a RewardTool class")
    return cls


def allowed_factory(factory: object) -> bool:
    """Whether `factory` names a module the library may import (see the module docstring);
    imports nothing. For callers that import factories ahead of time (the server's
    forkserver preloads the configured tools' modules)."""
    if not isinstance(factory, str) or not _FACTORY.fullmatch(factory):
        return False
    module_name = factory.partition(":")[0]
    return bool(_OWN_TOOL_MODULE.fullmatch(module_name)) or any(
        ep.value.replace(" ", "") == factory for ep in _plugins()
    )


def _plugins() -> list[Any]:
    return list(entry_points(group=ENTRY_POINT_GROUP))


def _spec(name: str, description: str, **kw: Any) -> ToolSpec:
    return ToolSpec(name=name, description=description, provenance="builtin", **kw)


BUILTINS: tuple[Builtin, ...] = (
    Builtin(
        _spec(
            "math",
            "Final-answer equivalence for competition math (MATH, AIME, AMC) with math-verify: "
            "\\boxed{}, 'the answer is', or the last expression, compared symbolically with the "
            "reference answer (LaTeX or plain).",
            domains=("math",),
            reference_format="latex",
            ref_format="latex",
            cost="moderate",
            exemplars=exemplars.MATH,
        ),
        "rewardsmith.tools.math:MathTool",
    ),
    Builtin(
        _spec(
            "gsm8k",
            "Numeric final answer of a grade-school math word problem: the number after '####' or "
            "the last number, with commas, currency, units and trailing .0 normalized.",
            domains=("math", "arithmetic"),
            reference_format="number",
            ref_format="number",
            exemplars=exemplars.GSM8K,
        ),
        "rewardsmith.tools.gsm8k:GSM8KTool",
    ),
    Builtin(
        _spec(
            "format_tags",
            "Structured-output format: exactly one <thinking>...</thinking> followed by exactly one "
            "<solution>...</solution> (1.0 or 0.0). Needs no reference.",
            domains=("format",),
            needs_reference=False,
            reference_format="none",
            exemplars=exemplars.FORMAT_TAGS,
        ),
        "rewardsmith.tools.format:FormatTagsTool",
        {"mode": "exact", "tags": ["thinking", "solution"]},
    ),
    Builtin(
        _spec(
            "format_tags_approx",
            "Approximate structured-output format: partial credit per <thinking>/<solution> tag "
            "that appears exactly once. Needs no reference.",
            domains=("format",),
            needs_reference=False,
            reference_format="none",
        ),
        "rewardsmith.tools.format:FormatTagsTool",
        {"mode": "approx", "tags": ["thinking", "solution"]},
    ),
    Builtin(
        _spec(
            "think_format",
            "Reasoning format check: the completion opens with one <think>...</think> block "
            "followed by a non-empty answer. Needs no reference.",
            domains=("format",),
            needs_reference=False,
            reference_format="none",
            exemplars=exemplars.THINK_FORMAT,
        ),
        "rewardsmith.tools.format:ThinkFormatTool",
    ),
    Builtin(
        _spec(
            "multiple_choice",
            "Multiple-choice answer letter (A-J) extracted from 'the answer is (B)', \\boxed{B}, "
            "'Answer: B' and similar, compared with the reference letter.",
            domains=("multiple_choice",),
            reference_format="choice letter",
            ref_format="choice",
            exemplars=exemplars.MULTIPLE_CHOICE,
        ),
        "rewardsmith.tools.choice:MultipleChoiceTool",
    ),
    Builtin(
        _spec(
            "translation",
            "Translation quality against a reference translation: sentence chrF (sacrebleu), "
            "scaled to [0, 1].",
            domains=("translation",),
            reference_format="free text",
            ref_format="free_text",
            exemplars=exemplars.TRANSLATION,
        ),
        "rewardsmith.tools.translation:TranslationTool",
        {"metric": "chrf"},
    ),
    Builtin(
        _spec(
            "translation_bleu",
            "Translation quality against a reference translation: sentence BLEU (sacrebleu), "
            "scaled to [0, 1].",
            domains=("translation",),
            reference_format="free text",
            ref_format="free_text",
        ),
        "rewardsmith.tools.translation:TranslationTool",
        {"metric": "bleu"},
    ),
    Builtin(
        _spec(
            "overlong",
            "DAPO overlong penalty: 0 up to max_length - cache_length, then a linear penalty down "
            "to -1 at max_length and beyond. Needs no reference.",
            domains=("length",),
            needs_reference=False,
            reference_format="none",
        ),
        "rewardsmith.tools.length:OverlongPenaltyTool",
        {"max_length": 4096, "cache_length": 1024, "unit": "words"},
    ),
    Builtin(
        _spec(
            "length",
            "Verbosity penalty relative to the reference's length: 0 up to max_ratio times the "
            "reference length, then a linear penalty down to -1.",
            domains=("length",),
            reference_format="free text",
            ref_format="free_text",
        ),
        "rewardsmith.tools.length:LengthPenaltyTool",
        {"max_ratio": 2.0, "unit": "words"},
    ),
    Builtin(
        _spec(
            "reasoning_gym",
            "Any reasoning-gym task, scored by reasoning-gym's own score_answer; the reference "
            "carries the dataset entry as JSON.",
            domains=("reasoning", "puzzles"),
            reference_format="reasoning-gym entry (JSON)",
            ref_format="json_entry",
            exemplars=exemplars.REASONING_GYM,
        ),
        "rewardsmith.tools.reasoning_gym:ReasoningGymTool",
    ),
    Builtin(
        _spec(
            "code",
            "Python code graded by unit tests in the sandbox: fraction of tests passed. The "
            "reference carries the tests as JSON: HumanEval {prompt, test, entry_point}, MBPP "
            "{test_list, test_imports} or stdin/stdout {inputs, outputs}.",
            kind="code",
            domains=("code",),
            reference_format="unit tests (JSON)",
            ref_format="unit_tests",
            cost="moderate",
            exemplars=(
                "Write a python function to find the first repeated character in a given string.",
                'def has_close_elements(numbers: List[float], threshold: float) -> bool:\n    """',
            ),
        ),
        "rewardsmith.tools.code:CodeTool",
        {"strict": False, "timeout": 10.0, "memory_mb": 512, "workers": 2},
    ),
    Builtin(
        _spec(
            "code_strict",
            "Python code graded by unit tests in the sandbox, all or nothing: 1.0 only when "
            "every test passes. Same reference formats as `code`.",
            kind="code",
            domains=("code",),
            reference_format="unit tests (JSON)",
            ref_format="unit_tests",
            cost="moderate",
        ),
        "rewardsmith.tools.code:CodeTool",
        {"strict": True, "timeout": 10.0, "memory_mb": 512, "workers": 2},
    ),
    Builtin(
        _spec(
            "gsm8k_with_format",
            "Gate: format_tags x gsm8k. A correct answer counts only inside the "
            "<thinking>/<solution> format.",
            kind="composite",
            domains=("math", "format"),
            reference_format="number",
            ref_format="number",
        ),
        "rewardsmith.tools.composite:CompositeTool",
        {"mode": "gate", "parts": [{"tool": "format_tags", "gate": True}, {"tool": "gsm8k"}]},
    ),
    Builtin(
        _spec(
            "majority_vote",
            "Label-free (TTRL): within a group (the samples sharing a prompt, or a 'group' "
            "field) the most frequent final number is paid 1.0, others 0.0; a tie, a hedge or "
            "no answer is never paid. Needs no reference; pays agreement, not correctness.",
            domains=("math", "arithmetic", "label_free"),
            needs_reference=False,
            reference_format="none",
        ),
        "rewardsmith.tools.majority:MajorityVoteTool",
        {"answers": "number", "min_votes": 2},
    ),
)


def builtin_names() -> list[str]:
    return [b.spec.name for b in BUILTINS]


# The tool kind for generated reward functions (`def reward(...)`): its config is
# `{"factory": REWARD_FUNCTION_FACTORY, "params": {"source": ..., "bounds": [lo, hi]}}`.
# Building it runs the 4-stage check (rewardsmith.sandbox.check_reward_code) and refuses
# code that is not admitted; it then runs the function on batches inside the sandbox.
REWARD_FUNCTION_FACTORY = "rewardsmith.tools.reward_fn:RewardFunctionTool"
