"""`rewardsmith report RUNDIR`: one Markdown page a person can open for a training or
evaluation folder.

What it recognizes in RUNDIR (its top level):

- a GRPO training run (`grpo train`): `grpo_config.json`, `summary.json`, `metrics.jsonl`
  (first and last steps averaged) and its plot `metrics.png` (drawn if missing);
- a reward-model training run (`rm train`): `rbs_config.json` (backbone, encoder, windows,
  training settings and result) and its `metrics.jsonl`;
- evaluation results saved with `-o`: `rm eval` JSON (accuracy per set and column with 95%
  intervals, trained minus untrained) and `grpo eval` JSON (accuracy, F1 with intervals,
  exact McNemar against the first policy), each with its PNG (drawn if missing).

A folder holding none of these is an `InputError` naming what was looked for. Plots are
linked by relative path, so the page and its folder can be moved together.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rewardsmith.errors import InputError, MissingDependencyError
from rewardsmith.jsonl import read_jsonl

REPORT_FILE = "report.md"
# Steps averaged for the "first" and "last" columns of a metrics table.
SUMMARY_STEPS = 10
# Metric columns shown per training run (the most informative first; the rest are in the file).
MAX_METRICS = 16


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines + [""]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # not ours, or unreadable: the page lists only what it understood


def _metrics_table(path: Path) -> list[str]:
    rows: list[dict[str, Any]] = read_jsonl(path)
    if not rows:
        return [f"`{path.name}` is empty.", ""]
    head, tail = rows[:SUMMARY_STEPS], rows[-SUMMARY_STEPS:]
    keys = [k for k in rows[-1] if k != "step" and isinstance(rows[-1][k], int | float)]
    out = []
    for key in keys[:MAX_METRICS]:
        a = [float(r[key]) for r in head if isinstance(r.get(key), int | float)]
        b = [float(r[key]) for r in tail if isinstance(r.get(key), int | float)]
        if a and b:
            out.append((key, statistics.fmean(a), statistics.fmean(b)))
    n = min(SUMMARY_STEPS, len(rows))
    return [
        f"{len(rows)} logged steps; means over the first and last {n} (`{path.name}`):",
        "",
        *_table(["metric", "first", "last"], out),
    ]


# What a `search run` folder holds (`rewardsmith.search.results`, a layer above this one).
SEARCH_MARKERS = ("run.json", "results.jsonl", "candidates")


def _is_search_run(rundir: Path) -> bool:
    return (rundir / SEARCH_MARKERS[0]).is_file() and any(
        (rundir / m).exists() for m in SEARCH_MARKERS[1:]
    )


def _image(rundir: Path, png: Path, draw: Any, data: Any) -> list[str]:
    """A Markdown image link to `png`, drawn with `draw(data, png)` when it is missing."""
    if not png.exists():
        try:
            draw(data, png)
        except (MissingDependencyError, InputError) as exc:
            return [f"(no plot: {exc})", ""]
    return [f"![{png.stem}]({png.relative_to(rundir).as_posix()})", ""]


def _grpo_train(rundir: Path) -> list[str]:
    from rewardsmith.report.grpo_plot import plot_metrics

    config = _read_json(rundir / "grpo_config.json") or {}
    summary = _read_json(rundir / "summary.json") or {}
    lines = ["## GRPO training (`grpo train`)", ""]
    grpo = config.get("grpo", {})
    settings = [("policy", config.get("policy", "?")), ("rewards", config.get("rewards", "?"))]
    settings += [("prompts", config.get("items", "?"))]
    settings += [(k, grpo[k]) for k in sorted(grpo) if not isinstance(grpo[k], dict | list)]
    if summary:
        settings += [("steps run", summary.get("steps")), ("seconds", summary.get("seconds"))]
    lines += _table(["setting", "value"], settings)
    metrics = rundir / "metrics.jsonl"
    if metrics.exists():
        lines += _metrics_table(metrics)
        lines += _image(
            rundir, rundir / "metrics.png", lambda _d, p: plot_metrics(metrics, p), None
        )
    if (rundir / "model").is_dir():
        lines += ["Trained policy: `model/`.", ""]
    return lines


def _rm_train(rundir: Path) -> list[str]:
    rbs = _read_json(rundir / "rbs_config.json") or {}
    train = rbs.get("train", {})
    result = rbs.get("result", {})
    lines = ["## Reward model (`rm train`)", ""]
    settings: list[tuple[str, Any]] = [("kind", rbs.get("kind", "?"))]
    settings += [(f"window {k}", v) for k, v in sorted(rbs.get("windows", {}).items())]
    settings += [(k, train[k]) for k in sorted(train) if not isinstance(train[k], dict | list)]
    settings += [(f"result {k}", result[k]) for k in sorted(result) if k != "final"]
    settings += [("corpus", ", ".join(rbs.get("corpus", [])) or "?")]
    lines += _table(["setting", "value"], settings)
    if isinstance(result.get("final"), dict) and result["final"]:
        lines += ["Last logged step:", "", *_table(["metric", "value"], result["final"].items())]
    if (rundir / "metrics.jsonl").exists():
        lines += _metrics_table(rundir / "metrics.jsonl")
    if (rundir / "README.md").exists():
        lines += ["Model card: [README.md](README.md).", ""]
    return lines


def _rm_eval(rundir: Path, path: Path, payload: dict[str, Any]) -> list[str]:
    from rewardsmith.report.eval_plots import plot_rm_eval

    columns: dict[str, dict[str, dict[str, float]]] = payload.get("results", {})
    comparison: dict[str, dict[str, float]] = payload.get("trained_minus_untrained", {})
    lines = [f"## Reward-model evaluation (`rm eval`, `{path.name}`)", ""]
    lines += [
        f"Model `{payload.get('model', '?')}`; data: {', '.join(payload.get('data', []))}.",
        "",
    ]
    names = list(columns)
    keys = list(next(iter(columns.values()), {}))
    rows = []
    for key in keys:
        cells = []
        for name in names:
            m = columns[name].get(key, {})
            value = m.get("accuracy", m.get("model"))
            ci = f" [{m['ci_low']:.2f}, {m['ci_high']:.2f}]" if "ci_low" in m else ""
            cells.append(f"{value:.3f}{ci}" if isinstance(value, int | float) else "-")
        cmp = comparison.get(key)
        diff = f"{cmp['difference']:+.3f}" if cmp else "-"
        if cmp and "ci_low" in cmp:
            diff += f" [{cmp['ci_low']:+.2f}, {cmp['ci_high']:+.2f}]"
        n = next((columns[c][key].get("n") for c in names if key in columns[c]), "?")
        rows.append([key, int(n) if isinstance(n, float) else n, *cells, diff])
    header = ["set / metric", "n", *(f"{c} (95% CI)" for c in names), "trained - untrained"]
    lines += _table(header, rows)
    lines += _image(rundir, path.with_suffix(".png"), plot_rm_eval, payload)
    return lines


def _grpo_eval(rundir: Path, path: Path, report: dict[str, Any]) -> list[str]:
    from rewardsmith.report.eval_plots import plot_grpo_eval

    def ci(d: dict[str, float]) -> str:
        return f"{d['value']:.3f} [{d['low']:.3f}, {d['high']:.3f}]"

    lines = [f"## Policy evaluation (`grpo eval`, `{path.name}`)", ""]
    lines += [f"Held-out `{report.get('data')}`, n={report.get('n')}, greedy decoding.", ""]
    lines += _table(
        ["policy", "accuracy (95% CI)", "F1 (95% CI)", "precision", "parseable", "seconds"],
        (
            [
                p["policy"],
                ci(p["accuracy"]),
                ci(p["f1"]),
                p["precision"],
                f"{p['parseable']}/{p['n']}",
                p["seconds"],
            ]
            for p in report.get("policies", [])
        ),
    )
    comparisons = report.get("comparisons", [])
    if comparisons:
        lines += [f"Exact McNemar against `{comparisons[0]['baseline']}` (Bonferroni):", ""]
        lines += _table(
            ["policy", "only baseline right (b)", "only policy right (c)", "p", "p (Bonferroni)"],
            ([c["policy"], c["b"], c["c"], c["p_value"], c["p_bonferroni"]] for c in comparisons),
        )
    lines += _image(rundir, path.with_suffix(".png"), plot_grpo_eval, report)
    return lines


def write_report(rundir: str | Path, out: str | Path | None = None) -> Path:
    """Write the Markdown page for `rundir` (default `RUNDIR/report.md`); see the module
    docstring. Raises `InputError` when the folder holds nothing this knows."""
    rundir = Path(rundir)
    if not rundir.is_dir():
        raise InputError(f"{rundir} is not a folder; pass the folder a run or -o wrote into")
    sections: list[list[str]] = []
    if (rundir / "grpo_config.json").exists() or (rundir / "summary.json").exists():
        sections.append(_grpo_train(rundir))
    if (rundir / "rbs_config.json").exists():
        sections.append(_rm_train(rundir))
    for path in sorted(rundir.glob("*.json")):
        data = _read_json(path)
        if isinstance(data, dict) and "results" in data and "model" in data:
            sections.append(_rm_eval(rundir, path, data))
        elif isinstance(data, dict) and "policies" in data and "comparisons" in data:
            sections.append(_grpo_eval(rundir, path, data))
    if not sections and (rundir / "metrics.jsonl").exists():
        sections.append(["## Training metrics", "", *_metrics_table(rundir / "metrics.jsonl")])
    if not sections and _is_search_run(rundir):
        raise InputError(
            f"{rundir} is a `search run` folder; its report (rankings, ensembles, audit, "
            f"plots) is written by `rewardsmith search report {rundir}`"
        )
    if not sections:
        raise InputError(
            f"{rundir}: nothing to report: expected a `grpo train` or `rm train` folder "
            "(grpo_config.json, rbs_config.json, metrics.jsonl) or `rm eval` / `grpo eval` "
            "results saved with -o (*.json)"
        )
    path = Path(out) if out is not None else rundir / REPORT_FILE
    page = [f"# rewardsmith report: `{rundir.resolve().name}`", ""]
    for section in sections:
        page += section
    if path.resolve().parent != rundir.resolve():  # links are relative to RUNDIR
        page = [line.replace("](", f"]({rundir.resolve().as_posix()}/") for line in page]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(page).rstrip() + "\n", encoding="utf-8")
    return path
