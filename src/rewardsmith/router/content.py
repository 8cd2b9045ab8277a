"""What a sample's *content* says about its task, where surface markers (`\\boxed`,
`####`, "Translate") are absent or misleading.

- `parse_options(prompt)`: the options a prompt lists, in any of the usual label styles
  (`A.`/`(A)`/`A)`, `(a)`/`a)`, `(1)`/`1.`, `(i)`/`ii)`), and `reference_label(reference)`:
  the label a reference names. A letter among the listed options is a multiple-choice
  answer; a number or roman numeral among them is an option *index*, which the built-in
  choice tool (letters only) cannot read.
- `detect_language(text)` and `language_evidence(prompt, reference)`: is the reference a
  text in another language than the prompt's passage, of about the passage's length (a
  translation), or in the prompt's own language (an answer, a summary, a plan...)? A
  keyword cannot fake this: "translate a business idea into a plan" has no passage in
  another language.
- `rg_entry_readable(reference)`: does reasoning-gym's own reference parser accept it (an
  entry with `metadata.source_dataset` naming a registered dataset and a string answer)?
  `{"answer": "Paris"}` is JSON but no dataset entry.
- `math_notation(text)`: how much of a prompt is mathematics (equations, exponents,
  functions, LaTeX, symbols; integers, primes, polynomials, triangles) rather than an
  everyday narrative with quantities.
- `word_problem(text)`: how much of a prompt is an everyday story with quantities (money,
  time, things bought and shared, people's names): the grade-school word problem.
- `completion_fit(fmt, completion, ...)`: does a completion answer the way the tools of a
  reference format expect (a final number, a math expression, an option letter, text in the
  reference's language)? It is averaged over a prompt's completions (see router.py), so one
  completion cannot swing a decision.

Language identification is py3langid (a maintained fork of langid.py, Lui & Baldwin 2012:
a naive Bayes model over byte n-grams, 97 languages, its model ships inside the 4.6 MB
wheel, no download): ~0.1-0.3 ms per sentence, 98.6% right on WMT23 de/en lines and 93% on
their first five words. lingua (96 MB wheel) and fasttext-langdetect (model download) were
too large or not offline. Its model is inflated once and kept in `langid_model`'s cache.
The detector is restricted to `LANGUAGES`, and pairs it confuses
on short text count as one language (`_LANGUAGE_GROUP`), so a Spanish answer to a Spanish
question is never read as a translation into Galician.

Pure functions on clipped text; results of the costly ones are cached by text.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rewardsmith.router.langid_model import load_identifier

# Characters of a prompt or reference the language checks read: a sentence or two decides
# the language, and the detector's cost grows with the text.
LANGUAGE_CHARS = 1_500
# Below this many letters a text's language is not decided (py3langid guesses on "Paris").
MIN_LANGUAGE_LETTERS = 15
# The probability given to a text read as English by its function words.
MIN_LANGUAGE_PROB = 0.6
# A prompt segment counts as a passage in a language other than English at this detector
# probability (real sentences get 0.95-1.0; ciphertext and scrambled words much less).
PASSAGE_PROB = 0.8
# Share of function words from which a prompt is English without further checks (English
# prose has ~40%; German or French text with English loanwords well under 10%).
ENGLISH_SHARE = 0.15
# A reference whose language is undecided is "not in language L" under this probability.
NOT_LANGUAGE = 0.02
# A translation's length is about its source's: within these ratios (in `text_units`)
# the length fits fully, and the fit falls to 0 at half/double of them.
TRANSLATION_RATIO = (0.45, 2.4)
# The languages the detector chooses among (ISO 639-1): the widely used ones, so that a
# short English text is not taken for Latin or Interlingua.
LANGUAGES: tuple[str, ...] = (
    "en", "de", "fr", "es", "it", "pt", "nl", "pl", "cs", "sk", "ru", "uk", "bg", "sr",
    "hr", "sl", "ro", "hu", "fi", "sv", "da", "no", "et", "lv", "lt", "el", "tr", "ar",
    "he", "fa", "hi", "bn", "ur", "ta", "th", "vi", "id", "ms", "zh", "ja", "ko", "ca",
)  # fmt: skip
# Languages py3langid mixes up on a sentence: a pair within a group is "the same language"
# here (translating between them is rare; misreading a same-language answer is not).
_LANGUAGE_GROUP: Mapping[str, str] = {
    "fa": "ar", "ur": "ar", "sk": "cs", "sr": "hr", "sl": "hr", "no": "da", "sv": "da",
    "ms": "id", "ca": "es", "uk": "ru", "bg": "ru",
}  # fmt: skip

_ROMAN = ("i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x")
# Option label styles and their label sequences, in the order they are tried.
OPTION_STYLES: Mapping[str, tuple[str, ...]] = {
    "upper": tuple("ABCDEFGHIJ"),
    "lower": tuple("abcdefghij"),
    "digit": tuple(str(i) for i in range(1, 11)),
    "roman": _ROMAN,
    "ROMAN": tuple(r.upper() for r in _ROMAN),
}
# A label token: "(A)", "[b]", "1)", "iv.", "C:" after a line start, a space or markdown,
# optionally after "Option"/"Choice". Initials ("A. Smith") and ordinals also match one at a
# time; `parse_options` keeps only runs of consecutive labels, which prose does not make.
_LABEL_TOKEN = re.compile(
    r"(?:^|(?<=[\s*>\-]))(?:(?i:option|choice)\s+)?"
    r"(?:[\(\[](?P<paren>[A-Za-z]{1,4}|\d{1,2})[\)\]]"
    r"|(?P<close>[A-Za-z]{1,4}|\d{1,2})[):.])"
    r"(?=[ \t]++\S)",
    re.MULTILINE,
)
# A reference that names one label: "B", "(b)", "[3]", "iv.", "Option C", "B) Paris" (`\A`:
# for `fullmatch`, and a `search` does not rescan a run of spaces from each one).
_REFERENCE_LABEL = re.compile(
    r"\A(?i:(?:the\s++)?(?:answer|option|choice)(?:\s++is)?\s*+[:\-]?\s*+)?(?:\*\*)?"
    r"(?:[\(\[]?\s*+(?P<bare>[A-Za-z]{1,4}|\d{1,2})\s*+[\)\]]?(?:\*\*)?\s*+[.:]?"
    r"|(?:[\(\[](?P<paren>[A-Za-z]{1,4}|\d{1,2})[\)\]]|(?P<delim>[A-Za-z]{1,4}|\d{1,2})[).:])"
    r"(?:\*\*)?\s++\S.{0,200})",
    re.DOTALL,
)
_LETTER_LABELS = frozenset(OPTION_STYLES["upper"]) | frozenset(OPTION_STYLES["lower"])
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")
_LETTER = re.compile(r"[^\W\d_]")
_SEGMENT_SPLIT = re.compile(r"\n+|(?<=[.!?。？！:：;])\s+")
# Mathematical notation: an operator between terms, exponents, function application,
# a coefficient on a variable, a LaTeX command, a math symbol, an inequality.
_MATH = re.compile(
    r"[\w)]\s*+[\^=<>≤≥≠]\s*+[-\w(\\]"
    r"|\b[a-z]\s*+[-+*/]\s*+[\da-z]\b(?!['’])"
    r"|\b[a-zA-Z]\s*+\(\s*+[a-z\d]\s*+\)"
    r"|(?<![\w.])\d++[a-z]\b(?!['’])"
    r"|\\[a-zA-Z]++"
    r"|[√π∑∏∫≤≥≠∞±·×÷°]"
    r"|[\d)]\s*+[*/]\s*+[\d(a-z]|\)\s*+[-+]\s*+[\w(]"
    r"|\b(?:sqrt|log|ln|sin|cos|tan|mod|gcd|lcm|pi)\b"
)
# Objects of mathematics rather than of everyday life: a word problem about apples and
# money uses none of them, a competition problem several.
_MATH_WORDS = re.compile(
    r"\b(?:integers?|primes?|divisors?|divisible|polynomials?|digits?|remainders?|probability|"
    r"triangles?|circles?|radius|diameter|circumference|hypotenuse|equations?|functions?|"
    r"sequence|real numbers?|coordinates?|vertices|vertex|angles?|matrix|matrices|vectors?|"
    r"logarithms?|parabola|hyperbola|ellipse|quadratic|exponents?|modulo|congruent|"
    r"inequalit(?:y|ies)|slope|intercept|simplify|simplest|evaluate|expression|"
    r"common fraction|radical|factorial|permutations?|combinations?|geometric|arithmetic "
    r"(?:sequence|series|mean)|roots?|solutions?|domain|asymptotes?|trapezoid|"
    r"parallelogram|rectangle|squares?|cubes?|spheres?|cylinders?|cones?|ordered pairs?|"
    r"how many (?:different |distinct )?ways|arrangements?|distinct|consecutive|multiples?|"
    r"(?:inversely|directly) proportional|units digit|in base \d+)\b",
    re.IGNORECASE,
)
# Quantities of everyday life (money, time, distance, things people buy and count) and the
# verbs of buying, selling and sharing: the stuff of grade-school word problems.
_EVERYDAY = re.compile(
    r"\$\s?\d|\b(?<![\d,.])\d[\d,.]*+\s*+(?:dollars?|cents?|hours?|minutes?|seconds?|days?|"
    r"weeks?|months?|years?|miles?|km|kilometers?|meters?|feet|foot|inches|pounds?|kg|"
    r"kilograms?|grams?|liters?|gallons?|cups?|pieces?|pages?|people|students?|apples?|boxes|"
    r"bags?|cookies|eggs|books?|cars?|times)\b|\b(?:each|per|total|altogether|left|spent|earns?|pays?|"
    r"bought|sold|buys?|sells?|costs?|saves?|profit|price|money|weekly|daily|monthly)\b",
    re.IGNORECASE,
)
# A capitalized word after a lower-case word or comma: mostly people's names in a story.
_NAME = re.compile(r"(?<=[a-z,] )[A-Z][a-z]{2,}\b")
# What the patterns anchored at `\Z` read (from every start, a long tail costs its square).
END_CHARS = 80
_NUMBER_END = re.compile(r"[-+]?\$?\d[\d,]*+(?:\.\d++)?\s*+(?:%|[a-zA-Z]{1,10})?\W{0,3}\Z")
_ANSWER_NUMBER = re.compile(r"(?i:answer|result|total)\D{0,20}[-+]?\$?\d")
_MATH_ANSWER = re.compile(r"\\boxed|\$[^$\n]++\$|\\\(|\\frac|\\sqrt|(?i:answer\s*+(?:is|:))\s*+\S")
_LETTER_ANSWER = re.compile(
    r"(?i:answer|option|choice)\s*+(?:is)?\s*+[:\-]?\s*+\(?[A-Ja-j]\)?(?![\w'])"
)
_LETTER_END = re.compile(r"\([A-Ja-j]\)\s*+\W{0,3}\Z|(?<![\w'])[A-J]\s*+[.)]?\Z")
_CODE = re.compile(r"```|\bdef\s++\w++\s*+\(|\breturn\b|\bimport\s++\w")
_TAGS = re.compile(r"</?[a-zA-Z_][\w-]{0,20}>")


# -- options and labels -------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    """The option lists a prompt shows: per label style, the run of consecutive labels found
    (a pair of answers with numbered lists inside shows both A-B and 1-4)."""

    runs: Mapping[str, tuple[str, ...]]

    @property
    def style(self) -> str:
        """The style of the longest run (ties: in `OPTION_STYLES` order)."""
        order = list(OPTION_STYLES)
        return max(self.runs, key=lambda k: (len(self.runs[k]), -order.index(k)))

    @property
    def labels(self) -> tuple[str, ...]:
        return self.runs[self.style]

    @property
    def letters(self) -> bool:
        """The main list is lettered (A-J, a-j): what the built-in choice tool reads."""
        return self.style in ("upper", "lower")

    def names(self, label: str) -> bool:
        """Is `label` a listed option (a letter of a lettered list, or a number or roman
        numeral of a numbered one)?"""
        return self.names_letter(label) or self.names_index(label)

    def names_letter(self, label: str) -> bool:
        """Is `label` a letter of a lettered list? Either case matches (the choice tool
        reads "b" as B)."""
        lettered = {x.upper() for k in ("upper", "lower") for x in self.runs.get(k, ())}
        return label.upper() in lettered

    def names_index(self, label: str) -> bool:
        """Is `label` a number or roman numeral of a numbered list?"""
        numbered = {x.lower() for k in ("digit", "roman", "ROMAN") for x in self.runs.get(k, ())}
        return label.lower() in numbered


def parse_options(prompt: str) -> Options | None:
    """Every run of at least two consecutive labels (A, B, C... or 1, 2, 3... or i, ii,
    iii...) the prompt lists, by style; None when it lists none."""
    tokens = [next(g for g in m.groups() if g) for m in _LABEL_TOKEN.finditer(prompt)]
    if len(tokens) < 2:
        return None
    runs: dict[str, tuple[str, ...]] = {}
    for style, sequence in OPTION_STYLES.items():
        found = 0
        for token in tokens:
            if found < len(sequence) and token == sequence[found]:
                found += 1
        if found >= 2:
            runs[style] = sequence[:found]
    return Options(runs) if runs else None


def reference_label(reference: str | None) -> str | None:
    """The option label a reference names ("B", "(b)", "3", "iv", "Option C", "B) Paris"),
    or None when it is not one."""
    if not reference:
        return None
    m = _REFERENCE_LABEL.fullmatch(reference.strip()[:220])
    if m is None:
        return None
    label = next(g for g in m.group("bare", "paren", "delim") if g)
    if label.isdigit() or label in _LETTER_LABELS or label.lower() in _ROMAN:
        # "B) Paris" names B; but "Paris" alone is a word, not a label
        return label
    return None


def label_in_options(label: str, options: Options) -> bool:
    """Is `label` one of the listed options (see `Options.names`)?"""
    return options.names(label)


# -- languages ----------------------------------------------------------------------------


class _Detector:
    """py3langid's identifier with normalized probabilities over `LANGUAGES`, loaded once."""

    _lock = threading.Lock()
    _identifier: Any = None

    @classmethod
    def get(cls) -> Any:
        with cls._lock:
            if cls._identifier is None:
                ident = load_identifier(norm_probs=True)  # inflated once, then cached
                ident.set_languages([lang for lang in LANGUAGES if lang in ident.labels])
                cls._identifier = ident
            return cls._identifier


def letters(text: str) -> int:
    """Number of letters in `text`."""
    return len(_LETTER.findall(text))


def text_units(text: str) -> float:
    """Length in Latin-letter equivalents: a Chinese or Japanese character carries about
    three letters of an alphabetic language, a Hangul syllable about two."""
    cjk = len(_CJK.findall(text))
    hangul = len(_HANGUL.findall(text))
    return letters(text) + 2 * cjk + hangul


# Scripts used by one language here: a short text in them needs no statistics.
_SCRIPTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"[\uac00-\ud7af\u1100-\u11ff]"), "ko"),
    (re.compile(r"[\u3040-\u30ff]"), "ja"),  # kana: Japanese even among Han characters
    (re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]"), "zh"),
    (re.compile(r"[\u0e00-\u0e7f]"), "th"),
    (re.compile(r"[\u0370-\u03ff]"), "el"),
    (re.compile(r"[\u0590-\u05ff]"), "he"),
    (re.compile(r"[\u0900-\u097f]"), "hi"),
)
# English function words that other Latin-script languages do not use as words: py3langid
# gives short English texts low probabilities (English shares its n-grams with everyone).
_ENGLISH_WORDS = frozenset((
    "the", "of", "and", "to", "is", "are", "was", "were", "for", "with", "this", "that",
    "these", "those", "from", "be", "been", "not", "cannot", "can", "will", "would",
    "should", "could", "please", "you", "your", "it", "its", "have", "has", "had", "what",
    "how", "which", "there", "their", "they", "we", "our", "my", "me", "at", "as", "or",
    "if", "into", "about", "than", "then", "when", "where", "who", "why", "does", "did", "do",
))  # fmt: skip
_WORD = re.compile(r"[^\W\d_]+")


@lru_cache(maxsize=16_384)
def rank_languages(text: str) -> tuple[tuple[str, float], ...]:
    """py3langid's probability of every language in `LANGUAGES`, best first."""
    ranked: list[tuple[str, float]] = _Detector.get().rank(text[:LANGUAGE_CHARS])
    return tuple(ranked)


@lru_cache(maxsize=16_384)
def detect_language(text: str) -> tuple[str, float]:
    """(ISO 639-1 code, probability), or ("", probability) when the text is too short or
    too ambiguous to tell. A text mostly in a script of one language is that language; a
    Latin-script text needs py3langid's top language at twice the runner-up's probability
    (and at least 0.25), or two English function words making a fifth of its words."""
    text = text[:LANGUAGE_CHARS]
    n = letters(text)
    if n == 0:
        return "", 0.0
    for rx, lang in _SCRIPTS:
        hits = len(rx.findall(text))
        if hits >= 2 and (hits >= 0.3 * n or (lang == "ja" and hits >= 0.1 * n)):
            return lang, 1.0
    if n < MIN_LANGUAGE_LETTERS:
        return "", 0.0
    ranked = rank_languages(text)
    (top, p1), (_, p2) = ranked[0], ranked[1]
    words = [w.lower() for w in _WORD.findall(text)]
    english = {w for w in words if w in _ENGLISH_WORDS}
    if len(english) >= 2 and sum(w in _ENGLISH_WORDS for w in words) >= 0.2 * len(words):
        return "en", max(float(p1) if top == "en" else 0.0, MIN_LANGUAGE_PROB)
    if p1 >= 0.25 and p1 >= 2 * p2:
        return str(top), float(p1)
    return "", float(p1)


def same_language(a: str, b: str) -> bool:
    """Equal languages, counting the detector's confusable pairs as equal."""
    return _LANGUAGE_GROUP.get(a, a) == _LANGUAGE_GROUP.get(b, b)


def segments(text: str) -> list[str]:
    """Lines and sentences: a prompt's instruction and its passage are detected apart."""
    return [s for s in (p.strip() for p in _SEGMENT_SPLIT.split(text)) if s]


@dataclass(frozen=True)
class LanguageEvidence:
    """How the reference's language relates to the prompt's text.

    `reference`: the reference's language ("" when undecided); `prompt`: the language of
    most of the prompt; `other_units`: length of the prompt's text in languages other than
    the reference's; `ratio`: that length over the reference's; `crosslingual` (0..1): a
    passage in another language of about the reference's length (a translation);
    `same_language`: the reference is in the prompt's language and the prompt holds no such
    passage (an answer or a rewrite, not a translation).
    """

    reference: str = ""
    prompt: str = ""
    other_units: float = 0.0
    ratio: float = 0.0
    crosslingual: float = 0.0
    same_language: bool = False


def length_fit(ratio: float) -> float:
    """1 inside `TRANSLATION_RATIO`, falling linearly to 0 at half the lower / double the
    upper bound."""
    lo, hi = TRANSLATION_RATIO
    if lo <= ratio <= hi:
        return 1.0
    if ratio < lo:
        return max(0.0, (ratio - lo / 2) / (lo / 2))
    return max(0.0, 1.0 - (ratio - hi) / hi)


def prompt_languages(prompt: str) -> dict[str, float]:
    """Text units of the prompt per language, from the segments whose language is clear:
    English by the detector's rule, any other language at `PASSAGE_PROB` (ciphertext and
    scrambled words get low probabilities everywhere and are left out)."""
    units: dict[str, float] = {}
    for seg in segments(prompt[: 2 * LANGUAGE_CHARS]):
        lang, prob = detect_language(seg)
        if lang and (lang == "en" or prob >= PASSAGE_PROB):
            units[lang] = units.get(lang, 0.0) + text_units(seg)
    return units


def prompt_language(prompt: str) -> str:
    """The language of most of the prompt's text ("" when undecided). A prompt whose words
    are at least `ENGLISH_SHARE` English function words is English without running the
    detector (most prompts are: this keeps routing cheap)."""
    words = [w.lower() for w in _WORD.findall(prompt[:LANGUAGE_CHARS])]
    hits = [w for w in words if w in _ENGLISH_WORDS]
    if len(set(hits)) >= 3 and len(hits) >= ENGLISH_SHARE * len(words):
        return "en"
    units = prompt_languages(prompt)
    return max(sorted(units), key=lambda k: units[k]) if units else ""


def language_evidence(prompt: str, reference: str) -> LanguageEvidence:
    """See `LanguageEvidence`."""
    ref_lang, _ = detect_language(reference)
    units = prompt_languages(prompt)
    main = max(sorted(units), key=lambda k: units[k]) if units else ""
    if not ref_lang:
        # Too short or ambiguous to name, but clearly *not* in the passage's language (a
        # Turkish passage, a reference the detector gives under 2% Turkish): the passage
        # is still in another language than the reference.
        if letters(reference) < MIN_LANGUAGE_LETTERS:
            return LanguageEvidence(prompt=main)
        probs = dict(rank_languages(reference))
        other = sum(
            u for lang, u in units.items() if lang != "en" and probs.get(lang, 0.0) < NOT_LANGUAGE
        )
        ratio = other / max(text_units(reference), 1.0)
        cross = length_fit(ratio) if other > 0 else 0.0
        return LanguageEvidence("", main, other, ratio, cross, False)
    other = sum(u for lang, u in units.items() if not same_language(lang, ref_lang))
    ratio = other / max(text_units(reference), 1.0)
    cross = length_fit(ratio) if other > 0 else 0.0
    same = bool(main) and same_language(main, ref_lang) and cross == 0.0
    return LanguageEvidence(ref_lang, main, other, ratio, cross, same)


# -- JSON references ----------------------------------------------------------------------


@lru_cache(maxsize=4_096)
def rg_entry_readable(reference: str) -> bool:
    """Does reasoning-gym's scorer read this reference (the `reasoning_gym` tool's own
    parser accepts it: a registered `source_dataset`, a string answer)?"""
    try:
        data = json.loads(reference)
    except ValueError:
        return False
    if not isinstance(data, dict) or not ("metadata" in data or "entry" in data):
        return False  # nothing could name the dataset: skip importing reasoning-gym
    from rewardsmith.errors import InvalidReferenceError
    from rewardsmith.tools.reasoning_gym import parse_rg_reference

    try:
        parse_rg_reference(reference)
    except InvalidReferenceError:
        return False
    return True


# -- prompt and completion content --------------------------------------------------------


def math_notation(text: str) -> float:
    """0..1: mathematics in the text, as notation (equations, exponents, functions, LaTeX,
    symbols) or as its objects (integers, primes, polynomials, triangles...): three or more
    spots count fully."""
    text = text[:3000]
    return min(1.0, (len(_MATH.findall(text)) + len(_MATH_WORDS.findall(text))) / 3.0)


def word_problem(text: str) -> float:
    """0..1: an everyday story with quantities (money, time, things bought and shared,
    people's names): four or more spots count fully."""
    text = text[:3000]
    return min(1.0, (len(_EVERYDAY.findall(text)) + len(_NAME.findall(text))) / 4.0)


def completion_fit(
    fmt: str, completion: str, reference_language: str = "", source_units: float = 0.0
) -> float:
    """0..1: does the completion answer in the form a reference of format `fmt` is graded
    in? (number: ends in or states a number; latex: a math expression; choice: an option
    letter; free_text with a known language: text in that language of about the source's
    length; json_entry: <answer> tags; unit_tests: code.)"""
    # answers often sit in tags (<solution>36</solution>): read the text, not the markup
    tail = _TAGS.sub(" ", completion[-600:])
    if not tail.strip():
        return 0.0
    end = tail.rstrip()[-END_CHARS:]
    if fmt == "number":
        return 1.0 if _NUMBER_END.search(end) or _ANSWER_NUMBER.search(tail) else 0.0
    if fmt == "latex":
        return 1.0 if _MATH_ANSWER.search(tail) or math_notation(tail) >= 0.67 else 0.0
    if fmt == "choice":
        return 1.0 if _LETTER_ANSWER.search(tail) or _LETTER_END.search(end) else 0.0
    if fmt == "json_entry":  # `<answer>.*?</answer>`, in one pass
        at = completion[-600:].find("<answer>")
        return 1.0 if at >= 0 and "</answer>" in completion[-600:][at:] else 0.0
    if fmt == "unit_tests":
        return 1.0 if _CODE.search(completion[:4000]) else 0.0
    if fmt == "free_text" and reference_language:
        lang, _ = detect_language(completion[:LANGUAGE_CHARS])
        if not lang or not same_language(lang, reference_language):
            return 0.0
        if source_units <= 0:
            return 0.5
        return length_fit(text_units(completion[:LANGUAGE_CHARS]) / source_units)
    return 0.0
