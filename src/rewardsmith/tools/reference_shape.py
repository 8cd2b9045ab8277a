"""Recognize a reference that belongs to another kind of tool, so a verifier says
`invalid_reference` instead of reading a number out of it.

A math or number verifier handed a code sample's reference (`["assert f() == 4"]`, a HumanEval
record) would otherwise find a "4" in the JSON and score a completion that returns 4 as 1.0
with status `ok`: a wrong reward nobody sees. `foreign_reference` names what such a reference
is (a JSON list of unit tests, a HumanEval or MBPP record, stdin/stdout cases, a
reasoning-gym entry, another JSON object, Python test code) and which tool reads it; tools
whose references are answers or text (`math`, `gsm8k`, `translation`) refuse those shapes in
their `parse_reference`, which runs wherever the tool verifies (its own process or a worker).

What stays allowed: JSON arrays of numbers (`[1, 2]` is a math interval), LaTeX sets
(`{1,2}` is not JSON), and, for translation, a JSON list of reference sentences.
"""

from __future__ import annotations

import json
import re
from typing import Any

# A line of Python test code: `assert ...`, `def check(candidate):`, `def test_x():`.
# Spaces only, never newlines, before the keyword: `^\s*` would rescan every blank line
# from each line start (quadratic on a reference of blank lines).
_TEST_CODE_LINE = re.compile(r"^[ \t]*(?:assert\s|def[ \t]+\w+[ \t]*\(.*\)[ \t]*:)", re.MULTILINE)


def _record_kind(data: dict[str, Any]) -> str:
    keys = set(data)
    if {"test", "entry_point"} & keys or "canonical_solution" in keys:
        return "a HumanEval record (JSON with 'test'/'entry_point'), read by the `code` tool"
    if "test_list" in keys:
        return "an MBPP record (JSON with 'test_list'), read by the `code` tool"
    if {"inputs", "outputs"} <= keys:
        return "stdin/stdout test cases (JSON 'inputs'/'outputs'), read by the `code` tool"
    if "question" in keys and ("metadata" in keys or "answer" in keys):
        return "a reasoning-gym entry (JSON), read by the `reasoning_gym` tool"
    shown = ", ".join(sorted(map(str, keys))[:5]) or "none"
    return f"a JSON object (keys: {shown}), not an answer"


def _is_test_code(text: str) -> bool:
    return _TEST_CODE_LINE.search(text) is not None


def foreign_reference(text: str, *, string_lists: bool = False) -> str:
    """What `text` is when it is another tool's kind of reference, or "" when it may be an
    answer or free text. `string_lists=True` accepts a JSON list of plain strings (several
    reference translations) unless they are test code."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            data = json.loads(stripped)
        except ValueError:
            data = None
        if isinstance(data, dict):
            return _record_kind(data)
        if isinstance(data, list):
            strings = [item for item in data if isinstance(item, str)]
            if any(_is_test_code(item) for item in strings):
                return "a JSON list of unit tests, read by the `code` tool"
            if any(isinstance(item, dict) for item in data):
                return "a JSON list of objects, not an answer"
            if strings and not string_lists:
                return "a JSON list of strings, not an answer"
            return ""
    if _is_test_code(stripped):
        return "Python test code, read by the `code` tool"
    return ""


def check_reference_kind(tool: str, expected: str, text: str, *, string_lists: bool = False) -> str:
    """The `invalid_reference` reason for a foreign reference, or "" when `text` may be one
    of `tool`'s references (`expected` says what those look like)."""
    kind = foreign_reference(text, string_lists=string_lists)
    if not kind:
        return ""
    return f"the reference is {kind}; the `{tool}` tool expects {expected}"
