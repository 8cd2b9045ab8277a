"""The metric records a search writes and reads back, typed, and written as the same JSON.

- `ProxyMetrics`: a candidate's level-0 numbers (`fitness.proxy_fitness`, `results.jsonl`
  `proxy`);
- `GRPOMetrics`: one GRPO run judged on held-out problems (`fitness.grpo_fitness`), or the
  starting policy before any (`fitness.starting_fitness`): `results.jsonl` `grpo` and
  `grpo_rungs`, `run.json` `start` and `baseline`;
- `EnsembleRun`: one trained ensemble configuration (`ensembles.json` `runs`), a GRPO run
  that also names its members and seed;
- `PolicyEval`: a judged run's `eval.json` (every verdict per held-out set).

Each record holds the object exactly as it was read (`from_dict`) or measured, and writes it
back unchanged (`to_dict`: the same keys in the same order, keys a newer version adds kept),
so a run folder reads and rewrites byte for byte. The code reads it through the typed
properties below, which are the only place a key is spelled. A key that every version writes
is read strictly: a record without it fails where it is read (`KeyError`), as it did when
these were plain dicts (`search report` turns that into an `InputError`). Keys a later
version added read as None when absent. A record is also a read-only mapping of its JSON
(`metrics["f1"]`), for the code and tests that look at the file's form.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

_R = TypeVar("_R", bound="MetricsRecord")


@dataclass(frozen=True, eq=False)
class MetricsRecord(Mapping[str, Any]):
    """A JSON object of metrics, read-only; equal to any mapping with the same items."""

    data: Mapping[str, Any]

    @classmethod
    def from_dict(cls: type[_R], data: Mapping[str, Any]) -> _R:
        """The record `data` holds (a record of this kind is returned as it is)."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, Mapping):
            raise TypeError(f"{cls.__name__}: expected an object, got {type(data).__name__}")
        return cls(MappingProxyType(dict(data)))

    def to_dict(self) -> dict[str, Any]:
        """The object as it was read or measured (what the run folder's file holds)."""
        return dict(self.data)

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self.data)!r})"


class ProxyMetrics(MetricsRecord):
    """Level-0 metrics of a candidate on the proxy pool (`search.fitness` says what each
    means)."""

    @property
    def separation(self) -> float:
        return self.data["separation"]

    @property
    def probe_payout(self) -> float:
        return self.data["probe_payout"]

    @property
    def fitness(self) -> float:
        return self.data["fitness"]

    @property
    def wrong_payout(self) -> float | None:
        """None in a run from before the incentive checks (or without their material)."""
        return self.data.get("wrong_payout")

    @property
    def misdirection(self) -> float | None:
        """None in a run from before the incentive checks (or without their material)."""
        return self.data.get("misdirection")

    @property
    def reference_free(self) -> bool:
        """The scores did not change with another prompt's reference (a structural reward);
        False when not recorded."""
        return bool(self.data.get("reference_free"))

    @property
    def seconds(self) -> float:
        return self.data["seconds"]

    @property
    def cpu_seconds(self) -> float:
        return self.data["cpu_seconds"]


class GRPOMetrics(MetricsRecord):
    """A policy judged greedily on held-out problems after `steps` GRPO steps (0: the
    starting policy): accuracy and F1 with bootstrap 95% CIs on the first set, each set's
    numbers under `sets` when there were several, and the training trends."""

    @property
    def accuracy(self) -> float:
        return self.data["accuracy"]

    @property
    def f1(self) -> float:
        return self.data["f1"]

    @property
    def f1_ci95(self) -> tuple[float, float]:
        """(low, high) of F1's bootstrap 95% CI."""
        low, high = self.data["ci95"]["f1"]
        return low, high

    @property
    def steps(self) -> int:
        return self.data["steps"]

    @property
    def seconds(self) -> float:
        return self.data["seconds"]

    @property
    def cpu_seconds(self) -> float:
        """Recorded for trained runs (the starting policy has none)."""
        return self.data["cpu_seconds"]

    @property
    def training(self) -> dict[str, dict[str, float]]:
        """Per training statistic `{first, last, change}` (`fitness.training_trends`); empty
        when not recorded."""
        return dict(self.data.get("training") or {})

    def on(self, set_name: str) -> GRPOMetrics | None:
        """The numbers on one held-out set (`validation`, `test`) when the run was judged on
        several; None when it was not judged on that set."""
        found = (self.data.get("sets") or {}).get(set_name)
        return None if found is None else GRPOMetrics.from_dict(found)


class EnsembleRun(GRPOMetrics):
    """One ensemble configuration trained and judged (`search.ensemble`): its GRPO metrics
    plus the configuration's name, seed and members."""

    @classmethod
    def of(cls, metrics: GRPOMetrics, name: str, seed: int, members: list[str]) -> EnsembleRun:
        return cls.from_dict({**metrics.to_dict(), "name": name, "seed": seed, "members": members})

    @property
    def members(self) -> list[str]:
        """The candidates trained beside the base rewards (empty when not recorded)."""
        return list(self.data.get("members") or [])


class PolicyEval(MetricsRecord):
    """A judged run's `eval.json`: the steps it was trained for and, per held-out set, each
    problem's verdict, whether its answer parsed, and its completion."""

    @property
    def steps(self) -> int:
        return self.data["steps"]

    def judged_on(self, set_name: str) -> bool:
        return set_name in (self.data.get("sets") or {})

    def correct(self, set_name: str) -> list[bool]:
        return list(self.data["sets"][set_name]["correct"])

    def parseable(self, set_name: str) -> list[bool]:
        return list(self.data["sets"][set_name]["parseable"])

    def first_set(self) -> tuple[list[bool], list[str]]:
        """(verdicts, completions) on the first set the run was judged on."""
        first = next(iter(self.data["sets"].values()))
        return list(first["correct"]), list(first["completions"])
