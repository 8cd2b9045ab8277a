"""The results of `bench/rbs_gpu_recipe.py`: one JSON and one Markdown page from the JSON that
`rm eval -o` and `grpo eval -o` wrote, with the acceptance lines of issue 28 checked.

Acceptance (issue 28): the trained RM's pair accuracy gain over the untrained backbone has a
95% interval above 0 on both pair kinds (wrong final answer, wrong step); its best-of-N pick
beats random with an interval above 0; GRPO with the RM is not worse than the warm start
(exact McNemar, p < 0.05 against it would be worse).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SEED_PAPER_TOKENS = 11_000_000


def _ci(metrics: dict[str, float], key: str = "accuracy", low: str = "ci_low") -> dict[str, Any]:
    high = low.replace("low", "high")
    return {"value": metrics[key], "low": metrics.get(low), "high": metrics.get(high)}


def _pair_rows(
    trained_eval: dict[str, Any], heads: list[dict[str, Any]], likelihood: dict[str, Any] | None
) -> list[dict[str, Any]]:
    trained = trained_eval["results"]["trained"]
    untrained = trained_eval["results"].get("untrained", {})
    gains = trained_eval.get("trained_minus_untrained", {})
    rows = []
    for key, m in trained.items():
        if "accuracy" not in m:
            continue  # a best-of-N result
        name, _, kind = key.partition("/")
        gain = gains.get(key)
        rows.append(
            {
                "set": name,
                "kind": kind or "all",
                "n": int(m["n"]),
                "groups": int(m.get("groups", m["n"])),
                "trained": _ci(m),
                "untrained": _ci(untrained[key]) if key in untrained else None,
                "random_heads": [h["results"]["trained"][key]["accuracy"] for h in heads],
                "backbone_likelihood": _ci(likelihood[key]) if likelihood else None,
                "gain": None
                if gain is None
                else {
                    "value": gain["difference"],
                    "low": gain.get("ci_low"),
                    "high": gain.get("ci_high"),
                    "groups_better": int(gain["groups_better"]),
                    "groups_worse": int(gain["groups_worse"]),
                    "sign_test_p": gain["sign_test_p"],
                },
            }
        )
    return rows


def _best_of_n(
    trained_eval: dict[str, Any], heads: list[dict[str, Any]], likelihood: dict[str, Any] | None
) -> dict[str, Any] | None:
    key = next((k for k in trained_eval["results"]["trained"] if k.endswith("/best_of_n")), None)
    if key is None:
        return None
    m = trained_eval["results"]["trained"][key]
    picks = ("model", "random", "majority", "oracle", "model_minus_random", "model_minus_majority")
    out: dict[str, Any] = {"set": key, "n": int(m["n"])}
    for pick in picks:
        if pick in m:
            out[pick] = _ci(m, pick, f"{pick}_ci_low")
    untrained = trained_eval["results"].get("untrained", {}).get(key)
    out["untrained_model"] = _ci(untrained, "model", "model_ci_low") if untrained else None
    out["random_heads_model"] = [h["results"]["trained"][key]["model"] for h in heads]
    lik = likelihood.get(key) if likelihood else None
    out["backbone_likelihood_pick"] = _ci(lik, "model", "model_ci_low") if lik else None
    return out


def _grpo(report: dict[str, Any] | None) -> dict[str, Any] | None:
    if report is None:
        return None
    return {
        "n": report["n"],
        "policies": [
            {"policy": p["policy"], "accuracy": p["accuracy"]} for p in report["policies"]
        ],
        "vs_warm_start": report["comparisons"],
    }


def _acceptance(
    pairs: list[dict[str, Any]], bon: dict[str, Any] | None, grpo: dict[str, Any] | None
) -> dict[str, bool | None]:
    out: dict[str, bool | None] = {}
    for row in pairs:
        if row["kind"] in ("final", "step") and row["gain"] is not None:
            low = row["gain"]["low"]
            out[f"{row['set']}/{row['kind']}: gain interval above 0"] = low is not None and low > 0
    if bon is not None and "model_minus_random" in bon:
        low = bon["model_minus_random"]["low"]
        out["best-of-N: model - random interval above 0"] = low is not None and low > 0
    if grpo is not None:
        accs = {p["policy"]: p["accuracy"]["value"] for p in grpo["policies"]}
        warm = grpo["policies"][0]["policy"]
        for cmp in grpo["vs_warm_start"]:
            if "grpo_rm" in cmp["policy"]:
                worse = accs[cmp["policy"]] < accs[warm] and cmp["p_value"] < 0.05
                out["GRPO with the RM: not worse than the warm start"] = not worse
    return out


def summarize(
    trained_eval: dict[str, Any],
    heads: list[dict[str, Any]],
    likelihood: dict[str, Any] | None,
    rbs_config: dict[str, Any],
    grpo_report: dict[str, Any] | None,
    settings: dict[str, Any],
    seconds: dict[str, float],
    mean_pair_tokens: float,
) -> dict[str, Any]:
    """The recipe's results: training record, pair rows, best-of-N, GRPO, acceptance.

    `likelihood`: `rm.evaluate.evaluate_sets` of the same files scored by the backbone's own
    log-likelihood (no head), or None."""
    result = rbs_config.get("result", {})
    pairs = _pair_rows(trained_eval, heads, likelihood)
    bon = _best_of_n(trained_eval, heads, likelihood)
    grpo = _grpo(grpo_report)
    return {
        "settings": settings,
        "training": {
            "backbone": rbs_config.get("train", {}).get("backbone"),
            "steps": result.get("steps"),
            "stopped": result.get("stopped"),
            "pairs": result.get("pairs"),
            "comparisons": result.get("comparisons"),
            "corpus_tokens": result.get("corpus_tokens"),
            "seed_paper_tokens": SEED_PAPER_TOKENS,
            "backbone_tokens": result.get("tokens"),
            "mean_pair_tokens": round(mean_pair_tokens, 1),
            "seconds": result.get("seconds"),
            "final": result.get("final", {}),
        },
        "pairs": pairs,
        "best_of_n": bon,
        "grpo": grpo,
        "acceptance": _acceptance(pairs, bon, grpo),
        "seconds": seconds,
    }


def _fmt(ci: dict[str, Any] | None, sign: str = "") -> str:
    if ci is None:
        return "-"
    text = f"{ci['value']:{sign}.3f}"
    if ci.get("low") is not None:
        text += f" [{ci['low']:{sign}.3f}, {ci['high']:{sign}.3f}]"
    return text


def write_markdown(results: dict[str, Any], path: Path) -> None:
    """results.md: the tables a reader checks against the acceptance."""
    t = results["training"]
    lines = [
        "# RBS recipe results",
        "",
        f"Backbone `{t['backbone']}`: {t['steps']} steps ({t['stopped']}), {t['pairs']} pairs, "
        f"{t['corpus_tokens']:,} prefix + suffix tokens (the seed paper: "
        f"{t['seed_paper_tokens']:,}), {t['backbone_tokens']:,} tokens through the backbone, "
        f"{t['seconds']} s; final in-batch accuracy {t['final'].get('acc', float('nan')):.3f}.",
        "",
        "## Held-out pairs (95% intervals over problems)",
        "",
        "| set | kind | pairs / problems | trained | untrained | random heads | "
        "backbone log-likelihood | trained - untrained |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in results["pairs"]:
        gain = row["gain"]
        gain_text = "-"
        if gain is not None:
            gain_text = (
                f"{_fmt(gain, '+')}, +{gain['groups_better']}/-{gain['groups_worse']}, "
                f"p = {gain['sign_test_p']:.3g}"
            )
        heads = ", ".join(f"{a:.3f}" for a in row["random_heads"]) or "-"
        lines.append(
            f"| {row['set']} | {row['kind']} | {row['n']} / {row['groups']} | "
            f"{_fmt(row['trained'])} | {_fmt(row['untrained'])} | {heads} | "
            f"{_fmt(row['backbone_likelihood'])} | {gain_text} |"
        )
    bon = results["best_of_n"]
    if bon is not None:
        lines += ["", f"## Best-of-N ({bon['n']} held-out problems)", "", "| pick | accuracy |"]
        lines.append("|---|---|")
        picks = ("model", "untrained_model", "backbone_likelihood_pick", "random", "majority")
        for pick in (*picks, "oracle"):
            if bon.get(pick) is not None:
                lines.append(f"| {pick.replace('_', ' ')} | {_fmt(bon[pick])} |")
        heads = ", ".join(f"{a:.3f}" for a in bon["random_heads_model"])
        if heads:
            lines.append(f"| random heads | {heads} |")
        for pick in ("model_minus_random", "model_minus_majority"):
            if pick in bon:
                lines.append(f"| {pick.replace('_', ' ')} | {_fmt(bon[pick], '+')} |")
    grpo = results["grpo"]
    if grpo is not None:
        lines += ["", f"## GRPO ({grpo['n']} held-out problems, greedy)", ""]
        lines += ["| policy | accuracy | vs warm start (b / c, exact McNemar p) |", "|---|---|---|"]
        cmps = {c["policy"]: c for c in grpo["vs_warm_start"]}
        for p in grpo["policies"]:
            c = cmps.get(p["policy"])
            vs = f"{c['b']} / {c['c']}, p = {c['p_value']:.3g}" if c else ""
            lines.append(f"| {p['policy']} | {_fmt(p['accuracy'])} | {vs} |")
    lines += ["", "## Acceptance (issue 28)", ""]
    lines += [
        f"- {'met' if ok else 'NOT met'}: {line}" for line, ok in results["acceptance"].items()
    ]
    lines += ["", "## Seconds per stage", ""]
    lines += [f"- {stage}: {s}" for stage, s in results["seconds"].items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
