"""What a trained reward model folder tells its users: the model card and the evaluation file.

`rm train` writes `README.md`, a Hugging Face model card: metadata (`base_model`, `license`,
`pipeline_tag`, `library_name`, `tags`), the exact input format, a Python snippet that scores
one conversation with plain transformers (tested by running it), how TRL and OpenRLHF load
the model, and the training record. `rm eval` writes its results to `eval_results.json`
beside it, never into the card.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rewardsmith.files import atomic_write
from rewardsmith.rm.backbones import MINILM_ALIASES, SMOLLM2_ALIASES

EVAL_RESULTS = "eval_results.json"
CARD = "README.md"
#: Hub names and licenses of the bundled backbones (what `base_model` and `license` say).
KNOWN_BASES = {
    "minilm": ("sentence-transformers/all-MiniLM-L6-v2", "apache-2.0"),
    "smollm2": ("HuggingFaceTB/SmolLM2-135M-Instruct", "apache-2.0"),
}
#: An example the card's snippet scores (a testbed problem and its worked solution).
EXAMPLE_PROMPT = (
    "Question: Mia has 14 pens. She buys 3 boxes with 6 pens each. "
    "How many pens does Mia have now?\nAnswer: "
)
EXAMPLE_COMPLETION = "<thinking>3*6=18. 14+18=32.</thinking><solution>32</solution>"


def base_model(backbone: str) -> tuple[str | None, str]:
    """(hub name, license) of a backbone alias or folder; a folder's own card may say them."""
    name = backbone.lower()
    if name in MINILM_ALIASES:
        return KNOWN_BASES["minilm"]
    if name in SMOLLM2_ALIASES:
        return KNOWN_BASES["smollm2"]
    meta = _front_matter(Path(backbone).expanduser() / CARD)
    return meta.get("base_model"), meta.get("license", "other")


def _front_matter(card: Path) -> dict[str, str]:
    """`key: value` lines of a card's YAML header (flat string values only)."""
    if not card.is_file():
        return {}
    lines = card.read_text(encoding="utf-8", errors="replace").splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    out: dict[str, str] = {}
    for line in lines[1:]:
        if line.strip() == "---":
            break
        key, sep, value = line.partition(":")
        if sep and value.strip() and not line.startswith(" "):
            out[key.strip()] = value.strip().strip("'\"")
    return out


def snippet(model_dir: Path, fmt: dict[str, Any] | None) -> str:
    """Python that scores the example with plain transformers (no rewardsmith import)."""
    conv = json.dumps(
        [
            {"role": "user", "content": EXAMPLE_PROMPT},
            {"role": "assistant", "content": EXAMPLE_COMPLETION},
        ],
        indent=4,
    )
    if fmt is None:  # legacy pair format: a sequence pair, no template
        encode = (
            f"inputs = tokenizer({EXAMPLE_PROMPT!r}, {EXAMPLE_COMPLETION!r}, "
            'truncation=True, return_tensors="pt")'
        )
    else:
        encode = (
            "text = tokenizer.apply_chat_template(messages, tokenize=False)\n"
            "inputs = tokenizer(text, add_special_tokens=False, truncation=True, "
            'return_tensors="pt")'
        )
    return "\n".join(
        [
            "import torch",
            "from transformers import AutoModelForSequenceClassification, AutoTokenizer",
            "",
            # The folder's name, not its absolute path: a card is read on other machines
            # and on the hub; run the snippet beside the folder.
            f'model_dir = "{model_dir.resolve().name}"  # this folder (run from its parent), or '
            "its hub name after upload",
            "tokenizer = AutoTokenizer.from_pretrained(model_dir)",
            "model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()",
            f"messages = {conv}",
            encode,
            "with torch.no_grad():",
            "    score = model(**inputs).logits[0, 0].item()",
            'print(f"reward: {score:.4f}")',
        ]
    )


def _format_section(fmt: dict[str, Any] | None) -> list[str]:
    if fmt is None:
        return [
            "Legacy pair format: `tokenizer(prompt, completion)` as a sequence pair, the prompt",
            "clipped to its last tokens and the completion to its first (or last) ones.",
            "",
        ]
    decoder = fmt["style"] == "chatml"
    side = "first" if fmt["completion_side"] == "start" else "last"
    return [
        f"`{fmt['name']}`: one text, rendered by this tokenizer's chat template "
        "(`tokenizer.apply_chat_template(messages, tokenize=False)`):",
        "",
        "```",
        fmt["rendered"],
        "```",
        "",
        "- PROMPT: the content of every message before the last, joined by a blank line,",
        f"  trimmed, its last {fmt['prompt_chars']} characters;",
        f"- COMPLETION: the last message's content, trimmed, its {side} "
        f"{fmt['completion_chars']} characters;",
        "- special-token strings inside either are removed (a completion cannot forge the format);",
        "- tokenize with `add_special_tokens=False`; inputs past "
        f"{fmt['max_length']} tokens are truncated from the **{fmt['truncation_side']}** "
        "(`truncation=True`; the tokenizer's `truncation_side`);",
        "- the score is "
        + (
            "the `score` head at the last token (`LlamaForSequenceClassification`), the value "
            "head OpenRLHF reads (`value_head_prefix: score` in config.json); the pad token is "
            "never the final `<|im_end|>`, so transformers' last-non-pad rule and OpenRLHF's "
            "last-attended rule read the same token."
            if decoder
            else "the pooled `[CLS]` output through the classifier (BERT-style)."
        ),
        "",
        "The same description is in `config.json` (`rbs_input_format`) and `rbs_config.json`.",
        "",
    ]


def _trainers_section(fmt: dict[str, Any] | None) -> list[str]:
    lines = [
        "- **TRL** (`GRPOTrainer(reward_funcs=[model_dir])`, or the loaded model with this",
        "  tokenizer in `reward_processing_classes`): conversational data goes through the",
        "  chat template above, exactly the training input. TRL does not truncate reward",
        "  inputs and feeds *standard* (non-conversational) rows as the raw concatenation",
        "  prompt + completion with no template: use conversational data.",
    ]
    if fmt is not None and fmt["style"] == "bert":
        lines += [
            "  The character budgets keep TRL's untruncated input within 512 positions for",
            "  any text of at most one token per character (all but Hangul syllables and a",
            "  few Bengali characters, up to 3 tokens each).",
        ]
    if fmt is not None and fmt["style"] == "chatml":
        lines += [
            "- **OpenRLHF** (`get_llm_for_sequence_regression(model_dir, 'reward')`, the",
            "  reward server `openrlhf.cli.serve_rm`): loads the base model and the `score` head",
            "  and reads the last attended token. The in-process reward model of OpenRLHF's PPO",
            "  reads the *actor's* token ids, so it must share the actor's tokenizer (SmolLM2",
            "  family); the reward server tokenizes with this tokenizer (left truncation).",
        ]
    return [*lines, ""]


def write_model_card(
    out: Path,
    *,
    backbone: str,
    encoder: str,
    fmt: dict[str, Any] | None,
    training: dict[str, Any],
    result: dict[str, Any],
    corpus: Sequence[str],
    field: str,
) -> Path:
    """`OUT/README.md` (see the module doc); returns its path."""
    hub_name, license_id = base_model(backbone)
    header = ["---", f"license: {license_id}"]
    if hub_name:
        header.append(f"base_model: {hub_name}")
    header += [
        "pipeline_tag: text-classification",
        "library_name: transformers",
        "tags: [reward-model, rbs, rewardsmith]",
        "---",
    ]
    runnable = encoder == "cross"
    use = (
        ["```python", snippet(out, fmt), "```", ""]
        if runnable
        else [
            "A bi-encoder is the backbone plus `bi_head.safetensors`: load it with",
            "`rewardsmith.rm.model.load_scorer(model_dir)`, not as a sequence classifier.",
            "",
        ]
    )
    final = result.get("final", {})
    lines = [
        *header,
        f"# RBS reward model ({encoder}-encoder on {backbone})",
        "",
        "Trained by `rewardsmith rm train` without human labels or correctness labels: each",
        "document is split into a prefix and a suffix; the true suffix is chosen, the other",
        "suffixes of the batch are rejected; in-batch Bradley-Terry loss plus score centering",
        "c * E[s^2]. A higher score means the completion reads more like the true continuation",
        "of the prompt.",
        "",
        "## Use",
        "",
        *use,
        "## Input format",
        "",
        *_format_section(fmt),
        "## In trainers",
        "",
        *_trainers_section(fmt),
        "## Data",
        "",
        *[f"- `{s}`" for s in (list(corpus) or ["(in-memory dataset)"])],
        f"- field(s): `{field}`",
        "",
        "## Training",
        "",
        "```json",
        json.dumps(training, indent=2),
        "```",
        "",
        f"- steps {result.get('steps')} ({result.get('stopped')}), pairs {result.get('pairs')}, "
        f"comparisons {result.get('comparisons')}, backbone tokens {result.get('tokens')}, "
        f"{float(result.get('seconds', 0)):.0f} s",
        f"- last logged step: {json.dumps({k: round(v, 4) for k, v in final.items()})}",
        "",
        "## Evaluation",
        "",
        f"`rewardsmith rm eval` writes its results to `{EVAL_RESULTS}` in this folder.",
        "",
    ]
    path = out / CARD
    return atomic_write(path, "\n".join(lines))


def write_eval_results(model_dir: Path, payload: dict[str, Any]) -> Path:
    """`MODEL/eval_results.json`: the latest `rm eval` payload with the time it was made."""
    path = model_dir / EVAL_RESULTS
    data = {"evaluated_at": datetime.now(UTC).isoformat(timespec="seconds"), **payload}
    return atomic_write(path, json.dumps(data, indent=2) + "\n")
