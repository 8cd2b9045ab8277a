"""Tool names: one rule for every name the library stores.

A name is 1-64 ASCII characters: lowercase letters, digits, `_`, `.` and `-`, starting with a
letter or digit (`TOOL_NAME_RULE`). So `gsm8k@2` (the `@` pins a version), `../..`, an
empty name, a NUL byte and a Cyrillic look-alike (`gsm8к` beside `gsm8k`) are refused where a
name enters the library (`Library.add`); a stored row whose name breaks the rule (written
before the rule) is still listed and can be retired, but is never built (`Library.get`).
"""

from __future__ import annotations

import re

from rewardsmith.errors import ConfigError

TOOL_NAME_RULE = "[a-z0-9][a-z0-9_.-]{0,63}"
_NAME = re.compile(TOOL_NAME_RULE, re.ASCII)
_NOT_ALLOWED = re.compile(r"[^a-z0-9_.-]+", re.ASCII)
MAX_NAME_CHARS = 64


def valid_tool_name(name: object) -> bool:
    """Whether `name` follows `TOOL_NAME_RULE`."""
    return isinstance(name, str) and _NAME.fullmatch(name) is not None


def check_tool_name(name: object) -> str:
    """`name` when it follows the rule; else `ConfigError` quoting the rule."""
    if not valid_tool_name(name):
        raise ConfigError(
            f"bad tool name {name!r}: a name is {TOOL_NAME_RULE} (1-{MAX_NAME_CHARS} ASCII "
            "characters: lowercase letters, digits, '_', '.' or '-', starting with a letter or "
            "digit; NAME@N names a version, it is not a name)"
        )
    return str(name)


def tool_name_from(text: str, *, max_chars: int = MAX_NAME_CHARS, fallback: str = "tool") -> str:
    """A valid name made from `text` (a task, a folder): lowercased, other characters as
    `_`, at most `max_chars`; `fallback` when nothing is left."""
    slug = _NOT_ALLOWED.sub("_", text.lower()).strip("_.-")[:max_chars].strip("_.-")
    return slug if valid_tool_name(slug) else fallback
