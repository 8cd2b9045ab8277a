"""Build `tests/fixtures/search_run` (a finished tiny search run, see its README), and compare
two run folders written from the same inputs.

    # the fixture, written by the code at some commit (its src on PYTHONPATH)
    PYTHONPATH=OLD/src python bench/search_fixture.py build WORK tests/fixtures/search_run
    # `search run/ensemble/audit/report` with this code, then against the older folder
    python bench/search_fixture.py run WORK2
    python bench/search_fixture.py compare WORK/run WORK2/run

`build` runs the fast tests' tiny pipeline into `WORK/run` (`search run` 1 x 4 with GRPO
budgets 2 and 4, `search ensemble --sizes 2,3 --seeds 2 --steps 3`, `search audit`,
`search report`), then copies what the round-trip tests read, varies its numbers (seeded;
keys, key order and the candidates' ranking unchanged) and lets the same code rewrite
`ensembles.json`, `audit.json`, `report.md` and the ensemble table from them. `compare`
checks every text file and plot byte for byte after masking what differs from run to run
(timings, start and finish times, the folder the run was written in).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: What the round-trip tests read (no candidate sources: every candidate has a genome).
KEEP = ["run.json", "results.jsonl", "pool.jsonl", "feedback", "proxy", "ensembles/ensembles.json"]
#: The keys of a step's metrics that `search.fitness.training_trends` reads.
TREND_KEYS = ("reward", "accuracy", "parseable", "completion_length", "truncated")
RUN_TO_RUN = re.compile(
    r'("(?:[a-z_]*seconds[a-z_]*|started|finished|time/[a-z_]+|reward_share|[a-z_]*_s)": )'
    r'("[^"]*"|[0-9.eE+-]+)'
)
REPORT_TIMES = re.compile(
    r"(started|finished) \S+|proxy [0-9.]+ s for|GRPO [0-9.]+ s\.|costs [0-9.]+ s a|about -?[0-9.]+ CPU"
)


def run_pipeline(work: Path) -> Path:
    """The tiny pipeline of tests/search/test_pipeline.py into `work/run`."""
    from typer.testing import CliRunner

    sys.path.insert(0, str(ROOT / "tests" / "search"))
    from search_helpers import TINY_TASK

    from rewardsmith.cli.main import app
    from rewardsmith.rl.policies import TESTBED_TINY, build_testbed

    build_testbed(TESTBED_TINY, cache_dir=work / "testbed")
    os.environ["REWARDSMITH_TESTBED_CACHE"] = str(work / "testbed")
    task, out = work / "task.json", work / "run"
    task.write_text(json.dumps(TINY_TASK))
    steps = [
        ["search", "run", "--task", str(task), "--rounds", "1", "--per-round", "4"]
        + ["--grpo-steps", "2,4", "--calibration", "1", "--out", str(out), "--threads", "1"],
        ["search", "ensemble", str(out), "--sizes", "2,3", "--seeds", "2", "--steps", "3"]
        + ["--threads", "1", "--library", str(work / "lib.db")],
        ["search", "audit", str(out)],
        ["search", "report", str(out)],
    ]
    for args in steps:
        result = CliRunner().invoke(app, args)
        if result.exit_code not in (0, 3):  # 3: the audit flagged a reward
            raise SystemExit(f"{' '.join(args[:2])} failed:\n{result.output}")
    return out


def trim(src: Path, dst: Path) -> None:
    if dst.exists():
        shutil.rmtree(dst)
    for name in KEEP:
        (dst / name).parent.mkdir(parents=True, exist_ok=True)
        copy = shutil.copytree if (src / name).is_dir() else shutil.copy2
        copy(src / name, dst / name)
    for runs in (src / "runs", src / "ensembles" / "runs"):
        for run in sorted(runs.iterdir()):
            out = dst / run.relative_to(src)
            out.mkdir(parents=True)
            shutil.copy2(run / "eval.json", out / "eval.json")
            if (run / "metrics.jsonl").exists():
                rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
                kept = [{k: v for k, v in r.items() if _trend_key(k)} for r in rows]
                (out / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))


def _trend_key(key: str) -> bool:
    return (key.startswith("reward/") and not key.endswith("_frac")) or key in TREND_KEYS


def vary(root: Path, seed: int = 27) -> None:
    """Seeded numbers and verdicts in place of the tiny policy's zeros (see the README)."""
    rng = random.Random(seed)

    def num(low: float = 0.05, high: float = 0.95) -> float:
        return round(rng.uniform(low, high), 4)

    def judged(m: dict[str, Any], f1: float | None = None) -> None:
        acc, f1 = num(), f1 if f1 is not None else num()
        m["accuracy"], m["f1"] = acc, f1
        m["ci95"] = {
            "accuracy": [round(acc - num(0.01, 0.1), 4), round(acc + num(0.01, 0.1), 4)],
            "f1": [round(f1 - num(0.01, 0.1), 4), round(f1 + num(0.01, 0.1), 4)],
        }

    for path in sorted(root.rglob("eval.json")):
        data = json.loads(path.read_text())
        for s in data["sets"].values():
            s["correct"] = [rng.random() < 0.4 for _ in s["correct"]]
            s["parseable"] = [c or rng.random() < 0.5 for c in s["correct"]]
        path.write_text(json.dumps(data) + "\n")
    lines = [json.loads(x) for x in (root / "results.jsonl").read_text().splitlines()]
    # The ranking stays as it was (more rungs first, then by name while every F1 was 0), so
    # the ensembles' selections do not change: last-rung F1s fall in that order.
    order = sorted(
        (r for r in lines if r["grpo_rungs"]), key=lambda r: (-len(r["grpo_rungs"]), r["name"])
    )
    for r, f1 in zip(order, sorted((num() for _ in order), reverse=True), strict=True):
        for g in r["grpo_rungs"][:-1]:
            judged(g)
        judged(r["grpo_rungs"][-1], f1)
        r["grpo"] = dict(r["grpo_rungs"][-1])
    for r in lines:
        m = r["proxy"]
        m["separation"], m["probe_payout"] = num(-0.5, 0.9), num(0.0, 0.4)
        m["wrong_payout"], m["misdirection"] = num(0.0, 0.2), num(0.0, 0.2)
        penalty = m["probe_payout"] + m["wrong_payout"] + m["misdirection"]
        m["fitness"] = round(m["separation"] - penalty, 4)
        m["seconds"], m["cpu_seconds"] = num(0.5, 3.0), num(0.5, 3.0)
    (root / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    state = json.loads((root / "run.json").read_text())
    state["config"]["task"] = "tiny_task.json"  # not the temporary folder it was run in
    judged(state["start"])
    for m in state["baseline"].values():
        judged(m)
    (root / "run.json").write_text(json.dumps(state, indent=2) + "\n")
    path = root / "ensembles" / "ensembles.json"
    summary = json.loads(path.read_text())
    for key, run in summary["runs"].items():
        judged(run["sets"]["test"])
        # top3 stays the best by validation F1: the only one trained with a second seed
        judged(run["sets"]["validation"], 0.97 if key == "top3" else None)
        for k in ("accuracy", "f1", "ci95"):
            run[k] = run["sets"]["test"][k]
    path.write_text(json.dumps(summary, indent=2) + "\n")


def finish(root: Path, library: Path) -> None:
    """ensembles.json (nothing left to train), audit.json, report.md and the table."""
    from rich.console import Console

    import rewardsmith.search.ensemble as ensemble
    from rewardsmith.search.audit import run_audit
    from rewardsmith.search.report import ensemble_table, write_report

    def trained_already(*args: object, **kwargs: object) -> None:
        raise SystemExit("a configuration is not trained: the ranking must have changed")

    ensemble.train_configuration = trained_already
    ensemble.starting_fitness = trained_already
    stored = json.loads((root / "ensembles" / "ensembles.json").read_text())
    summary = ensemble.run_ensembles(
        root, stored["sizes"], stored["seeds"], steps=stored["steps"], library=library
    )
    run_audit(root)
    write_report(root)
    for png in root.glob("*.png"):
        png.unlink()
    console = Console(width=100, record=True, file=io.StringIO(), color_system=None)
    console.print(ensemble_table(summary))
    (root / "ensemble_table.txt").write_text(console.export_text())


def compare(a: Path, b: Path) -> int:
    a, b = a.resolve(), b.resolve()

    def masked(path: Path, root: Path) -> str:
        text = path.read_text().replace(str(root.parent), "WORK")
        return REPORT_TIMES.sub(r"\1 X", RUN_TO_RUN.sub(r"\1X", text))

    def files(root: Path) -> set[Path]:
        return {
            p.relative_to(root)
            for p in root.rglob("*")
            if p.is_file() and "checkpoints" not in p.parts
        }

    differ = sorted(files(a) ^ files(b))
    for rel in sorted(files(a) & files(b)):
        if rel.suffix == ".png":
            same = (a / rel).read_bytes() == (b / rel).read_bytes()
        else:
            same = masked(a / rel, a) == masked(b / rel, b)
        differ += [] if same else [rel]
    print(f"{len(files(a) | files(b)) - len(differ)} files identical, {len(differ)} differ")
    for rel in differ:
        print(f"  differs: {rel}")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="run the tiny pipeline, then write the fixture")
    build.add_argument("work", type=Path)
    build.add_argument("fixture", type=Path)
    sub.add_parser("run", help="run the tiny pipeline into WORK/run").add_argument(
        "work", type=Path
    )
    cmp = sub.add_parser("compare", help="two run folders from the same inputs")
    cmp.add_argument("a", type=Path)
    cmp.add_argument("b", type=Path)
    args = parser.parse_args()
    if args.command == "compare":
        return compare(args.a, args.b)
    args.work.mkdir(parents=True, exist_ok=True)
    out = run_pipeline(args.work)
    if args.command == "build":
        readme = args.fixture / "README.md"
        kept = readme.read_text() if readme.exists() else None
        trim(out, args.fixture)
        vary(args.fixture)
        finish(args.fixture, args.work / "lib2.db")
        if kept is not None:
            readme.write_text(kept)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
