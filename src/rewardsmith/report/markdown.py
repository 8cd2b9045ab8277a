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

The folder is read as someone else may have prepared it: only regular files of bounded size
are read (a FIFO or a device named `metrics.jsonl` is skipped, not waited on), every string
from it is written as Markdown-escaped text (`plaintext.md_text`: no link, image, HTML or
table break comes from data), and the page and plots are written with `files.atomic_write`
(a symlink planted as `report.md` or `metrics.png` is replaced, never written through).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rewardsmith.errors import InputError, MissingDependencyError
from rewardsmith.files import atomic_write, is_regular, read_json
from rewardsmith.jsonl import read_jsonl
from rewardsmith.plaintext import md_code, md_text

REPORT_FILE = "report.md"
# Steps averaged for the "first" and "last" columns of a metrics table.
SUMMARY_STEPS = 10
# Metric columns shown per training run (the most informative first; the rest are in the file).
MAX_METRICS = 16


class Formatted(str):
    """Markdown this module wrote from numbers (`0.620 [0.52, 0.71]`): a cell as it is. Any
    other string came from the folder and is escaped (`md_text`)."""


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return value if isinstance(value, Formatted) else md_text(value)


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(map(md_text, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines + [""]


def _read_json(path: Path) -> Any:
    if not is_regular(path):
        return None
    try:
        return read_json(path)
    except InputError:
        return None  # not ours, unreadable or too large: the page lists only what it understood


def _metrics_table(path: Path) -> list[str]:
    rows: list[dict[str, Any]] = read_jsonl(path, regular_only=True)
    if not rows:
        return [f"{md_code(path.name)} is empty.", ""]
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
        f"{len(rows)} logged steps; means over the first and last {n} ({md_code(path.name)}):",
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
    if not is_regular(png):
        try:
            draw(data, png)
        except (MissingDependencyError, InputError) as exc:
            return [f"(no plot: {exc})", ""]
    return [f"![{md_text(png.stem)}]({_link(png.relative_to(rundir).as_posix())})", ""]


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
    if is_regular(metrics):
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
    if is_regular(rundir / "metrics.jsonl"):
        lines += _metrics_table(rundir / "metrics.jsonl")
    if is_regular(rundir / "README.md"):
        lines += ["Model card: [README.md](README.md).", ""]
    return lines


def _rm_eval(rundir: Path, path: Path, payload: dict[str, Any]) -> list[str]:
    from rewardsmith.report.eval_plots import plot_rm_eval

    columns: dict[str, dict[str, dict[str, float]]] = payload.get("results", {})
    comparison: dict[str, dict[str, float]] = payload.get("trained_minus_untrained", {})
    lines = [f"## Reward-model evaluation (`rm eval`, {md_code(path.name)})", ""]
    data = payload.get("data", [])
    data = ", ".join(map(md_text, data)) if isinstance(data, list) else md_text(data)
    lines += [f"Model {md_code(payload.get('model', '?'))}; data: {data}.", ""]
    names = list(columns)
    keys = list(next(iter(columns.values()), {}))
    rows = []
    for key in keys:
        cells = []
        for name in names:
            m = columns[name].get(key, {})
            value = m.get("accuracy", m.get("model"))
            ci = f" [{m['ci_low']:.2f}, {m['ci_high']:.2f}]" if "ci_low" in m else ""
            cells.append(Formatted(f"{value:.3f}{ci}") if isinstance(value, int | float) else "-")
        cmp = comparison.get(key)  # a number format of data that is not a number raises
        diff = f"{cmp['difference']:+.3f}" if cmp else "-"
        if cmp and "ci_low" in cmp:
            diff += f" [{cmp['ci_low']:+.2f}, {cmp['ci_high']:+.2f}]"
        n = next((columns[c][key].get("n") for c in names if key in columns[c]), "?")
        rows.append([key, int(n) if isinstance(n, float) else n, *cells, Formatted(diff)])
    header = ["set / metric", "n", *(f"{c} (95% CI)" for c in names), "trained - untrained"]
    lines += _table(header, rows)
    lines += _image(rundir, path.with_suffix(".png"), plot_rm_eval, payload)
    return lines


def _grpo_eval(rundir: Path, path: Path, report: dict[str, Any]) -> list[str]:
    from rewardsmith.report.eval_plots import plot_grpo_eval

    def ci(d: dict[str, float]) -> str:
        return Formatted(f"{d['value']:.3f} [{d['low']:.3f}, {d['high']:.3f}]")

    lines = [f"## Policy evaluation (`grpo eval`, {md_code(path.name)})", ""]
    lines += [
        f"Held-out {md_code(report.get('data'))}, n={md_text(report.get('n'))}, greedy decoding.",
        "",
    ]
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
        lines += [f"Exact McNemar against {md_code(comparisons[0]['baseline'])} (Bonferroni):", ""]
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
    if is_regular(rundir / "grpo_config.json") or is_regular(rundir / "summary.json"):
        sections.append(_section("grpo_config.json", _grpo_train, rundir))
    if is_regular(rundir / "rbs_config.json"):
        sections.append(_section("rbs_config.json", _rm_train, rundir))
    for path in sorted(rundir.glob("*.json")):
        data = _read_json(path)
        if isinstance(data, dict) and "results" in data and "model" in data:
            sections.append(_section(path.name, _rm_eval, rundir, path, data))
        elif isinstance(data, dict) and "policies" in data and "comparisons" in data:
            sections.append(_section(path.name, _grpo_eval, rundir, path, data))
    if not sections and is_regular(rundir / "metrics.jsonl"):
        metrics = _section("metrics.jsonl", _metrics_table, rundir / "metrics.jsonl")
        sections.append(["## Training metrics", "", *metrics])
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
    page = [f"# rewardsmith report: {md_code(rundir.resolve().name)}", ""]
    for section in sections:
        page += section
    if path.parent.resolve() != rundir.resolve():  # the plots are linked relative to RUNDIR
        base = _link(rundir.resolve().as_posix())
        page = [_rebase(line, base) if line.startswith("![") else line for line in page]
    atomic_write(path, "\n".join(page).rstrip() + "\n")
    return path


def _section(name: str, build: Any, *args: Any) -> list[str]:
    """One section, or a line saying which file could not be read: a file of the wrong shape
    (hand-edited, truncated, crafted) costs its section, not the page."""
    try:
        lines: list[str] = build(*args)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, InputError) as exc:
        return [f"({md_code(name)} could not be read: {md_text(exc)})", ""]
    return lines


def _rebase(image_line: str, base: str) -> str:
    """`![name](plot.png)` (a line `_image` wrote) linked from `base`."""
    head, _, target = image_line.rpartition("](")
    return f"{head}]({base}/{target}"


def _link(target: str) -> str:
    """A link destination nothing in it can end (percent-encoded but for `/`)."""
    return quote(target, safe="/")
