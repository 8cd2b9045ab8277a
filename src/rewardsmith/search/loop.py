"""The search loop: generate, check, score, rank, feed back, for R rounds of K candidates.

Each round:

1. the ranking summary of the earlier rounds (`search.feedback`) is built and what the
   generator is told is written to `feedback/round_N.md`;
2. the generator writes K candidates (`candidates/NAME.py`, a line each in `results.jsonl`);
3. each goes through the sandbox's 4-stage check once (`fitness.candidate_check`, at the
   limits the candidate then runs with; scoring and training reuse that report); a rejected
   one keeps its stage and reason, and the next round's summary says so;
4. fitness by `fidelity`:
   - `proxy`: level 0 only (`search.fitness.proxy_fitness`);
   - `grpo`: the proxy too (it costs seconds), then every admitted candidate gets the first
     GRPO budget;
   - `auto`: successive halving (Jamieson & Talwalkar 2016) across levels: the best
     ceil(n / eta) by proxy fitness get the first GRPO budget, the best ceil(n / eta) of those
     by F1 the next budget, and so on (`grpo_steps` are cumulative: a later rung continues the
     earlier run). `calibration` more candidates per round, drawn at random among those the
     proxy did not promote, get the first budget too, so the proxy/GRPO rank correlation is
     measured over the proxy's whole range, not only its top.

Base rewards alone are trained once per GRPO budget (`runs/base`), the reference every
candidate's F1 is read against; the starting policy is judged once, untrained (`runs/start`,
`run.json` `start`), so the report can tell when GRPO at these settings makes even the base
run worse than where it began (then a ranking measures which reward harms least). `--resume` reruns the same steps and skips each one a
record shows done: a candidate is never generated, checked, scored or trained twice (an
interrupted GRPO run continues from its newest checkpoint).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from rewardsmith.errors import ConfigError
from rewardsmith.library.store import Library
from rewardsmith.search.feedback import Feedback
from rewardsmith.search.fitness import (
    BACKENDS,
    GRPORun,
    candidate_check,
    candidate_tool,
    grpo_fitness,
    proxy_fitness,
    starting_fitness,
)
from rewardsmith.search.generator import Generator, OfflineGenerator
from rewardsmith.search.incentives import Incentives, build_incentives
from rewardsmith.search.metrics import GRPOMetrics
from rewardsmith.search.program import RewardProgram
from rewardsmith.search.response_pool import (
    POOL_FILE,
    PoolItem,
    build_probes,
    load_pool,
    sample_pool,
    save_pool,
)
from rewardsmith.search.results import CandidateRecord, RunDir, RunState, ranked
from rewardsmith.search.task import SearchTask, load_task, run_task

FIDELITIES = ("proxy", "grpo", "auto")
GENERATORS = ("offline", "llm")
BASE_RUN = "base"
START_RUN = "start"
Progress = Callable[[str], None]


@dataclass(frozen=True)
class SearchConfig:
    """Everything that decides a search run (written to `run.json`)."""

    task: str
    rounds: int = 5
    per_round: int = 10
    generator: str = "offline"
    fidelity: str = "auto"
    grpo_steps: tuple[int, ...] = (60, 120)
    eta: int = 2
    calibration: int = 0
    seed: int = 0
    grpo_backend: str = "embedded"
    device: str = "cpu"

    def __post_init__(self) -> None:
        if self.rounds < 1 or self.per_round < 1:
            raise ConfigError("--rounds and --per-round must be >= 1")
        if self.generator not in GENERATORS:
            raise ConfigError(f"--generator must be one of {GENERATORS}, got {self.generator!r}")
        if self.fidelity not in FIDELITIES:
            raise ConfigError(f"--fidelity must be one of {FIDELITIES}, got {self.fidelity!r}")
        steps = self.grpo_steps
        if not steps or any(s < 1 for s in steps) or list(steps) != sorted(set(steps)):
            raise ConfigError(
                f"--grpo-steps must be increasing positive step counts (e.g. 60,120), got {steps}"
            )
        if self.eta < 2:
            raise ConfigError(f"--eta must be >= 2 (keep the best 1/eta per rung), got {self.eta}")
        if self.calibration < 0:
            raise ConfigError("--calibration must be >= 0")
        if self.grpo_backend not in BACKENDS:
            raise ConfigError(f"--grpo-backend must be one of {BACKENDS}")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["grpo_steps"] = list(self.grpo_steps)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchConfig:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["grpo_steps"] = tuple(values.get("grpo_steps", (60, 120)))
        return cls(**values)


#: Settings that may differ on `--resume` (more rounds extend a finished run).
RESUMABLE_CHANGES = frozenset({"rounds"})


def description(record: CandidateRecord, source: str | None) -> str:
    """What a candidate rewards, in one line: its program's terms, else its docstring."""
    if record.genome:
        return RewardProgram.from_dict(record.genome).describe()
    found = doc_line(source or "")
    return found[:160] if found else record.origin


def doc_line(source: str) -> str | None:
    """The first docstring's first line of text (the line that opens it, else the next
    non-blank one), read line by line: a regex over the whole source would rescan long runs of
    blank lines from each of them, and candidate sources are model output."""
    lines = source.splitlines()
    for i, line in enumerate(lines):
        text = line.lstrip()
        if text.startswith(('"""', "'''")):
            rest = text[3:].strip()
            return rest or next((ln.strip() for ln in lines[i + 1 :] if ln.strip()), None)
    return None


class Search:
    """One search run in `rundir` (see the module docstring)."""

    def __init__(
        self,
        config: SearchConfig,
        rundir: str | Path,
        *,
        resume: bool = False,
        library: str | Path | None = None,
        progress: Progress | None = None,
        llm_client: Any = None,
    ) -> None:
        self.config = config
        self.rd = RunDir(rundir)
        self.say = progress or (lambda msg: None)
        self.state: RunState = self._open_run(resume)
        # A resumed run keeps the task settings it started with (`run.json`).
        self.task: SearchTask = run_task(self.state) if resume else load_task(config.task)
        self.library = Library(library)
        self.llm_client = llm_client
        self.records: list[CandidateRecord] = self.rd.read_records()
        self.pool: list[PoolItem] = []
        self.probes: list[PoolItem] = []
        self.incentives = Incentives((), (), (), ())

    def _open_run(self, resume: bool) -> RunState:
        """The run's state, read once (a resumed run) or new; kept in memory from here."""
        if self.rd.exists() and not resume:
            raise ConfigError(
                f"{self.rd.path} already holds a search run; pass --resume to continue it or "
                "choose another --out"
            )
        if resume and not self.rd.exists():
            raise ConfigError(f"nothing to resume: {self.rd.path} holds no search run")
        if resume:
            state = self.rd.read_state()
            stored = state.config
            mine = self.config.to_dict()
            changed = sorted(
                k for k in mine if k not in RESUMABLE_CHANGES and stored.get(k) != mine[k]
            )
            if changed:
                shown = ", ".join(
                    f"{k}: run has {stored.get(k)!r}, given {mine[k]!r}" for k in changed
                )
                raise ConfigError(f"--resume with different settings ({shown}); use the run's own")
        else:
            self.rd.path.mkdir(parents=True, exist_ok=True)
            state = RunState({}, started=time.strftime("%Y-%m-%dT%H:%M:%S"))
        state.config = self.config.to_dict()
        self.rd.write_state(state)
        return state

    def close(self) -> None:
        self.library.close()

    # -- the run -------------------------------------------------------------------------

    def run(self) -> list[CandidateRecord]:
        """Run (or continue) every round; returns the records, best first."""
        start = time.perf_counter()
        self._prepare()
        for round_no in range(1, self.config.rounds + 1):
            self._round(round_no)
        self.state.finished = time.strftime("%Y-%m-%dT%H:%M:%S")
        self.state.last_session_seconds = round(time.perf_counter() - start, 1)
        self.rd.write_state(self.state)
        return ranked(self.records)

    def _prepare(self) -> None:
        task = self.task
        state = self.state
        if not (self.rd.path / POOL_FILE).exists():
            from rewardsmith.rl.policies import load_policy

            self.say(f"sampling the proxy pool: {task.pool_prompts} prompts x {task.pool_group}")
            policy = load_policy(task.policy, device=self.config.device, progress=self.say)
            save_pool(sample_pool(task, policy, self.config.seed), self.rd.path)
        self.pool = load_pool(self.rd.path)
        self.probes = build_probes(self.pool, task, self.config.seed)
        self.incentives = build_incentives(self.pool, task, self.config.seed)
        right = sum(it.correct for it in self.pool)
        state.pool = {
            "responses": len(self.pool),
            "right": right,
            "probes": len(self.probes),
            "twins": len(self.incentives.twins),
            "wrong_probes": len(self.incentives.wrong_probes),
        }
        self.validation, self.test = task.held_out()
        state.held_out = {"validation": len(self.validation), "test": len(self.test)}
        state.task = task.to_dict()
        self.rd.write_state(state)
        self.say(f"pool: {len(self.pool)} responses, {right} right; {len(self.probes)} probes")

    def _generator(self) -> Generator:
        if self.config.generator == "offline":
            return OfflineGenerator(self.task, self.config.seed)
        from rewardsmith.search.llm_generator import LLMGenerator

        return LLMGenerator(self.task, self.pool, self.llm_client, seed=self.config.seed)

    def _save(self) -> None:
        self.rd.write_records(self.records)

    def _descriptions(self) -> dict[str, str]:
        out = {}
        for r in self.records:
            out[r.name] = description(r, self.rd.source_if_any(r.name))
        return out

    def _round(self, round_no: int) -> None:
        cfg = self.config
        tag = f"[round {round_no}/{cfg.rounds}]"
        mine = [r for r in self.records if r.round == round_no]
        if len(mine) < cfg.per_round:
            feedback = Feedback.build(round_no, self.records, self._descriptions())
            feedback.baseline = dict(self.state.baseline)
            generator = self._generator()
            if self.rd.read_feedback(round_no) is None:
                self.rd.write_feedback(round_no, generator.told(feedback, cfg.per_round))
            for index in range(len(mine) + 1, cfg.per_round + 1):
                (proposal,) = generator.propose(round_no, index, feedback, start=index)
                self.rd.write_source(proposal.name, proposal.source)
                record = CandidateRecord(
                    round=round_no,
                    name=proposal.name,
                    generator=generator.kind,
                    origin=proposal.origin,
                    genome=proposal.genome,
                    parents=list(proposal.parents),
                    details=dict(proposal.details),
                )
                self.records.append(record)
                mine.append(record)
                self._save()
                self.say(f"{tag} wrote {proposal.name} ({proposal.origin})")
        for record in mine:
            if record.admitted is None:
                self._check(record, tag)
        for record in mine:
            if record.admitted and record.proxy is None:
                self._proxy(record, tag)
        if cfg.fidelity != "proxy":
            self._halving(round_no, [r for r in mine if r.admitted], tag)

    def _check(self, record: CandidateRecord, tag: str) -> None:
        report = candidate_check(self.rd.read_source(record.name))
        failed = report.failed_stage
        record.admitted = report.admitted
        record.stage = failed.stage if failed else 4
        record.reason = report.reason
        record.bounds = list(report.bounds)
        self._save()
        self.say(f"{tag} {record.name}: {'admitted' if report.admitted else report.reason}")

    def _proxy(self, record: CandidateRecord, tag: str) -> None:
        tool = candidate_tool(record.name, self.rd.read_source(record.name))
        try:
            metrics, scores = proxy_fitness(tool, self.pool, self.probes, self.incentives)
        finally:
            tool.close()
        self.rd.write_proxy_scores(record.name, scores)
        record.proxy = metrics
        self._save()
        self.say(
            f"{tag} {record.name}: proxy separation {metrics.separation:+.3f}, probe payout "
            f"{metrics.probe_payout:.3f}, wrong payout {metrics.wrong_payout or 0:.3f}, "
            f"misdirection {metrics.misdirection or 0:.3f}, fitness {metrics.fitness:+.3f} "
            f"({metrics.seconds:.1f} s)"
        )

    # -- GRPO rungs ----------------------------------------------------------------------

    def _halving(self, round_no: int, admitted: list[CandidateRecord], tag: str) -> None:
        cfg = self.config
        if not admitted:
            return
        by_proxy = sorted(admitted, key=lambda r: (-r.proxy.fitness if r.proxy else 0.0, r.name))
        if cfg.fidelity == "grpo":
            entrants = by_proxy
        else:
            entrants = by_proxy[: math.ceil(len(by_proxy) / cfg.eta)]
            rest = [r for r in by_proxy if r not in entrants]
            rng = random.Random(cfg.seed * 7_919 + round_no)
            extra = rng.sample(rest, min(cfg.calibration, len(rest)))
            for r in extra:
                r.details["calibration"] = True
            entrants = entrants + extra
        self._start()
        for rung, steps in enumerate(cfg.grpo_steps):
            self._baseline(steps)
            for record in entrants:
                if len(record.grpo_rungs) <= rung:
                    self._train(record, steps, tag)
            if rung + 1 < len(cfg.grpo_steps):
                keep = math.ceil(len(entrants) / cfg.eta)
                entrants = sorted(
                    entrants,
                    key=lambda r: (-r.grpo_rungs[rung].f1, -r.grpo_rungs[rung].accuracy, r.name),
                )[:keep]

    def _run(self, name: str, rewards: list[Any], steps: int) -> GRPOMetrics:
        run = GRPORun(
            self.rd.run_dir(name),
            steps,
            self.config.seed,
            self.config.grpo_backend,
            self.config.device,
        )
        return grpo_fitness(
            self.task, rewards, run, {"validation": self.validation}, library=self.library
        )

    def _start(self) -> None:
        if self.state.start is not None:
            return
        self.say("the starting policy, before GRPO")
        metrics = starting_fitness(
            self.task,
            {"validation": self.validation},
            self.rd.run_dir(START_RUN),
            self.config.device,
        )
        self.state.start = metrics
        self.rd.write_state(self.state)
        self.say(f"starting policy: F1 {metrics.f1:.3f} before GRPO")

    def _baseline(self, steps: int) -> None:
        if str(steps) in self.state.baseline:
            return
        self.say(f"GRPO with the base rewards alone to step {steps}")
        metrics = self._run(BASE_RUN, self.task.base_tools(), steps)
        self.state.baseline[str(steps)] = metrics
        self.rd.write_state(self.state)
        self.say(f"base rewards alone: F1 {metrics.f1:.3f} after {steps} steps")

    def _train(self, record: CandidateRecord, steps: int, tag: str) -> None:
        self.say(f"{tag} {record.name}: GRPO to step {steps}")
        tool = candidate_tool(record.name, self.rd.read_source(record.name))
        try:
            metrics = self._run(record.name, [*self.task.base_tools(), tool], steps)
        finally:
            tool.close()
        record.grpo_rungs.append(metrics)
        record.grpo = metrics
        self._save()
        low, high = metrics.f1_ci95
        self.say(
            f"{tag} {record.name}: F1 {metrics.f1:.3f} [{low:.3f}, {high:.3f}], accuracy "
            f"{metrics.accuracy:.3f} after {steps} steps ({metrics.seconds:.0f} s)"
        )
