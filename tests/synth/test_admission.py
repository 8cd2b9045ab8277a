"""A synthesized tool's reference format reaches the router as the typed key synthesis
wrote (`ToolSpec.ref_format`), through the library file, for every format synthesis can
produce; the router then sends the samples that asked for the tool back to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardsmith.bench.codeverify_data import examples_for, fresh_samples
from rewardsmith.library.store import Library
from rewardsmith.router.features import can_grade, sample_features
from rewardsmith.router.router import Router
from rewardsmith.synth.admission import FORMAT_PROSE, store, synth_spec
from rewardsmith.synth.examples import Example, parse_example
from rewardsmith.synth.gate import GateReport
from rewardsmith.synth.pipeline import codeverify
from rewardsmith.types import REF_FORMATS, Sample


def _rg(question: str, answer: str) -> str:
    return json.dumps(
        {"question": question, "answer": answer, "metadata": {"source_dataset": "basic_arithmetic"}}
    )


NUMBERED = "Which of these is a prime?\n1. {0}\n2. {1}\n3. {2}\nAnswer with the option number."

# (format, examples as (prompt, reference)): what a task of each format looks like.
TASKS: list[tuple[str, list[tuple[str, str]]]] = [
    # plain numbers and LaTeX
    ("number", [(f"What is {a} * 3?", str(a * 3)) for a in (4, 7, 12, 21)]),
    ("latex", [(f"Simplify 1/{a} + 1/{a}.", f"\\frac{{2}}{{{a}}}") for a in (3, 5, 7, 9)]),
    # an option letter, and an option index among options the prompt lists (the router
    # reads an index only with the prompt: synthesis must read it the same way)
    (
        "choice",
        [(f"Pick the largest.\n(A) {a}\n(B) {a * 9}\n(C) {a + 1}", "B") for a in (2, 3, 4, 5)],
    ),
    ("choice_index", [(NUMBERED.format(a, a + 2, 7), "3") for a in (4, 8, 10, 14)]),
    # unit tests, a reasoning-gym entry, any other JSON
    (
        "unit_tests",
        [(f"Write add{a}(x) returning x + {a}.", f"assert add{a}(1) == {1 + a}") for a in (1, 2, 3)]
        + [("Write neg(x).", "assert neg(2) == -2")],
    ),
    (
        "json_entry",
        [(f"Calculate {a} + 3.", _rg(f"Calculate {a} + 3.", str(a + 3))) for a in (1, 2, 3, 4)],
    ),
    (
        "json",
        [
            (f"Capital of {c}? Reply as JSON.", json.dumps({"answer": k}))
            for c, k in (
                ("France", "Paris"),
                ("Italy", "Rome"),
                ("Spain", "Madrid"),
                ("Peru", "Lima"),
            )
        ],
    ),
    # free text
    (
        "free_text",
        [
            (f"Reverse the word '{w}'.", w[::-1])
            for w in ("stressed", "drawer", "gateman", "reknits")
        ],
    ),
]

# Formats whose samples a task field naming the tool sends to it (rules backend). For LaTeX
# and option letters a built-in that reads the same format (math, multiple_choice) wins on
# the markers, and free text without the embedding's similarities goes to "synthesize": that
# is the router choosing among tools able to read the format, which the candidate check
# below covers for every format.
ROUTED_BY_TASK = {"number", "choice_index", "unit_tests", "json_entry", "json"}

# A tool config that builds cheaply: the round trip is about the spec, not the verifier.
CONFIG = {"factory": "rewardsmith.tools.translation:TranslationTool", "params": {"metric": "chrf"}}
ADMITTED = GateReport(tool="", admitted=True, failed_check=None, reason="admitted")


def _stored_and_reloaded(tmp_path: Path, name: str, examples: list[Example], **kw: object):
    path = tmp_path / "library.db"
    with Library(path) as library:
        spec = synth_spec(name, "code", "a synthesized verifier", examples, **kw)  # type: ignore[arg-type]
        store(library, spec, CONFIG, ADMITTED, method="test")
    return path, spec


def test_every_format_synthesis_writes_has_prose() -> None:
    assert set(FORMAT_PROSE) == set(REF_FORMATS)


@pytest.mark.parametrize(("fmt", "pairs"), TASKS, ids=[t[0] for t in TASKS])
def test_the_router_reads_back_the_format_synthesis_wrote(
    tmp_path: Path, fmt: str, pairs: list[tuple[str, str]]
) -> None:
    examples = [Example(p, r) for p, r in pairs]
    samples = [Sample(completion=r, prompt=p, reference=r) for p, r in pairs]
    # The format synthesis stores is the one the router computes for these samples.
    assert {sample_features(s).ref_format for s in samples} == {fmt}
    name = f"synth_{fmt}"
    path, spec = _stored_and_reloaded(tmp_path, name, examples)
    assert spec.ref_format == fmt and spec.needs_reference
    with Library(path) as library:
        stored = library.record(name).spec
        assert stored.ref_format == fmt  # read from the file, not re-derived from prose
        with Router(library, "rules", log_events=False) as router:
            candidate = next(c for c in router.embedded.candidates if c.spec.name == name)
            assert candidate.fmt == fmt
            features = sample_features(samples[0])
            assert can_grade(candidate.fmt, candidate.markers, features) == 1.0
            if fmt in ROUTED_BY_TASK:
                tasked = [Sample(s.completion, s.prompt, s.reference, task=name) for s in samples]
                assert {d.label for d in router.route(tasked)} == {name}


@pytest.mark.parametrize("fmt", ["choice_index", "json"])
def test_formats_no_builtin_reads_route_to_the_synthesized_tool(tmp_path: Path, fmt: str) -> None:
    # Before the key was typed these tools read back as free text: their own samples went
    # to "synthesize" again.
    pairs = dict(TASKS)[fmt]
    path, _ = _stored_and_reloaded(tmp_path, f"synth_{fmt}", [Example(p, r) for p, r in pairs])
    samples = [Sample(completion=r, prompt=p, reference=r) for p, r in pairs]
    with Library(path) as library, Router(library, "rules", log_events=False) as router:
        assert {d.label for d in router.route(samples)} == {f"synth_{fmt}"}


def test_a_tool_that_needs_no_reference_is_stored_as_none(tmp_path: Path) -> None:
    pairs = dict(TASKS)["free_text"]
    path, spec = _stored_and_reloaded(
        tmp_path, "synth_free", [Example(p, r) for p, r in pairs], needs_reference=False
    )
    assert (spec.ref_format, spec.needs_reference, spec.reference_format) == ("none", False, "none")
    with Library(path) as library:
        assert library.record("synth_free").spec.ref_format == "none"


def test_a_synthesized_json_tool_is_checked_once_and_routed_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The whole path: offline CodeVerify on reasoning-gym's group_anagrams (references are
    # JSON lists), the gate, the library's add and the build to score run the 4-stage check
    # once; the stored tool reads JSON and the task's samples route to it.
    from rewardsmith.tools import reward_fn

    checked: list[str] = []
    real = reward_fn.check_reward_code
    monkeypatch.setattr(
        reward_fn, "check_reward_code", lambda s, **kw: checked.append(s) or real(s, **kw)
    )
    family = "group_anagrams"
    examples = [parse_example(x, f"{family}:{i}") for i, x in enumerate(examples_for(family), 1)]
    with Library(tmp_path / "library.db") as library:
        outcome = codeverify(examples, family, library)
        assert outcome.admitted, outcome.reason
        fresh = fresh_samples(family, 8)
        samples = [Sample(s["completion"], s["prompt"], s["reference"]) for s in fresh]
        rewards = library.get(family).score(samples)
        assert all(r.status == "ok" for r in rewards)
        assert checked == [outcome.source]
        assert library.record(family).spec.ref_format == "json"
        with Router(library, "rules", log_events=False) as router:
            assert {d.label for d in router.route(samples)} == {family}
