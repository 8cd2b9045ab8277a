"""The final answer of a completion in every common style, and the hedges that are not one.

One reading for every verifier (docs/architecture.md, Design, failure policy: "finds the final
answer in every common style ... and refuses hedges"). The built-in tools call it in this
process; its source is also embedded in synthesized verifiers, which run in the sandbox, so it
is plain functions over `re` only: no classes, no dunder or private attributes, nothing outside
the sandbox's import allowlist (`rewardsmith.answers.embeddable_source`).

What is read, on `clean(text)` (what a reader sees: zero-width and other invisible format
characters removed; full-width ASCII and Latin look-alike letters of Cyrillic and Greek
mapped to ASCII):

- *markers*, in `STYLES` order of strength: `<answer>...</answer>` (or `<solution>`),
  `\\boxed{...}` / `\\fbox{...}`, `#### ...`, and phrases: "The (final) answer is ...",
  "Final answer: ...", "**Answer:** ..." (a label and colon). A phrase's answer runs to the
  end of its sentence (the next line when the phrase ends its line), and takes in a
  following sentence that offers another answer ("... 72. Or maybe 73.");
- without markers, the last fenced block when nothing follows it, else the last non-empty
  line.

A completion *hedges* when it offers several different answers: markers that disagree, or
one answer naming alternatives ("72 or 73", "either B or C", "2, 3, 4", "72 (or maybe 73)").
An earlier marker withdrawn by a retraction before a later one ("Wait, no: the answer is
B", "Rechecking the sum: \\boxed{42}") does not count. Values under a negation ("the answer
is not 42", "72, not 73", "42 is wrong") are not offered. Whether several values are a hedge
or the answer itself (a set, the two roots) is the caller's to decide from the reference:
`alternatives` splits only at the top level, never inside brackets, braces or `$...$`.

Every function is linear in the length of its input: patterns have bounded repetitions or
run on windows of bounded size, and scans visit each character a bounded number of times.
"""

import re

# Only the end of a completion holds its final answer (as `config.MAX_COMPLETION_CHARS`).
READ_CHARS = 20_000
# A marked answer is read up to here: the rest of a long line is not part of it.
SPAN_CHARS = 400
# Text between two values that are offered as alternatives ("72 (or maybe 73)").
GAP_CHARS = 40
# Text before and after a value that is searched for a negation ("is not", "isn't").
WINDOW_CHARS = 40

# The common styles, strongest marker first; `render_style` writes an answer in each.
STYLES = (
    ("answer_tags", "<answer>{answer}</answer>"),
    ("boxed", "\\boxed{{answer}}"),
    ("hashes", "#### {answer}"),
    ("final_answer", "Final answer: {answer}"),
    ("answer_is", "The answer is {answer}."),
    ("label", "**Answer:** {answer}"),
    ("fenced", "```\n{answer}\n```"),
    ("last_line", "{answer}"),
)
STYLE_NAMES = tuple(name for name, _ in STYLES)

# -- what a reader sees ---------------------------------------------------------------------

INVISIBLE = "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200c\u200d\u200e\u200f"
INVISIBLE += "\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064\u2066\u2067"
INVISIBLE += "\u2068\u2069\u206a\u206b\u206c\u206d\u206e\u206f\u3164\ufe00\ufe0f\ufeff\uffa0"
SPACES = "\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
SPACES += "\u202f\u205f\u3000"
# Cyrillic and Greek letters drawn like Latin ones (Unicode confusables), and their Latin twin.
LOOKALIKES = "АВСЕНІЈКМОРЅТХУаеіјоорсхуѕԁһӏΑΒΕΖΗΙΚΜΝΟΡΤΥΧο"
LATIN_TWINS = "ABCEHIJKMOPSTXYaeijoopcxysdhlABEZHIKMNOPTYXo"


def reader_table(drop=True):
    """The `str.translate` table of `clean`; `drop=False`: without the deletions, so that
    every character keeps its place (`lookalikes_mapped`)."""
    table: dict[int, str | None] = {ord(ch): None for ch in INVISIBLE} if drop else {}
    table.update({ord(ch): " " for ch in SPACES})
    table.update({ord(a): b for a, b in zip(LOOKALIKES, LATIN_TWINS, strict=True)})
    # full-width ASCII (U+FF01..U+FF5E) is ASCII drawn wide
    table.update({code: chr(code - 0xFEE0) for code in range(0xFF01, 0xFF5F)})
    return table


READER_TABLE = reader_table()
MAP_TABLE = reader_table(drop=False)
INVISIBLE_TABLE = {ord(ch): None for ch in INVISIBLE}


def clean(text):
    """`text` as a reader sees it (see the module docstring); one pass, same order."""
    return text.translate(READER_TABLE)


def visible(text):
    """`text` without its invisible characters, nothing else changed (a translation keeps
    its own alphabet)."""
    return text.translate(INVISIBLE_TABLE)


def lookalikes_mapped(text):
    """`text` with look-alike letters, wide ASCII and odd spaces mapped one for one: every
    character keeps its place, so markers found in it index `text` too."""
    return text.translate(MAP_TABLE)


def render_style(style, answer):
    """`answer` written in one of `STYLES` (by name)."""
    for name, template in STYLES:
        if name == style:
            return template.replace("{answer}", answer)
    raise ValueError(f"unknown answer style {style!r}; known: {', '.join(STYLE_NAMES)}")


# -- markers --------------------------------------------------------------------------------

PHRASE = re.compile(
    r"\b(?:final[ \t]{1,3}|correct[ \t]{1,3})?answer"
    r"(?:[ \t]{1,3}to[ \t]{1,3}(?:the|this)[ \t]{1,3}(?:question|problem))?"
    r"[ \t]{0,3}(?:\*\*|__)?[ \t]{0,3}"
    r"(?:(?:is|(?:would|will|should|must|could|might|may)[ \t]be)(?![A-Za-z'’])|:)"
    r"[ \t]{0,3}:?[ \t]{0,3}(?:\*\*|__)?",
    re.IGNORECASE,
)
BOXED = re.compile(r"\\(?:boxed|fbox)[ \t]{0,3}\{")
# `<answer>` and `<solution>` (the `<thinking>/<solution>` format of the search-driven reward
# papers and of rewardsmith's own testbed): without it, a math reader fell back to the whole
# text and read "2+3=5" in the thinking as the answer to "<solution>6</solution>".
OPEN_TAG = re.compile(r"<(answer|solution)>", re.IGNORECASE)
CLOSE_TAGS = {name: re.compile(f"</{name}>", re.IGNORECASE) for name in ("answer", "solution")}
# A line that only opens a display ("\\[", "$$", "\\begin{align*}") holds no answer yet.
DISPLAY_OPENER = re.compile(r"\\\[|\\\(|\$\$|\\begin\{[A-Za-z*]{1,20}\}")
SENTENCE_END = re.compile(r"(?<!\\)[.!?](?=\s|$)|\n")  # LaTeX "\\!" is spacing, not an end
# A sentence that offers another answer after the first: "72. Or maybe 73."
ANOTHER_ANSWER = re.compile(
    r"[ \t]{0,3}\n?[ \t]{0,3}(?:\*\*)?(?:or|alternatively|otherwise|maybe|possibly|perhaps|"
    r"(?:but|though)[ \t]{1,3}(?:it[ \t]{1,3})?(?:could|might|may)|"
    r"(?:it[ \t]{1,3})?(?:could|might|may)[ \t]{1,3}also)\b",
    re.IGNORECASE,
)
# Between two markers: the earlier answer was withdrawn ("Wait, no", "Rechecking the sum").
RETRACTION = re.compile(
    r"\b(?:wait|actually|correction|oops|mistake|i was wrong|on second thought|instead|"
    r"that(?:'s|[ \t]is)[ \t](?:wrong|incorrect|not right)|no,|"
    r"re-?check|re-?comput|re-?calculat|re-?consider|re-?evaluat|re-?examin|re-?do|"
    r"double[- ]?check|let me (?:fix|correct|redo|try again))",
    re.IGNORECASE,
)


def brace_partners(text):
    """{index of "{": index of its "}"} for every balanced pair, in one pass."""
    partners = {}
    stack = []
    for i, ch in enumerate(text):
        if ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            partners[stack.pop()] = i
    return partners


def line_end(text, start, limit):
    """The end of the line that holds `start`, at most `limit` characters on."""
    end = text.find("\n", start, start + limit)
    return min(len(text), start + limit) if end < 0 else end


def phrase_span(text, start):
    """(start, end) of the answer after a phrase ending at `start` (see module docstring)."""
    end = line_end(text, start, SPAN_CHARS)
    first = start
    while not DISPLAY_OPENER.sub("", text[start:end]).strip(" \t*_:") and end < len(text):
        # "The answer is:" ends its line (or a display opens: "\\["): the next line
        start = end + 1
        if start - first > SPAN_CHARS:
            break
        end = line_end(text, start, SPAN_CHARS)
    cut = SENTENCE_END.search(text, start, end)
    if cut is None:
        return start, end
    stop = cut.start() + (0 if cut.group() == "\n" else 1)
    more = ANOTHER_ANSWER.match(text, stop)
    if more is not None:
        tail = SENTENCE_END.search(text, more.end(), line_end(text, more.end(), SPAN_CHARS))
        return start, tail.start() + 1 if tail is not None else line_end(text, stop, SPAN_CHARS)
    return start, stop


def raw_markers(text, extra_phrases=None):
    """Every marker in `text`: (style, span start, span end, marker start), in order.
    `extra_phrases`: a compiled pattern of a task's own answer phrases ("the correct option
    is"), read like "the answer is"."""
    found = []
    boxes = list(BOXED.finditer(text))
    partners = brace_partners(text) if boxes else {}
    for m in boxes:
        close = partners.get(m.end() - 1)
        if close is not None:
            found.append(("boxed", m.end(), close, m.start()))
    pos = 0
    while True:
        opened = OPEN_TAG.search(text, pos)
        if opened is None:
            break
        closed = CLOSE_TAGS[opened.group(1).lower()].search(text, opened.end())
        if closed is None:
            break
        found.append(("answer_tags", opened.end(), closed.start(), opened.start()))
        pos = closed.end()
    pos = text.find("####")
    while pos >= 0:
        start = pos + 4
        while start < len(text) and text[start] == "#":
            start += 1
        nxt = text.find("####", start, start + SPAN_CHARS)
        end = line_end(text, start, SPAN_CHARS)
        found.append(("hashes", start, end if nxt < 0 else min(end, nxt), pos))
        pos = text.find("####", start)
    for m in PHRASE.finditer(text):
        style = "final_answer" if m.group().lower().startswith("final") else "answer_is"
        if m.group().rstrip("*_ \t").endswith(":") and style == "answer_is":
            style = "label"
        start, end = phrase_span(text, m.end())
        found.append((style, start, end, m.start()))
    for m in extra_phrases.finditer(text) if extra_phrases is not None else ():
        start, end = phrase_span(text, m.end())
        found.append(("answer_is", start, end, m.start()))
    found.sort(key=lambda marker: marker[3])
    return found


# Styles that declare the final answer: an equation's boxed result before the first of
# them is a highlight in the reasoning ("= \\boxed{200}" ... "Final answer: 10,455").
DECLARED = ("answer_tags", "hashes", "final_answer")


def equation_result(text, marker):
    """Whether `marker` is a box on the right of an "=" ("$2 + 3 = \\boxed{5}$")."""
    if marker[0] != "boxed":
        return False
    before = text[max(0, marker[3] - 12) : marker[3]].rstrip(" \t$")
    return before.endswith("=")


def marked_answers(text, extra_phrases=None):
    """The markers that still stand, in order: each is (style, span start, span end, marker
    start), spans indexing `text`. A marker does not stand when
    - a retraction separates it from a later one ("Wait, no:", "Rechecking the sum:");
    - it is a box that ends an equation in the reasoning ("= \\boxed{200}") before the
      first declared final answer (`DECLARED`: "Final answer: ...", `####`, tags); any other
      marker there (a box of its own, "The answer is ...") claims an answer and stands;
    - its answer holds another marker ("Final Answer: The final answer is $7$"): the inner
      one stands for it."""
    found = raw_markers(text, extra_phrases)
    kept_from = 0
    for i in range(1, len(found)):
        gap_start = max(found[i - 1][2], found[i - 1][3])
        if gap_start < found[i][3] and RETRACTION.search(text, gap_start, found[i][3]):
            kept_from = i
    found = found[kept_from:]
    if not found:
        return found
    declared = next((i for i, m in enumerate(found) if m[0] in DECLARED), 0)
    found = [m for i, m in enumerate(found) if i >= declared or not equation_result(text, m)]
    return [
        m
        for i, m in enumerate(found)
        if not (i + 1 < len(found) and m[1] <= found[i + 1][3] < m[2])
    ]


def last_fenced(text):
    """(start, end) of the content of the last ``` block when only blanks follow it."""
    stripped = text.rstrip()
    if not stripped.endswith("```"):
        return None
    close = len(stripped) - 3
    opened = stripped.rfind("```", 0, close)
    if opened < 0:
        return None
    newline = stripped.find("\n", opened, close)
    return (opened + 3 if newline < 0 else newline + 1, close)


def last_line_span(text):
    """(start, end) of the last non-empty line, stripped; None for blank text."""
    end = len(text.rstrip())
    if end == 0:
        return None
    start = text.rfind("\n", 0, end) + 1
    while text[start] in " \t":
        start += 1
    return start, end


def final_answer(text):
    """(style, start, end) of the final answer: the last standing marker, else the last
    fenced block, else the last non-empty line; None for blank text."""
    marks = marked_answers(text)
    if marks:
        style, start, end, _ = marks[-1]
        return style, start, end
    fenced = last_fenced(text)
    if fenced is not None:
        return "fenced", fenced[0], fenced[1]
    line = last_line_span(text)
    return None if line is None else ("last_line", line[0], line[1])


# A sentence of the prompt this long or longer, copied verbatim, holds no answer.
PROMPT_COPY_CHARS = 24
PROMPT_SENTENCES = 64


def without_prompt_copies(text, prompt):
    """`text` with every verbatim copy of a sentence (or line) of `prompt` of at least
    `PROMPT_COPY_CHARS` characters blanked: what a completion copied from the question holds
    no answer (an echoed question's last number, or its expression, would pay a reader
    that takes the last value). At most `PROMPT_SENTENCES` sentences are tried."""
    if not prompt or len(text) < PROMPT_COPY_CHARS:
        return text
    sentences = []
    start = 0
    for cut in SENTENCE_END.finditer(prompt):
        piece = prompt[start : cut.end()].strip()
        start = cut.end()
        if len(piece) >= PROMPT_COPY_CHARS:
            sentences.append(piece)
    tail = prompt[start:].strip()
    if len(tail) >= PROMPT_COPY_CHARS:
        sentences.append(tail)
    for piece in sorted(set(sentences[:PROMPT_SENTENCES]), key=len, reverse=True):
        if piece in text:
            text = text.replace(piece, " ")
    return text
