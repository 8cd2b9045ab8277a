"""LLM configuration the usual way (`--llm-url/--llm-model/--llm-key`, `OPENAI_*` variables),
and an explicitly requested `--backend llm` that cannot be used: exit 2, unless
`--fallback embedded` is given."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from fake_llm import chat_body, fake_llm

LINE = {"prompt": "What is 2+2?", "completion": "#### 4", "reference": "4"}


def route(tmp_path: Path, *args: str, env: dict[str, str] | None = None):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(LINE) + "\n")
    return subprocess.run(
        [sys.executable, "-m", "rewardsmith.cli.main", "route", str(src), "-o"]
        + [str(tmp_path / "out.jsonl"), "-b", "llm", "-q", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={
            "REWARDSMITH_HOME": str(tmp_path / "home"),
            # the session's exported router model (conftest), not an export per test
            "REWARDSMITH_MODEL_CACHE": os.environ["REWARDSMITH_MODEL_CACHE"],
            "PATH": "/usr/bin:/bin",
            **(env or {}),
        },
    )


def free_port() -> int:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_llm_backend_without_an_endpoint_is_exit_2_naming_the_ways_to_set_one(
    tmp_path: Path,
) -> None:
    proc = route(tmp_path)
    said = proc.stderr.replace("\n", "")
    assert proc.returncode == 2, proc.stderr
    assert "--llm-url" in said and "OPENAI_BASE_URL" in said and "--fallback embedded" in said
    assert "Traceback" not in said and not (tmp_path / "out.jsonl").exists()


def test_an_unreachable_llm_url_is_exit_2(tmp_path: Path) -> None:
    proc = route(tmp_path, "--llm-url", f"http://127.0.0.1:{free_port()}/v1")
    assert proc.returncode == 2, proc.stderr
    assert "cannot reach" in proc.stderr.replace("\n", "")
    assert not (tmp_path / "out.jsonl").exists()


def test_a_refused_key_is_exit_2_and_fallback_embedded_routes_anyway(tmp_path: Path) -> None:
    with fake_llm([(401, "no")], models=(401, '{"error": "invalid api key"}')) as fake:
        refused = route(tmp_path, "--llm-url", fake.url, "--llm-key", "wrong")
        assert refused.returncode == 2
        assert "HTTP 401" in refused.stderr and "--llm-key" in refused.stderr.replace("\n", "")
        fell_back = route(tmp_path, "--llm-url", fake.url, "--fallback", "embedded")
    assert fell_back.returncode == 0, fell_back.stderr
    [row] = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert row["route"]["backend"] != "llm"


def test_openai_variables_configure_the_endpoint_key_and_served_model(tmp_path: Path) -> None:
    served = (200, {"data": [{"id": "served-model"}]})
    answer = chat_body(
        '{"action": "tool", "tool": "gsm8k", "confidence": 0.9, '
        '"synthesize_kind": "none", "reason": "a number"}'
    )
    with fake_llm([(200, answer)], models=served) as fake:
        env = {"OPENAI_BASE_URL": fake.url, "OPENAI_API_KEY": "sk-test"}
        proc = route(tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert fake.requests, "the LLM was never asked"
    assert fake.requests[0]["headers"]["Authorization"] == "Bearer sk-test"
    assert fake.requests[0]["body"]["model"] == "served-model"


def test_serve_with_an_unusable_llm_backend_stops_before_listening(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    proc = subprocess.run(
        [sys.executable, "-m", "rewardsmith.cli.main", "serve", "-b", "llm", "--llm-url", url],
        capture_output=True,
        text=True,
        timeout=120,
        env={"REWARDSMITH_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 2
    said = proc.stderr.replace("\n", "")
    assert "cannot reach" in said and "--fallback embedded" in said
