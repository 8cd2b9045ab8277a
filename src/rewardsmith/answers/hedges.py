"""Several answers offered as one, and answers under a negation.

Two readings of the same idea, for two kinds of answer:

- `alternatives(text)` splits an answer's text into the alternatives it offers, at the top
  level only (never inside brackets, braces or `$...$`, so sets, tuples and intervals stay
  whole; a comma inside a number, "1,000", "2,74", "11,\\! 111", is not a separator): at "," ";" "|" " / ", the words "or",
  "and", "and/or", "nor", and a parenthesis that opens with "or"/"maybe" ("72 (or maybe
  73)"). Hedge words ("either", "maybe", "possibly"...) are dropped from each item, items
  under a negation ("not 73") are dropped and counted, and items that explain rather than
  answer ("since x > 0", "because ...") are dropped. For text answers (reasoning-gym,
  synthesized verifiers, math).
- `value_run(text, spans, ...)` walks from one value (a number, a letter) to its
  neighbours while only a separator stands between them: "72 or 73", "B, C", "(A) or (B)",
  or, on lines holding nothing else, one value per line. For tools that find values with
  their own pattern (gsm8k numbers, choice letters), so that prose between values ("72
  because 8 * 9 = 72") never joins them.

`read_answers(text)` puts it together for text answers: the candidate answers of every
standing marker (`rewardsmith.answers.final.marked_answers`), else of the final answer.

Same rules as `final`: stdlib `re` only, no classes, linear time (every pattern runs on a
window of at most `GAP_CHARS` or `WINDOW_CHARS` characters, or has bounded repetitions).
"""

import bisect
import re

from rewardsmith.answers.final import (
    GAP_CHARS,
    READ_CHARS,
    WINDOW_CHARS,
    clean,
    final_answer,
    marked_answers,
)

NEGATION_BEFORE = re.compile(
    r"(?:\bnot|n't|\bnever|\bneither|\bnor|\bno[ \t]longer|\bcannot[ \t]be|\bwrong|"
    r"\bincorrect|\bexcept|\bexcluding|\brather[ \t]than|\binstead[ \t]of|\bruled[ \t]out)"
    r"(?:[\s*_(\[{$'\"`:,]|\\\(|\\\[|\\text\{|\b(?:be|equal|equals|to|the|a|an|exactly|just|"
    r"simply|actually|really|answer|option|choice|is|it|that|number|value|result|letter)\b)*$",
    re.IGNORECASE,
)
NEGATION_AFTER = re.compile(
    r"[\s*_)\]}$'\"`.]{0,6}(?:(?:is|was|would[ \t]be|'s)?[ \t]{0,3}(?:not|n't)[ \t]{1,3}"
    r"(?:the[ \t]{1,3})?(?:right|correct|final|true|answer|it|one)\b|"
    r"(?:is|was)?[ \t]{0,3}(?:wrong|incorrect|false|ruled[ \t]out|eliminated)\b)",
    re.IGNORECASE,
)
# What may stand between two alternatives besides a separator: spacing, brackets, emphasis,
# LaTeX commands ("\\text{B} or \\text{C}"), sentence punctuation.
DECORATION = re.compile(r"\\[A-Za-z]+|[\s*_()\[\]{}$'\"`.!?:>•\-–—]+")
PUNCTUATION = re.compile(r"([,;|/&])")
HEDGE_WORDS = frozenset(
    {
        "maybe", "perhaps", "possibly", "probably", "either", "alternatively", "else", "even",
        "also", "it", "could", "might", "may", "be", "is", "it's", "its", "just", "rather",
        "otherwise", "option", "choice", "answer", "letter", "but",
    }
)  # fmt: skip
# Separators between two values: everywhere, and in a marked answer only.
SEPARATORS = frozenset({",", ";", "|", "/", "or", "nor", "and", "vs", "versus"})
MARKED_SEPARATORS = SEPARATORS | {"&", "to"}
# Words besides a separator that may stand between two values of a marked answer (units).
UNIT_WORDS = 2
BULLET = re.compile(r"[ \t]*(?:[-*•>]+[ \t]*)?(?:\*\*|__)?[ \t(\[]*")
LINE_TAIL = re.compile(r"[ \t)\]*_.!:]*")

# -- values found by a caller's own pattern --------------------------------------------------


# Words one of which every negation holds: the patterns run only where one is (speed).
NEGATION_CUES = ("not", "n't", "never", "neither", "nor", "longer", "cannot", "wrong",
                 "incorrect", "except", "excluding", "rather", "instead", "ruled", "false",
                 "eliminated")  # fmt: skip


def negated(text, start, end):
    """Whether the value at text[start:end] is under a negation ("not 42", "42 is wrong"),
    within its own sentence ("... than not.\nThe answer is 22." negates nothing)."""
    before = text[max(0, start - WINDOW_CHARS) : start].lower()
    after = text[end : end + WINDOW_CHARS].lower()
    cut = max(before.rfind("\n"), before.rfind(". "), before.rfind("! "), before.rfind("? "))
    before = before[cut + 1 :]
    after = after.split("\n", 1)[0]
    if not any(cue in before or cue in after for cue in NEGATION_CUES):
        return False
    if NEGATION_BEFORE.search(before):
        return True
    return NEGATION_AFTER.match(after) is not None


def gap_kind(gap, marked):
    """How two values with `gap` between them are joined: "sep" (a separator: "or", ",",
    "(or maybe"), "space" or "newline" (only spacing and decoration), "" (anything else).
    `marked`: inside a marked answer, where "and", "to" and "&" separate too."""
    if len(gap) > GAP_CHARS:
        return ""
    core = PUNCTUATION.sub(r" \1 ", DECORATION.sub(" ", gap)).lower().split()
    separators = MARKED_SEPARATORS if marked else SEPARATORS
    other = [t for t in core if t not in separators and t not in HEDGE_WORDS]
    has_separator = any(token in separators for token in core)
    # in a marked answer, a unit may follow each value: "72 apples or 73 apples"
    if marked and has_separator and len(other) <= UNIT_WORDS and all(map(str.isalpha, other)):
        return "sep"
    if other:
        return ""
    if has_separator:
        return "sep"
    return "newline" if "\n" in gap else "space" if not core else ""


def alone_on_line(text, start, end):
    """Whether text[start:end] is all its line holds, but for a bullet and emphasis."""
    line_start = text.rfind("\n", max(0, start - GAP_CHARS), start) + 1
    if line_start == 0 and start > GAP_CHARS:
        return False
    head = BULLET.match(text, line_start, start)
    if head is None or head.end() != start:
        return False
    tail_end = text.find("\n", end, end + GAP_CHARS + 1)
    tail_end = len(text) if tail_end < 0 and len(text) - end <= GAP_CHARS else tail_end
    if tail_end < 0:
        return False
    tail = LINE_TAIL.match(text, end, tail_end)
    return tail is not None and tail.end() == tail_end


def joined(text, left, right, marked):
    """Whether values at spans `left` and `right` (left first) are offered as alternatives."""
    kind = gap_kind(text[left[1] : right[0]], marked)
    if kind == "sep" or (kind == "space" and marked):
        return True
    return kind == "newline" and alone_on_line(text, *left) and alone_on_line(text, *right)


def value_run(text, spans, index, forward, marked):
    """Indices of the values offered together with `spans[index]`, walking forward (a
    marked answer's first value) or backward (the last value of unmarked text), negated
    ones left out. `spans` are (start, end) pairs in text order."""
    run = [index]
    step = 1 if forward else -1
    k = index
    while 0 <= k + step < len(spans):
        left, right = (spans[k], spans[k + step]) if forward else (spans[k + step], spans[k])
        if not joined(text, left, right, marked):
            break
        k += step
        run.append(k)
    return sorted(i for i in run if not negated(text, *spans[i]))


def first_offered(text, spans, starts, start, end):
    """Indices of the values a marked answer text[start:end] offers: from its first value
    not under a negation, with those joined to it; [] when it offers none. `starts` are
    the spans' start positions (sorted, as `spans` are)."""
    first = bisect.bisect_left(starts, start)
    last = first
    while last < len(spans) and spans[last][1] <= end:
        last += 1
    for i in range(first, last):
        if not negated(text, *spans[i]):
            return [k for k in value_run(text, spans, i, True, True) if k < last]
    return []


# -- text answers --------------------------------------------------------------------------

HEDGE_PAREN = re.compile(r"\([ \t]{0,3}(?:or|maybe|perhaps|possibly|alternatively)\b", re.I)
# Lower case, or capitalized at a sentence's start: "OR" in all-caps text is a word of it.
WORD_SEPARATOR = re.compile(r"(?:and/or|or|and|nor|Or|And|Nor)\b")
LEADING_HEDGE = re.compile(
    r"(?:(?:either|or|but|though|maybe|perhaps|possibly|probably|alternatively|else|also|otherwise|"
    r"it[ \t]+(?:could|might|may)[ \t]+(?:also[ \t]+)?be|(?:could|might|may)[ \t]+be)"
    r"\b[ \t,]*)+",
    re.IGNORECASE,
)
LEADING_NEGATION = re.compile(
    r"(?:but[ \t]+|definitely[ \t]+|certainly[ \t]+)?(?:not|never)\b", re.I
)
EXPLANATION = re.compile(
    r"(?:since|because|as|so|which|where|when|given|if|for|due|i\.e\.|e\.g\.|that[ \t]+is|"
    r"this|thus|hence|therefore|meaning|i[ \t]+(?:think|believe|guess|suppose|hope))\b",
    re.IGNORECASE,
)
ITEM_EDGES = " \t\n.,;:!?*_\"'`"
# A leading "." may be a decimal point (".5"): only the end loses its full stop.
LEADING_EDGES = ITEM_EDGES.replace(".", "")
EMPTY_MARKUP = re.compile(
    r"\\[hv]?phantom\{[^{}]{0,40}\}|\\(?:boxed|fbox|text|textbf|mathrm)|\\[\[\]()]|[\s{}$*_]"
)


LATEX_SPACING = re.compile(r"(?:\\[!,;: ]|[ \t])*")


def is_number_comma(text, i):
    """Whether the comma at `i` is part of a number, not a separator of items ("1, 2"):
    between two digits with nothing else ("1,000", the decimal comma "2,74"), or grouping
    thousands with LaTeX spacing ("11,\\! 111")."""
    if i == 0 or not text[i - 1].isdigit():
        return False
    if text[i + 1 : i + 2].isdigit():
        return True
    spacing = LATEX_SPACING.match(text, i + 1, i + 12)  # `*`: it always matches
    j = spacing.end() if spacing else i + 1
    return (
        j > i + 1
        and "\\" in text[i + 1 : j]
        and text[j : j + 3].isdigit()
        and len(text[j : j + 3]) == 3
        and not text[j + 3 : j + 4].isdigit()
    )


OPERAND_CHARS = 200
TEXT_GROUP = re.compile(r"\\(?:text|textbf|mathrm|mbox)\{")
WORD_OPERAND = re.compile(r"[A-Za-z]{2,}")


def slash_operand(text, i, step):
    """The operand beside the "/" at `i` (step -1: before it, 1: after it), at most
    `OPERAND_CHARS` long: a bracketed group, else a run of letters and digits."""
    j = i + step
    pairs = {")": "(", "]": "[", "}": "{"} if step < 0 else {"(": ")", "[": "]", "{": "}"}
    edge = text[j] if 0 <= j < len(text) else ""
    if edge in pairs:
        depth = 0
        k = j
        while 0 <= k < len(text) and abs(k - j) <= OPERAND_CHARS:
            if text[k] == edge:
                depth += 1
            elif text[k] == pairs[edge]:
                depth -= 1
                if depth == 0:
                    return text[min(j, k) : max(j, k) + 1], min(j, k)
            k += step
        return "", j
    k = j
    while (
        0 <= k < len(text)
        and abs(k - j) <= OPERAND_CHARS
        and (text[k].isalnum() or text[k] == "\\")
    ):
        k += step
    return text[min(j, k - step) : max(j, k - step) + 1], min(j, k - step)


def is_alternative_operand(text, operand, start):
    """Whether a slash operand cannot be a number's part: a word ("yes/no"), a `\\text{}`
    group, a tuple or interval (a bracketed group with a comma in it)."""
    head = text[max(0, start - 8) : start]
    if TEXT_GROUP.search(head + operand[:1]) or operand.startswith("\\text"):
        return True
    if operand[:1] in "([{" and "," in operand:
        return True
    return bool(WORD_OPERAND.fullmatch(operand)) and not head.endswith("\\")


def is_separator_char(text, i):
    """Whether text[i] separates items: "," (not inside a number), ";", "|", " / ", or a
    slash between alternatives that cannot be divided ("yes/no", "(3, 4)/\\frac{1}{2}")."""
    ch = text[i]
    if ch == "/":
        if text[i - 1 : i] == " " and text[i + 1 : i + 2] == " ":
            return True
        left, at = slash_operand(text, i, -1)
        right, right_at = slash_operand(text, i, 1)
        return is_alternative_operand(text, left, at) or is_alternative_operand(
            text, right, right_at
        )
    return ch in ";|" or (ch == "," and not is_number_comma(text, i))


def split_top_level(text, words_only=False):
    """`text` cut at its top-level separators (see the module docstring); `words_only`:
    only at the words "or", "nor", "and/or" and a hedging parenthesis ("(or maybe"), never
    at punctuation or "and" (a list answer: "a, b and c")."""
    pieces = []
    start = depth = 0
    in_math = False
    skip_close = 0
    i = 0
    while i < len(text):
        ch = text[i]
        cut_to = -1
        if ch == "$":
            in_math = not in_math
        elif in_math:
            pass
        elif ch == "(" and depth == 0 and HEDGE_PAREN.match(text, i):
            skip_close += 1
            cut_to = i + 1
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0 and skip_close:
                skip_close -= 1
                cut_to = i + 1
            else:
                depth = max(0, depth - 1)
        elif depth == 0 and not words_only and is_separator_char(text, i):
            cut_to = i + 1
        elif depth == 0 and (i == 0 or not text[i - 1].isalnum()) and ch in "aAoOnN":
            word = WORD_SEPARATOR.match(text, i)
            if words_only and word is not None and word.group().lower() == "and":
                word = None
            if word is not None and (i == 0 or text[i - 1] in " \t"):
                pieces.append(text[start:i])
                start = i = word.end()
                continue
        if cut_to >= 0:
            pieces.append(text[start:i])
            start = i = cut_to
            continue
        i += 1
    pieces.append(text[start:])
    return pieces


def alternatives(text, split=True):
    """(items, negated): the answers `text` offers (see the module docstring), each
    stripped, in order, without repeats; `negated` counts items dropped under a negation.
    A later item that explains ("since ...", "so ...") is dropped; the first never is.
    `split=False` reads `text` as one item; `split="words"` splits only at hedging words
    (a list answer offered twice: "a, b, or c, d")."""
    items = []
    seen = set()
    dropped = 0
    pieces = split_top_level(text, split == "words") if split else [text]
    for n, piece in enumerate(pieces):
        item = piece.strip(LEADING_EDGES).rstrip(ITEM_EDGES)
        hedge = LEADING_HEDGE.match(item)
        if hedge is not None:
            item = item[hedge.end() :].strip(LEADING_EDGES).rstrip(ITEM_EDGES)
        if not item or not EMPTY_MARKUP.sub("", item):
            continue  # "\\boxed{}", "$$", "\\boxed{\\phantom{2}}": the format of an answer
        if LEADING_NEGATION.match(item):
            dropped += 1
        elif (n == 0 or not EXPLANATION.match(item)) and same_key(item) not in seen:
            seen.add(same_key(item))
            items.append(item)
    return items, dropped


KEY_NOISE = re.compile(r"\\[!,;: ]|\{,\}|\\?\$|\s")


def same_key(item):
    """An item without differences a reader ignores: spacing (LaTeX's "\\!" and "{,}" too),
    case, `$` (escaped or not), outer punctuation."""
    return KEY_NOISE.sub("", item).strip(ITEM_EDGES).lower()


LIST_LINE_CHARS = 400
LIST_LINES = 8
NUMBER_LINE = re.compile(r"[-+]?[$€£]?\d[\d,]*(?:\.\d+)?%?")


def line_shape(line):
    """ "number", "token" (one word), or "" (anything longer): what a bare list holds."""
    text = line.strip().strip("*-•>").strip().rstrip(".")
    if not text or len(text) > LIST_LINE_CHARS:
        return ""
    if NUMBER_LINE.fullmatch(text):
        return "number"
    if ":" in text:
        return ""  # a label: "Candidates:", "Words: a, b"
    if len(text.split()) == 1:
        return "token"
    items = text.split(",")
    return "list" if len(items) > 1 and all(len(i.split()) == 1 for i in items) else ""


def listed_above(text, start):
    """The lines right above the final line at `start` that hold one value of the same
    shape each ("41\n42\n43": a list of candidates), nearest last; [] when none do."""
    final_end = text.find("\n", start)
    shape = line_shape(text[start : final_end if final_end >= 0 else len(text)])
    if not shape:
        return []
    lines = text[:start].rstrip("\n").split("\n")[-LIST_LINES:]
    out: list[str] = []
    for line in reversed(lines):
        if line_shape(line) != shape:
            break
        out.insert(0, line.strip().strip("*-•>").strip().rstrip("."))
    return out


SENTENCE_WORDS = 5


def split_for(reference):
    """How to split answers against `reference` (the `split` of `alternatives` and
    `read_answers`): True when it is one value, "words" when it lists several ("a, b, c"),
    False when it is a sentence (a decoded message, a translation: its words are not
    alternatives)."""
    items = alternatives(reference)[0]
    if len(items) <= 1:
        return len(reference.split()) < SENTENCE_WORDS
    return False if any(len(i.split()) >= SENTENCE_WORDS for i in items) else "words"


def read_answers(text, split=True):
    """(candidates, style, negated) of a completion: the candidate answers of every standing
    marker, else of the final answer (`final_answer`, with the bare list lines above a last
    line: `listed_above`), each split into its alternatives as `alternatives(split=...)`
    does; `style` is the final answer's style ("" for blank text); `negated` counts
    candidates dropped under a negation."""
    text = clean(text[-READ_CHARS:])
    spans = [(style, a, b) for style, a, b, _ in marked_answers(text)]
    candidates = []
    seen = set()
    dropped = 0
    if not spans:
        final = final_answer(text)
        spans = [final] if final is not None else []
        if final is not None and final[0] == "last_line":
            for item in listed_above(text, final[1]):  # "Candidates:\n41\n42\n43"
                seen.add(same_key(item))
                candidates.append(item)
    for _, a, b in spans:
        items, neg = alternatives(text[a:b], split)
        dropped += neg
        for item in items:
            if same_key(item) not in seen:
                seen.add(same_key(item))
                candidates.append(item)
    return candidates, spans[-1][0] if spans else "", dropped


def hedge_reason(candidates, limit=4):
    """The reason of a hedged answer: "hedged: several different answers (72, 73)"."""
    shown = ", ".join(str(c)[:40] for c in candidates[:limit])
    more = f" and {len(candidates) - limit} more" if len(candidates) > limit else ""
    return f"hedged: several different answers ({shown}{more})"
