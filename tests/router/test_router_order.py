"""Order independence: the same multiset of samples gets the same decisions in any order,
and a prompt's completions always share one decision."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rewardsmith import Library
from rewardsmith.router import Router

pytestmark = pytest.mark.usefixtures("embedder")

GERMAN = [
    ("Die Regierung plant neue Gesetze zum Klimaschutz.", "The government plans new climate laws."),
    ("Der Zug nach Berlin hat heute zwanzig Minuten Verspätung.", "The train to Berlin is twenty minutes late today."),
    ("Das Museum bleibt am Montag wegen Renovierung geschlossen.", "The museum is closed on Monday for renovation."),
]  # fmt: skip
OPEN = [
    ("How can I translate a business idea into a concrete plan?", "Write down the problem it solves and test it with ten customers."),
    ("What is the best way to translate feedback into features?", "Group the feedback by problem and count how often each one appears."),
]  # fmt: skip


def _pool(mixed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Samples where order could matter: GRPO-like groups whose completions differ,
    near-duplicate prompts in one cluster, and a task field covering two kinds of task (a
    signature that must split)."""
    pool: list[dict[str, Any]] = []
    for r in mixed[::6]:
        rec = {k: v for k, v in r.items() if k != "task"}
        pool.append(rec)
        pool.append({**rec, "completion": "I am not sure."})  # the same prompt, another answer
    for src, ref in GERMAN:
        pool.append({"prompt": src, "completion": ref, "reference": ref, "task": "mixed_text"})
    for prompt, ref in OPEN:
        pool.append({"prompt": prompt, "completion": ref, "reference": ref, "task": "mixed_text"})
        pool.append({"prompt": prompt, "completion": ref, "reference": ref})
    entry = {"question": "2+3", "answer": "5", "metadata": {"source_dataset": "chain_sum"}}
    pool.append({"prompt": "2+3", "completion": "5", "reference": json.dumps(entry)})
    pool.append({"prompt": "Capital?", "completion": "Paris", "reference": '{"answer": "Paris"}'})
    return pool


def _decisions(library: Library, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    with Router(library, log_events=False) as router:
        return [d.to_dict() for d in router.route(records)]


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory: pytest.TempPathFactory, mixed: list[dict[str, Any]]) -> Any:
    library = Library(tmp_path_factory.mktemp("order") / "lib.db")
    pool = _pool(mixed)
    return library, pool, _decisions(library, pool)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_order_of_the_same_samples_gives_the_same_decisions(
    reference_run: Any, data: st.DataObject
) -> None:
    library, pool, expected = reference_run
    order = data.draw(st.permutations(range(len(pool))))
    got = _decisions(library, [pool[i] for i in order])
    assert [got[order.index(i)] for i in range(len(pool))] == expected


def test_a_prompts_completions_share_one_decision(reference_run: Any) -> None:
    _, pool, expected = reference_run
    by_prompt: dict[str, set[str]] = {}
    for rec, d in zip(pool, expected, strict=True):
        key = json.dumps([rec.get("task"), rec["prompt"], rec.get("reference")])
        by_prompt.setdefault(key, set()).add(json.dumps(d, sort_keys=True))
    assert all(len(v) == 1 for v in by_prompt.values())


def test_a_task_naming_two_kinds_of_task_is_split_by_decision(reference_run: Any) -> None:
    _, pool, expected = reference_run
    mixed_task = [
        (rec, d) for rec, d in zip(pool, expected, strict=True) if rec.get("task") == "mixed_text"
    ]
    labels = {
        rec["prompt"]: d["tools"][0]["tool"].split("@")[0] if d["tools"] else "synthesize"
        for rec, d in mixed_task
    }
    assert {labels[src] for src, _ in GERMAN} == {"translation"}
    assert {labels[p] for p, _ in OPEN} == {"synthesize"}
    assert {d["signature"] for _, d in mixed_task} == {
        "task=mixed_text|fmt=free_text|split=translation",
        "task=mixed_text|fmt=free_text|split=synthesize",
    }
