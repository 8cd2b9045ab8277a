"""How a (prompt, completion) becomes a reward model's input: one chat template for everyone.

A reward model is only as good as the agreement between the input it was trained on and the
input a trainer feeds it. TRL's `GRPOTrainer` renders a conversation with the reward
tokenizer's chat template and tokenizes that one text (`add_special_tokens=False`, no
truncation); OpenRLHF's reward server tokenizes one text with `truncation=True` at its
`max_len`, padded on the left, and reads the score at the last attended token. So a model
`rm train` writes carries its input format *as its chat template* (`ChatFormat`), and
rewardsmith renders every training pair and every scored sample through that same template
with `tokenizer.apply_chat_template`: what rewardsmith trains on, what `rm eval` and the
`model` tool score, and what TRL and OpenRLHF feed the exported model are the same text.

The template (two styles, picked from the tokenizer):

- `bert` (encoders with `[CLS]`/`[SEP]`, scored by the pooled `[CLS]` head):
  `[CLS] PROMPT [SEP] COMPLETION [SEP]`;
- `chatml` (decoders with `<|im_start|>`/`<|im_end|>`, SmolLM2, scored at the last token, the
  `LlamaForSequenceClassification` convention OpenRLHF loads):
  `<|im_start|>user\\nPROMPT<|im_end|>\\n<|im_start|>assistant\\nCOMPLETION<|im_end|>`.

PROMPT is the content of every message before the last, joined by a blank line; COMPLETION is
the last message's content. Each is stripped of the tokenizer's special-token strings (a
completion cannot forge `[SEP]` or `<|im_end|>` to fake the format), trimmed, and clipped by
*characters*: the prompt keeps its last `prompt_chars`, the completion its first or last
`completion_chars` (`completion_side`). Characters, because a template cannot count tokens and
TRL does not truncate: the two budgets add up to less than the `max_length` tokens the model
reads (512 for MiniLM, 2,048 for SmolLM2), and text of at most one token per character (any
ASCII text) then fits, so TRL reads what rewardsmith and OpenRLHF read. Text of more tokens
per character (MiniLM: Hangul syllables and some Bengali letters, up to 3; byte-level BPE: any
non-ASCII character, up to 4 bytes) can exceed it: past `max_length` tokens rewardsmith and
OpenRLHF truncate (the tokenizer's `truncation_side`: from the left for a decoder, keeping the
end where it reads its score; from the right for an encoder, keeping its `[CLS]`), while TRL
feeds the whole text (a 512-position encoder then fails).

The legacy `pair` format (older cross-encoders: `tokenizer(prompt, completion)` with token
windows, `rm.model.Windows`) has no template and is still read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from rewardsmith.errors import ConfigError

TemplateStyle = Literal["bert", "chatml"]
TEMPLATE_STYLES: tuple[TemplateStyle, ...] = ("bert", "chatml")
CompletionSide = Literal["start", "end"]
#: Format name written to configs and cards; bump when the rendering changes.
FORMAT_NAME = "rbs-chat-v1"
#: Tokens the template itself spends: `[CLS]`, `[SEP]`, `[SEP]`; or ChatML's markers
#: (`<|im_start|>user\n`, `<|im_end|>\n<|im_start|>assistant\n`, `<|im_end|>`: 9) with room.
TEMPLATE_TOKENS = {"bert": 3, "chatml": 16}
#: A decoder reads at most this many tokens: OpenRLHF's default `--data.max_len`, and CPU
#: attention is quadratic.
DECODER_MAX_TOKENS = 2048
#: Share of the character budget given to the prompt (the rest: the completion).
PROMPT_SHARE = 0.4


@dataclass(frozen=True)
class ChatFormat:
    """The rendered input of a reward model (see the module doc)."""

    style: TemplateStyle
    prompt_chars: int
    completion_chars: int
    completion_side: CompletionSide = "start"
    max_length: int = 512
    special_tokens: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.style not in TEMPLATE_STYLES:
            raise ConfigError(f"template style must be one of {TEMPLATE_STYLES}, got {self.style}")
        if self.completion_side not in ("start", "end"):
            raise ConfigError(f"completion side must be start or end, got {self.completion_side}")
        if self.prompt_chars < 1 or self.completion_chars < 1 or self.max_length < 8:
            raise ConfigError("character budgets must be >= 1 and max_length >= 8")

    @property
    def truncation_side(self) -> Literal["left", "right"]:
        """Left for a decoder (its score is at the end), right for an encoder (`[CLS]`)."""
        return "left" if self.style == "chatml" else "right"

    def template(self) -> str:
        """The Jinja chat template that renders this format (see the module doc)."""
        strip = "".join(
            f" | replace({_jinja_str(t)}, '')" for t in sorted(set(self.special_tokens))
        )
        side = (
            f"completion[:{self.completion_chars}]"
            if self.completion_side == "start"
            else f"completion[-{self.completion_chars}:]"
        )
        if self.style == "bert":
            body = "{{ '[CLS] ' ~ prompt ~ ' [SEP] ' ~ completion ~ ' [SEP]' }}"
        else:
            body = (
                "{{ '<|im_start|>user\\n' ~ prompt ~ '<|im_end|>\\n<|im_start|>assistant\\n' "
                "~ completion ~ '<|im_end|>' }}"
            )
        return (
            "{%- set ns = namespace(prompt='') -%}"
            "{%- for message in messages[:-1] -%}"
            f"{{%- set text = ((message['content'] or '') | string){strip} | trim -%}}"
            "{%- if text -%}"
            "{%- set ns.prompt = ns.prompt ~ ('\\n\\n' if ns.prompt else '') ~ text -%}"
            "{%- endif -%}"
            "{%- endfor -%}"
            f"{{%- set prompt = ns.prompt[-{self.prompt_chars}:] | trim -%}}"
            "{%- set completion = '' -%}"
            "{%- if messages -%}"
            f"{{%- set completion = ((messages[-1]['content'] or '') | string){strip} | trim -%}}"
            "{%- endif -%}"
            f"{{%- set completion = {side} | trim -%}}"
            f"{body}"
        )

    def describe(self) -> dict[str, Any]:
        """The exact input format, for `config.json`, `rbs_config.json` and the model card."""
        return {
            "name": FORMAT_NAME,
            **{k: v for k, v in asdict(self).items() if k != "special_tokens"},
            "truncation_side": self.truncation_side,
            "rendered": _example(self.style),
        }

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["special_tokens"] = list(self.special_tokens)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChatFormat:
        known = set(cls.__dataclass_fields__)
        kw = {k: v for k, v in data.items() if k in known}
        kw["special_tokens"] = tuple(kw.get("special_tokens", ()))
        return cls(**kw)


def _jinja_str(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _example(style: TemplateStyle) -> str:
    if style == "bert":
        return "[CLS] PROMPT [SEP] COMPLETION [SEP]"
    return "<|im_start|>user\nPROMPT<|im_end|>\n<|im_start|>assistant\nCOMPLETION<|im_end|>"


def template_style(tokenizer: Any) -> TemplateStyle:
    """`bert` for a tokenizer with `[CLS]`/`[SEP]`, `chatml` for one with `<|im_start|>` and
    `<|im_end|>`; anything else has no template here (a clear error, not a guess)."""
    if tokenizer.cls_token == "[CLS]" and tokenizer.sep_token == "[SEP]":
        return "bert"
    vocab = tokenizer.get_vocab()
    if "<|im_start|>" in vocab and "<|im_end|>" in vocab:
        return "chatml"
    raise ConfigError(
        "no chat format for this tokenizer: it needs [CLS]/[SEP] (BERT-style encoders) or "
        "<|im_start|>/<|im_end|> (ChatML decoders such as SmolLM2); use --input-format pair"
    )


def default_format(
    tokenizer: Any,
    positions: int,
    completion_side: CompletionSide = "start",
    prompt_chars: int | None = None,
    completion_chars: int | None = None,
) -> ChatFormat:
    """The format `rm train` gives a backbone with this tokenizer and `positions` positions.

    It reads at most `max_length` tokens (an encoder's positions, at most 512; a decoder's,
    at most `DECODER_MAX_TOKENS`), and its two character budgets add up to that minus what
    the template spends (`PROMPT_SHARE` for the prompt): text of at most one token per
    character (any ASCII text, for WordPiece and byte-level BPE alike) then fits untruncated,
    so TRL, which does not truncate, reads what rewardsmith and OpenRLHF read.
    """
    style = template_style(tokenizer)
    specials = tuple(t for t in tokenizer.all_special_tokens if t)
    max_length = min(positions, 512 if style == "bert" else DECODER_MAX_TOKENS)
    budget = max_length - TEMPLATE_TOKENS[style]
    p = prompt_chars or int(budget * PROMPT_SHARE)
    c = completion_chars or budget - p
    if p + c > budget:
        raise ConfigError(
            f"prompt + completion characters ({p} + {c}) exceed the {budget} that fit "
            f"{max_length} tokens untruncated"
        )
    return ChatFormat(style, p, c, completion_side, max_length, specials)


def pad_token_for(tokenizer: Any, style: TemplateStyle) -> str:
    """The pad token a scorer of `style` needs: a decoder reads its score at the rightmost
    token that is not padding (transformers) or not masked (OpenRLHF); both agree only when the
    pad token never ends a rendered text, so ChatML's `<|im_end|>` cannot be the pad."""
    if style == "bert":
        return str(tokenizer.pad_token)
    for candidate in ("<|endoftext|>", tokenizer.unk_token, tokenizer.pad_token):
        if candidate and candidate != "<|im_end|>" and candidate in tokenizer.get_vocab():
            return str(candidate)
    raise ConfigError("this tokenizer has no pad token other than <|im_end|>")


def install(tokenizer: Any, fmt: ChatFormat) -> Any:
    """Give `tokenizer` the format: chat template, pad token, truncation side, max length."""
    tokenizer.chat_template = fmt.template()
    tokenizer.pad_token = pad_token_for(tokenizer, fmt.style)
    tokenizer.truncation_side = fmt.truncation_side
    tokenizer.padding_side = "right"
    tokenizer.model_max_length = fmt.max_length
    # transformers saves `init_kwargs`, not the attributes set after loading
    tokenizer.init_kwargs.update(
        truncation_side=fmt.truncation_side, padding_side="right", model_max_length=fmt.max_length
    )
    return tokenizer


def messages_for(prompt: str | Sequence[Mapping[str, Any]] | None, completion: str) -> list[Any]:
    """The conversation a (prompt, completion) is: chat messages stay messages, a plain prompt
    is one user turn; the completion is the final assistant turn."""
    if prompt is None or isinstance(prompt, str):
        head: list[Any] = [{"role": "user", "content": prompt or ""}]
    else:
        head = [dict(m) for m in prompt]
    return [*head, {"role": "assistant", "content": completion}]


def render(
    tokenizer: Any, prompt: str | Sequence[Mapping[str, Any]] | None, completion: str
) -> str:
    """The text the model reads for one (prompt, completion): its chat template applied."""
    text = tokenizer.apply_chat_template(messages_for(prompt, completion), tokenize=False)
    return str(text)
