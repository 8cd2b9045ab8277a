"""The embedded router: right tools for the bundled mixed example, bad input to
"synthesize", one decision and one event per signature, learning that persists."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rewardsmith import Library, Sample
from rewardsmith.router import Router
from rewardsmith.router.embedded import MiniLMEmbedder
from rewardsmith.router.features import reference_format
from rewardsmith.scoring import Scorer
from rewardsmith.types import ToolSpec
from support import EXPECTED_TOOL

pytestmark = pytest.mark.usefixtures("embedder")


def _without_task(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "task"} for r in records]


def test_mixed_example_routes_to_the_intended_tools_without_task_fields(
    library: Library, mixed: list[dict[str, Any]]
) -> None:
    with Router(library) as router:
        decisions = router.route(_without_task(mixed))
    wrong = [
        (r["id"], d.label, round(d.confidence, 2))
        for r, d in zip(mixed, decisions, strict=True)
        if d.label != EXPECTED_TOOL[r["task"]]
    ]
    # 84 samples; at most one may be left to "synthesize", none may get a wrong tool.
    assert len(wrong) <= 1, wrong
    assert all(label == "synthesize" for _, label, _ in wrong), wrong


def test_task_fields_give_one_signature_per_task(
    library: Library, mixed: list[dict[str, Any]]
) -> None:
    with Router(library) as router:
        decisions = router.route(mixed)
    assert [d.label for d in decisions] == [EXPECTED_TOOL[r["task"]] for r in mixed]
    # one signature per (task, reference format): math500 has numbers and LaTeX
    assert len({d.signature for d in decisions}) == len(
        {(r["task"], reference_format(r["reference"])) for r in mixed}
    )
    assert all(d.backend == "embedded" for d in decisions)


RG_ENTRY = json.dumps(
    {
        "question": "Calculate 2 + 3.",
        "answer": "5",
        "metadata": {"source_dataset": "basic_arithmetic"},
    }
)
CJK_WORD_PROBLEM = "一个农场有120只鸡。农夫卖掉了四分之一，又买了15只。现在农场有多少只鸡？"

BAD_INPUT = [
    # an empty prompt: nothing says which tool applies
    ("empty prompt", Sample(completion="42", prompt="", reference="42"), "synthesize"),
    ("no prompt at all", Sample(completion="42", reference="42"), "synthesize"),
    # no reference and no checkable format: a reward model's job
    (
        "open question, no reference",
        Sample(completion="Paris.", prompt="What is the capital of France?"),
        "synthesize",
    ),
    # a multi-turn chat
    (
        "dialogue",
        Sample(
            completion="Sure, here is one.",
            prompt=[
                {"role": "user", "content": "I feel stressed at work."},
                {"role": "assistant", "content": "I'm sorry to hear that. What happened?"},
                {"role": "user", "content": "Too many meetings. Any advice?"},
            ],
        ),
        "synthesize",
    ),
    # a prompt the English-only embedding cannot read, with a number reference
    (
        "non-Latin prompt",
        Sample(completion="135", prompt=CJK_WORD_PROBLEM, reference="135"),
        "synthesize",
    ),
    # open-ended writing with a free-text "reference": chrF against one poem is no grade
    (
        "writing with a reference text",
        Sample(
            completion="Blossoms drift...",
            prompt="Write a haiku about spring rain.",
            reference="Soft rain on petals / the garden drinks slowly / spring breathes out again",
        ),
        "synthesize",
    ),
    # free-text puzzle answers without the reasoning-gym entry: a verifier must be written
    (
        "puzzle with a bare free-text answer",
        Sample(
            completion="ainomma",
            prompt="Spell this word backward (example: sun -> nus): ammonia",
            reference="ainomma",
        ),
        "synthesize",
    ),
    # well-formed inputs still route, including a single-turn chat prompt
    (
        "chat-wrapped GSM8K question",
        Sample(
            completion="3 boxes of 12 is 36, minus 7 is 29.\n#### 29",
            prompt=[
                {
                    "role": "user",
                    "content": "Tom has 3 boxes with 12 apples each and gives away 7. How many apples are left?",
                }
            ],
            reference="29",
        ),
        "gsm8k",
    ),
    (
        "reasoning-gym entry",
        Sample(completion="<answer>5</answer>", prompt="Calculate 2 + 3.", reference=RG_ENTRY),
        "reasoning_gym",
    ),
]


@pytest.mark.parametrize(("case", "sample", "expected"), BAD_INPUT, ids=[c[0] for c in BAD_INPUT])
def test_bad_input_goes_to_synthesize_never_to_a_confident_wrong_tool(
    library: Library, case: str, sample: Sample, expected: str
) -> None:
    with Router(library) as router:
        (decision,) = router.route([sample])
    assert decision.label == expected, (case, decision)
    if decision.action == "synthesize":
        assert decision.kind in ("code_verifier", "reward_model") and decision.why


def test_synthesize_kind_follows_the_reference(library: Library) -> None:
    with Router(library) as router:
        rm, verifier = router.route(
            [
                Sample(completion="ok", prompt="Write a poem about the sea."),
                Sample(
                    completion="ainomma",
                    prompt="Spell this word backward: ammonia",
                    reference="ainomma",
                ),
            ]
        )
    assert rm.kind == "reward_model" and verifier.kind == "code_verifier"


def test_unit_tests_go_to_code_when_the_library_has_it_else_to_synthesize(library: Library) -> None:
    sample = Sample(
        completion="def add(a, b):\n    return a + b",
        prompt="Write a function add(a, b) that returns the sum. Your code should pass these tests:\nassert add(1, 2) == 3",
        reference=json.dumps({"test_list": ["assert add(1, 2) == 3"], "test_imports": []}),
    )
    if "code" in library.names():
        with Router(library) as router:
            assert router.route([sample])[0].label == "code"
        for name in ("code", "code_strict"):
            if name in library.names():
                library.retire(name, "test: a library without a code tool")
    with Router(library) as router:
        (decision,) = router.route([sample])
    assert decision.action == "synthesize" and decision.kind == "code_verifier"
    assert "unit tests" in decision.why


def test_one_event_per_signature_not_per_sample(library: Library) -> None:
    questions = [
        f"Tom has {n} boxes with 12 apples each. He gives away 7 apples. How many are left?"
        for n in range(3, 203)
    ]
    samples = [
        Sample(completion=f"#### {12 * n - 7}", prompt=q, reference=str(12 * n - 7))
        for n, q in zip(range(3, 203), questions, strict=True)
    ]
    before = len(library.history())
    with Router(library) as router:
        decisions = router.route(samples)
        router.route(samples)  # a second batch: all cached
        signatures = {d.signature for d in decisions}
    events = library.history()[before:]
    route_events = [e for e in events if e.kind in ("route", "synthesize_request")]
    assert {d.label for d in decisions} == {"gsm8k"}
    assert len(signatures) <= 5
    assert len(route_events) == len(signatures)
    (counts,) = [e for e in events if e.kind == "route_counts"]
    assert sum(counts.detail["counts"].values()) == 400


def test_fit_learns_persists_and_keeps_history_append_only(library: Library, tmp_path: Any) -> None:
    # A task the built-in exemplars do not cover: "summaries" with a free-text reference,
    # labeled as translation's chrF on purpose (a user's choice the router must learn).
    prompts = [
        f"Condense this news item into one line: item number {i} about the harbour."
        for i in range(12)
    ]
    samples = [
        Sample(completion="A line.", prompt=p, reference="A ship docked in the harbour today.")
        for p in prompts
    ]
    with Router(library, log_events=False) as router:
        assert router.route(samples[:1])[0].label == "synthesize"
        result = router.fit(samples, ["translation"] * len(samples))
    assert result["accuracy_after"] > result["accuracy_before"]
    fits = [e for e in library.history() if e.kind == "router_fit"]
    assert len(fits) == 1 and fits[0].detail["state"]["exemplars"]["translation"]
    # A new router on the same library uses what was learned.
    with Router(library, log_events=False) as again:
        probe = Sample(
            completion="x",
            prompt="Condense this news item into one line: item 99 about the harbour.",
            reference="Text.",
        )
        assert again.route([probe])[0].label == "translation"


def test_a_tool_added_later_brings_its_exemplars_into_routing(library: Library) -> None:
    probe = Sample(
        completion="SELECT name FROM users WHERE age > 30;",
        prompt="Write an SQL query that lists the names of users older than 30.",
        reference="SELECT name FROM users WHERE age > 30",
    )
    with Router(library, log_events=False) as router:
        assert router.route([probe])[0].label == "synthesize"
    spec = ToolSpec(
        name="sql_match",
        description="SQL query text compared with a reference query (chrF on normalized SQL).",
        reference_format="free text",
        provenance="user",
        exemplars=(
            "Write an SQL query that lists the emails of users who signed up in 2023.",
            "Write a SQL query returning the names of users younger than 18.",
            "Give the SQL query that counts the users in each country.",
        ),
    )
    library.add(
        spec,
        {"factory": "rewardsmith.tools.translation:TranslationTool", "params": {"metric": "chrf"}},
    )
    with Router(library, log_events=False) as router:
        assert router.route([probe])[0].label == "sql_match"


def test_score_without_a_tool_routes_and_matches_the_task_map(
    library: Library, mixed: list[dict[str, Any]]
) -> None:
    task_map = {task: tool for task, tool in EXPECTED_TOOL.items() if tool != "synthesize"}
    mapped = Scorer(None, task_map, library)
    routed = Scorer(None, None, library)
    try:
        expected = mapped.score(mixed)
        got = routed.score(_without_task(mixed))
    finally:
        mapped.close()
        routed.close()
    same = sum(a.score == b.score and a.tool == b.tool for a, b in zip(expected, got, strict=True))
    assert same >= len(mixed) - 1
    for reward in got:
        if reward.status == "not_applicable":
            assert reward.reason.startswith("router: no library tool fits")


def test_a_format_request_with_a_reference_adds_the_format_tool(library: Library) -> None:
    sample = Sample(
        completion="<thinking>12 * 3 = 36</thinking><solution>36</solution>",
        prompt="Tom has 3 boxes with 12 apples each. How many apples does he have?\n\n"
        "Think step by step inside <thinking></thinking>, then give only the final answer inside <solution></solution>.",
        reference="36",
    )
    with Router(library, log_events=False) as router:
        (decision,) = router.route([sample])
    assert [t.tool.partition("@")[0] for t in decision.tools] == ["gsm8k", "format_tags"]
    scorer = Scorer(None, None, library, router=router)
    (reward,) = scorer.score([sample])
    assert reward.score == pytest.approx(1.0) and set(reward.components) == {
        t.tool for t in decision.tools
    }


def test_rules_backend_needs_no_model(library: Library, mixed: list[dict[str, Any]]) -> None:
    with Router(library, "rules") as router:
        decisions = router.route(mixed[:24])
    assert {d.backend for d in decisions} == {"rules"}


def test_embedding_cache_is_shared_and_bounded(embedder: MiniLMEmbedder) -> None:
    a = embedder.encode(["same text", "same text", "other"])
    assert a.shape == (3, 384) and float(a[0] @ a[1]) == pytest.approx(1.0)
    assert float(a[0] @ a[0]) == pytest.approx(1.0, abs=1e-4)


def test_a_routed_tool_that_cannot_be_built_is_an_error_reward_not_a_crash(
    library: Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rewardsmith.errors import ConfigError

    sample = Sample(
        completion="#### 29", prompt="Tom has 29 apples. How many apples?", reference="29"
    )
    scorer = Scorer(None, None, library)
    scorer.router.route([sample])  # build the router before the library breaks

    def broken(ref: str) -> None:
        raise ConfigError(f"tool {ref!r}: cannot load factory")

    monkeypatch.setattr(library, "get", broken)
    (reward,) = scorer.score([sample])
    scorer.close()
    assert reward.status == "error" and "routed tool unavailable" in reward.reason


# Samples without surface markers, as the issue reported them: each must reach its tool, or
# "synthesize" with a reason, never a confident wrong tool.
MARKER_FREE = [
    # "translate" as a word, no passage in another language: no translation task
    (
        "keyword, same-language reference",
        Sample(
            prompt="How can I translate a business idea into a concrete plan?",
            completion="First, write down the problem it solves.",
            reference="Start with the problem the idea solves, then set milestones and a budget.",
        ),
        "synthesize",
    ),
    # JSON with an answer is no reasoning-gym entry
    (
        "JSON that is no dataset entry",
        Sample(
            prompt="What is the capital of France? Reply in JSON.",
            completion='{"answer": "Paris"}',
            reference='{"answer": "Paris"}',
        ),
        "synthesize",
    ),
    # competition math without \boxed or LaTeX
    (
        "competition math, plain text",
        Sample(
            prompt="Let f(x) = x^2 + 1. Find f(3).",
            completion="f(3) = 9 + 1 = 10",
            reference="10",
        ),
        "math",
    ),
    # options written (a)-(d) are multiple choice; (1)-(4) name an index the tool cannot read
    (
        "lower-case lettered options",
        Sample(
            prompt="Which is a prime number?\n(a) 21\n(b) 27\n(c) 29\n(d) 33",
            completion="29 is prime, so (c).",
            reference="c",
        ),
        "multiple_choice",
    ),
    (
        "numbered options",
        Sample(
            prompt="Which is a prime number?\n(1) 21\n(2) 27\n(3) 29\n(4) 33",
            completion="29 is prime, so (3).",
            reference="3",
        ),
        "synthesize",
    ),
    # a translation request with no keyword
    (
        "translation without a keyword",
        Sample(
            prompt="Please render this passage in English:\n\nDie Regierung plant neue Gesetze "
            "zum Klimaschutz und will die Emissionen bis 2030 halbieren.",
            completion="The government plans new climate laws.",
            reference="The government is planning new climate laws and wants to halve "
            "emissions by 2030.",
        ),
        "translation",
    ),
    # no instruction at all: the content alone is a translation
    (
        "bare passage into Chinese",
        Sample(
            prompt="The museum will be closed on Monday for renovation.",
            completion="博物馆周一因装修闭馆。",
            reference="博物馆周一因装修闭馆。",
        ),
        "translation",
    ),
]


@pytest.mark.parametrize(
    ("case", "sample", "expected"), MARKER_FREE, ids=[c[0] for c in MARKER_FREE]
)
def test_marker_free_samples_route_by_content(
    library: Library, case: str, sample: Sample, expected: str
) -> None:
    with Router(library, log_events=False) as router:
        (decision,) = router.route([sample])
    assert decision.label == expected, (case, decision)
    if decision.action == "synthesize":
        assert decision.why


def test_a_json_reference_that_is_no_entry_is_not_applicable_with_the_reason(
    library: Library,
) -> None:
    (reward,) = Scorer(None, None, library).score(
        [
            Sample(
                prompt="Capital of France?",
                completion='{"answer": "Paris"}',
                reference='{"answer": "Paris"}',
            )
        ]
    )
    assert reward.status == "not_applicable" and "reasoning-gym" in reward.reason


# Open requests that contain a task word: the word may tip the decision, never make it sure.
KEYWORD_ONLY = [
    ("Translate your goals into daily habits: how?", "Pick one small daily action per goal and track it."),
    ("What is the best way to translate feedback into product features?", "Group the feedback by problem and count it."),
    ("Which option is better for a first pet, a cat or a dog?", "A cat needs less time; a dog needs more care."),
    ("Translate the mood of a rainy day into a short description.", "Grey light, soft drumming on the window, a slow afternoon."),
]  # fmt: skip


@pytest.mark.parametrize(("prompt", "reference"), KEYWORD_ONLY)
def test_a_keyword_alone_never_yields_a_confident_tool(
    library: Library, prompt: str, reference: str
) -> None:
    with Router(library, log_events=False) as router:
        (decision,) = router.route(
            [Sample(prompt=prompt, completion=reference, reference=reference)]
        )
    assert decision.action == "synthesize" or decision.confidence < 0.9, decision


def test_fit_recalibrates_from_enough_labels_and_keeps_the_calibration_otherwise(
    library: Library,
) -> None:
    from rewardsmith.router.embedded import DEFAULT_CALIBRATION

    names = ["Tom", "Ana", "Li", "Sara", "Omar", "Jo", "Ines", "Ravi"]
    word_problems = [
        Sample(
            prompt=f"{names[i % 8]} buys {i + 2} boxes of {i % 5 + 3} apples each and eats {i % 3}. "
            "How many apples are left?",
            completion=f"So {(i + 2) * (i % 5 + 3) - i % 3} apples are left.",
            reference=str((i + 2) * (i % 5 + 3) - i % 3),
        )
        for i in range(140)
    ]
    open_requests = [
        Sample(
            prompt=f"Give me {i % 7 + 2} tips for a calmer morning routine, number {i}.",
            completion="Wake up early.",
        )
        for i in range(80)
    ]
    samples = word_problems + open_requests
    labels = ["gsm8k"] * len(word_problems) + ["synthesize"] * len(open_requests)
    with Router(library, log_events=False) as router:
        router.fit(samples[:20], labels[:20])
        assert router.state.calibration == DEFAULT_CALIBRATION  # 20 labels: too few
        router.fit(samples, labels)
        fitted = router.state.calibration
    assert fitted != DEFAULT_CALIBRATION and "tool:number" in fitted.by_format
    with Router(library, log_events=False) as again:  # the library keeps what was fitted
        assert again.state.calibration == fitted
