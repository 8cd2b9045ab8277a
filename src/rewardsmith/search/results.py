"""A search run's folder and its records: what `RUNDIR` holds and how it is written.

```
RUNDIR/
  run.json             the run's settings (task, rounds, budgets, seed) and its state
  candidates/NAME.py   each candidate's source, admitted or not
  results.jsonl        one line per candidate (`CandidateRecord`)
  feedback/round_N.md  exactly what the generator was told before round N
  pool.jsonl           the proxy's rollouts (`search.pool`)
  proxy/NAME.json      a candidate's raw proxy scores (pool and probes)
  runs/NAME/           GRPO runs of single candidates (metrics, checkpoint, eval.json)
  ensembles/           `search ensemble`: runs/, ensembles.json
  audit.json           `search audit`
  report.md, *.png     `search report`
```

`results.jsonl` is rewritten whole (to a temporary file, then renamed) whenever a record
changes, so it always holds exactly one line per candidate and a crash never leaves half a
line; `--resume` reads it back and skips every step a record shows done.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rewardsmith.errors import ConfigError, InputError
from rewardsmith.jsonl import read_jsonl

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
    proxy: dict[str, Any] | None = None
    grpo: dict[str, Any] | None = None
    grpo_rungs: list[dict[str, Any]] = field(default_factory=list)
    genome: dict[str, Any] | None = None
    parents: list[str] = field(default_factory=list)
    bounds: list[float] | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

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
            return (0.0, -len(self.grpo_rungs), -self.grpo["f1"], -self.grpo["accuracy"])
        if self.proxy is not None:
            return (1.0, 0.0, -self.proxy["fitness"], -self.proxy["separation"])
        return (2.0, 0.0, 0.0, 0.0)

    def f1_text(self) -> str:
        """The last GRPO F1 with its 95% CI, `0.340 [0.287, 0.393]`, or `-` before any."""
        if not self.grpo:
            return "-"
        low, high = self.grpo["ci95"]["f1"]
        return f"{self.grpo['f1']:.3f} [{low:.3f}, {high:.3f}]"


class RunDir:
    """A search run's folder (see the module docstring)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def exists(self) -> bool:
        return (self.path / RUN_FILE).exists()

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
        try:
            data: dict[str, Any] = json.loads((self.path / RUN_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"{self.path / RUN_FILE}: cannot read it: {exc}") from exc
        return data

    def write_run(self, data: Mapping[str, Any]) -> None:
        write_atomic(self.path / RUN_FILE, json.dumps(data, indent=2) + "\n")

    # -- candidates ----------------------------------------------------------------------

    def source_path(self, name: str) -> Path:
        return self.path / CANDIDATES_DIR / f"{name}.py"

    def write_source(self, name: str, source: str) -> Path:
        path = self.sub(CANDIDATES_DIR) / f"{name}.py"
        write_atomic(path, source)
        return path

    def read_source(self, name: str) -> str:
        path = self.source_path(name)
        if not path.exists():
            raise ConfigError(f"no candidate {name!r} in {self.path} ({path} is missing)")
        return path.read_text(encoding="utf-8")

    def read_records(self) -> list[CandidateRecord]:
        path = self.path / RESULTS_FILE
        if not path.exists():
            return []
        return [CandidateRecord.from_dict(row) for row in read_jsonl(path)]

    def write_records(self, records: Iterable[CandidateRecord]) -> None:
        lines = "".join(json.dumps(r.to_dict()) + "\n" for r in records)
        write_atomic(self.path / RESULTS_FILE, lines)

    def write_feedback(self, round_no: int, text: str) -> Path:
        path = self.sub(FEEDBACK_DIR) / f"round_{round_no}.md"
        write_atomic(path, text)
        return path

    def read_feedback(self, round_no: int) -> str | None:
        path = self.path / FEEDBACK_DIR / f"round_{round_no}.md"
        return path.read_text(encoding="utf-8") if path.exists() else None

    def proxy_scores(self, name: str) -> dict[str, list[float]] | None:
        path = self.path / PROXY_DIR / f"{name}.json"
        if not path.exists():
            return None
        data: dict[str, list[float]] = json.loads(path.read_text())
        return data

    def write_proxy_scores(self, name: str, scores: Mapping[str, list[float]]) -> None:
        write_atomic(self.sub(PROXY_DIR) / f"{name}.json", json.dumps(scores) + "\n")

    def run_dir(self, name: str) -> Path:
        return self.path / RUNS_DIR / name

    def read_json(self, name: str) -> Any:
        path = self.path / name
        return json.loads(path.read_text()) if path.exists() else None

    def write_json(self, name: str, data: Any) -> Path:
        path = self.path / name
        write_atomic(path, json.dumps(data, indent=2) + "\n")
        return path


def write_atomic(path: Path, text: str) -> None:
    """Write to `path.tmp`, flush to disk, rename: readers see the old or the new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


def ranked(records: Iterable[CandidateRecord]) -> list[CandidateRecord]:
    """Records best first (`CandidateRecord.rank_key`, then name for a stable order)."""
    return sorted(records, key=lambda r: (r.rank_key(), r.round, r.name))
