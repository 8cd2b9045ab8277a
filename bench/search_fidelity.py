"""Multi-fidelity check of reward-function search runs: does the proxy (level 0) rank
candidates the way a short GRPO run (level 1) does, and what does it cost per candidate?

Pairs every admitted candidate that has both a proxy fitness and a first-budget GRPO F1,
over one or more run folders (all runs must share the first GRPO budget), and prints
Spearman's rho and Kendall's tau (scipy.stats), overall and per run, the seconds a
candidate costs at each level (wall and CPU of the search process), and the compute the
proxy saved in each run: the candidates it kept from GRPO times the mean first-budget cost,
less what the proxy itself cost. For runs whose proxy measured incentives (round 2:
`wrong_payout`, `misdirection`), it also prints the agreement of the round-1 fitness
(separation - probe payout) on the same candidates, and a paired bootstrap 95% interval of
the difference of the two Spearman rhos (resampling candidates).

    .venv/bin/python bench/search_fidelity.py out/accept out/fidelity [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from rewardsmith.search.results import RunDir
from rewardsmith.search.stats import rank_agreement


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _mean(values: list[float]) -> float | None:
    return round(statistics.fmean(values), 2) if values else None


def run_summary(path: Path) -> dict[str, Any]:
    rd = RunDir(path).require()
    records = rd.read_records()
    admitted = [r for r in records if r.admitted and r.proxy]
    judged = [r for r in admitted if r.grpo_rungs]
    first = [r.grpo_rungs[0] for r in judged]
    baseline = rd.read_run().get("baseline", {})
    budget = first[0]["steps"] if first else None
    base_f1 = baseline.get(str(budget), {}).get("f1")
    proxy_wall = [r.proxy["seconds"] for r in admitted]  # type: ignore[index]
    proxy_cpu = [r.proxy["cpu_seconds"] for r in admitted]  # type: ignore[index]
    grpo_wall = [g["seconds"] for g in first]
    grpo_cpu = [g["cpu_seconds"] for g in first]
    skipped = len(admitted) - len(judged)
    saved = skipped * statistics.fmean(grpo_wall) - sum(proxy_wall) if grpo_wall else None
    return {
        "run": str(path),
        "candidates": len(records),
        "admitted": len(admitted),
        "grpo_judged": len(judged),
        "first_budget_steps": budget,
        "base_f1_at_first_budget": base_f1,
        "pairs": [
            {
                "name": r.name,
                "proxy_fitness": r.proxy["fitness"],  # type: ignore[index]
                "round1_fitness": r.proxy["separation"] - r.proxy["probe_payout"],  # type: ignore[index]
                "f1": r.grpo_rungs[0]["f1"],
            }
            for r in judged
        ],
        "agreement": rank_agreement(
            [r.proxy["fitness"] for r in judged],  # type: ignore[index]
            [r.grpo_rungs[0]["f1"] for r in judged],
        ),
        "proxy_seconds_per_candidate": _mean(proxy_wall),
        "proxy_cpu_seconds_per_candidate": _mean(proxy_cpu),
        "grpo_seconds_per_candidate": _mean(grpo_wall),
        "grpo_cpu_seconds_per_candidate": _mean(grpo_cpu),
        "kept_from_grpo_by_proxy": skipped,
        "wall_seconds_saved": round(saved, 1) if saved is not None else None,
    }


def _records(paths: list[Path]) -> list[dict[str, Any]]:
    return [r.to_dict() for p in paths for r in RunDir(p).require().read_records()]


def _rho_difference_ci(
    after: list[float], before: list[float], f1: list[float], resamples: int = 5000
) -> tuple[float | None, float | None]:
    """Paired bootstrap (candidates resampled, seed 0) 95% CI of rho(after) - rho(before)."""
    import numpy as np
    from scipy.stats import spearmanr

    rng = np.random.default_rng(0)
    a, b, y = map(np.asarray, (after, before, f1))
    diffs = []
    for _ in range(resamples):
        i = rng.integers(0, len(y), len(y))
        d = spearmanr(a[i], y[i])[0] - spearmanr(b[i], y[i])[0]
        if np.isfinite(d):
            diffs.append(d)
    if not diffs:
        return None, None
    low, high = np.percentile(diffs, [2.5, 97.5])
    return float(low), float(high)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rundirs", nargs="+", type=Path)
    parser.add_argument("--json", type=Path, help="Also write the summary here.")
    args = parser.parse_args()
    runs = [run_summary(p) for p in args.rundirs]
    budgets = {r["first_budget_steps"] for r in runs if r["first_budget_steps"]}
    if len(budgets) > 1:
        raise SystemExit(f"runs have different first GRPO budgets: {sorted(budgets)}")
    pairs = [p for r in runs for p in r["pairs"]]
    overall = rank_agreement([p["proxy_fitness"] for p in pairs], [p["f1"] for p in pairs])
    summary: dict[str, Any] = {"runs": runs, "overall": overall}
    for r in runs:
        a = r["agreement"]
        print(
            f"{r['run']}: {r['grpo_judged']} of {r['admitted']} admitted judged by GRPO at "
            f"{r['first_budget_steps']} steps (base alone F1 {r['base_f1_at_first_budget']}); "
            f"Spearman {_r(a['spearman'])} (p {_r(a['spearman_p'])}), Kendall {_r(a['kendall'])}; "
            f"proxy {r['proxy_seconds_per_candidate']} s/candidate "
            f"(CPU {r['proxy_cpu_seconds_per_candidate']}), GRPO "
            f"{r['grpo_seconds_per_candidate']} s/candidate "
            f"(CPU {r['grpo_cpu_seconds_per_candidate']}); the proxy kept "
            f"{r['kept_from_grpo_by_proxy']} from GRPO: {r['wall_seconds_saved']} s saved"
        )
    print(
        f"overall: n = {overall['n']}, Spearman {_r(overall['spearman'])} "
        f"(p {_r(overall['spearman_p'])}), Kendall {_r(overall['kendall'])} "
        f"(p {_r(overall['kendall_p'])})"
    )
    if pairs and any("wrong_payout" in (r.get("proxy") or {}) for r in _records(args.rundirs)):
        f1 = [p["f1"] for p in pairs]
        before = rank_agreement([p["round1_fitness"] for p in pairs], f1)
        low, high = _rho_difference_ci(
            [p["proxy_fitness"] for p in pairs], [p["round1_fitness"] for p in pairs], f1
        )
        summary["round1_fitness"] = before
        summary["rho_difference_ci95"] = [low, high]
        print(
            f"round-1 fitness (separation - probe payout) on the same candidates: Spearman "
            f"{_r(before['spearman'])} (p {before['spearman_p']:.3g}), Kendall "
            f"{_r(before['kendall'])}; after - before: "
            f"{_r((overall['spearman'] or 0) - (before['spearman'] or 0))}, paired bootstrap 95% CI "
            f"[{_r(low)}, {_r(high)}]"
        )
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
