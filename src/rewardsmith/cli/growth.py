"""The "library growth" table of `score --synthesize`: which synthesized tools this run wrote
or scored with: `synthesized, admitted` (written now, passed the gate), `synthesized,
rejected`, or `routed to` (found in the library, made by an earlier run, chosen by the
router directly), with the gate's held-out numbers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich.table import Table

from rewardsmith.errors import RewardsmithError
from rewardsmith.library.store import Library, parse_tool_ref
from rewardsmith.scoring import Scorer


def _gate_text(validation: Mapping[str, Any]) -> str:
    held = dict(validation.get("gate", {})).get("checks", {}).get("held_out", {})
    if not held:
        return "-"
    acc, auc, n = held.get("accuracy"), held.get("auc"), held.get("cases")
    parts = [f"accuracy {acc:.3f}" if isinstance(acc, float | int) else ""]
    if isinstance(auc, float | int):
        parts.append(f"AUC {auc:.3f}")
    if n:
        parts.append(f"{n} cases")
    return ", ".join(p for p in parts if p) or "-"


def growth_table(scorer: Scorer, library: Library, used: Iterable[tuple[str, str]]) -> Table | None:
    """One row per synthesized tool this run wrote or scored with (`used`: (task, tool ref)
    pairs that scored samples); None when there is none."""
    rows: dict[str, list[str]] = {}
    for outcome in scorer.synthesized:
        made_for = outcome.details.get("task") or outcome.details.get("signature") or "-"
        verdict = "admitted" if outcome.admitted else "rejected"
        rows[outcome.stored_as] = [
            str(made_for),
            outcome.stored_as,
            f"synthesized, {verdict}",
            _gate_text({"gate": outcome.report.to_dict()}),
        ]
    for task, ref in sorted(set(used)):
        if ref in rows or ref == "-":
            continue
        try:
            record = library.record(*parse_tool_ref(ref))
        except RewardsmithError:
            continue
        if record.spec.provenance != "synth":
            continue
        rows[ref] = [
            task,
            ref,
            f"routed to (made {record.created_at[:10]})",
            _gate_text(record.spec.validation),
        ]
    if not rows:
        return None
    table = Table(title="library growth: synthesized tools in this run")
    for col in ("task", "tool", "this run", "gate (held-out)"):
        table.add_column(col)
    for row in rows.values():
        table.add_row(*row)
    return table
