"""`search promote`: an admitted candidate joins the tool library with provenance `search`.

The tool is a `reward_function` tool (`rewardsmith.tools.reward_fn.RewardFunctionTool`): its
config holds the source and bounds, and building it runs the 4-stage check again, so the
library never stores code that does not pass. The spec's `validation` keeps where it came
from (run folder, round, origin) and every number the search measured (proxy, GRPO rungs),
plus the audit's flags when the run was audited. Rejected candidates cannot be promoted.
"""

from __future__ import annotations

from pathlib import Path

from rewardsmith.errors import ConfigError
from rewardsmith.library.names import check_tool_name
from rewardsmith.library.registry import REWARD_FUNCTION_FACTORY
from rewardsmith.library.store import Library
from rewardsmith.search.loop import description
from rewardsmith.search.results import AUDIT_FILE, RunDir
from rewardsmith.types import ToolSpec


def promote(
    rundir: str | Path,
    name: str,
    *,
    library: str | Path | Library | None = None,
    as_name: str | None = None,
) -> ToolSpec:
    """Add candidate `name` of the run to the library (as `as_name`); returns the stored
    spec. Raises `ConfigError` for an unknown or rejected candidate or a bad tool name."""
    rd = RunDir(rundir).require()
    records = {r.name: r for r in rd.read_records()}
    record = records.get(name)
    if record is None:
        known = ", ".join(sorted(records)) or "none"
        raise ConfigError(f"no candidate {name!r} in {rd.path}; candidates: {known}")
    if not record.admitted:
        raise ConfigError(
            f"candidate {name!r} was not admitted by the 4-stage check "
            f"({record.reason or 'not checked yet'}); only admitted candidates can be promoted"
        )
    tool_name = check_tool_name(as_name or name)
    source = rd.read_source(name)
    audit = rd.read_json(AUDIT_FILE) or {}
    flags = next((a["flags"] for a in audit.get("rewards", []) if a["name"] == name), None)
    reference_free = bool(record.proxy and record.proxy.reference_free)
    spec = ToolSpec(
        name=tool_name,
        kind="code",
        description=f"Searched reward: {description(record, source)}",
        needs_reference=not reference_free,
        provenance="search",
        validation={
            "search": {
                "run": str(rd.path.resolve()),
                "candidate": name,
                "round": record.round,
                "origin": record.origin,
                "proxy": record.proxy.to_dict() if record.proxy is not None else None,
                "grpo_rungs": [g.to_dict() for g in record.grpo_rungs],
                "audit_flags": flags,
            }
        },
    )
    config = {
        "factory": REWARD_FUNCTION_FACTORY,
        "params": {"source": source, "bounds": list(record.bounds or (-1.0, 1.0))},
    }
    owned = not isinstance(library, Library)
    lib = library if isinstance(library, Library) else Library(library)
    try:
        return lib.add(spec, config, note=f"promoted from search run {rd.path}")
    finally:
        if owned:
            lib.close()
