"""Ray scale-out: sandbox workers and reward-model replicas as actors of a real local Ray
(`ray.init(num_cpus=2)`, one per module), with the same rewards as in-process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from server_support import MIXED_TASK_MAP, mixed_samples, running_server  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from rewardsmith.cli.main import app  # noqa: E402
from rewardsmith.library.store import Library  # noqa: E402
from rewardsmith.scoring import score  # noqa: E402
from rewardsmith.server import ServerConfig  # noqa: E402
from rewardsmith.server.ray_backend import RayLibrary, RaySandbox, start_ray  # noqa: E402
from rewardsmith.types import Sample, ToolSpec  # noqa: E402

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    address = start_ray(num_cpus=2)
    yield address
    ray.shutdown()


def test_code_tool_runs_its_sandbox_on_actors_with_in_process_results(
    ray_address: str, tmp_path: Path
) -> None:
    samples = [s for s in mixed_samples() if s["task"] == "humaneval"]
    with Library(tmp_path / "lib.db") as lib:
        expected = score(samples, "code", library=lib)
    with RayLibrary(tmp_path / "lib.db") as lib:
        tool = lib.get("code")
        assert isinstance(tool.sandbox, RaySandbox)  # type: ignore[attr-defined]
        assert score(samples, "code", library=lib) == expected
        tool.close()
    assert {r.score for r in expected} == {0.0, 1.0}  # canonical pass, `return None` fails


def test_model_tool_scores_on_replicas_with_in_process_results(
    ray_address: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("transformers")
    from rewardsmith.server import ray_backend

    monkeypatch.setattr(ray_backend, "MODEL_REPLICAS", 1)  # each replica imports torch: seconds
    from rewardsmith.rm.model import Windows, init_scorer
    from rewardsmith.rm.registry import model_tool_config
    from rm_fixtures import make_tiny_backbone

    backbone = make_tiny_backbone(tmp_path / "backbone")
    scorer = init_scorer(str(backbone), "cross", Windows(32, 64), seed=0, device="cpu")  # type: ignore[arg-type]
    scorer.save(tmp_path / "rm")
    spec = ToolSpec(name="tiny_rm", kind="model", needs_reference=False, provenance="user")
    samples = [
        Sample(completion=f"answer {i} " * (i + 1), prompt=f"question {i % 3}") for i in range(9)
    ]
    with Library(tmp_path / "lib.db") as lib:
        lib.add(spec, model_tool_config(tmp_path / "rm", batch_size=4, device="cpu"))
        expected = score(samples, "tiny_rm", library=lib)
    with RayLibrary(tmp_path / "lib.db") as lib:
        assert score(samples, "tiny_rm", library=lib) == expected
    assert all(r.status == "ok" for r in expected)


def test_score_cli_with_ray_writes_the_same_file(ray_address: str, tmp_path: Path) -> None:
    data = tmp_path / "mixed.jsonl"
    data.write_text("".join(json.dumps(s) + "\n" for s in mixed_samples()))
    task_map = ",".join(f"{k}={v}" for k, v in MIXED_TASK_MAP.items())
    outputs = {}
    for name, extra in (("local", []), ("ray", ["--ray", "local"])):
        out = tmp_path / f"{name}.jsonl"
        result = CliRunner().invoke(
            app,
            [
                "score",
                str(data),
                "-o",
                str(out),
                "--task-map",
                task_map,
                "--library",
                str(tmp_path / "lib.db"),
                "-q",
                *extra,
            ],
        )
        assert result.exit_code == 0, result.output
        outputs[name] = out.read_text()
    assert outputs["ray"] == outputs["local"]
    assert len(outputs["ray"].splitlines()) == len(mixed_samples())


def test_server_with_ray_scores_code_on_actors(ray_address: str, tmp_path: Path) -> None:
    from rewardsmith.client import RewardClient

    samples = [s for s in mixed_samples() if s["task"] == "humaneval"]
    expected = score(samples, "code", library=tmp_path / "lib.db")
    config = ServerConfig(
        library=str(tmp_path / "lib.db"), tool="code", workers=1, ray_address=ray_address
    )
    with running_server(config) as url, RewardClient(url) as client:
        assert client.score(samples) == expected


@pytest.mark.slow
def test_score_with_ray_is_identical_on_a_mixed_file_of_678_samples(tmp_path: Path) -> None:
    """The acceptance check: bench/bench_ray.py builds GSM8K + MATH-500 + HumanEval samples
    from ../shared/data and compares `score` with `score --ray` byte for byte."""
    import subprocess
    import sys

    from support import REPO_ROOT, SHARED_DATA

    if not SHARED_DATA.exists():
        pytest.skip("needs ../shared/data")
    result = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "bench" / "bench_ray.py"),
            "--out",
            str(tmp_path),
            "--check-only",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "outputs identical: True" in result.stdout
