"""The metric records a search writes and reads back, typed, and written as the same JSON.

- `ProxyMetrics`: a candidate's level-0 numbers (`fitness.proxy_fitness`, `results.jsonl`
  `proxy`);
- `GRPOMetrics`: one GRPO run judged on held-out problems (`fitness.grpo_fitness`), or the
  starting policy before any (`fitness.starting_fitness`): `results.jsonl` `grpo` and
  `grpo_rungs`, `run.json` `start` and `baseline`;
- `EnsembleRun`: one trained ensemble configuration (`ensembles.json` `runs`), a GRPO run
  that also names its members and seed;
- `TestedConfiguration`: a configuration's test-set outcomes described (`search.stats`'s
  `describe`: accuracy and F1 with bootstrap CIs), and `EnsembleSummary`, the whole
  `ensembles/ensembles.json` as the report and the audit read it;
- `PolicyEval`: a judged run's `eval.json` (every verdict per held-out set).

Each record holds the object exactly as it was read (`from_dict`) or measured, and writes it
back unchanged (`to_dict`: the same keys in the same order, keys a newer version adds kept),
so a run folder reads and rewrites byte for byte. Readers use the typed properties below,
the one place besides the writers (`search.fitness`, `search.ensemble`) that spells a key.
A key that every version writes is read strictly: a record without it fails where it is
read (`KeyError`), as it did when these were plain dicts (`search report` turns that into an
`InputError`). A key a later version added reads as unmeasured (None, or empty) when
absent. A record is also a read-only mapping of its JSON (`metrics["f1"]`), for the code and
tests that look at the file's form.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # imported where read: rl.stats loads numpy and scipy
    from rewardsmith.rl.stats import Interval

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

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
        # copy, deepcopy and pickle rebuild from the object (a mappingproxy does not pickle)
        return type(self).from_dict, (dict(self.data),)


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


class TestedConfiguration(MetricsRecord):
    """One configuration's held-out outcomes described (`search.stats.describe`): `n`, and
    accuracy and F1 with their bootstrap 95% CIs."""

    @property
    def accuracy(self) -> Interval:
        from rewardsmith.rl.stats import Interval

        return Interval(**self.data["accuracy"])

    @property
    def f1(self) -> Interval:
        from rewardsmith.rl.stats import Interval

        return Interval(**self.data["f1"])


class EnsembleSummary(MetricsRecord):
    """`ensembles/ensembles.json` (`search.ensemble.run_ensembles`): the configurations
    trained, each one's test outcomes, the best and its seed spread, the pairwise tests, and
    the starting policy against each. Parts not written yet read as empty."""

    @property
    def steps(self) -> int | None:
        return self.data.get("steps")

    @property
    def best(self) -> str | None:
        """The configuration retrained with more seeds (None before it was chosen)."""
        return self.data.get("best")

    @property
    def runs(self) -> dict[str, EnsembleRun]:
        """Every trained run by key (`top3`, `top3@seed1`)."""
        return {k: EnsembleRun.from_dict(v) for k, v in (self.data.get("runs") or {}).items()}

    def size(self, name: str) -> Any:
        """A configuration's planned size (`?` when not recorded)."""
        return (self.data.get("configs") or {}).get(name, {}).get("size", "?")

    @property
    def tested(self) -> dict[str, TestedConfiguration]:
        """Each seed-0 configuration's test outcomes, in plan order."""
        found = self.data.get("test") or {}
        return {k: TestedConfiguration.from_dict(v) for k, v in found.items()}

    @property
    def start_tested(self) -> TestedConfiguration | None:
        """The starting policy's test outcomes (None when it was not judged)."""
        found = (self.data.get("start") or {}).get("test")
        return None if found is None else TestedConfiguration.from_dict(found)

    @property
    def against_start(self) -> dict[str, dict[str, Any]]:
        """Each configuration against the starting policy (`search.stats.versus`)."""
        return dict((self.data.get("start") or {}).get("versus") or {})

    @property
    def pairwise(self) -> list[dict[str, Any]]:
        """Exact McNemar of every pair (`search.stats.pairwise`)."""
        return list(self.data.get("mcnemar") or [])

    @property
    def indistinguishable(self) -> dict[str, list[str]]:
        return dict(self.data.get("indistinguishable") or {})

    @property
    def seed_spread(self) -> dict[str, dict[str, Any]]:
        """F1 over seeds of the best configuration and the base (`search.stats.spread`)."""
        return dict(self.data.get("seed_spread") or {})

    @property
    def notes(self) -> list[str]:
        """Sizes that could not be filled."""
        return list(self.data.get("notes") or [])
