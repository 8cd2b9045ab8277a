"""Which language a text is in, and how a reference's language relates to its prompt's.

- `detect_language(text)`: (ISO 639-1 code, probability), "" when too short or ambiguous;
- `language_evidence(prompt, reference)`: is the reference a text in another language than
  the prompt's passage, of about the passage's length (a translation), or in the prompt's
  own language (an answer, a summary, a plan...)? A keyword cannot fake this: "translate a
  business idea into a plan" has no passage in another language.
- `prompt_language(prompt)`, `same_language(a, b)`, `text_units(text)`, `length_fit(ratio)`.

Language identification is py3langid (a maintained fork of langid.py, Lui & Baldwin 2012:
a naive Bayes model over byte n-grams, 97 languages, its model ships inside the 4.6 MB
wheel, no download): ~0.1-0.3 ms per sentence, 98.6% right on WMT23 de/en lines and 93% on
their first five words. lingua (96 MB wheel) and fasttext-langdetect (model download) were
too large or not offline. Its model is inflated once and kept in `langid_model`'s cache.
The detector is restricted to `LANGUAGES`, and pairs it confuses on short text count as one
language (`_LANGUAGE_GROUP`), so a Spanish answer to a Spanish question is never read as a
translation into Galician.

Pure functions on clipped text; results of the costly ones are cached by text.
"""

from __future__ import annotations

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
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")
_LETTER = re.compile(r"[^\W\d_]")
_SEGMENT_SPLIT = re.compile(r"\n+|(?<=[.!?。？！:：;])\s+")


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
