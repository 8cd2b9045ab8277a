"""`RUNDIR/report.md`: what a search found, with PNG plots beside it.

Sections: the settings; fitness by round (mean and best F1 per round against the base
rewards alone, plot `f1_by_round.png`); the ranking (plot `ranks.png`: ranks by round, proxy
against GRPO; `against_base`: each candidate against base-only by exact McNemar on the
validation problems, at the same budget); the starting policy before GRPO, and whether
base-only training beat it, held it or harmed it; the best single candidate; the rejected candidates with stage and reason;
the multi-fidelity check (Spearman and Kendall rank correlation between the proxy and the
first GRPO budget, and the compute the proxy saved); the ensembles when `search ensemble`
ran (test CIs, McNemar with Bonferroni, the indistinguishable table, the random control,
the seed spread; plot `ensembles.png`); the hacking audit when `search audit` ran (plot
`audit.png`). Every number is read from the run folder, so the report can be rewritten at
any time (`rewardsmith search report RUNDIR`).

The folder may come from elsewhere: every string read from it (names, reasons, settings,
docstrings) is Markdown-escaped once, as it is read (`shown`), so no link, image, HTML or
table break in the page comes from data; files are read and written as `search.results`
says (regular files only, atomic writes that never follow a planted symlink).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from rewardsmith.errors import InputError, MissingDependencyError
from rewardsmith.plaintext import md_text
from rewardsmith.search import plots
from rewardsmith.search.fitness import read_eval
from rewardsmith.search.loop import BASE_RUN, START_RUN, description
from rewardsmith.search.metrics import EnsembleSummary, GRPOMetrics
from rewardsmith.search.results import (
    AUDIT_FILE,
    ENSEMBLES_DIR,
    ENSEMBLES_FILE,
    REPORT_FILE,
    CandidateRecord,
    RunDir,
    RunState,
    plain_name,
    ranked,
    shown,
    shown_record,
    shown_state,
)
from rewardsmith.search.stats import rank_agreement, versus

SHOWN = 15
REASON_CHARS = 160


def _f(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def fidelity_check(records: Sequence[CandidateRecord]) -> dict[str, Any]:
    """Rank agreement of the proxy with the first GRPO budget, and what the proxy saved."""
    both = [(r.proxy, r.grpo_rungs[0]) for r in records if r.proxy and r.grpo_rungs]
    first = [g for _, g in both]
    agreement = rank_agreement([p.fitness for p, _ in both], [g.f1 for g in first])
    separation = rank_agreement([p.separation for p, _ in both], [g.f1 for g in first])
    admitted = [(r, r.proxy) for r in records if r.admitted and r.proxy]
    proxy_cpu = sum(p.cpu_seconds for _, p in admitted)
    proxy_wall = sum(p.seconds for _, p in admitted)
    grpo_cpu = sum(g.cpu_seconds for r in records for g in r.grpo_rungs)
    grpo_wall = sum(g.seconds for r in records for g in r.grpo_rungs)
    mean_first = statistics.fmean(g.cpu_seconds for g in first) if first else None
    untrained = [r for r, _ in admitted if not r.grpo_rungs]
    saved = mean_first * len(untrained) - proxy_cpu if mean_first is not None else None
    return {
        "candidates": len(both),
        "fitness_vs_f1": agreement,
        "separation_vs_f1": separation,
        "proxy_cpu_seconds": round(proxy_cpu, 1),
        "proxy_seconds": round(proxy_wall, 1),
        "grpo_cpu_seconds": round(grpo_cpu, 1),
        "grpo_seconds": round(grpo_wall, 1),
        "mean_first_budget_cpu_seconds": round(mean_first, 1) if mean_first else None,
        "admitted": len(admitted),
        "not_trained": len(untrained),
        "cpu_seconds_saved": round(saved, 1) if saved is not None else None,
    }


def _settings(state: RunState) -> list[str]:
    cfg = state.config
    task = state.task if state.task is not None else {}
    pool = state.pool if state.pool is not None else {}
    held = state.held_out if state.held_out is not None else {}
    return [
        "## Settings",
        "",
        f"- task: `{cfg['task']}` (policy `{task.get('policy', '?')}`, base rewards "
        f"{', '.join(task.get('base_rewards', []))})",
        f"- {cfg['rounds']} rounds x {cfg['per_round']} candidates, generator `{cfg['generator']}`, "
        f"fidelity `{cfg['fidelity']}`, GRPO budgets {cfg['grpo_steps']} steps (eta {cfg['eta']}, "
        f"calibration {cfg.get('calibration', 0)}/round, backend {cfg['grpo_backend']}), seed {cfg['seed']}",
        f"- proxy pool: {pool.get('responses', '?')} responses ({pool.get('right', '?')} right), "
        f"{pool.get('probes', '?')} probes; held-out: {held.get('validation', '?')} validation "
        f"(ranks candidates), {held.get('test', '?')} test (judges ensembles)",
        f"- started {state.started or '?'}, finished "
        f"{state.finished if state.finished is not None else 'not yet'}",
        "",
    ]


def _rounds(records: Sequence[CandidateRecord], baseline: dict[str, GRPOMetrics]) -> list[str]:
    lines = [
        "## Rounds",
        "",
        "| round | candidates | admitted | rejected (stage) | mean proxy fitness | GRPO-judged | mean F1 | best F1 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n in sorted({r.round for r in records}):
        mine = [r for r in records if r.round == n]
        admitted = [r for r in mine if r.admitted]
        stages = sorted(r.stage for r in mine if r.admitted is False and r.stage)
        proxy = [r.proxy.fitness for r in admitted if r.proxy]
        trained = [(r.grpo.f1, r.name) for r in admitted if r.grpo]
        f1 = [f for f, _ in trained]
        best = max(trained, key=lambda t: t[0], default=None)
        best_text = f"{best[0]:.3f} ({best[1]})" if best else "-"
        lines.append(
            f"| {n} | {len(mine)} | {len(admitted)} | {len(mine) - len(admitted)}"
            f"{' (' + ', '.join(map(str, stages)) + ')' if stages else ''} | "
            f"{_f(statistics.fmean(proxy) if proxy else None)} | {len(f1)} | "
            f"{_f(statistics.fmean(f1) if f1 else None)} | "
            f"{best_text} |"
        )
    lines.append("")
    for steps, m in sorted(baseline.items(), key=lambda kv: int(kv[0])):
        low, high = m.f1_ci95
        lines.append(
            f"Base rewards alone after {steps} steps: F1 {m.f1:.3f} [{low:.3f}, {high:.3f}], "
            f"accuracy {m.accuracy:.3f}."
        )
    lines.append("")
    return lines


def _did_grpo_help(only_trained: int, only_start: int, significant: bool) -> str:
    if not significant:
        return "not significantly different from the starting policy"
    if only_trained > only_start:
        return "significantly better than the starting policy"
    return (
        "**significantly worse than the starting policy**: at these GRPO settings training "
        "itself harms the policy, so F1 differences rank which reward harms least; lower "
        "`lr` or raise `prompts_per_step` in the task's `grpo` settings"
    )


def _start_lines(rd: RunDir, state: RunState | Mapping[str, Any]) -> list[str]:
    """The untrained policy on the validation problems, and base-only at its last budget
    against it (exact McNemar). `state`: the run's, or `run.json`'s object."""
    found = state.start if isinstance(state, RunState) else state.get("start")
    if not found:
        return []
    start = GRPOMetrics.from_dict(found)
    low, high = start.f1_ci95
    lines = [f"Starting policy, before GRPO: F1 {start.f1:.3f} [{low:.3f}, {high:.3f}]."]
    before, after = read_eval(rd.run_dir(START_RUN)), read_eval(rd.run_dir(BASE_RUN))
    if before and after and before.judged_on("validation") and after.judged_on("validation"):
        test = versus(before.correct("validation"), {"base": after.correct("validation")})["base"]
        lines[-1] += (
            f" Base rewards alone after {after.steps} steps against it: +{test['only_it']}/"
            f"-{test['only_reference']} problems, exact McNemar p {test['p_value']:.3g}: "
            f"{_did_grpo_help(test['only_it'], test['only_reference'], test['significant'])}."
        )
    return [*lines, ""]


def against_base(rd: RunDir, records: Sequence[CandidateRecord]) -> dict[str, Any]:
    """Each candidate against the base rewards alone on the validation problems, where both
    were last judged after the same number of steps (the base run's newest evaluation):
    `{steps, n, compared: {name: McNemar}}` (`search.stats.versus`), or {} before any."""
    base = read_eval(rd.run_dir(BASE_RUN))
    if base is None or not base.judged_on("validation"):
        return {}
    steps, reference = base.steps, base.correct("validation")
    outcomes = {}
    for r in records:
        data = read_eval(rd.run_dir(r.name)) if r.grpo and plain_name(r.name) else None
        if data and data.steps == steps and data.judged_on("validation"):
            outcomes[r.name] = data.correct("validation")
    return {"steps": steps, "n": len(reference), "compared": versus(reference, outcomes)}


def _versus_cell(test: dict[str, Any] | None) -> str:
    if test is None:
        return "-"
    mark = " *" if test["significant"] else ""
    return f"+{test['only_it']}/-{test['only_reference']}, p {test['p_bonferroni']:.3g}{mark}"


def _ranking(rd: RunDir, records: Sequence[CandidateRecord]) -> list[str]:
    order = [r for r in ranked(records) if r.admitted]
    check = against_base(rd, records)
    compared = check.get("compared", {})
    lines = [
        "## Ranking (best first)",
        "",
        "| rank | name | round | GRPO F1 [95% CI] | accuracy | steps | vs base | separation | probe payout | wrong payout | misdirection | proxy fitness | rewards |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(order[:SHOWN], 1):
        what, p = _description(rd, r), r.proxy
        lines.append(
            f"| {i} | {r.name} | {r.round} | {r.f1_text()} | "
            f"{_f(r.grpo.accuracy if r.grpo else None)} | {r.grpo.steps if r.grpo else '-'} | "
            f"{_versus_cell(compared.get(r.name))} | {_f(p.separation if p else None)} | "
            f"{_f(p.probe_payout if p else None)} | {_f(p.wrong_payout if p else None)} | "
            f"{_f(p.misdirection if p else None)} | {_f(p.fitness if p else None)} | {what} |"
        )
    if len(order) > SHOWN:
        lines.append(f"\n{len(order) - SHOWN} more admitted candidates in results.jsonl.")
    if compared:
        better = sorted(
            n
            for n, t in compared.items()
            if t["significant"] and t["only_it"] > t["only_reference"]
        )
        worse = sorted(
            n
            for n, t in compared.items()
            if t["significant"] and t["only_it"] < t["only_reference"]
        )
        lines += [
            "",
            f"vs base: each candidate judged after {check['steps']} steps against the base "
            f"rewards alone after {check['steps']} steps, on the same {check['n']} validation "
            "problems (exact McNemar; +problems only the candidate solves / -only the base "
            f"solves; p Bonferroni-corrected over {len(compared)}; * below 0.05). "
            f"Significantly better: {', '.join(better) or 'none'}; significantly worse: "
            f"{', '.join(worse) or 'none'}.",
        ]
    if order:
        best = order[0]
        lines += [
            "",
            f"**Best single candidate: {best.name}** ({best.origin}); source "
            f"`candidates/{best.name}.py`.",
            "",
        ]
    rejected = [r for r in records if r.admitted is False]
    if rejected:
        lines += [
            "### Rejected by the 4-stage check",
            "",
            "| name | round | stage | reason |",
            "|---|---|---|---|",
        ]
        for r in rejected:
            reason = r.reason if len(r.reason) <= REASON_CHARS else r.reason[:REASON_CHARS] + "..."
            lines.append(f"| {r.name} | {r.round} | {r.stage} | {reason.replace('|', '/')} |")
        lines.append("")
    return lines


def _fidelity(check: dict[str, Any]) -> list[str]:
    lines = ["## Multi-fidelity check", ""]
    a, s = check["fitness_vs_f1"], check["separation_vs_f1"]
    if a["spearman"] is None:
        lines.append(
            f"{check['candidates']} candidates have both a proxy score and a GRPO F1: too few to correlate."
        )
    else:
        lines.append(
            f"On {a['n']} candidates with both levels: proxy fitness vs F1 after the first GRPO "
            f"budget, Spearman rho {a['spearman']:+.3f} (p {a['spearman_p']:.3g}), Kendall tau "
            f"{a['kendall']:+.3f} (p {a['kendall_p']:.3g}); separation alone: Spearman "
            f"{_f(s['spearman'])}, Kendall {_f(s['kendall'])}."
        )
    lines += [
        "",
        f"Compute (CPU seconds of the search process; sandbox workers not included): proxy "
        f"{check['proxy_cpu_seconds']} s for {check['admitted']} candidates, GRPO "
        f"{check['grpo_cpu_seconds']} s. The first GRPO budget costs "
        f"{_f(check['mean_first_budget_cpu_seconds'], 1)} s a candidate; {check['not_trained']} "
        f"admitted candidates were judged by the proxy alone, which saved about "
        f"{_f(check['cpu_seconds_saved'], 0)} CPU seconds.",
        "",
    ]
    return lines


def _ensembles(summary: EnsembleSummary) -> list[str]:
    runs = summary.runs
    lines = [
        "## Ensembles",
        "",
        f"Base rewards plus the selected candidates (element-wise sum), {summary.steps} "
        "GRPO steps each, judged on the test set (never used to rank or select).",
        "",
        "| configuration | members | test accuracy [95% CI] | test F1 [95% CI] | validation F1 | vs start |",
        "|---|---|---|---|---|---|",
    ]
    start, against = summary.start_tested, summary.against_start
    if start:
        lines.append(f"| start (no GRPO) | - | {start.accuracy} | {start.f1} | - | - |")
    for name, tested in summary.tested.items():
        run = runs.get(name)
        validation = run.on("validation") if run is not None else None
        lines.append(
            f"| {name} | {', '.join(run.members if run else []) or '-'} | {tested.accuracy} | "
            f"{tested.f1} | {_f(validation.f1 if validation is not None else None)} | {_versus_cell(against.get(name))} |"
        )
    lines.append("")
    if "base" in against:
        t = against["base"]
        lines.append(
            f"vs start: each configuration against the starting policy on the same test problems "
            f"(exact McNemar, Bonferroni over {len(against)}). Base rewards alone are "
            f"{_did_grpo_help(t['only_it'], t['only_reference'], t['significant'])}."
        )
        lines.append("")
    for note in summary.notes:
        lines.append(f"- not trained: {note}")
    best, tests = summary.best, summary.pairwise
    if best:
        vs = next((t for t in tests if {t["a"], t["b"]} == {best, "base"}), None)
        if vs:
            only_best = vs["only_a"] if vs["a"] == best else vs["only_b"]
            only_base = vs["only_b"] if vs["a"] == best else vs["only_a"]
            verdict = (
                "significantly different" if vs["significant"] else "not significantly different"
            )
            lines.append(
                f"\n**Best ensemble {best}** (by validation F1) vs base alone: {only_best} test "
                f"items only it gets right, {only_base} only base does; exact McNemar p "
                f"{vs['p_value']:.3g}, Bonferroni ({vs['comparisons']} pairs) {vs['p_bonferroni']:.3g}: "
                f"{verdict} at 0.05."
            )
    for name, s in summary.seed_spread.items():
        values = ", ".join(f"{v:.3f}" for v in s["values"])
        lines.append(
            f"- seed spread of {name}: F1 {s['mean']:.3f} +- {s['sd']:.3f} (sd over {s['n']} seeds: {values})"
        )
    if tests:
        lines += [
            "",
            "### Exact McNemar, every pair (Bonferroni)",
            "",
            "| a | b | only a right | only b right | p | p (Bonferroni) |",
            "|---|---|---|---|---|---|",
        ]
        for t in tests:
            mark = " *" if t["significant"] else ""
            lines.append(
                f"| {t['a']} | {t['b']} | {t['only_a']} | {t['only_b']} | {t['p_value']:.3g} | {t['p_bonferroni']:.3g}{mark} |"
            )
        lines += [
            "",
            "### Indistinguishable configurations (Bonferroni-corrected p >= 0.05)",
            "",
            "| configuration | indistinguishable from |",
            "|---|---|",
        ]
        for name, same in summary.indistinguishable.items():
            lines.append(f"| {name} | {', '.join(same) or 'none'} |")
    lines.append("")
    return lines


def _audit(audit: dict[str, Any]) -> list[str]:
    lines = ["## Hacking audit", ""]
    rewards = audit.get("rewards", [])
    if not rewards:
        return lines + ["No structural (reference-free) reward among the admitted candidates.", ""]
    lines += [
        "| reward | mean on right / wrong (pool) | runs | flags | warnings |",
        "|---|---|---|---|---|",
    ]
    for e in rewards:
        r, w = e["pool"]["right"]["reward"], e["pool"]["wrong"]["reward"]
        lines.append(
            f"| {e['name']} | {_f(r)} / {_f(w)} | {len(e['runs'])} | "
            f"{'; '.join(e['flags']) or '-'} | {'; '.join(e['warnings']) or '-'} |"
        )
    right, wrong = rewards[0]["pool"]["right"], rewards[0]["pool"]["wrong"]
    lines += [
        "",
        "Structural features of the pool's right and wrong responses:",
        "",
        "| feature | right | wrong |",
        "|---|---|---|",
    ]
    for feature in audit.get("features", []):
        lines.append(f"| {feature} | {_f(right.get(feature))} | {_f(wrong.get(feature))} |")
    lines.append("")
    return lines


def _description(rd: RunDir, r: CandidateRecord) -> str:
    """What a candidate rewards, escaped; its origin when neither program nor source says."""
    try:
        text = description(r, rd.source_if_any(r.name))
    except (KeyError, TypeError, ValueError, AttributeError):  # a genome of the wrong shape
        return r.origin
    return text if text == r.origin else md_text(text)


def write_report(rundir: str | Path) -> Path:
    """Write `report.md` and the plots beside it; returns the report's path. A folder whose
    files do not have the shapes `search` writes is an `InputError`, not a traceback."""
    rd = RunDir(rundir).require()
    try:
        return _write_report(rd)
    except InputError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise InputError(
            f"{rd.path}: its files are not what `rewardsmith search` writes "
            f"({type(exc).__name__}: {str(exc)[:120]}); no report written"
        ) from None


def _write_report(rd: RunDir) -> Path:
    state = shown_state(rd.read_state())
    records = [shown_record(r) for r in rd.read_records()]
    found = shown(rd.read_json(f"{ENSEMBLES_DIR}/{ENSEMBLES_FILE}"))
    summary = EnsembleSummary.from_dict(found) if found else None
    audit = shown(rd.read_json(AUDIT_FILE))
    baseline = state.baseline
    check = fidelity_check(records)
    lines = [f"# Reward-function search: {state.config['task']}", ""]
    lines += _settings(state)
    figures: list[tuple[str, Any]] = [
        ("f1_by_round.png", lambda p: plots.f1_by_round(records, baseline, p)),
        ("ranks.png", lambda p: plots.ranks(records, p)),
    ]
    if summary:
        figures.append(("ensembles.png", lambda p: plots.ensembles(summary, p)))
    if audit:
        figures.append(("audit.png", lambda p: plots.audit(audit, p)))
    drawn: dict[str, bool] = {}
    for file, draw in figures:
        try:
            drawn[file] = draw(rd.path / file) is not None
        except MissingDependencyError:
            drawn[file] = False
    lines += _rounds(records, baseline)
    lines += _start_lines(rd, state)
    if drawn.get("f1_by_round.png"):
        lines += ["![F1 by round](f1_by_round.png)", ""]
    lines += _ranking(rd, records)
    if drawn.get("ranks.png"):
        lines += ["![ranks](ranks.png)", ""]
    lines += _fidelity(check)
    if summary:
        lines += _ensembles(summary)
        if drawn.get("ensembles.png"):
            lines += ["![ensembles](ensembles.png)", ""]
    else:
        lines += ["## Ensembles", "", "Not run yet: `rewardsmith search ensemble RUNDIR`.", ""]
    if audit:
        lines += _audit(audit)
        if drawn.get("audit.png"):
            lines += ["![audit](audit.png)", ""]
    else:
        lines += ["## Hacking audit", "", "Not run yet: `rewardsmith search audit RUNDIR`.", ""]
    return rd.write(REPORT_FILE, "\n".join(lines))


def ensemble_table(summary: Mapping[str, Any]) -> Table:
    """The ensembles' test numbers (`ensembles.json`'s object) as a terminal table."""
    ens = EnsembleSummary.from_dict(summary)
    table = Table(title=f"ensembles: test set, {ens.steps} GRPO steps each")
    for col in ("configuration", "size", "accuracy [95% CI]", "F1 [95% CI]", "vs start"):
        table.add_column(col, justify="left" if col == "configuration" else "right")
    start, against = ens.start_tested, ens.against_start
    if start:
        table.add_row("start (no GRPO)", "-", str(start.accuracy), str(start.f1), "-")
    for name, tested in ens.tested.items():
        table.add_row(
            name + (" (best)" if name == ens.best else ""),
            str(ens.size(name)),
            str(tested.accuracy),
            str(tested.f1),
            _versus_cell(against.get(name)),
        )
    return table
