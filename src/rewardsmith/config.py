"""Where rewardsmith keeps its files, and limits shared by every tool."""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "REWARDSMITH_HOME"
LIBRARY_FILENAME = "library.db"

# A completion longer than this is clipped before any regex or parser sees it: regexes and
# sympy on megabyte strings take seconds. Final answers live at the end, so tools keep the tail.
MAX_COMPLETION_CHARS = 20_000
# References are written by people or datasets, but a bad file can still hold huge ones.
MAX_REFERENCE_CHARS = 200_000


def home_dir() -> Path:
    """`$REWARDSMITH_HOME`, or `~/.rewardsmith`."""
    env = os.environ.get(HOME_ENV)
    return Path(env).expanduser() if env else Path.home() / ".rewardsmith"


def default_library_path() -> Path:
    """The library file used when no `--library PATH` is given."""
    return home_dir() / LIBRARY_FILENAME


def clip_tail(text: str, limit: int = MAX_COMPLETION_CHARS) -> str:
    """Keep the last `limit` characters: final answers are at the end of a completion."""
    return text if len(text) <= limit else text[-limit:]
