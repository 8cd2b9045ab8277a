"""`report` and `search report` on folders someone else prepared: a planted symlink is
replaced, not written through; a FIFO or a device is skipped, not waited on; strings from
the folder are Markdown text, never links, images, HTML or table breaks; a file of the wrong
shape costs its section (or is an `InputError`), never a traceback."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from rewardsmith.errors import InputError
from rewardsmith.report.markdown import write_report
from rewardsmith.search.report import write_report as write_search_report

# Text a run folder may carry to act in a Markdown viewer.
INJECTION = (
    "x` <img src=x onerror=alert(1)> [click](http://evil.example) ![px](http://evil.example/p.png)"
    " | fake cell |\n# fake heading"
)
RM_RBS = {"kind": "cross", "train": {"backbone": INJECTION}, "result": {"steps": 1}}
RM_EVAL = {
    "model": INJECTION,
    "data": [INJECTION],
    "results": {"trained": {INJECTION: {"accuracy": 0.6, "n": 10.0}}},
}


def _finishes(work: Callable[[], Any]) -> Any:
    """Run `work`; a hang (a FIFO read) fails the test instead of the suite."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = work()
        except Exception as exc:  # handed to the test's thread
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(120)
    assert not thread.is_alive(), "hung on a file in the folder"
    if "error" in box:
        raise box["error"]
    return box.get("result")


def _no_markup_from_data(page: str) -> None:
    """Rendered as a viewer would (CommonMark with raw HTML, GFM tables): nothing from data
    became an element."""
    html = MarkdownIt("commonmark").enable("table").render(page)
    assert '<img src="x"' not in html and "<img src=x" not in html
    assert 'href="http://evil' not in html and 'src="http://evil' not in html
    assert "<h1>fake heading" not in html
    assert "<td>fake cell</td>" not in html  # the pipes stayed text, not cell borders
    assert "fake cell" in html  # ... and the text is shown


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    target = tmp_path / "outside" / "precious.txt"
    target.parent.mkdir()
    target.write_text("keep me")
    return target


def test_report_of_a_prepared_run_folder(tmp_path: Path, outside: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "rbs_config.json").write_text(json.dumps(RM_RBS))
    (run / "eval.json").write_text(json.dumps(RM_EVAL))
    os.mkfifo(run / "metrics.jsonl")  # nobody writes: a read would wait forever
    (run / "summary.json").symlink_to("/dev/zero")  # endless
    (run / "report.md").symlink_to(outside)  # the page would overwrite this
    (run / "eval.png").symlink_to(tmp_path / "outside" / "new.png")  # and create this
    path = _finishes(lambda: write_report(run))
    assert outside.read_text() == "keep me" and not (tmp_path / "outside" / "new.png").exists()
    assert not path.is_symlink()
    _no_markup_from_data(path.read_text())


def test_a_section_of_the_wrong_shape_is_named_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "rbs_config.json").write_text(json.dumps({"windows": [1, 2], "train": "x"}))
    page = write_report(tmp_path).read_text()
    assert "`rbs_config.json` could not be read" in page


def _search_run(folder: Path) -> None:
    config = {
        "task": INJECTION,
        "rounds": 1,
        "per_round": 1,
        "generator": "offline",
        "fidelity": "proxy",
        "grpo_steps": [10],
        "eta": 2,
        "grpo_backend": "embedded",
        "seed": 0,
    }
    (folder / "run.json").write_text(json.dumps({"config": config, "task": {"policy": INJECTION}}))
    records = [
        {"round": 1, "name": "r1_00", "generator": "llm", "origin": INJECTION, "admitted": True,
         "stage": 4, "proxy": {"fitness": 0.5, "separation": 0.1, "probe_payout": 0.0, "cpu_seconds": 1.0,
                   "seconds": 1.0}},
        {"round": 1, "name": "../../outside/precious", "generator": "llm", "admitted": True,
         "stage": 4, "proxy": {"fitness": 0.1, "separation": 0.1, "probe_payout": 0.0,
                               "cpu_seconds": 1.0, "seconds": 1.0}},
        {"round": 1, "name": "r1_02", "generator": "llm", "admitted": False, "stage": 1,
         "reason": INJECTION},
    ]  # fmt: skip
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (folder / "candidates").mkdir()
    (folder / "candidates" / "r1_00.py").write_text(f'"""{INJECTION}"""\n')
    (folder.parent / "outside" / "precious.py").write_text('"""keep me"""\n')


def test_search_report_of_a_prepared_run_folder(tmp_path: Path, outside: Path) -> None:
    run = tmp_path / "search"
    run.mkdir()
    _search_run(run)
    (run / "report.md").symlink_to(outside)
    (run / "ranks.png").symlink_to(tmp_path / "outside" / "ranks.png")
    os.mkfifo(run / "audit.json")
    path = _finishes(lambda: write_search_report(run))
    assert outside.read_text() == "keep me" and not (tmp_path / "outside" / "ranks.png").exists()
    page = path.read_text()
    _no_markup_from_data(page)
    assert "keep me" not in page  # a `..` name is not looked up outside the folder


def test_search_report_of_a_folder_of_the_wrong_shape_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(json.dumps({"config": {"task": "t"}}))
    with pytest.raises(InputError, match="not what `rewardsmith search` writes"):
        write_search_report(tmp_path)
