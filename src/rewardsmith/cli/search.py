"""`rewardsmith search run|ensemble|audit|report|promote`: reward-function search.

Exit codes (scripts rely on them): 0 done; 2 bad input (a bad flag or task file, a folder
that holds another run, a candidate that cannot be promoted); 3 from `search audit` when a
reward is flagged (the audit is still written). Progress goes to stderr, one line per
step, so a run under `nohup` leaves a readable log; results go to RUNDIR.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rewardsmith.cli.common import (
    LibraryOption,
    LLMKeyOption,
    LLMModelOption,
    LLMUrlOption,
    apply_llm_flags,
)
from rewardsmith.cli.terminal import PlainConsole
from rewardsmith.errors import ConfigError, MissingDependencyError
from rewardsmith.models.loading import torch_threads

app = typer.Typer(
    help="Reward-function search: generate, check, train, rank, feed back; ensembles, audit.",
    no_args_is_help=True,
)
console = PlainConsole()
err = PlainConsole(stderr=True)

EXIT_FLAGGED = 3

RunDirArg = Annotated[Path, typer.Argument(metavar="RUNDIR", help="A search run folder.")]
Threads = Annotated[
    int | None, typer.Option(help="torch CPU threads (1 is fastest on a busy CPU).")
]


def _say(message: str) -> None:
    err.print(message, highlight=False, markup=False, soft_wrap=True)


def _ints(text: str, flag: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError as exc:
        raise ConfigError(f"{flag} expects comma-separated integers, got {text!r}") from exc
    if not values:
        raise ConfigError(f"{flag} needs at least one number")
    return values


def _require_torch() -> None:
    try:
        import torch  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError("torch transformers", "rl") from exc


@app.command("run")
def run_cmd(
    out: Annotated[Path, typer.Option("--out", "--out-dir", help="Run folder (RUNDIR).")],
    task: Annotated[
        str, typer.Option(help="testbed, testbed-multi, gsm8k or a task file (JSON/TOML).")
    ] = "testbed",
    rounds: Annotated[int, typer.Option(help="Rounds of generation.")] = 5,
    per_round: Annotated[int, typer.Option(help="Candidates per round.")] = 10,
    generator: Annotated[str, typer.Option(help="offline (evolutionary) or llm.")] = "offline",
    fidelity: Annotated[
        str,
        typer.Option(
            help="proxy (level 0), grpo (GRPO for all), auto (proxy, then GRPO for the best)."
        ),
    ] = "auto",
    grpo_steps: Annotated[
        str, typer.Option(help="GRPO budgets per rung, cumulative steps, e.g. 60,120.")
    ] = "60,120",
    eta: Annotated[int, typer.Option(help="Successive halving: keep the best 1/eta per rung.")] = 2,
    calibration: Annotated[
        int,
        typer.Option(
            help="Per round, this many candidates the proxy did not promote get GRPO too."
        ),
    ] = 0,
    seed: Annotated[int, typer.Option(help="Seed of the generator, the pool and GRPO.")] = 0,
    grpo_backend: Annotated[
        str, typer.Option(help="embedded (CPU) or trl (level 2, a GPU).")
    ] = "embedded",
    device: Annotated[str, typer.Option(help="cpu, cuda...")] = "cpu",
    resume: Annotated[bool, typer.Option(help="Continue the run in RUNDIR.")] = False,
    report: Annotated[bool, typer.Option(help="Write RUNDIR/report.md at the end.")] = True,
    threads: Threads = None,
    library: LibraryOption = None,
    llm_url: LLMUrlOption = None,
    llm_model: LLMModelOption = None,
    llm_key: LLMKeyOption = None,
) -> None:
    """Search for reward functions; writes RUNDIR (candidates/, results.jsonl, feedback/,
    report.md)."""
    _require_torch()
    from rewardsmith.search.loop import Search, SearchConfig

    apply_llm_flags(llm_url, llm_model, llm_key)  # the llm generator reads them
    torch_threads(threads)
    config = SearchConfig(
        task=task,
        rounds=rounds,
        per_round=per_round,
        generator=generator,
        fidelity=fidelity,
        grpo_steps=_ints(grpo_steps, "--grpo-steps"),
        eta=eta,
        calibration=calibration,
        seed=seed,
        grpo_backend=grpo_backend,
        device=device,
    )
    search = Search(config, out, resume=resume, library=library, progress=_say)
    try:
        records = search.run()
    finally:
        search.close()
    if report:
        from rewardsmith.search.report import write_report

        path = write_report(out)
        _say(f"report: {path}")
    admitted = [r for r in records if r.admitted]
    best = records[0] if admitted else None
    console.print(
        f"{len(records)} candidates, {len(admitted)} admitted"
        + (f"; best {best.name}" if best else ""),
        highlight=False,
    )


@app.command("ensemble")
def ensemble_cmd(
    rundir: RunDirArg,
    sizes: Annotated[str, typer.Option(help="Ensemble sizes (3-10), comma-separated.")] = "3,5,10",
    seeds: Annotated[int, typer.Option(help="Seeds the best configuration is trained with.")] = 3,
    steps: Annotated[
        int | None,
        typer.Option(help="GRPO steps per configuration (default: the run's largest budget x 2)."),
    ] = None,
    threads: Threads = None,
    library: LibraryOption = None,
) -> None:
    """Train base + top-k, diverse-k and random-k ensembles and compare them on the test set."""
    _require_torch()
    from rewardsmith.search.ensemble import run_ensembles

    torch_threads(threads)
    size_list = _ints(sizes, "--sizes")
    if any(not 1 <= k <= 10 for k in size_list):
        raise ConfigError(f"--sizes must be within 1-10, got {sizes}")
    if seeds < 1:
        raise ConfigError("--seeds must be >= 1")
    summary = run_ensembles(rundir, size_list, seeds, steps=steps, library=library, progress=_say)
    from rewardsmith.search.report import ensemble_table

    console.print(ensemble_table(summary))


@app.command("audit")
def audit_cmd(rundir: RunDirArg) -> None:
    """Hacking audit of the structural rewards; exit 3 when one is flagged."""
    from rewardsmith.search.audit import run_audit

    audit = run_audit(rundir, progress=_say)
    flagged = [r for r in audit["rewards"] if r["flags"]]
    for r in flagged:
        console.print(f"FLAGGED {r['name']}: {'; '.join(r['flags'])}", highlight=False)
    console.print(
        f"{len(audit['rewards'])} rewards audited, {len(flagged)} flagged", highlight=False
    )
    if flagged:
        raise typer.Exit(EXIT_FLAGGED)


@app.command("report")
def report_cmd(rundir: RunDirArg) -> None:
    """(Re)write RUNDIR/report.md and its PNG plots from what the run holds."""
    from rewardsmith.search.report import write_report

    console.print(str(write_report(rundir)))


@app.command("promote")
def promote_cmd(
    rundir: RunDirArg,
    name: Annotated[str, typer.Argument(help="The candidate to add to the library.")],
    as_name: Annotated[
        str | None, typer.Option("--as", help="Tool name in the library (default: NAME).")
    ] = None,
    library: LibraryOption = None,
) -> None:
    """Add an admitted candidate to the library as a reward tool with provenance `search`."""
    from rewardsmith.search.promote import promote

    spec = promote(rundir, name, library=library, as_name=as_name)
    console.print(f"added {spec.ref} (provenance search)", highlight=False)
