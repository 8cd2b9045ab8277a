"""docs/audit.md publishes the audit of every built-in tool."""

from __future__ import annotations

from rewardsmith.library.registry import builtin_names
from support import REPO_ROOT


def test_every_builtin_tool_has_a_row_in_the_audit_table() -> None:
    text = (REPO_ROOT / "docs" / "audit.md").read_text(encoding="utf-8")
    rows = {
        line.split("|")[1].strip().strip("`")
        for line in text.splitlines()
        if line.startswith("| `")
    }
    assert set(builtin_names()) <= rows
