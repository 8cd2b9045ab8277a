"""A shared library file that is damaged or locked: a malformed row is reported and skipped
with its tool named (a `LibraryError` naming it when that tool is asked for), another
process's write lock is waited for a bounded time and then fails before anything is
written, and `tools history` shows a page, not the whole log."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rewardsmith import Library
from rewardsmith.cli.main import app
from rewardsmith.errors import LibraryError
from rewardsmith.library import store
from rewardsmith.types import ToolSpec

runner = CliRunner()

# Ways a `tools` row can be broken by another writer or a hand edit.
MALFORMED = {
    "spec-not-json": ("spec", "{not json"),
    "spec-missing-fields": ("spec", '{"kind": "code"}'),
    "config-not-an-object": ("config", "[1, 2]"),
    "spec-nested-too-deep": ("spec", "[" * 100_000 + "]" * 100_000),
    "spec-fields-of-the-wrong-type": ("spec", '{"name": "mine", "description": {"a": 1}}'),
    "spec-exemplars-not-text": ("spec", '{"name": "mine", "exemplars": [1, 2]}'),
}


def _break(path: Path, tool: str, column: str, value: str) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute(f"UPDATE tools SET {column} = ? WHERE name = ?", (value, tool))


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_row_is_skipped_in_lists_and_named_when_asked_for(
    tmp_path: Path, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "library.db"
    with Library(path) as lib:
        lib.add(ToolSpec(name="mine", provenance="user"), dict(lib.record("gsm8k").config))
    _break(path, "mine", *MALFORMED[case])
    with caplog.at_level(logging.WARNING), Library(path) as lib:
        names = lib.names()
        assert "mine" not in names and "gsm8k" in names  # the others are unaffected
        assert any("'mine'@1" in r.getMessage() for r in caplog.records)
        with pytest.raises(LibraryError, match="'mine'@1 is malformed"):
            lib.get("mine")
    listed = runner.invoke(app, ["tools", "list", "--library", str(path)])
    assert listed.exit_code == 0 and "gsm8k@1" in listed.output
    shown = runner.invoke(app, ["tools", "show", "mine", "--library", str(path)])
    assert isinstance(shown.exception, LibraryError)  # exit 2 from the command


def test_a_malformed_builtin_row_is_stored_anew(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "library.db"
    Library(path).close()
    _break(path, "gsm8k", "spec", "{not json")
    with caplog.at_level(logging.WARNING), Library(path) as lib:
        assert lib.record("gsm8k").spec.version == 2 and lib.get("gsm8k")
    assert any("built-in gsm8k@1 is malformed" in r.getMessage() for r in caplog.records)


def test_a_malformed_event_is_skipped_with_its_id(
    library: Library, caplog: pytest.LogCaptureFixture
) -> None:
    library.log_event("note", None, text="fine")
    with sqlite3.connect(library.path) as conn:
        conn.execute("DROP TRIGGER events_append_only_update")
        conn.execute("UPDATE events SET detail = '{oops' WHERE kind = 'register'")
    with caplog.at_level(logging.WARNING):
        events = library.history()
    assert [e.kind for e in events] == ["note"]
    assert any("malformed detail; skipped" in r.getMessage() for r in caplog.records)


def test_a_locked_library_fails_within_the_wait_before_writing(
    library: Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "LOCK_WAIT_S", 0.2)
    lib = Library(library.path)  # opened before the lock: its built-ins are registered
    holder = sqlite3.connect(library.path, timeout=0)
    holder.execute("BEGIN IMMEDIATE")  # a writer stopped mid-transaction
    try:
        lib._conn.execute(f"PRAGMA busy_timeout = {int(store.LOCK_WAIT_S * 1000)}")
        before = len(library.history())
        with pytest.raises(LibraryError, match="locked by another process.*nothing was written"):
            lib.log_event("note", None)
        with pytest.raises(LibraryError, match="locked"):
            lib.add(ToolSpec(name="x", kind="code"), {"factory": "nope:Nope"}, retired=True)
    finally:
        holder.rollback()
        holder.close()
        lib.close()
    assert len(library.history()) == before


def test_tools_history_shows_the_newest_page_and_says_how_to_see_more(library: Library) -> None:
    for i in range(130):
        library.log_event("note", None, i=i)
    total = len(library.history())
    path = str(library.path)
    first = runner.invoke(app, ["tools", "history", "--library", path])
    assert first.exit_code == 0
    assert f"events {total - 49}-{total} of {total}; older: --page 2" in first.output
    assert '"i": 129' in first.output and '"i": 79' not in first.output
    second = runner.invoke(app, ["tools", "history", "--library", path, "--page", "2"])
    assert '"i": 79' in second.output and '"i": 129' not in second.output
    everything = runner.invoke(app, ["tools", "history", "--library", path, "--limit", "0"])
    rows = [line for line in everything.output.splitlines() if line.startswith("│ ")]
    assert len(rows) >= total and "older" not in everything.output


def test_history_pages_in_the_store(library: Library) -> None:
    for i in range(10):
        library.log_event("note", None, i=i)
    page = library.history(kind="note", limit=3, offset=3)
    assert [e.detail["i"] for e in page] == [4, 5, 6]
    assert library.count_events(kind="note") == 10


def test_a_routed_score_under_a_held_lock_keeps_its_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(store, "LOCK_WAIT_S", 0.2)
    path = tmp_path / "library.db"
    Library(path).close()
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    lines = [
        {"prompt": f"Ann has {i} apples and buys 2 more. How many?", "completion": f"#### {i + 2}",
         "reference": str(i + 2), "task": f"t{i}"}
        for i in range(6)
    ]  # fmt: skip
    src.write_text("".join(json.dumps(line) + "\n" for line in lines))
    holder = sqlite3.connect(path, timeout=0)
    holder.execute("BEGIN IMMEDIATE")  # a writer stopped mid-transaction
    try:
        with caplog.at_level(logging.WARNING):
            result = runner.invoke(
                app, ["score", str(src), "-o", str(out), "--library", str(path), "-b", "rules"]
            )
    finally:
        holder.rollback()
        holder.close()
    assert result.exit_code == 0, result.output
    assert len(out.read_text().splitlines()) == 6  # every line scored and kept
    warned = [r for r in caplog.records if "without its library events" in r.getMessage()]
    assert len(warned) == 1


def test_routing_over_a_library_with_a_malformed_row_and_fit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from rewardsmith.router import Router
    from rewardsmith.router.router import FIT_EVENT

    path = tmp_path / "library.db"
    with Library(path) as lib:
        lib.add(ToolSpec(name="mine", provenance="user"), dict(lib.record("gsm8k").config))
        lib.log_event(FIT_EVENT, None, state={"weights": "not a table"})
    _break(path, "mine", "spec", '{"name": "mine", "description": {"a": 1}}')
    sample = {"prompt": "Ann has 3 apples and buys 2. How many?", "completion": "#### 5",
              "reference": "5"}  # fmt: skip
    with caplog.at_level(logging.WARNING), Router(Library(path), "rules") as router:
        (decision,) = router.route([sample])
    assert decision.label == "gsm8k"
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "'mine'@1 is malformed" in said and "router_fit" in said
