"""CodeVerify's LLM backend: the model's code is checked in the sandbox, failures go back to
it with the error, at most N attempts; whatever it writes, the pipeline admits or rejects
cleanly and says why. The last test runs against a real llama.cpp server (`llm_server`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fake_llm import chat_body, fake_llm
from llama_server import llama_server
from rewardsmith.answers import embeddable_source
from rewardsmith.library.store import Library
from rewardsmith.llm import client as client_mod
from rewardsmith.llm.client import LLMClient
from rewardsmith.synth.codeverify_llm import extract_code
from rewardsmith.synth.examples import Example
from rewardsmith.synth.pipeline import codeverify

USAGE = {"prompt_tokens": 500, "completion_tokens": 80, "total_tokens": 580}
TAGS_ONLY = """Here is the module:
```python
import re

BOUNDS = (0.0, 1.0)


def reward(completions, references, prompts=None, **kwargs):
    out = []
    for c, r in zip(completions, references):
        one = re.fullmatch(r"\\s*<answer>([^<]*)</answer>\\s*", c or "")
        out.append(1.0 if one and one.group(1).strip() == r else 0.0)
    return out
```"""
# What a capable model writes when the gate asks for every answer style: the project's own
# reader pasted in (plain functions over `re`; its backquotes escaped, so the fence holds),
# hedges refused, an exact comparison.
GOOD = (
    "```python\n"
    + embeddable_source().replace("```", "\\x60\\x60\\x60")
    + """

BOUNDS = (0.0, 1.0)


def reward(completions, references, prompts=None, **kwargs):
    out = []
    for c, r in zip(completions, references):
        if not isinstance(r, str):
            out.append(0.0)
            continue
        offered, _style, negated = read_answers(c or "", split_for(r))
        found = read_final(c or "")
        hedged = len(offered) > 1 or (not offered and negated > 0)
        out.append(1.0 if found is not None and found[1] == r and not hedged else 0.0)
    return out
```"""
)
# Reads the last <answer> tag: several tags that disagree, the right one last, pass.
LAST_TAG_WINS = TAGS_ONLY.replace(
    'one = re.fullmatch(r"\\s*<answer>([^<]*)</answer>\\s*", c or "")',
    'found = re.findall(r"<answer>(.*?)</answer>", c or "", flags=re.DOTALL)',
).replace(
    "1.0 if one and one.group(1).strip() == r else 0.0",
    "1.0 if found and found[-1].strip() == r else 0.0",
)
ESCAPES = "```python\nimport os\ndef reward(completions, references, prompts=None):\n    return [1.0]\n```"
ALWAYS_ONE = (
    "```python\ndef reward(completions, references, prompts=None, **kw):\n"
    "    return [1.0 for c in completions]\n```"
)
WORDS = ["river", "candle", "planet", "garden", "copper", "winter", "forest", "harbor", "meadow"]


@pytest.fixture(autouse=True)
def _fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_mod, "BACKOFF_S", 0.01)


def tagged_examples() -> list[Example]:
    lines = []
    for i, w in enumerate(WORDS):
        answer = w[::-1]
        if i < 6:
            given = answer if i % 2 == 0 else answer[:-1] + "x"
            lines.append(
                Example(
                    f"Spell {w} backward.", answer, f"<answer>{given}</answer>", int(i % 2 == 0)
                )
            )
        else:
            lines.append(Example(f"Spell {w} backward.", answer))
    return lines


def test_good_code_is_checked_gated_and_registered(library: Library) -> None:
    with fake_llm([(200, chat_body(GOOD, USAGE))]) as fake:
        outcome = codeverify(
            tagged_examples(), "rev", library, backend="llm", llm_client=LLMClient(fake.url, "m")
        )
    assert outcome.admitted, outcome.reason
    assert outcome.details["attempts"] == [
        {"attempt": 1, "prompt_tokens": 500, "completion_tokens": 80, "stage": 0, "fit_misses": 0}
    ]
    assert outcome.details["tokens"]["total_tokens"] == 580
    spec = library.record("rev").spec
    assert spec.provenance == "synth" and spec.validation["synth"]["method"] == "codeverify-llm"
    request = fake.requests[0]["body"]["messages"][1]["content"]
    assert "def reward(completions, references, prompts=None, **kwargs)" in request
    assert "import only these modules" in request and "<answer>revir</answer>" in request


def test_a_verifier_that_reads_the_last_tag_is_rejected_for_disagreeing_tags(
    library: Library,
) -> None:
    # it fits every example, but several <answer> tags with the right one last pass it
    with fake_llm([(200, chat_body(LAST_TAG_WINS, USAGE))]) as fake:
        outcome = codeverify(
            tagged_examples(), "rev", library, backend="llm", llm_client=LLMClient(fake.url, "m")
        )
    # the probes catch the hedge (and `styles` would reject its tags-only reading)
    assert not outcome.admitted and outcome.report.failed_check in ("styles", "probes")
    assert outcome.report.checks["probes"]["disagreeing_markers"]["wins"] > 0


def test_failed_checks_go_back_to_the_model_with_the_error(library: Library) -> None:
    replies = [
        (200, chat_body(ESCAPES, USAGE)),
        (200, chat_body(ALWAYS_ONE, USAGE)),
        (200, chat_body(GOOD, USAGE)),
    ]
    with fake_llm(replies) as fake:
        outcome = codeverify(
            tagged_examples(), "rev", library, backend="llm", llm_client=LLMClient(fake.url, "m")
        )
    assert outcome.admitted
    attempts = outcome.details["attempts"]
    assert [a["stage"] for a in attempts] == [1, 0, 0]
    assert "import of 'os' is not allowed" in attempts[0]["error"]
    second = fake.requests[1]["body"]["messages"]
    assert second[-1]["role"] == "user" and "rejected by the sandbox check" in second[-1]["content"]
    third = fake.requests[2]["body"]["messages"][-1]["content"]
    assert "scored these examples wrongly" in third and "expected 0.0, got 1.0" in third


def test_a_model_that_never_writes_valid_code_is_rejected_and_says_why(library: Library) -> None:
    with fake_llm([(200, chat_body("I cannot write code, sorry.", USAGE))]) as fake:
        outcome = codeverify(
            tagged_examples(),
            "rev",
            library,
            backend="llm",
            llm_client=LLMClient(fake.url, "m"),
            max_attempts=2,
        )
    assert not outcome.admitted and outcome.report.failed_check == "runs"
    assert "stage 1 (static)" in outcome.reason and len(fake.requests) == 2
    record = library.record("rev")
    assert record.retired and record.spec.validation["synth"]["admitted_by_check"] is False


def test_the_cli_reads_the_endpoint_from_the_environment(tmp_path: Path) -> None:
    examples = tmp_path / "ex.jsonl"
    examples.write_text("".join(json.dumps(e.to_dict()) + "\n" for e in tagged_examples()))
    with fake_llm([(200, chat_body(ALWAYS_ONE, USAGE))]) as fake:
        env = {**os.environ, "REWARDSMITH_LLM_BASE_URL": fake.url, "REWARDSMITH_LLM_MODEL": "m"}
        proc = subprocess.run(
            [sys.executable, "-m", "rewardsmith.cli.main", "synth", "codeverify", str(examples)]
            + ["--name", "rev", "--backend", "llm", "--attempts", "2"]
            + ["--library", str(tmp_path / "lib.db")],
            capture_output=True,
            text=True,
            env=env,
        )
    # pays everything: admitted by the sandbox check, rejected by the gate
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "LLM: 2 attempt(s)" in proc.stdout and "rejected: held_out" in proc.stdout


def test_code_is_found_in_fenced_or_bare_answers() -> None:
    assert extract_code("text\n```py\nx = 1\n```\nmore") == "x = 1\n"
    assert extract_code("Sure.\nimport re\ndef reward(c, r):\n    return []") == (
        "import re\ndef reward(c, r):\n    return []\n"
    )


@pytest.mark.llm_server
def test_llm_backend_end_to_end_against_llama_cpp_server(library: Library) -> None:
    with llama_server(n_ctx=4096) as url:
        client = LLMClient(url, "smollm2", timeout=600)
        outcome = codeverify(
            tagged_examples(),
            "rev_llm",
            library,
            backend="llm",
            llm_client=client,
            max_attempts=2,
            llm_max_tokens=128,
        )
    attempts = outcome.details["attempts"]
    assert 1 <= len(attempts) <= 2 and client.usage.calls == len(attempts)
    assert all(a["prompt_tokens"] > 0 and a["completion_tokens"] > 0 for a in attempts)
    # a 135M model mostly fails: either way the pipeline decides cleanly and says why
    record = library.record("rev_llm")
    assert record.retired is (not outcome.admitted)
    assert outcome.reason and record.spec.validation["gate"]["reason"] == outcome.reason
    if not outcome.admitted:
        assert outcome.report.failed_check in ("runs", "held_out", "probes")
        assert all("error" in a for a in attempts)
