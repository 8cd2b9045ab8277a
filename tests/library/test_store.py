"""The SQLite tool library: built-ins on first use, versions, retire, append-only history."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest

from rewardsmith.errors import ConfigError, UnknownToolError
from rewardsmith.library.registry import BUILTINS, builtin_names
from rewardsmith.library.store import Library, parse_tool_ref
from rewardsmith.types import ToolSpec

FORMAT_CONFIG = {
    "factory": "rewardsmith.tools.format:FormatTagsTool",
    "params": {"mode": "exact", "tags": ["answer"]},
}


def test_builtins_are_registered_on_first_use(library: Library) -> None:
    assert set(builtin_names()) <= set(library.names())
    registered = [e for e in library.history() if e.kind == "register"]
    assert {e.tool for e in registered} == set(builtin_names())
    assert all(library.record(n).spec.provenance == "builtin" for n in builtin_names())


def test_reopening_does_not_register_twice(tmp_path: Path) -> None:
    path = tmp_path / "lib.db"
    Library(path).close()
    with Library(path) as lib:
        assert len(lib.history()) == len(BUILTINS)
        assert all(len(lib.versions(n)) == 1 for n in builtin_names())


def test_default_path_follows_rewardsmith_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REWARDSMITH_HOME", str(tmp_path / "home"))
    with Library() as lib:
        assert lib.path == tmp_path / "home" / "library.db"
    assert (tmp_path / "home" / "library.db").exists()


def test_add_creates_versions_and_events(library: Library) -> None:
    spec = ToolSpec(name="answer_tag", description="one <answer> tag", provenance="user")
    first = library.add(spec, FORMAT_CONFIG, note="first try")
    second = library.add(spec, FORMAT_CONFIG)
    assert (first.version, second.version) == (1, 2)
    assert [r.spec.version for r in library.versions("answer_tag")] == [1, 2]
    assert library.get("answer_tag").spec.ref == "answer_tag@2"
    assert library.get("answer_tag@1").spec.ref == "answer_tag@1"
    kinds = [e.kind for e in library.history("answer_tag")]
    assert kinds == ["add", "new_version"]
    assert library.history("answer_tag")[0].detail["note"] == "first try"


def test_a_config_that_cannot_build_is_refused_and_leaves_no_trace(library: Library) -> None:
    before = len(library.history())
    bad = {"factory": "rewardsmith.tools.nowhere:Nothing", "params": {}}
    with pytest.raises(ConfigError, match="cannot load factory"):
        library.add(ToolSpec(name="broken", provenance="user"), bad)
    assert "broken" not in library.names()
    assert len(library.history()) == before


def test_unknown_tool_lists_the_known_ones(library: Library) -> None:
    with pytest.raises(UnknownToolError) as info:
        library.get("nope")
    assert "known tools:" in str(info.value) and "gsm8k" in str(info.value)
    with pytest.raises(ConfigError, match="no version 9"):
        library.get("gsm8k@9")


def test_retired_tools_stay_in_history_but_are_not_used(library: Library) -> None:
    library.retire("length", reason="replaced")
    assert "length" not in library.names()
    assert "length" in library.names(include_retired=True)
    with pytest.raises(ConfigError, match="retired"):
        library.get("length")
    assert library.history("length")[-1].kind == "retire"


def test_event_log_is_append_only(library: Library) -> None:
    conn = sqlite3.connect(library.path)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE events SET kind = 'forged'")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM events")
    conn.close()


def test_changed_builtin_definition_becomes_a_new_version(tmp_path: Path) -> None:
    path = tmp_path / "lib.db"
    Library(path).close()
    conn = sqlite3.connect(path)
    with conn:  # simulate a library written by an older rewardsmith with other defaults
        conn.execute(
            'UPDATE tools SET config = \'{"factory": "x:Y", "params": {}}\' WHERE name = \'overlong\''
        )
    conn.close()
    with Library(path) as lib:
        assert [r.spec.version for r in lib.versions("overlong")] == [1, 2]
        assert lib.history("overlong")[-1].kind == "update"


# Specs written before `ref_format` existed name their format in prose only: what tools
# files and older libraries hold. (prose, needs_reference) -> the key they load with.
LEGACY_SPECS = [
    ("reasoning-gym entry (JSON)", True, "json_entry"),
    ("json entry", True, "json_entry"),  # what synthesis wrote for a dataset entry
    ("JSON", True, "json"),
    ("unit tests (JSON)", True, "unit_tests"),
    ("choice letter", True, "choice"),
    ("option index", True, "choice_index"),
    ("latex", True, "latex"),
    ("number", True, "number"),
    ("free text", True, "free_text"),
    ("a sentence", True, "free_text"),
    ("none", True, "none"),
    ("number", False, "none"),  # needs no reference: the prose is not read
]


def _without_ref_format(conn: sqlite3.Connection) -> None:
    for name, version, text in conn.execute("SELECT name, version, spec FROM tools").fetchall():
        spec = json.loads(text)
        spec.pop("ref_format")
        conn.execute(
            "UPDATE tools SET spec = ? WHERE name = ? AND version = ?",
            (json.dumps(spec), name, version),
        )


def test_a_library_written_before_ref_format_loads_with_the_same_keys(tmp_path: Path) -> None:
    path = tmp_path / "lib.db"
    with Library(path) as lib:
        expected = {n: lib.record(n).spec for n in lib.names()}
        for i, (prose, needs, _) in enumerate(LEGACY_SPECS):
            lib.add(
                ToolSpec(f"user{i}", needs_reference=needs, reference_format=prose),
                FORMAT_CONFIG,
            )
    conn = sqlite3.connect(path)
    with conn:
        _without_ref_format(conn)
    conn.close()
    with Library(path) as lib:
        # Built-ins read back equal (same key), so none is stored again as a new version.
        assert {n: lib.record(n).spec for n in expected} == expected
        assert all(len(lib.versions(n)) == 1 for n in builtin_names())
        for i, (_, _, key) in enumerate(LEGACY_SPECS):
            spec = lib.record(f"user{i}").spec
            assert (spec.ref_format, spec.needs_reference) == (key, key != "none"), spec


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({}, "free_text"),
        ({"needs_reference": False}, "none"),
        ({"ref_format": "none"}, "none"),
        ({"ref_format": "json_entry"}, "json_entry"),
        ({"needs_reference": False, "ref_format": "none"}, "none"),
    ],
)
def test_needs_reference_is_one_fact_with_the_key(kwargs: dict[str, object], key: str) -> None:
    spec = ToolSpec("t", **kwargs)  # type: ignore[arg-type]
    assert (spec.ref_format, spec.needs_reference) == (key, key != "none")
    assert ToolSpec.from_dict(spec.to_dict()) == spec


@pytest.mark.parametrize(
    "kwargs",
    [{"ref_format": "prose words"}, {"needs_reference": False, "ref_format": "number"}],
)
def test_a_contradictory_or_unknown_key_is_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="reference format"):
        ToolSpec("t", **kwargs)  # type: ignore[arg-type]


def test_events_from_many_threads_are_all_kept(library: Library) -> None:
    def log(n: int) -> None:
        for i in range(25):
            library.log_event("route", "gsm8k", worker=n, i=i)

    threads = [threading.Thread(target=log, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len([e for e in library.history("gsm8k") if e.kind == "route"]) == 100


def test_unwritable_location_gives_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    from rewardsmith.errors import LibraryError

    with pytest.raises(LibraryError, match="--library PATH"):
        Library(blocker / "lib.db")


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("math", ("math", None)),  # plain name: latest version
        ("math@3", ("math", 3)),  # pinned version
    ],
)
def test_parse_tool_ref(ref: str, expected: tuple[str, int | None]) -> None:
    assert parse_tool_ref(ref) == expected


def test_parse_tool_ref_rejects_bad_versions() -> None:
    with pytest.raises(ConfigError, match="NAME@VERSION"):
        parse_tool_ref("math@latest")
