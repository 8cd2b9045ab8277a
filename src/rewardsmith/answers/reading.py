"""The final answer of a completion, read in every common style with one precedence.

What a synthesized verifier reads before it compares (`read_final`); only the comparison is
learned from examples, never where the answer is. Precedence, first that finds one wins:

1. the last standing marker of `final.marked_answers`: `<answer>` tags, `\\boxed{}`,
   `#### X`, "Final answer: X", "The answer is X", "**Answer:** X" (a marker whose answer
   is only a fence opener, "Final answer:\\n```", reads the fenced block instead);
2. the `"answer"` field of the last JSON object (`{"answer": "X"}`);
3. the last fenced block when only blanks follow it;
4. the lines under a heading that ends the text: a line holding only a label and a colon
   ("Final grid:", "Candidates:"), then lines to the end with no blank between (a list of
   candidates is one answer, never its last line alone);
5. the last non-empty line: after a label and colon when it starts with one
   (`Sorted: a, b, c`, `ISO date: 2019-10-23`; a label is one to five words of letters
   followed by ": "), else as it stands.

Sentence punctuation around an answer is not part of it: an answer read from a sentence
(styles `answer_is`, `final_answer`, `label`, `label_colon`) loses wrapping `**`,
backticks and matching quotes, and a final `.`, `!` or `?` that ends the sentence ("The
answer is 42." reads 42); a bare last line loses only the wrappers (`olleh.` alone may be
the answer itself). Answers in delimiters (tags, boxes, JSON, fences, `####`)
stand as written: `<answer>olleh.</answer>` reads `olleh.`. `read_final(text, sentence=False)`
keeps that punctuation (for a task whose labeled examples count it); `same_after_sentence_end`
lets a reference that itself ends a sentence ("The cat sat.") match an answer read from a
sentence without its period.

Plain functions over `re` and `json` only, linear in the input (markers as in `final`; at
most `JSON_STARTS` JSON decodes from the end): embedded in synthesized programs.
"""

import json
import re

from rewardsmith.answers.final import (
    SPAN_CHARS,
    clean,
    last_fenced,
    last_line_span,
    marked_answers,
)
from rewardsmith.answers.hedges import LEADING_NEGATION

# JSON objects tried from the end of a completion for an "answer" field.
JSON_STARTS = 20
# Styles whose answer ends a sentence: their trailing punctuation is the sentence's.
# A heading ("Candidates:", "Final grid:") and the lines under it, read from the end.
HEADING = re.compile(
    r"[*_]{0,2}[A-Za-z][A-Za-z'()-]{0,20}(?:[ \t][A-Za-z'()-]{1,20}){0,4}:[*_]{0,2}"
)
HEADING_LINES = 24
HEADING_CHARS = 4000
# A sentence that offers a value only to deny it: "2/5 is not the answer", "x is wrong".
DENIED = re.compile(
    r"[ \t](?:is|was|would[ \t]be|'s)?[ \t]{0,3}(?:not|n't)[ \t]{1,3}(?:the[ \t]{1,3})?"
    r"(?:(?:right|correct|final|true)[ \t]{1,3})?(?:answer|solution|result|one)\b"
    r"|[ \t](?:is|was)[ \t]{1,3}(?:wrong|incorrect|false)\b"
    r"|\banswer[ \t]{1,3}(?:is[ \t]{1,3}not|isn't|is[ \t]{1,3}never)\b"
    r"|\b(?:definitely|certainly|surely)[ \t]{1,3}not\b",
    re.IGNORECASE,
)
# What after a sentence's end still offers an answer: "42. (or maybe 43)".
HEDGE_TAIL = re.compile(
    r"[ \t]{0,3}[(\[]?[ \t]{0,3}(?:or|maybe|perhaps|possibly|alternatively|otherwise)\b",
    re.IGNORECASE,
)
SENTENCE_STYLES = ("answer_is", "final_answer", "label", "label_colon")
LABEL = re.compile(r"([A-Za-z][A-Za-z'()-]{0,20}(?:[ \t][A-Za-z'()-]{1,20}){0,4})[ \t]?:[ \t]+")
END_PUNCTUATION = ".!?"
WRAPPERS = ("**", "__", "`", '"', "'", "*")


def json_answer(text):
    """The "answer" field of the last JSON object in `text` that has one, as text, or None."""
    decoder = json.JSONDecoder()
    starts: list[int] = []
    pos = text.rfind("{")
    while pos >= 0 and len(starts) < JSON_STARTS:
        starts.append(pos)
        pos = text.rfind("{", 0, pos)
    for start in starts:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict) and "answer" in value:
            answer = value["answer"]
            return answer if isinstance(answer, str) else json.dumps(answer)
    return None


def unwrap(answer, sentence=True):
    """`answer` without sentence punctuation around it: wrapping bold, backticks or matching
    quotes, and (`sentence`) a final ".", "!" or "?" (repeatedly, as "**42**." needs)."""
    answer = answer.strip()
    changed = True
    while changed and answer:
        changed = False
        if sentence and answer[-1] in END_PUNCTUATION and not answer.endswith("..."):
            answer, changed = answer[:-1].rstrip(), True
        for mark in WRAPPERS:
            inner = answer[len(mark) : -len(mark)]
            if (
                len(answer) > 2 * len(mark)
                and answer.startswith(mark)
                and answer.endswith(mark)
                and mark not in inner
            ):
                answer, changed = inner.strip(), True
    return answer


def after_label(line):
    """The rest of `line` after a leading label and colon ("Sorted: a, b"), else None."""
    m = LABEL.match(line)
    if m is None or m.end() >= len(line):
        return None
    return line[m.end() :]


def rows_below(text, start, end):
    """The end of a marker's answer that goes on as rows of a grid ("Final answer: 1 2\n3 4"):
    the lines that follow to the end of the text, none blank, each with as many
    whitespace-separated cells as the first; else `end`."""
    if end >= len(text) or text[end] != "\n" or text[end - 1 : end] in END_PUNCTUATION:
        return end
    cells = len(text[start:end].split())
    rest = text[end + 1 :].rstrip()
    if cells < 2 or not rest or len(rest) > HEADING_CHARS:
        return end
    if all(len(line.split()) == cells for line in rest.split("\n")):
        return end + 1 + len(rest)
    return end


def under_heading(text):
    """The lines under a heading that ends the text ("Final grid:\n1 2\n3 4", "Candidates:
    \na\nb"): the trailing lines that follow a line holding only a label and a colon, with
    no blank line between, joined; None when the text does not end so. A list of candidates
    is then one answer that matches no single reference, never its last line alone."""
    end = len(text.rstrip())
    lines = text[max(0, end - HEADING_CHARS) : end].split("\n")[-HEADING_LINES:]
    below: list[str] = []
    for line in reversed(lines):
        if not line.strip():
            return None
        if HEADING.fullmatch(line.strip()):
            return "\n".join(below).strip("\n") if below else None
        below.insert(0, line)
    return None


def read_final(text, sentence=True):
    """(style, answer) of the final answer of `text` (see the module docstring for the
    precedence), or None when it holds none. `style` is a name of `final.STYLES`, or
    `json_answer` or `label_colon`. An answer outside delimiters that denies itself ("not
    42", "42 is not the answer") is no answer."""
    found = read_any(text, sentence)
    if found is None or found[0] not in (*SENTENCE_STYLES, "last_line"):
        return found
    if LEADING_NEGATION.match(found[1]) or DENIED.search(found[1]):
        return None
    return found


def read_any(text, sentence=True):
    """`read_final` before a denied answer is dropped."""
    marks = marked_answers(text)
    if marks:
        style, start, end, _ = marks[-1]
        long_line = end - start >= SPAN_CHARS and end < len(text) and text[end] != "\n"
        if (style in SENTENCE_STYLES or style == "hashes") and long_line:
            # a long answer on its line (a JSON list): the marker's span stops short of it
            newline = text.find("\n", end)
            end = len(text) if newline < 0 else newline
        if style in SENTENCE_STYLES:
            end = rows_below(text, start, end)
            if HEDGE_TAIL.match(clean(text[end : end + 80])):  # hidden hedges too
                # "See paragraph 1. (or maybe 2)": the rest of the line is part of the answer
                newline = text.find("\n", end)
                end = len(text) if newline < 0 else newline
        answer = text[start:end].strip()
        fenced = last_fenced(text) if answer.startswith("```") else None
        if fenced is not None and fenced[0] >= start:
            return "fenced", text[fenced[0] : fenced[1]].strip("\n")
        if style in SENTENCE_STYLES:
            answer = unwrap(answer, sentence)
        return (style, answer) if answer else None
    found = json_answer(text) if "answer" in text else None
    if found is not None:
        return "json_answer", found.strip()
    fenced = last_fenced(text)
    if fenced is not None:
        return "fenced", text[fenced[0] : fenced[1]].strip("\n")
    block = under_heading(text)
    if block is not None:
        return "label_colon", block
    line = last_line_span(text)
    if line is None:
        return None
    last = text[line[0] : line[1]]
    labeled = after_label(last)
    if labeled is not None and unwrap(labeled, sentence):
        return "label_colon", unwrap(labeled, sentence)
    answer = unwrap(last, sentence=False)
    return ("last_line", answer) if answer else None


def same_after_sentence_end(answer, reference, same):
    """Whether `same(answer, reference)`, or, when the reference ends a sentence with
    ".", "!" or "?", whether `same(answer, reference without it)` (see module docstring)."""
    if same(answer, reference):
        return True
    ref = reference.rstrip()
    return bool(ref) and ref[-1] in END_PUNCTUATION and same(answer, ref[:-1].rstrip())
