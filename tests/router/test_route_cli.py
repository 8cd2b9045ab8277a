"""`rewardsmith route`, `route fit`, `score` without a tool, and `bench routing`, as a user
runs them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rewardsmith import Library
from rewardsmith.bench.routing import evaluate
from rewardsmith.cli.main import app
from rewardsmith.router.decision import Decision, ToolWeight, synthesize
from support import EXPECTED_TOOL

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("embedder")


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_route_writes_a_route_field_per_line_and_logs_per_signature(
    tmp_path: Path, mixed: list[dict[str, Any]]
) -> None:
    records = [{k: v for k, v in r.items() if k != "task"} for r in mixed]
    src = _write(tmp_path / "in.jsonl", records)
    out, lib = tmp_path / "out.jsonl", tmp_path / "lib.db"
    result = runner.invoke(app, ["route", str(src), "-o", str(out), "--library", str(lib)])
    assert result.exit_code == 0, result.output
    lines = _read(out)
    assert [line["id"] for line in lines] == [r["id"] for r in mixed]
    for line, record in zip(lines, mixed, strict=True):
        route = line["route"]
        assert set(route) >= {"action", "tools", "confidence", "backend", "signature"}
        if route["action"] == "tool":
            assert route["tools"][0]["tool"].partition("@")[0] == EXPECTED_TOOL[record["task"]]
    assert "routing by task signature" in result.output
    with Library(lib) as library:
        events = library.history()
    signatures = {line["route"]["signature"] for line in lines}
    assert len([e for e in events if e.kind in ("route", "synthesize_request")]) == len(signatures)


def test_route_fit_stores_what_it_learned(tmp_path: Path) -> None:
    labeled = [
        {
            "prompt": f"Condense this news item into one line: item {i} about the harbour.",
            "completion": "x",
            "reference": "A ship docked today.",
            "label": "translation",
        }
        for i in range(8)
    ]
    src = _write(tmp_path / "labeled.jsonl", labeled)
    lib = tmp_path / "lib.db"
    result = runner.invoke(app, ["route", "fit", str(src), "--library", str(lib)])
    assert result.exit_code == 0, result.output
    assert "fitted on 8 examples" in result.output
    with Library(lib) as library:
        assert [e.kind for e in library.history()].count("router_fit") == 1


def test_route_fit_refuses_unlabeled_lines(tmp_path: Path) -> None:
    src = _write(tmp_path / "labeled.jsonl", [{"completion": "x", "prompt": "p"}])
    result = runner.invoke(app, ["route", "fit", str(src), "--library", str(tmp_path / "l.db")])
    assert result.exit_code != 0


def test_score_without_tool_or_task_map_routes(tmp_path: Path, mixed: list[dict[str, Any]]) -> None:
    picks = [next(r for r in mixed if r["task"] == t) for t in ("gsm8k", "translation", "format")]
    src = _write(
        tmp_path / "in.jsonl", [{k: v for k, v in r.items() if k != "task"} for r in picks]
    )
    out = tmp_path / "out.jsonl"
    result = runner.invoke(
        app, ["score", str(src), "-o", str(out), "--library", str(tmp_path / "l.db")]
    )
    assert result.exit_code == 0, result.output
    tools = [line["tool"].partition("@")[0] for line in _read(out)]
    assert tools == ["gsm8k", "translation", "format_tags"]


def test_bench_evaluation_counts_accuracy_synthesize_and_confident_mistakes() -> None:
    items = [
        {"label": "gsm8k", "source": "a", "kind": None},
        {"label": "gsm8k", "source": "a", "kind": None},
        {"label": "synthesize", "source": "b", "kind": "reward_model"},
        {"label": "synthesize", "source": "b", "kind": "code_verifier"},
    ]
    decisions = [
        Decision("tool", 0.99, "embedded", (ToolWeight("gsm8k@1"),)),
        Decision("tool", 0.95, "embedded", (ToolWeight("math@1"),)),
        synthesize("reward_model", "no reference", 0.9, "embedded"),
        Decision("tool", 0.7, "embedded", (ToolWeight("translation@1"),)),
    ]
    out = evaluate(items, decisions)
    assert out["accuracy"] == 0.5 and out["synthesize_share"] == 0.5
    assert out["kind_accuracy"] == 1.0 and out["confident_wrong"] == 1
    assert out["confusion"]["gsm8k -> math"] == 1
