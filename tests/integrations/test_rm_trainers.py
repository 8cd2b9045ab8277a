"""Reward models `rm train` exports, used the way trainers use them (issue 17, item 5).

- TRL: the exported folders as `reward_funcs` of a real `GRPOTrainer` for 2 steps on
  conversational data; TRL loads them itself (`AutoModelForSequenceClassification`, the
  folder's tokenizer and chat template) and the rewards it logs are the scores rewardsmith
  gives the same conversations.
- OpenRLHF: its reward-model loading and scoring, reproduced call for call in a process
  where `rewardsmith` cannot be imported (OpenRLHF itself needs CUDA builds of deepspeed and
  flash-attn, which do not install here): `openrlhf/models/model.py`
  (`get_llm_for_sequence_regression`, `_get_reward_model`) and `openrlhf/cli/serve_rm.py`
  (`get_tokenizer(..., "left")`, `tokenize_fn`) at OpenRLHF commit
  3c3be6234e0cb353e76bb8019947db9dfe99fca7 (2026-08-13). Only the attention implementation
  (eager, not flash_attention_2) and the device differ.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from rewardsmith.rm.data import SplitConfig  # noqa: E402
from rewardsmith.rm.formats import render  # noqa: E402
from rewardsmith.rm.model import load_scorer  # noqa: E402
from rewardsmith.rm.train import TrainConfig, train  # noqa: E402
from rm_fixtures import make_tiny_backbone, make_tiny_decoder, run_without_rewardsmith  # noqa: E402
from tiny_trl import tiny_llama, two_step_grpo_config  # noqa: E402

DOCS = [
    f"Question: {a} plus {b}?\nAnswer:\n\n<thinking>{a}+{b}={a + b}.</thinking>"
    f"<solution>{a + b}</solution>"
    for a in range(2, 12)
    for b in range(3, 9)
]
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _export(backbone: Path | str, out: Path, **kw: Any) -> Path:
    config = TrainConfig(
        backbone=str(backbone),
        split=SplitConfig(prefix_min=2, suffix_min=2, mode="boundary", suffix_side="end"),
        batch_size=4,
        negatives=1,
        warmup_steps=0,
        lr=1e-3,
        save_every=100,
        device="cpu",
        **{"max_steps": 2, **kw},
    )
    train([DOCS], out, config, progress=False)
    return out


@pytest.fixture(scope="module", params=["tiny", pytest.param("real", marks=pytest.mark.slow)])
def exported(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """A cross-encoder and a decoder RM as `rm train` exports them: on tiny random backbones
    (fast), or on the real ones (slow: MiniLM-L6 and SmolLM2-135M with LoRA, one step each)."""
    base = tmp_path_factory.mktemp("exported")
    if request.param == "tiny":
        cross = _export(make_tiny_backbone(base / "bert"), base / "cross_rm")
        decoder = _export(make_tiny_decoder(base / "llama"), base / "decoder_rm", lora_rank=4)
        return {"cross_rm": cross, "decoder_rm": decoder}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("REWARDSMITH_HOME", str(base / "home"))  # SmolLM2 is dequantized here
        cross = _export("minilm", base / "cross_rm", max_steps=1)
        decoder = _export("smollm2", base / "decoder_rm", max_steps=1, lora_rank=4)
    return {"cross_rm": cross, "decoder_rm": decoder}


class Recorder:
    """A reward function that scores 0 and keeps what TRL handed it."""

    __name__ = "recorder"

    def __init__(self) -> None:
        self.calls: list[tuple[list[Any], list[Any]]] = []

    def __call__(
        self, prompts: list[Any], completions: list[Any], **kwargs: Any
    ) -> list[float | None]:
        self.calls.append((list(prompts), list(completions)))
        return [0.0] * len(prompts)


def test_grpo_trainer_uses_both_exported_models_as_reward_funcs(
    exported: dict[str, Path], tmp_path: Path
) -> None:
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOTrainer

    policy_tok = AutoTokenizer.from_pretrained(make_tiny_decoder(tmp_path / "policy_tok"))
    policy_tok.chat_template = CHATML
    policy = tiny_llama(
        len(policy_tok),
        256,
        pad_token_id=policy_tok.pad_token_id,
        eos_token_id=policy_tok.eos_token_id,
    )
    questions = [f"Question: {a} plus {b}?\nAnswer: " for a, b in [(1, 2), (3, 4), (5, 6), (2, 2)]]
    dataset = Dataset.from_dict(
        {"prompt": [[{"role": "user", "content": q}] for q in questions]}  # conversational
    )
    recorder = Recorder()
    args = two_step_grpo_config(tmp_path / "out")
    trainer = GRPOTrainer(
        model=policy,
        reward_funcs=[str(exported["cross_rm"]), str(exported["decoder_rm"]), recorder],
        args=args,
        train_dataset=dataset,
        processing_class=policy_tok,
    )
    trainer.train()

    assert trainer.state.global_step == 2 and len(recorder.calls) == 2
    logs = [h for h in trainer.state.log_history if "rewards/recorder/mean" in h]
    assert len(logs) == 2
    for name, path in exported.items():
        scorer = load_scorer(path, device="cpu")
        for log, (prompts, completions) in zip(logs, recorder.calls, strict=True):
            texts = [c[-1]["content"] for c in completions]
            ours = scorer.score_texts(prompts, texts)  # chat prompts, as TRL passed them
            # the reward TRL computed with the exported model is rewardsmith's score
            assert log[f"rewards/{name}/mean"] == pytest.approx(sum(ours) / len(ours), abs=1e-4)


def test_trl_scoring_path_takes_long_completions(exported: dict[str, Path]) -> None:
    # GRPOTrainer._calculate_rewards renders {"messages": prompt + completion} with the reward
    # tokenizer's template and tokenizes without truncation: 20,000 characters must not crash
    # a 512-position encoder, and must score as rewardsmith scores them.
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from trl.data_utils import apply_chat_template

    prompt = [{"role": "user", "content": "Question: " + "Tom has 3 apples. " * 300}]
    completion = [{"role": "assistant", "content": "<thinking>" + "3+4=7. " * 3000 + "</thinking>"}]
    for path in exported.values():
        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1).eval()
        text = apply_chat_template({"messages": prompt + completion}, tok)["text"]
        inputs = tok(
            text=[text],
            return_tensors="pt",
            padding=True,
            padding_side="right",
            add_special_tokens=False,
        )
        assert inputs["input_ids"].shape[1] <= tok.model_max_length  # fits, untruncated
        with torch.inference_mode():
            trl_score = float(model(**inputs).logits[0, 0])
        ours = load_scorer(path, device="cpu").score_texts([prompt], [completion[0]["content"]])[0]
        assert trl_score == pytest.approx(ours, abs=1e-4)


# OpenRLHF 3c3be6234e0cb353e76bb8019947db9dfe99fca7, reproduced; the values it prints are the
# rewards its reward server (`RewardModelProxy.get_reward`) would return for QUERIES.
OPENRLHF = """
import json, sys
from typing import Optional
import torch
import torch.nn as nn
from transformers import AutoConfig, AutoModel, AutoTokenizer

MODEL, DTYPE, MAX_LEN = {model!r}, {dtype!r}, {max_len!r}
QUERIES = json.loads({queries!r})

# openrlhf/models/model.py: _get_reward_model
def _get_reward_model(base_pretrained_model, base_llm_model, value_head_prefix="score", packing_samples=False):
    class RewardModel(base_pretrained_model):
        supports_gradient_checkpointing = True

        def __init__(self, config: AutoConfig):
            super().__init__(config)
            setattr(self, self.base_model_prefix, base_llm_model(config))
            self.value_head_prefix = value_head_prefix
            setattr(self, value_head_prefix, nn.Linear(config.hidden_size, 1, bias=False))
            self.packing_samples = packing_samples
            self.normalize_reward = config.normalize_reward
            self.register_buffer("mean", torch.zeros(1), persistent=False)
            self.register_buffer("std", torch.ones(1), persistent=False)
            if hasattr(config, "mean"):
                self.mean[0] = config.mean
                self.std[0] = config.std
            self.post_init()

        def forward(self, input_ids=None, attention_mask: Optional[torch.Tensor] = None, return_output=False):
            eos_indices = attention_mask.size(1) - 1 - attention_mask.long().fliplr().argmax(dim=1, keepdim=True)
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            outputs = getattr(self, self.base_model_prefix)(
                input_ids, attention_mask=attention_mask, position_ids=position_ids
            )
            last_hidden_states = outputs["last_hidden_state"]
            values = getattr(self, self.value_head_prefix)(last_hidden_states).squeeze(-1)
            reward = values.gather(dim=1, index=eos_indices).squeeze(1)
            if not self.training and self.normalize_reward:
                reward = (reward - self.mean) / self.std
            return (reward, outputs) if return_output else reward

    return RewardModel

# openrlhf/models/model.py: get_llm_for_sequence_regression(MODEL, "reward", ...)
config = AutoConfig.from_pretrained(MODEL, trust_remote_code=True)
config.normalize_reward = False
config._attn_implementation = "eager"  # OpenRLHF's default is flash_attention_2 (CUDA)
value_head_prefix = getattr(config, "value_head_prefix", "score")
base_class = AutoModel._model_mapping[type(config)]
base_pretrained_class = base_class.__base__
cls_class = _get_reward_model(base_pretrained_class, base_class, value_head_prefix, False)
torch_dtype = {{"bf16": torch.bfloat16, "fp32": torch.float32}}[DTYPE]
model, info = cls_class.from_pretrained(
    MODEL, config=config, trust_remote_code=True, torch_dtype=torch_dtype,
    quantization_config=None, device_map=None, output_loading_info=True,
)
model.config.use_cache = False
model.eval()

# openrlhf/utils/utils.py: get_tokenizer(pretrain, model, "left")
tokenizer = AutoTokenizer.from_pretrained(MODEL, trust_remote_code=True, use_fast=True)
tokenizer.padding_side = "left"
if tokenizer.pad_token is None:
    tokenizer.pad_token = tokenizer.eos_token
    tokenizer.pad_token_id = tokenizer.eos_token_id

# openrlhf/cli/serve_rm.py: RewardModelProxy.tokenize_fn / get_reward
batch = tokenizer(QUERIES, return_tensors="pt", add_special_tokens=False, max_length=MAX_LEN,
                  padding=True, truncation=True)
with torch.no_grad():
    rewards = model(batch["input_ids"], batch["attention_mask"]).float().tolist()
print(json.dumps({{"rewards": rewards, "missing": sorted(info["missing_keys"]), "head": value_head_prefix,
                  "lengths": batch["attention_mask"].sum(1).tolist()}}))
"""


# bf16 is the same path at another dtype (18 s): in the slow run only, to keep the default
# suite near its 15 minutes.
@pytest.mark.parametrize("dtype", ["fp32", pytest.param("bf16", marks=pytest.mark.slow)])
def test_openrlhf_loads_the_decoder_reward_model(
    exported: dict[str, Path], tmp_path: Path, dtype: str
) -> None:
    path = exported["decoder_rm"]
    scorer = load_scorer(path, device="cpu")
    pairs = [
        ("Question: 3 plus 4?\nAnswer: ", "<thinking>3+4=7.</thinking><solution>7</solution>"),
        ("Question: 3 plus 4?\nAnswer: ", "<thinking>3+4=8.</thinking><solution>8</solution>"),
        ("Question: 10 plus 5?", "<solution>15</solution>"),
        # ASCII past the character budgets: clipped by the template, fits max_len untruncated
        ("Question: " + "Tom has 3 apples. " * 90, "<thinking>" + "1+1=2. " * 500 + "</thinking>"),
        # three bytes a character, a rare one (several tokens in SmolLM2's vocabulary too):
        # past max_len tokens, truncated with the tokenizer's side
        ("Question: café?", "龘" * 1200),
    ]
    queries = [render(scorer.tokenizer, p, c) for p, c in pairs]
    code = OPENRLHF.format(
        model=str(path), dtype=dtype, max_len=scorer.max_length(), queries=json.dumps(queries)
    )
    # generous: the real SmolLM2 reads 2,048-token queries on shared CPUs (a safety net only)
    got = json.loads(run_without_rewardsmith(code, tmp_path, timeout=1800).strip().splitlines()[-1])
    assert got["head"] == "score" and got["missing"] == []  # the trained head, not a fresh one
    assert got["lengths"][-2] < scorer.max_length() == got["lengths"][-1]  # left-truncated
    ours = scorer.score_texts([p for p, _ in pairs], [c for _, c in pairs])
    tolerance = 1e-4 if dtype == "fp32" else 0.05 * max(1.0, max(abs(x) for x in ours))
    assert got["rewards"] == pytest.approx(ours, abs=tolerance)


#: Statements of OPENRLHF that decide what a reward is: where the head is read (the last
#: attended token), which head, how a config's class maps to a base model.
OPENRLHF_ANCHORS = (
    "eos_indices = attention_mask.size(1) - 1 - attention_mask.long().fliplr().argmax(dim=1, "
    "keepdim=True)",
    "position_ids.masked_fill_(attention_mask == 0, 1)",
    'last_hidden_states = outputs["last_hidden_state"]',
    "values = getattr(self, self.value_head_prefix)(last_hidden_states).squeeze(-1)",
    "reward = values.gather(dim=1, index=eos_indices).squeeze(1)",
    "setattr(self, value_head_prefix, nn.Linear(config.hidden_size, 1, bias=False))",
    "base_class = AutoModel._model_mapping[type(config)]",
    "base_pretrained_class = base_class.__base__",
)


def test_reproduced_openrlhf_code_is_the_installed_openrlhf() -> None:
    # OpenRLHF cannot be imported here (flash_attn); its source can be read. If a release
    # changes how it reads a reward, the reproduction above is stale and this fails.
    import importlib.util

    spec = importlib.util.find_spec("openrlhf")  # a top-level find_spec imports nothing
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("openrlhf is not installed (make .venv/.installed adds it with --no-deps)")
    root = Path(next(iter(spec.submodule_search_locations)))
    model_py = (root / "models" / "model.py").read_text(encoding="utf-8")
    serve_py = (root / "cli" / "serve_rm.py").read_text(encoding="utf-8")
    for statement in OPENRLHF_ANCHORS:
        assert statement in model_py and statement in OPENRLHF
    assert 'getattr(config, "value_head_prefix", value_head_prefix)' in model_py
    assert "add_special_tokens=False" in serve_py and "truncation=True" in serve_py
