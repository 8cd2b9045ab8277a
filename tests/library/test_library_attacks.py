"""Attacks on the tool library: factory strings that would import code, tool names that look
like others or like paths, retired tools named with their version. One attack per test."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from rewardsmith.errors import ConfigError
from rewardsmith.library.names import TOOL_NAME_RULE, tool_name_from, valid_tool_name
from rewardsmith.library.registry import BUILTINS, REWARD_FUNCTION_FACTORY
from rewardsmith.library.store import Library
from rewardsmith.types import ToolSpec

FORMAT_TAGS = {"factory": "rewardsmith.tools.format:FormatTagsTool", "params": {}}
# A module that leaves a mark when it is imported, and defines a tool class.
MARKING_MODULE = """
from pathlib import Path
Path({marker!r}).write_text("imported")
from rewardsmith.tools.format import FormatTagsTool as Tool
"""


def spec(name: str) -> ToolSpec:
    return ToolSpec(name=name, provenance="user", needs_reference=False)


def marking_module(folder: Path, module: str) -> Path:
    marker = folder / f"{module}.imported"
    (folder / f"{module}.py").write_text(MARKING_MODULE.format(marker=str(marker)))
    return marker


def insert_row(path: Path, name: str, config: dict[str, object], retired: int = 0) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "INSERT INTO tools (name, version, spec, config, created_at, retired) "
            "VALUES (?, 1, ?, ?, '2024-01-01T00:00:00+00:00', ?)",
            (name, json.dumps(spec(name).to_dict() | {"name": name}), json.dumps(config), retired),
        )
    conn.close()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewardsmith.cli.main", *args], capture_output=True, text=True
    )


# -- factories ----------------------------------------------------------------------------


def test_a_factory_naming_the_this_module_runs_nothing_at_add(library: Library) -> None:
    assert "this" not in sys.modules
    with pytest.raises(ConfigError, match="is not allowed.*nothing was imported"):
        library.add(spec("zen"), {"factory": "this:x", "params": {}})
    assert "this" not in sys.modules and "zen" not in library.names()


def test_a_row_naming_a_module_in_the_working_directory_is_not_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The module is importable (its folder is the working directory and on sys.path): only
    # the factory rule stands between the row and its code.
    marker = marking_module(tmp_path, "local_tools")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "lib.db"
    Library(path).close()
    insert_row(path, "local", {"factory": "local_tools:Tool", "params": {}})
    with Library(path) as library, pytest.raises(ConfigError, match="is not allowed"):
        library.get("local")
    assert not marker.exists() and "local_tools" not in sys.modules


def test_a_rewardsmith_module_that_is_not_a_tool_class_is_refused(library: Library) -> None:
    with pytest.raises(ConfigError, match="not a RewardTool class"):
        library.add(spec("runner"), {"factory": "rewardsmith.tools.base:score_batch"})


def test_a_plugin_registered_as_an_entry_point_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, library: Library
) -> None:
    # The control: an installed plugin's entry point in the group rewardsmith.tools.
    marking_module(tmp_path, "plugin_tools")
    info = tmp_path / "plugin_tools-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plugin-tools\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[rewardsmith.tools]\nmine = plugin_tools:Tool\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    stored = library.add(spec("plugged"), {"factory": "plugin_tools:Tool", "params": {}})
    assert stored.ref == "plugged@1" and library.get("plugged").spec.name == "plugged"


# -- names --------------------------------------------------------------------------------

BAD_NAMES = [
    "gsm8k@2",  # `@` pins a version: NAME@N is a reference, not a name
    "../..",  # a path
    "",  # empty
    "a\x00b",  # NUL
    "gsm8\u043a",  # Cyrillic ka beside gsm8k
    "GSM8K",  # upper case: a second spelling of gsm8k
    "-rf",  # starts like an option
    "x" * 65,  # too long
    "tab\tname",
]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_bad_tool_name_is_refused_with_the_rule(library: Library, name: str) -> None:
    with pytest.raises(ConfigError, match="bad tool name") as info:
        library.add(spec(name), FORMAT_TAGS)
    assert TOOL_NAME_RULE in str(info.value)
    assert name not in library.names(include_retired=True)


def test_tools_add_exits_2_on_a_look_alike_name(tmp_path: Path) -> None:
    tool_file = tmp_path / "tool.json"
    tool_file.write_text(json.dumps({"spec": {"name": "gsm8\u043a"}, "config": FORMAT_TAGS}))
    done = cli("tools", "add", str(tool_file), "--library", str(tmp_path / "l.db"))
    assert done.returncode == 2 and TOOL_NAME_RULE in done.stderr, done.stderr


def test_names_rewardsmith_makes_follow_the_rule() -> None:
    # Built-ins, synthesized names (a task slug, synth_<hash>, NAME.rejected), search
    # candidates and a trained model's folder name.
    from rewardsmith.search.generator import candidate_name
    from rewardsmith.synth.session import _slug

    made = [b.spec.name for b in BUILTINS]
    made += [_slug("Word Sorting (RG)"), "synth_" + "0123456789", _slug("Задача") + ".rejected"]
    made += [candidate_name(3, 7, "LengthPenalty"), tool_name_from("My_RM-v2")]
    made += ["synth_" + _slug("x" * 200) + ".rejected"]
    assert all(valid_tool_name(n) for n in made), [n for n in made if not valid_tool_name(n)]


def test_a_library_file_with_bad_names_is_reported_not_crashing(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    Library(path).close()
    for name in ("gsm8\u043a", "../..", "gsm8k@2"):
        insert_row(path, name, FORMAT_TAGS)
    with Library(path) as library:
        assert "../.." in library.names()
        with pytest.raises(ConfigError, match="bad tool name"):
            library.get("gsm8\u043a")
        library.retire("../..", reason="bad name")  # and it can be cleaned up
    listed = cli("tools", "list", "--library", str(path))
    assert listed.returncode == 0, listed.stderr
    warning = " ".join(listed.stderr.split())
    assert f"2 stored tool name(s) break the rule {TOOL_NAME_RULE}" in warning, warning


# -- retired tools ------------------------------------------------------------------------


def test_a_retired_tool_is_not_built_when_named_with_its_version(library: Library) -> None:
    library.retire("length", reason="replaced")
    with pytest.raises(ConfigError, match="'length@1' is retired"):
        library.get("length@1")


def test_a_gate_rejected_candidate_is_not_built_when_named_with_its_version(
    library: Library,
) -> None:
    source = "def reward(completions, **kw):\n    return [0.0 for c in completions]\n"
    config = {"factory": REWARD_FUNCTION_FACTORY, "params": {"source": source}}
    stored = library.add(spec("candidate"), config, retired=True)  # as synthesis stores it
    with pytest.raises(ConfigError, match="is retired"):
        library.get(stored.ref)


def test_a_superseded_version_may_still_be_pinned(library: Library) -> None:
    library.add(spec("tags"), FORMAT_TAGS)
    library.add(spec("tags"), {**FORMAT_TAGS, "params": {"mode": "approx"}})
    assert library.get("tags@1").spec.version == 1 and library.get("tags").spec.version == 2
