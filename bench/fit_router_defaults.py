"""Fit the router's default weights and calibration and write src/rewardsmith/router/defaults.json.

The fit uses only the *fit* splits of `bench routing`'s main set and hard slice (GSM8K train,
AIME/AMC/Minerva and MATH-500's fit records, WMT and catalog lines of the fit split, LLMBar
and HH-RLHF fit records, reasoning-gym seeds of the fit split), starts from the hand-set
`logit.INITIAL_WEIGHTS`, and calibrates on out-of-fold predictions; the eval splits are
never read. Run from the repository root, then check the result on the held-out splits:

    .venv/bin/python bench/fit_router_defaults.py [--data ../shared/data] [--seed 0]
    .venv/bin/rewardsmith bench routing --hard
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from pathlib import Path

from rewardsmith.bench.routing import fit_defaults
from rewardsmith.library.store import Library
from rewardsmith.router.defaults import DEFAULTS_FILE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=DEFAULTS_FILE)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        library = Library(Path(tmp) / "fit.db")
        report = fit_defaults(library, args.data, args.seed)
        library.close()
    out = {
        "weights": report["weights"],
        "calibration": report["calibration"],
        "fitted_on": {
            "command": "python bench/fit_router_defaults.py",
            "seed": args.seed,
            "examples": report["examples"],
            "labels": report["labels"],
            "accuracy_after": round(report["accuracy_after"], 4),
        },
    }
    text = json.dumps(out, indent=1)
    # one breakpoint [x, y] per line: the file stays short enough to read and diff
    text = re.sub(r"\[\s+(-?[\d.e-]+),\s+(-?[\d.e-]+)\s+\]", r"[\1, \2]", text)
    args.out.write_text(text + "\n", encoding="utf-8")
    print(
        f"wrote {args.out}: {report['examples']} examples, fit accuracy {report['accuracy_after']:.3f}"
    )


if __name__ == "__main__":
    main()
