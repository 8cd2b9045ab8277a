"""The router's fitted defaults: logit weights and calibration, in `defaults.json` beside
this file, written by `bench/fit_router_defaults.py` (see docs/router.md for how they were
fitted and on what). A library's own `route fit` overrides them for that library.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

DEFAULTS_FILE = Path(__file__).with_name("defaults.json")


@lru_cache(maxsize=1)
def load_defaults() -> dict[str, Any]:
    """`{"weights": {...}, "calibration": {...}, "fitted_on": {...}}`, or {} when absent."""
    if not DEFAULTS_FILE.is_file():
        return {}
    data: dict[str, Any] = json.loads(DEFAULTS_FILE.read_text(encoding="utf-8"))
    return data
