"""What a trained reward model folder tells its users (`rm.export`): card metadata, the exact
input format, a snippet that runs without rewardsmith and gives rewardsmith's score."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from rewardsmith.rm.data import SplitConfig
from rewardsmith.rm.export import EXAMPLE_COMPLETION, EXAMPLE_PROMPT, base_model
from rewardsmith.rm.model import load_scorer
from rewardsmith.rm.train import TrainConfig, train
from rm_fixtures import run_without_rewardsmith

DOCS = [
    f"Question: {a} plus {b}?\nAnswer:\n\n<thinking>{a}+{b}={a + b}.</thinking>"
    f"<solution>{a + b}</solution>"
    for a in range(2, 12)
    for b in range(3, 9)
]


def _train(backbone: Path, out: Path, **kw: object) -> Path:
    config = TrainConfig(
        backbone=str(backbone),
        split=SplitConfig(prefix_min=2, suffix_min=2, mode="boundary", suffix_side="end"),
        batch_size=4,
        negatives=1,
        max_steps=2,
        warmup_steps=0,
        save_every=100,
        device="cpu",
        **kw,  # type: ignore[arg-type]
    )
    train([DOCS], out, config, progress=False)
    return out


def _front_matter(card: str) -> dict[str, object]:
    head = card.split("---", 2)[1]
    data: dict[str, object] = yaml.safe_load(head)
    return data


@pytest.mark.parametrize("backbone", ["tiny_backbone", "tiny_decoder"])
def test_card_snippet_runs_without_rewardsmith_and_gives_its_score(
    backbone: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    out = _train(request.getfixturevalue(backbone), tmp_path / "rm")
    card = (out / "README.md").read_text()
    meta = _front_matter(card)
    assert meta["pipeline_tag"] == "text-classification"
    assert meta["library_name"] == "transformers" and meta["license"] == "other"
    assert "reward-model" in meta["tags"]  # type: ignore[operator]
    code = re.search(r"```python\n(.*?)```", card, re.DOTALL).group(1)  # type: ignore[union-attr]
    # no path of the machine that trained it: the card is read elsewhere (and on the hub)
    assert str(tmp_path) not in code and 'model_dir = "rm"' in code
    printed = run_without_rewardsmith(code, tmp_path)
    score = float(re.search(r"reward: (-?[\d.]+)", printed).group(1))  # type: ignore[union-attr]
    ours = load_scorer(out, device="cpu").score_texts([EXAMPLE_PROMPT], [EXAMPLE_COMPLETION])
    assert score == pytest.approx(ours[0], abs=1e-4)
    # the exact input format, in the card and in config.json where trainers look
    config = json.loads((out / "config.json").read_text())
    fmt = config["rbs_input_format"]
    assert fmt["name"] == "rbs-chat-v1" and fmt["rendered"] in card
    assert f"last {fmt['prompt_chars']} characters" in card
    tokenizer_config = json.loads((out / "tokenizer_config.json").read_text())
    assert tokenizer_config["truncation_side"] == fmt["truncation_side"]
    assert "chat_template" in tokenizer_config or (out / "chat_template.jinja").is_file()


def test_decoder_config_names_the_value_head(tiny_decoder: Path, tmp_path: Path) -> None:
    out = _train(tiny_decoder, tmp_path / "rm", lora_rank=4, lora_alpha=8)
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["LlamaForSequenceClassification"]
    assert config["value_head_prefix"] == "score" and config["pad_token_id"] == 0
    assert config["rbs_input_format"]["truncation_side"] == "left"
    # LoRA was merged: plain weights, no adapter files, no peft needed to load
    assert not list(out.glob("adapter_*"))


@pytest.mark.parametrize(
    ("backbone", "hub", "license_id"),
    [
        ("minilm", "sentence-transformers/all-MiniLM-L6-v2", "apache-2.0"),
        ("SmolLM2", "HuggingFaceTB/SmolLM2-135M-Instruct", "apache-2.0"),
        ("/nonexistent/folder", None, "other"),
    ],
)
def test_base_model_metadata(backbone: str, hub: str | None, license_id: str) -> None:
    assert base_model(backbone) == (hub, license_id)


def test_a_backbone_folder_card_gives_its_metadata(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("---\nlicense: mit\nbase_model: org/model\n---\n# x\n")
    assert base_model(str(tmp_path)) == ("org/model", "mit")
