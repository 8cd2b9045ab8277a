"""One sample reader: the same JSON object is accepted or refused, with the same message, by
`rewardsmith score` (a JSONL file), by `POST /v1/score` on a running server and by the
client; an accepted one gets the same reward from both."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from rewardsmith.cli.main import app
from rewardsmith.client import RewardClient, sample_json
from rewardsmith.errors import InputError
from rewardsmith.rollout_log import REWARD_FIELDS

runner = CliRunner()

ACCEPTED: list[Any] = [
    # the one required field, and every field filled in
    {"completion": "#### 72"},
    {"completion": "#### 72", "prompt": "q", "reference": "72", "task": "t", "id": "a", "meta": {}},
    # null is "absent" for every optional field
    {"completion": "#### 72", "prompt": None, "reference": None, "task": None, "id": None},
    {"completion": "#### 72", "reference": "72", "meta": None},
    # an id is a string or an integer
    {"completion": "#### 72", "reference": "72", "id": 7},
    {"completion": "#### 72", "reference": "72", "id": -3},
    # chat prompts: messages kept as given, a role is optional
    {"completion": "#### 72", "reference": "72", "prompt": [{"role": "user", "content": "q"}]},
    {"completion": "#### 72", "reference": "72", "prompt": [{"content": "q"}]},
    {"completion": "#### 72", "reference": "72", "prompt": []},
    # a reference that is not a string is kept as its JSON text
    {"completion": "#### 72", "reference": 72},
    {"completion": "#### 72", "reference": {"answer": 72}},
    {"completion": "#### 72", "reference": [72]},
    # group (any JSON) goes into meta; unknown fields are ignored
    {"completion": "#### 72", "reference": "72", "group": 3, "meta": {"k": "v"}},
    {"completion": "#### 72", "reference": "72", "extra": [1, 2], "reward": "old"},
]

# (object, the field the refusal names: None when the object itself is wrong)
REFUSED: list[tuple[Any, str | None]] = [
    # not an object (a line that is an array gets the CLI's "not JSON Lines" hint first)
    (3, None),
    ("#### 72", None),
    (None, None),
    # completion: required, a string
    ({"prompt": "q"}, "completion"),
    ({"completion": 5}, "completion"),
    ({"completion": None}, "completion"),
    # prompt: a string or a list of message objects whose role is a string
    ({"completion": "x", "prompt": 5}, "prompt"),
    ({"completion": "x", "prompt": {"role": "user", "content": "q"}}, "prompt"),
    ({"completion": "x", "prompt": ["q"]}, "prompt"),
    ({"completion": "x", "prompt": [{"role": 1, "content": "q"}]}, "prompt"),
    # task: a string
    ({"completion": "x", "task": ["a"]}, "task"),
    ({"completion": "x", "task": 5}, "task"),
    # meta: an object (an empty array, string or false is not "absent")
    ({"completion": "x", "meta": []}, "meta"),
    ({"completion": "x", "meta": ""}, "meta"),
    ({"completion": "x", "meta": False}, "meta"),
    ({"completion": "x", "meta": [["k", "v"]]}, "meta"),
    # id: a string or an integer
    ({"completion": "x", "id": 1.5}, "id"),
    ({"completion": "x", "id": 2.0}, "id"),
    ({"completion": "x", "id": True}, "id"),
    ({"completion": "x", "id": [1]}, "id"),
    ({"completion": "x", "id": {"n": 1}}, "id"),
]


def cli_score(tmp_path: Path, obj: Any) -> tuple[dict[str, Any] | None, str]:
    """`rewardsmith score` on a one-line file: (the output line, "") or (None, the error)."""
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(obj) + "\n")
    out = tmp_path / "out.jsonl"
    args = ["score", str(src), "-o", str(out), "--tool", "gsm8k", "-q"]
    result = runner.invoke(app, [*args, "--library", str(tmp_path / "lib.db")])
    if result.exit_code == 0:
        return json.loads(out.read_text()), ""
    assert isinstance(result.exception, InputError), result.output
    assert not out.exists()
    return None, str(result.exception)


def http_score(server: str, obj: Any) -> httpx.Response:
    return httpx.post(f"{server}/v1/score", json={"samples": [obj], "tool": "gsm8k"}, timeout=60)


@pytest.mark.parametrize("obj", ACCEPTED, ids=[json.dumps(o)[:60] for o in ACCEPTED])
def test_an_accepted_sample_gets_the_same_reward_from_cli_http_and_client(
    server: str, tmp_path: Path, obj: Any
) -> None:
    line, error = cli_score(tmp_path, obj)
    assert line is not None, error
    response = http_score(server, obj)
    assert response.status_code == 200, response.text
    [reward] = response.json()["rewards"]
    reward["reward"] = reward.pop("score")  # the HTTP API's name for the output's `reward`
    assert reward == {k: line[k] for k in REWARD_FIELDS}
    if obj.get("reference") in ("72", 72):  # scored, not only read
        assert (line["reward"], line["status"]) == (1.0, "ok")
    # the client reads a dict with the same reader, and gets the same reward
    with RewardClient(server, retries=0) as client:
        [got] = client.score([obj], tool="gsm8k")
    assert (got.score, got.status, got.reason) == (line["reward"], line["status"], line["reason"])
    # what the CLI writes: the input line as read (unknown fields too), its reward fields
    # replaced by the reward's
    kept = {k: v for k, v in obj.items() if k not in REWARD_FIELDS}
    assert {k: v for k, v in line.items() if k in kept} == kept


@pytest.mark.parametrize(("obj", "field"), REFUSED, ids=[json.dumps(o)[:60] for o, _ in REFUSED])
def test_a_refused_sample_is_refused_with_one_message_by_cli_http_and_client(
    server: str, tmp_path: Path, obj: Any, field: str | None
) -> None:
    response = http_score(server, obj)
    assert response.status_code == 422, response.text
    [detail] = response.json()["detail"]
    where = ["body", "samples", 0] + ([field] if field else [])
    assert detail["loc"] == where
    message = detail["msg"]
    if field:
        assert f"'{field}'" in message
    # the CLI: the same message, after the path and line
    line, error = cli_score(tmp_path, obj)
    assert line is None
    assert error == f"{tmp_path / 'in.jsonl'}:1: {message}; nothing was scored"
    # the client refuses it before sending, with the same message
    with pytest.raises(InputError) as refused:
        sample_json(obj)
    assert str(refused.value) == message
