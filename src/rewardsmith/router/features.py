"""What the router sees of a sample besides its embedding: the reference's format, prompt
and response features, and the *task signature* under which decisions are cached.

Pure Python, no heavy imports: everything here runs on every sample, so each check is a
bounded regex or a prefix/suffix scan (texts are clipped first, see `MAX_FEATURE_CHARS`).

Reference formats (`RefFormat`, defined in `rewardsmith.types`; a tool states the one it
reads as `ToolSpec.ref_format`, the same key): `none`, `number`, `latex`, `choice` (an
option letter, in the forms the choice tool reads), `choice_index` (a number or roman
numeral among the options the prompt lists: no built-in tool reads it), `unit_tests`,
`json_entry` (a reasoning-gym dataset entry its scorer can read), `json` (any other JSON:
`{"answer": "Paris"}` is data, not a dataset entry) and `free_text`. `sample_format` reads
the prompt too (an index is an index only among listed options); `reference_format` reads
the reference alone.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

from rewardsmith.router.content import rg_entry_readable
from rewardsmith.router.options import Options, label_in_options, parse_options, reference_label
from rewardsmith.types import REF_FORMATS, RefFormat, Sample, ToolSpec

# Regexes run on clipped text: a megabyte prompt must not cost seconds per sample. Each one is
# also linear in the text it reads (possessive `*+` wherever the next token cannot start with
# what the run matched, no two unbounded runs over the same characters), so a crafted prompt
# or completion costs no more than an ordinary one of its length (tests/test_linear_time.py).
MAX_FEATURE_CHARS = 4_000
# The text the embedding model sees: MiniLM reads ~64 word pieces here (see embedded.py), so
# the head carries the task and the tail the format instruction ("answer in <solution>...").
EMBED_HEAD_CHARS = 300
EMBED_TAIL_CHARS = 160
# A short answer made of these characters is math (LaTeX-ish) rather than prose.
_MATHY = re.compile(r"^[\s\d.,;:+\-*/^_=()\[\]{}<>|!%$\\a-zA-Z]*$")
_NUMBER = re.compile(r"^\s*+[-+]?\$?\s*+(\d{1,3}(,\d{3})+|\d++)(\.\d++)?\s*+%?\s*+\.?$")
_GSM8K_FINAL = re.compile(r"####\s*+([-+]?\$?[\d,]++(\.\d++)?)\s*+$")
# Shapes that hold digits but are no quantity: the math tools would read "2019-10-23" as
# arithmetic and "9:30" as a ratio. Such a reference is free text (issue 22: never guess).
# Used with `fullmatch` on short references; the lookbehind starts a match only where a run
# of letters and digits starts, so a `search` never rescans a digit run from each digit.
_NOT_A_QUANTITY = re.compile(
    r"(?<![0-9A-Za-z])(?:"
    r"\d{4}-\d{1,2}-\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}"  # 10/23/2019, 23.10.2019
    r"|\d{1,2}:\d{2}(?::\d{2})?(?:[ \t]?[AaPp]\.?[Mm]\.?)?"  # 9:30, 14:05:00, 9:30 pm
    r"|\d+(?:\.\d+)?[ \t]?(?:-|–|—|to)[ \t]?\d+(?:\.\d+)?"  # ranges: 3-5, 10 to 20
    r"|v?\d+\.\d+\.\d+(?:[-.][0-9A-Za-z.]+)?"  # versions: 1.2.3
    r"|[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"  # UUIDs
    r"|[A-Za-z]{2,}[-_]?\d+[A-Za-z0-9_-]*|\d+[-_][A-Za-z]{2,}[A-Za-z0-9_-]*"  # AB-123, ID_7
    r")",
)
# The reference forms the choice tool reads (tools/choice.py): "B", "(b)", "B.", "B) text".
# Used with `fullmatch`; `\A` keeps a `search` from rescanning a run of spaces from each one.
_CHOICE = re.compile(
    r"\A(?:\s*+[\(\[]?\s*+[A-J]\s*+[\)\]]?\s*+[.:]?\s*+"
    r"|\s*+(?:[\(\[]\s*+[A-J]\s*+[\)\]]|[A-J]\s*+[\)\].:])\s.*)",
    re.IGNORECASE | re.DOTALL,
)
_LATEX_CMD = re.compile(r"\\[a-zA-Z]+|\^|_\{|\$")
_UNIT_TESTS = re.compile(
    r"^[^\S\n]*+assert\b|def\s++check\s*+\(|def\s++test_\w*+\s*+\(|import\s++unittest"
    r"|\bassert\s++\w++\(",
    re.MULTILINE,
)
# JSON references that carry unit tests (HumanEval, MBPP, stdin/stdout cases).
_TEST_KEYS = frozenset({"test", "test_list", "entry_point", "inputs", "outputs"})
# Horizontal space only after the line start: `\s*` would rescan a run of blank lines from
# each of its newlines.
_DIALOGUE = re.compile(r"(?:^|\n)[^\S\n]*+(?:Human|User|Assistant|AI)[^\S\n]*+:", re.IGNORECASE)
_TAG = re.compile(r"</?([a-zA-Z_][\w-]{0,20})>")
# Markers a tool's description can name and a prompt/completion can contain; a shared
# marker is evidence for the tool ("\boxed{}" for math, "####" for GSM8K, <solution> tags).
_MARKERS: dict[str, re.Pattern[str]] = {
    "boxed": re.compile(r"\\boxed"),
    "hashes": re.compile(r"####"),
    "answer_tag": re.compile(r"<answer>"),
    "choice_paren": re.compile(r"\([A-D]\)"),
    "code_block": re.compile(r"```|\bdef\s++\w++\s*+\("),
    # Inline math ($x^2$, $3339$; not "$5 and $6" prices), LaTeX commands, or the word.
    "latex": re.compile(
        r"\$[^$\s][^$\n]{0,60}?(?<=[^$\s])\$|\$\d\$|\\(frac|dfrac|sqrt|cdot|times|pi|sum|"
        r"int|left|begin|mathbf|binom|dbinom|angle|circ|pmod|equiv|le|ge|neq|infty)\b|\bLaTeX\b"
    ),
    # "translate", "übersetze", "traduce", or a "German: ... English:" pair of lines.
    "translate": re.compile(
        r"\btranslat|[Üü]bersetz|\btradu[ci]|(?:^|\n)[^\S\n]*+(?:English|German|French|Spanish|"
        r"Italian|Portuguese|Russian|Chinese|Japanese|Czech|Deutsch|Englisch)[^\S\n]*+"
        r"(?:\(\w++\))?[^\S\n]*+:",
        re.IGNORECASE,
    ),
}


def _clip(text: str) -> str:
    if len(text) <= MAX_FEATURE_CHARS:
        return text
    half = MAX_FEATURE_CHARS // 2
    return text[:half] + "\n" + text[-half:]


def reference_format(reference: str | None) -> RefFormat:
    """Classify a reference alone: none, number, LaTeX, choice letter, unit tests, a
    reasoning-gym entry, other JSON, free text. GSM8K's worked solutions (ending in `#### N`)
    count as numbers; dates, times, ranges, versions and identifiers (`_NOT_A_QUANTITY`)
    are free text, never numbers or LaTeX."""
    if reference is None or not reference.strip():
        return "none"
    ref = _clip(reference.strip())
    if ref[0] in "{[" and ref[-1] in "}]":
        try:
            data = json.loads(reference)
        except ValueError:
            data = None
        if isinstance(data, Mapping) and _TEST_KEYS & set(data):
            return "unit_tests"
        if isinstance(data, Mapping):
            return "json_entry" if rg_entry_readable(reference.strip()) else "json"
        if isinstance(data, list) and not all(isinstance(x, int | float) for x in data):
            return "json"
    if _UNIT_TESTS.search(ref):
        return "unit_tests"
    if len(ref) <= 200 and _CHOICE.fullmatch(ref):
        return "choice"
    if len(ref) <= 80 and _NOT_A_QUANTITY.fullmatch(ref):
        return "free_text"
    if _NUMBER.match(ref) or _GSM8K_FINAL.search(ref):
        return "number"
    if len(ref) <= 80 and _MATHY.match(ref) and (_LATEX_CMD.search(ref) or _mostly_math(ref)):
        return "latex"
    return "free_text"


def _mostly_math(text: str) -> bool:
    """`3, 5, 7`, `(2,-1)`, `x+1`, `1/2`: digits and operators, at most one short word."""
    words = re.findall(r"[a-zA-Z]{2,}", text)
    return any(c.isdigit() for c in text) and len(words) <= 1


# A prompt that asks for its answer in an order ("Sort ... in descending order", "reverse
# this list", "arrange ... from smallest"): a list answer to it is a sequence, not a set.
_ASKS_FOR_ORDER = re.compile(
    r"\b(?:sort|sorted|ascending|descending|reverse|reversed|arrange|rearrange"
    r"|(?:increasing|decreasing|alphabetical|numerical|reverse|same|given) order|in order"
    r"|from (?:smallest|largest|least|greatest|lowest|highest|first|last))\b",
    re.IGNORECASE,
)
# A bare list of two or more items ("61, 50, 3, 2"): no brackets, no LaTeX. Used with
# `fullmatch`; `\A` keeps a `search` from rescanning a comma-free run from each character.
_BARE_LIST = re.compile(r"\A[^,\[\](){}\\$]++(?:,[^,\[\](){}\\$]++)++")


def asks_for_order(prompt: str, reference: str | None) -> bool:
    """Whether the reference is a bare list the prompt wants in a given order. math-verify
    compares such a list as a set (`2, 3, 50, 61` = `61, 50, 3, 2`), which would pay any
    order, the question's own unsorted list included; the router must not send it there."""
    ref = (reference or "").strip()
    return (
        len(ref) <= 200
        and _BARE_LIST.fullmatch(ref) is not None
        and _ASKS_FOR_ORDER.search(prompt) is not None
    )


def sample_format(reference: str | None, options: Options | None, prompt: str = "") -> RefFormat:
    """The reference's format given the prompt: a number or roman numeral that names one of
    the listed (non-letter) options is an option index, not a value; a bare list the prompt
    asks for in an order is free text, not a set of values (`asks_for_order`)."""
    fmt = reference_format(reference)
    if fmt == "latex" and asks_for_order(prompt, reference):
        return "free_text"
    if options is None or fmt not in ("number", "free_text", "choice"):
        return fmt
    label = reference_label(reference)
    if label is None or not options.names_index(label):
        return fmt
    if fmt == "choice" and options.names_letter(label):
        return fmt  # a letter of a lettered list stays a letter, whatever else is numbered
    return "choice_index"


# How well a tool expecting format T (rows) can grade a sample whose reference has format S
# (columns). math-verify reads plain numbers too; a reference-free tool can grade anything
# but is a weaker fit when the sample brings a reference it would ignore.
_COMPAT: dict[RefFormat, dict[RefFormat, float]] = {
    "latex": {"latex": 1.0, "number": 0.9},
    "number": {"number": 1.0},
    "choice": {"choice": 1.0},
    "choice_index": {"choice_index": 1.0},
    "unit_tests": {"unit_tests": 1.0},
    "json_entry": {"json_entry": 1.0},
    "json": {"json": 1.0, "json_entry": 0.5},
    "free_text": {"free_text": 1.0},
    "none": {f: (1.0 if f == "none" else 0.3) for f in REF_FORMATS},
}


def compatibility(tool_format: RefFormat, sample_format: RefFormat) -> float:
    """0..1: can a tool expecting `tool_format` grade a reference of `sample_format`?"""
    return _COMPAT.get(tool_format, {}).get(sample_format, 0.0)


def can_grade(tool_format: RefFormat, tool_markers: frozenset[str], f: SampleFeatures) -> float:
    """Format compatibility, except that a reference-free format check is a candidate for a
    sample *with* a reference only when the prompt names all its markers (asks for its
    <thinking>/<solution> tags): otherwise it would grade the format and ignore the answer."""
    compat = compatibility(tool_format, f.ref_format)
    if tool_format == "none" and f.ref_format != "none":
        return compat if tool_markers and tool_markers <= f.prompt_markers else 0.0
    return compat


def markers(text: str) -> frozenset[str]:
    """Named markers (`boxed`, `hashes`, `answer_tag`, ...) and `tag:NAME` for XML-ish tags."""
    text = _clip(text)
    found = {name for name, rx in _MARKERS.items() if rx.search(text)}
    found.update(f"tag:{m.lower()}" for m in _TAG.findall(text))
    return frozenset(found)


@dataclass(frozen=True)
class SampleFeatures:
    """Everything the router reads from one sample, computed once."""

    ref_format: RefFormat
    text: str  # what the embedding model reads
    empty_prompt: bool
    chat: bool  # the prompt came as chat messages
    dialogue: bool  # a multi-turn conversation (chat messages or a Human:/Assistant: log)
    non_latin: float  # share of letters outside the Latin script (MiniLM reads English)
    options: bool  # the prompt lists options: (A)/(B)..., a)/b)..., 1./2./..., (i)/(ii)...
    prompt_markers: frozenset[str]
    completion_markers: frozenset[str]
    ref_words: int = 0
    option_letters: bool = False  # the listed options are lettered (what the choice tool reads)
    reference_is_option: bool = False  # the reference names one of the listed options

    @property
    def key(self) -> tuple[object, ...]:
        """The non-embedding part of a task signature."""
        return (
            self.ref_format,
            self.empty_prompt,
            self.dialogue,
            self.non_latin > NON_LATIN_LIMIT,
            self.options,
        )


# Above this share of non-Latin letters the English-only embedding is unreliable.
NON_LATIN_LIMIT = 0.3


def _message_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, Mapping)]
        return "".join(p for p in parts if isinstance(p, str))
    return "" if content is None else str(content)


def prompt_parts(sample: Sample) -> tuple[str, bool, int]:
    """(text to read, came as chat, number of user turns)."""
    prompt = sample.prompt
    if prompt is None:
        return "", False, 0
    if isinstance(prompt, str):
        return prompt, False, 1
    messages = [m for m in prompt if isinstance(m, Mapping)]
    users = [m for m in messages if m.get("role", "user") == "user"]
    assistants = [m for m in messages if m.get("role") == "assistant"]
    last_user = _message_text(users[-1].get("content")) if users else ""
    turns = len(users) + len(assistants)
    return last_user, True, turns


def non_latin_share(text: str) -> float:
    """Share of alphabetic characters that are not Latin script (CJK, Cyrillic, Arabic...)."""
    letters = [c for c in text[:MAX_FEATURE_CHARS] if c.isalpha()]
    if not letters:
        return 0.0
    other = sum(1 for c in letters if not unicodedata.name(c, "").startswith("LATIN"))
    return other / len(letters)


def embed_text(text: str) -> str:
    """Head and tail of a prompt: the task is stated first, the answer format last."""
    text = " ".join(text.split())
    if len(text) <= EMBED_HEAD_CHARS + EMBED_TAIL_CHARS:
        return text
    return text[:EMBED_HEAD_CHARS] + " ... " + text[-EMBED_TAIL_CHARS:]


def sample_ref_format(sample: Sample) -> RefFormat:
    """The sample's reference format exactly as `sample_features` reads it (the prompt's
    listed options decide whether a number names an option): what synthesis stores as a new
    tool's `ToolSpec.ref_format`, so the router sends the same samples back to it."""
    text, _, _ = prompt_parts(sample)
    clipped = _clip(text)
    return sample_format(sample.reference, parse_options(clipped), clipped)


def sample_features(sample: Sample) -> SampleFeatures:
    """Compute the router's features for one sample."""
    text, chat, turns = prompt_parts(sample)
    clipped = _clip(text)
    dialogue = turns > 1 or len(_DIALOGUE.findall(clipped)) >= 2
    options = parse_options(clipped)
    label = reference_label(sample.reference)
    return SampleFeatures(
        ref_format=sample_format(sample.reference, options, clipped),
        text=embed_text(clipped),
        empty_prompt=not text.strip(),
        chat=chat,
        dialogue=dialogue,
        non_latin=non_latin_share(clipped),
        options=options is not None,
        option_letters=options is not None and options.letters,
        reference_is_option=options is not None
        and label is not None
        and label_in_options(label, options),
        prompt_markers=markers(clipped),
        completion_markers=markers(sample.completion[-MAX_FEATURE_CHARS:]),
        ref_words=len((sample.reference or "")[:MAX_FEATURE_CHARS].split()),
    )


def spec_markers(spec: ToolSpec) -> frozenset[str]:
    """Markers a tool's description names (its evidence in prompts and completions)."""
    return markers(spec.description)
