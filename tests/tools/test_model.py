"""The `model` tool: a reward model directory scoring (prompt, completion) in batches."""

from __future__ import annotations

import math
import pickle
from collections.abc import Sequence
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from rewardsmith.errors import ConfigError  # noqa: E402
from rewardsmith.library.store import Library  # noqa: E402
from rewardsmith.rm.registry import model_tool_config  # noqa: E402
from rewardsmith.tools.model import ModelTool  # noqa: E402
from rewardsmith.types import Sample, ToolSpec  # noqa: E402
from rm_fixtures import make_tiny_backbone  # noqa: E402

SPEC = ToolSpec(name="rm", kind="model", needs_reference=False, provenance="user")
SAMPLES = [
    Sample(completion="The answer is 72.", prompt="How many clips did Natalia sell?"),
    Sample(completion="I like turtles.", prompt="How many clips did Natalia sell?", reference="72"),
    Sample(completion="", prompt=None),
    Sample(completion="Paris.", prompt=[{"role": "user", "content": "Capital of France?"}]),
    Sample(completion="word " * 2000, prompt="Long completions are clipped to the window."),
]


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from rewardsmith.rm.model import Windows, init_scorer

    root = tmp_path_factory.mktemp("model_tool")
    backbone = make_tiny_backbone(root / "backbone")
    dirs = {}
    for kind in ("cross", "bi"):
        scorer = init_scorer(str(backbone), kind, Windows(32, 64), seed=0, device="cpu")  # type: ignore[arg-type]
        scorer.save(root / kind)
        dirs[kind] = root / kind
    return dirs


@pytest.mark.parametrize("kind", ["cross", "bi"])
def test_one_finite_reward_per_sample_in_order(model_dirs: dict[str, Path], kind: str) -> None:
    from rewardsmith.rm.model import load_scorer

    tool = ModelTool(SPEC, path=str(model_dirs[kind]), batch_size=2, device="cpu")
    rewards = tool.score(SAMPLES)
    assert [r.status for r in rewards] == ["ok"] * len(SAMPLES)
    assert all(r.tool == "rm@1" for r in rewards)
    assert all(r.score is not None and math.isfinite(r.score) for r in rewards)
    assert all(r.components["logit"] == r.score for r in rewards)
    direct = load_scorer(model_dirs[kind], device="cpu").score_texts(
        [s.prompt_text() for s in SAMPLES], [s.completion for s in SAMPLES]
    )
    assert [r.score for r in rewards] == pytest.approx(direct, abs=1e-5)
    # The batch size changes padding, not scores.
    one_by_one = ModelTool(SPEC, path=str(model_dirs[kind]), batch_size=1, device="cpu").score(
        SAMPLES
    )
    assert [r.score for r in one_by_one] == pytest.approx([r.score for r in rewards], abs=1e-5)


def test_construction_checks_the_directory_but_loads_nothing(
    tmp_path: Path, model_dirs: dict[str, Path]
) -> None:
    with pytest.raises(ConfigError, match="no config.json"):
        ModelTool(SPEC, path=str(tmp_path))
    with pytest.raises(ConfigError, match="batch_size"):
        ModelTool(SPEC, path=str(model_dirs["cross"]), batch_size=0)
    tool = ModelTool(SPEC, path=str(model_dirs["cross"]))
    assert tool._scorer is None
    assert tool.score([]) == []


class _Broken:
    """A scorer that fails on batches containing 'boom' and returns NaN for 'nan'."""

    def score_texts(
        self, prompts: Sequence[str], completions: Sequence[str], batch_size: int
    ) -> list[float]:
        if any("boom" in c for c in completions):
            raise RuntimeError("CUDA out of memory")
        return [float("nan") if c == "nan" else 1.0 for c in completions]


def test_a_failing_batch_is_data_not_a_crash(model_dirs: dict[str, Path]) -> None:
    tool = ModelTool(SPEC, path=str(model_dirs["cross"]), batch_size=2)
    tool._scorer = _Broken()
    rewards = tool.score([Sample("ok"), Sample("boom"), Sample("nan"), Sample("fine")])
    assert [r.status for r in rewards] == ["error", "error", "error", "ok"]
    assert [r.score for r in rewards] == [0.0, 0.0, 0.0, 1.0]
    assert "out of memory" in rewards[0].reason and "nan" in rewards[2].reason


def test_pickles_without_the_model(model_dirs: dict[str, Path]) -> None:
    tool = ModelTool(SPEC, path=str(model_dirs["cross"]), device="cpu")
    before = tool.score(SAMPLES[:2])
    clone = pickle.loads(pickle.dumps(tool))
    assert clone._scorer is None
    assert [r.score for r in clone.score(SAMPLES[:2])] == pytest.approx([r.score for r in before])


def test_added_to_the_library_as_a_model_tool(tmp_path: Path, model_dirs: dict[str, Path]) -> None:
    with Library(tmp_path / "lib.db") as lib:
        stored = lib.add(SPEC, model_tool_config(model_dirs["cross"], batch_size=4, device="cpu"))
        assert stored.kind == "model" and not stored.needs_reference
        rewards = lib.get("rm").score(SAMPLES[:3])
    assert [r.status for r in rewards] == ["ok"] * 3
