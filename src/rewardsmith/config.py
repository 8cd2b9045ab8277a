"""Where rewardsmith keeps its files, and limits shared by every tool."""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "REWARDSMITH_HOME"
#: Where models exported once (the router's ONNX encoder) are kept, when not in the home.
MODEL_CACHE_ENV = "REWARDSMITH_MODEL_CACHE"
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


def model_cache_dir() -> Path:
    """`$REWARDSMITH_MODEL_CACHE`, or `$REWARDSMITH_HOME/cache/onnx`: exported models, keyed
    by what they were exported from, so several homes (server replicas, a test run's) can
    share one folder and export once."""
    env = os.environ.get(MODEL_CACHE_ENV)
    return Path(env).expanduser() if env else home_dir() / "cache" / "onnx"


def default_library_path() -> Path:
    """The library file used when no `--library PATH` is given."""
    return home_dir() / LIBRARY_FILENAME


def clip_tail(text: str, limit: int = MAX_COMPLETION_CHARS) -> str:
    """Keep the last `limit` characters: final answers are at the end of a completion."""
    return text if len(text) <= limit else text[-limit:]
