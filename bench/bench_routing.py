"""Benchmark: the router on a labeled mixed-task set, against the rules baseline, in one run.

Same as `rewardsmith bench routing` (see `rewardsmith.bench.routing` for what is measured).
Run from the repository root:

    .venv/bin/python bench/bench_routing.py [--data ../shared/data] [--fit] [--json out.json]
"""

from __future__ import annotations

import sys

from rewardsmith.cli.main import app

if __name__ == "__main__":
    sys.exit(app(["bench", "routing", *sys.argv[1:]]))
