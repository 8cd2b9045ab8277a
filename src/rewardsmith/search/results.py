"""A search run's folder and its records: what `RUNDIR` holds and how it is written.

```
RUNDIR/
  run.json             the run's settings (task, rounds, budgets, seed) and its state
  candidates/NAME.py   each candidate's source, admitted or not
  results.jsonl        one line per candidate (`CandidateRecord`)
  feedback/round_N.md  exactly what the generator was told before round N
  pool.jsonl           the proxy's rollouts (`search.response_pool`)
  proxy/NAME.json      a candidate's raw proxy scores (pool and probes)
  runs/NAME/           GRPO runs of single candidates (metrics, checkpoint, eval.json)
  ensembles/           `search ensemble`: runs/, ensembles.json
  audit.json           `search audit`
  report.md, *.png     `search report`
```

`results.jsonl` is rewritten whole (to a temporary file, then renamed) whenever a record
changes, so it always holds exactly one line per candidate and a crash never leaves half a
line; `--resume` reads it back and skips every step a record shows done.

A run folder may come from elsewhere (`search report` on a copied run): every file is written
with `files.atomic_write` below the folder (a symlink planted as a file or a subfolder is
replaced or refused, never written through), only regular files of bounded size are read,
and a candidate's source is looked up only under a plain name (no `/`, no leading dot).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from rewardsmith.errors import ConfigError, InputError
from rewardsmith.files import atomic_write, is_regular, read_json, read_text
from rewardsmith.jsonl import read_jsonl
from rewardsmith.plaintext import md_text
from rewardsmith.search.metrics import GRPOMetrics, ProxyMetrics

RUN_FILE = "run.json"
RESULTS_FILE = "results.jsonl"
CANDIDATES_DIR = "candidates"
FEEDBACK_DIR = "feedback"
PROXY_DIR = "proxy"
RUNS_DIR = "runs"
ENSEMBLES_DIR = "ensembles"
ENSEMBLES_FILE = "ensembles.json"
AUDIT_FILE = "audit.json"
REPORT_FILE = "report.md"


@dataclass
class CandidateRecord:
    """One candidate: how it was made, the 4-stage check, and its fitness per level.

    `stage` is the last stage the check ran (1 static, 2 locked execution, 3 restricted
    namespace, 4 probe): the failing one for a rejected candidate, 4 for an admitted one;
    `admitted` is None until the check ran. `proxy` and `grpo` hold level-0 and the
    newest level-1/2 metrics (None when the candidate did not reach that level);
    `grpo_rungs` every GRPO budget it was trained with."""

    round: int
    name: str
    generator: str
    origin: str = ""
    admitted: bool | None = None
    stage: int | None = None
    reason: str = ""
    proxy: ProxyMetrics | None = None
    grpo: GRPOMetrics | None = None
    grpo_rungs: list[GRPOMetrics] = field(default_factory=list)
    genome: dict[str, Any] | None = None
    parents: list[str] = field(default_factory=list)
    bounds: list[float] | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Metrics given as the plain objects of the file become typed records.
        if self.proxy is not None:
            self.proxy = ProxyMetrics.from_dict(self.proxy)
        if self.grpo is not None:
            self.grpo = GRPOMetrics.from_dict(self.grpo)
        self.grpo_rungs = [GRPOMetrics.from_dict(g) for g in self.grpo_rungs]

    def to_dict(self) -> dict[str, Any]:
        """The `results.jsonl` line's object: every field, in field order."""
        metrics = {
            "proxy": self.proxy.to_dict() if self.proxy is not None else None,
            "grpo": self.grpo.to_dict() if self.grpo is not None else None,
            "grpo_rungs": [g.to_dict() for g in self.grpo_rungs],
        }
        return {
            f.name: metrics[f.name] if f.name in metrics else copy.deepcopy(getattr(self, f.name))
            for f in fields(self)
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CandidateRecord:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})

    def rank_key(self) -> tuple[float, ...]:
        """Sort key (ascending = best first): GRPO-judged before proxy-only, more rungs
        before fewer; then F1 (accuracy breaks ties), else proxy fitness; rejected last."""
        if not self.admitted:
            return (3.0, 0.0, 0.0, 0.0)
        if self.grpo is not None:
            return (0.0, -len(self.grpo_rungs), -self.grpo.f1, -self.grpo.accuracy)
        if self.proxy is not None:
            return (1.0, 0.0, -self.proxy.fitness, -self.proxy.separation)
        return (2.0, 0.0, 0.0, 0.0)

    def f1_text(self) -> str:
        """The last GRPO F1 with its 95% CI, `0.340 [0.287, 0.393]`, or `-` before any."""
        if not self.grpo:
            return "-"
        low, high = self.grpo.f1_ci95
        return f"{self.grpo.f1:.3f} [{low:.3f}, {high:.3f}]"


@dataclass
class RunState:
    """`run.json` in memory: a command reads it once when it opens the run (`RunDir.read_state`)
    and the search writes it whole after each change (`RunDir.write_state`, the one writer).
    Keys this version does not name are kept as they were."""

    config: dict[str, Any]
    started: str = ""
    pool: dict[str, int] | None = None
    held_out: dict[str, int] | None = None
    task: dict[str, Any] | None = None
    start: GRPOMetrics | None = None  # the starting policy's metrics, before GRPO
    baseline: dict[str, GRPOMetrics] = field(default_factory=dict)  # steps -> base-only run
    finished: str | None = None
    last_session_seconds: float | None = None
    other: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Metrics given as the plain objects of the file become typed records.
        if self.start is not None:
            self.start = GRPOMetrics.from_dict(self.start)
        self.baseline = {k: GRPOMetrics.from_dict(m) for k, m in self.baseline.items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunState:
        named = {f.name for f in fields(cls)} - {"other"}
        known = {k: v for k, v in data.items() if k in named}
        known["baseline"] = dict(known.get("baseline") or {})
        return cls(**known, other={k: v for k, v in data.items() if k not in named})

    def to_dict(self) -> dict[str, Any]:
        """The file's form: fields left unset are left out, as before they were set."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name != "other" and value is not None and value != {} and value != "":
                out[f.name] = value
        if "start" in out:
            out["start"] = dict(out["start"])
        if "baseline" in out:
            out["baseline"] = {k: dict(m) for k, m in self.baseline.items()}
        out.update(self.other)
        return out


class RunDir:
    """A search run's folder (see the module docstring)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def exists(self) -> bool:
        return is_regular(self.path / RUN_FILE)

    def require(self) -> RunDir:
        if not self.exists():
            raise ConfigError(f"{self.path} is not a search run folder (no {RUN_FILE})")
        return self

    def sub(self, name: str) -> Path:
        path = self.path / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    # -- the run's settings --------------------------------------------------------------

    def read_run(self) -> dict[str, Any]:
        data = read_json(self.path / RUN_FILE)
        if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
            raise InputError(f"{self.path / RUN_FILE}: not a search run's settings")
        return data

    def write_run(self, data: Mapping[str, Any]) -> None:
        self.write(RUN_FILE, json.dumps(data, indent=2) + "\n")

    def read_state(self) -> RunState:
        return RunState.from_dict(self.read_run())

    def write_state(self, state: RunState) -> None:
        self.write_run(state.to_dict())

    def write(self, name: str, text: str) -> Path:
        """Write `name` (a path below the folder) atomically, never through a symlink."""
        return atomic_write(self.path / name, text, root=self.path)

    # -- candidates ----------------------------------------------------------------------

    def source_path(self, name: str) -> Path:
        if not plain_name(name):
            raise ConfigError(f"bad candidate name {name[:60]!r}: a plain file name is expected")
        return self.path / CANDIDATES_DIR / f"{name}.py"

    def write_source(self, name: str, source: str) -> Path:
        return self.write(f"{CANDIDATES_DIR}/{self.source_path(name).name}", source)

    def read_source(self, name: str) -> str:
        path = self.source_path(name)
        if not path.exists():
            raise ConfigError(f"no candidate {name!r} in {self.path} ({path} is missing)")
        return read_text(path, MAX_SOURCE_BYTES)

    def source_if_any(self, name: str) -> str | None:
        """A candidate's source, or None when its name is not plain or no regular file of
        bounded size holds it (what a report shows when it can)."""
        if not plain_name(name) or not is_regular(self.source_path(name)):
            return None
        try:
            return read_text(self.source_path(name), MAX_SOURCE_BYTES)
        except InputError:
            return None

    def read_records(self) -> list[CandidateRecord]:
        path = self.path / RESULTS_FILE
        if not path.exists():
            return []
        return [CandidateRecord.from_dict(row) for row in read_jsonl(path, regular_only=True)]

    def write_records(self, records: Iterable[CandidateRecord]) -> None:
        lines = "".join(json.dumps(r.to_dict()) + "\n" for r in records)
        self.write(RESULTS_FILE, lines)

    def write_feedback(self, round_no: int, text: str) -> Path:
        return self.write(f"{FEEDBACK_DIR}/round_{int(round_no)}.md", text)

    def read_feedback(self, round_no: int) -> str | None:
        path = self.path / FEEDBACK_DIR / f"round_{int(round_no)}.md"
        return read_text(path) if is_regular(path) else None

    def proxy_scores(self, name: str) -> dict[str, list[float]] | None:
        path = self.path / PROXY_DIR / f"{name}.json"
        if not plain_name(name) or not is_regular(path):
            return None
        data: dict[str, list[float]] = read_json(path)
        return data

    def write_proxy_scores(self, name: str, scores: Mapping[str, list[float]]) -> None:
        if not plain_name(name):
            raise ConfigError(f"bad candidate name {name[:60]!r}: a plain file name is expected")
        self.write(f"{PROXY_DIR}/{name}.json", json.dumps(scores) + "\n")

    def run_dir(self, name: str) -> Path:
        if not plain_name(name):
            raise ConfigError(f"bad run name {name[:60]!r}: a plain file name is expected")
        return self.path / RUNS_DIR / name

    def read_json(self, name: str) -> Any:
        path = self.path / name
        return read_json(path) if is_regular(path) else None

    def write_json(self, name: str, data: Any) -> Path:
        return self.write(name, json.dumps(data, indent=2) + "\n")


# A candidate's source: a reward module is a few kilobytes.
MAX_SOURCE_BYTES = 1_000_000
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,199}")


def plain_name(name: str) -> bool:
    """A name usable as one file name in the run folder (no `/`, no leading dot)."""
    return bool(_PLAIN_NAME.fullmatch(name))


def shown(value: Any) -> Any:
    """`value` (read from a run folder) with every string in it, keys too, Markdown-escaped
    (`plaintext.md_text`) for a report; numbers and structure as they are."""
    if isinstance(value, str):
        return md_text(value)
    if isinstance(value, dict):
        return {shown(k): shown(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [shown(v) for v in value]
    return value


def shown_state(state: RunState) -> RunState:
    """`run.json` for a report: every string in it Markdown-escaped (`shown`)."""
    return RunState.from_dict(shown(state.to_dict()))


def shown_record(r: CandidateRecord) -> CandidateRecord:
    """A record for a report: its name, origin and reason Markdown-escaped (a plain name, the
    only kind whose files are looked up, reads the same escaped)."""
    return replace(r, name=md_text(r.name), origin=md_text(r.origin), reason=md_text(r.reason))


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` atomically, never through a symlink (`files.atomic_write`)."""
    atomic_write(path, text)


def ranked(records: Iterable[CandidateRecord]) -> list[CandidateRecord]:
    """Records best first (`CandidateRecord.rank_key`, then name for a stable order)."""
    return sorted(records, key=lambda r: (r.rank_key(), r.round, r.name))
