"""Feature primitives: what a reward program can measure about a whole response.

The extractor/normalizer/comparator primitives of `rewardsmith.synth.catalogue` read an
answer and compare it with the reference. Features measure the rest of a response: its
structure (lines, blank and repeated lines, length, arithmetic density), its tag format,
and the consistency of its reasoning (are the equations right, does the answer follow from
the last one, are the prompt's numbers used). The reward-function search weighs and sums
them into reward programs (`rewardsmith.search.program`); its hacking audit measures the
same features on right and wrong responses (`rewardsmith.search.audit`).

Every feature is a top-level `def name(completion, reference, prompt)` returning a number
(`unit` says which kind: a share in [0, 1], a 0/1 flag, a count, or characters), written,
like every primitive, with only the sandbox's allowed imports and no private names, so a
program made of them passes `check_reward_code`. Programs set two module constants the
tag features read: `THINK_TAG` and `ANSWER_TAG` (the testbed's `thinking` and `solution`).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any, Literal

from rewardsmith.synth.catalogue import Primitive

Unit = Literal["share", "flag", "count", "chars"]


@dataclass(frozen=True)
class FeatureInfo:
    """How a feature's raw value reads: its unit, thresholds a program may compare it with,
    and whether it needs the reference (a feature that does not is *structural*)."""

    unit: Unit
    thresholds: tuple[float, ...] = ()
    needs_reference: bool = False


def _f(name: str, summary: str, source: str, **kw: Any) -> Primitive:
    return Primitive(name, "feature", summary, textwrap.dedent(source).strip() + "\n", **kw)


# -- helpers the features share ----------------------------------------------------------

FEATURE_HELPERS: dict[str, Primitive] = {
    p.name: p
    for p in (
        _f(
            "tag_content",
            "the text inside the last pair of a tag",
            '''
            def tag_content(text, tag):
                """The text between the last </tag> and the last <tag> before it, or None."""
                end = text.rfind("</" + tag + ">")
                start = text.rfind("<" + tag + ">", 0, max(end, 0))
                if end < 0 or start < 0:
                    return None
                return text[start + len(tag) + 2 : end]
            ''',
        ),
        _f(
            "numbers_in_text",
            "every number written in a text",
            '''
            def numbers_in_text(text):
                """Every number in the text as a Fraction (thousands separators removed)."""
                found = re.findall(r"-?\\d{1,3}(?:,\\d{3})+(?:\\.\\d+)?|-?\\d+(?:\\.\\d+)?", text)
                # Digit runs longer than any real answer are noise (and slow to convert).
                return [Fraction(n.replace(",", "")) for n in found if len(n) <= MAX_DIGITS]
            ''',
            imports=("re", "fractions.Fraction"),
        ),
        _f(
            "expression_value",
            "the value of a chain like 3 + 4 * 2",
            '''
            def expression_value(expression):
                """The value of numbers joined by + - * / (usual precedence), or None."""
                tokens = re.findall(r"\\d+(?:\\.\\d+)?|[-+*/x\\u00d7]", expression)
                if not tokens or "".join(tokens) != "".join(expression.split()):
                    return None
                terms, sign, product, operator = [], 1, None, None
                for token in tokens:
                    if token in "+-":
                        if product is None:
                            return None
                        terms.append(sign * product)
                        sign, product, operator = (1 if token == "+" else -1), None, None
                    elif token in "*/x\\u00d7":
                        if product is None or operator is not None:
                            return None
                        operator = token
                    else:
                        value = Fraction(token)
                        if product is None:
                            product = value
                        elif operator == "/":
                            if value == 0:
                                return None
                            product, operator = product / value, None
                        elif operator is not None:
                            product, operator = product * value, None
                        else:
                            return None
                if product is None or operator is not None:
                    return None
                terms.append(sign * product)
                return sum(terms)
            ''',
            imports=("re", "fractions.Fraction"),
        ),
        _f(
            "equations_in",
            "every 'a op b = c' equation with its verdict",
            '''
            def equations_in(text):
                """(left side's value, right side) for each equation like '3*6=18' or
                '14 + 18 = 32' (at most MAX_EQUATIONS); the value is None when the left side
                is not plain arithmetic. Each '=' is read with a short window on either side,
                so the time is linear in the text."""
                found = []
                parts = text.split("=", MAX_EQUATIONS)
                for before, after in zip(parts, parts[1:]):
                    left = re.search(
                        r"(\\d+(?:\\.\\d+)?(?:\\s*[-+*/x\\u00d7]\\s*\\d+(?:\\.\\d+)?)+)\\s*$", before[-60:]
                    )
                    right = re.match(r"\\s*(-?\\d{1,30}(?:\\.\\d+)?)", after[:40])
                    if left and right:
                        found.append((expression_value(left.group(1)), Fraction(right.group(1))))
                return found
            ''',
            imports=("re", "fractions.Fraction"),
            needs=("expression_value",),
        ),
        _f(
            "final_answer_number",
            "the single number inside the answer tag",
            '''
            def final_answer_number(text):
                """The number inside the last answer tag when that is all it holds, else None."""
                inner = tag_content(text, ANSWER_TAG)
                if inner is None:
                    return None
                numbers = numbers_in_text(inner)
                if len(numbers) != 1 or re.sub(r"[\\d,.\\s$-]", "", inner):
                    return None
                return numbers[0]
            ''',
            imports=("re",),
            needs=("tag_content", "numbers_in_text"),
        ),
    )
}

# -- the features --------------------------------------------------------------------------

FEATURES: dict[str, Primitive] = {
    p.name: p
    for p in (
        _f(
            "line_count",
            "non-empty lines",
            '''
            def line_count(completion, reference=None, prompt=None):
                """How many non-empty lines the response has."""
                return float(sum(1 for line in completion.splitlines() if line.strip()))
            ''',
        ),
        _f(
            "blank_line_share",
            "share of lines that are blank",
            '''
            def blank_line_share(completion, reference=None, prompt=None):
                """Blank lines among all lines (0.0 for a one-line response)."""
                lines = completion.split("\\n")
                return sum(1 for line in lines if not line.strip()) / len(lines) if len(lines) > 1 else 0.0
            ''',
        ),
        _f(
            "repeated_line_share",
            "share of non-empty lines that repeat an earlier one",
            '''
            def repeated_line_share(completion, reference=None, prompt=None):
                """Non-empty lines that repeat an earlier line, among the non-empty lines."""
                lines = [line.strip() for line in completion.splitlines() if line.strip()]
                return (len(lines) - len(set(lines))) / len(lines) if lines else 0.0
            ''',
        ),
        _f(
            "char_length",
            "characters",
            '''
            def char_length(completion, reference=None, prompt=None):
                """How many characters the response has."""
                return float(len(completion))
            ''',
        ),
        _f(
            "word_count",
            "words",
            '''
            def word_count(completion, reference=None, prompt=None):
                """How many whitespace-separated words the response has."""
                return float(len(completion.split()))
            ''',
        ),
        _f(
            "arithmetic_density",
            "share of characters that are digits or arithmetic signs",
            '''
            def arithmetic_density(completion, reference=None, prompt=None):
                """Digits and + - * / = among the non-space characters."""
                chars = [ch for ch in completion if not ch.isspace()]
                return sum(1 for ch in chars if ch.isdigit() or ch in "+-*/=") / len(chars) if chars else 0.0
            ''',
        ),
        _f(
            "equation_count",
            "arithmetic equations written out",
            '''
            def equation_count(completion, reference=None, prompt=None):
                """How many equations like '3*6=18' the response writes."""
                return float(len(equations_in(completion)))
            ''',
            needs=("equations_in",),
        ),
        _f(
            "correct_equation_share",
            "share of the written equations that are arithmetically right",
            '''
            def correct_equation_share(completion, reference=None, prompt=None):
                """Equations whose left side equals the right side, among all written
                (0.0 when there are none)."""
                equations = equations_in(completion)
                right = sum(1 for value, result in equations if value is not None and value == result)
                return right / len(equations) if equations else 0.0
            ''',
            needs=("equations_in",),
        ),
        _f(
            "wrong_equation_count",
            "equations that are arithmetically wrong",
            '''
            def wrong_equation_count(completion, reference=None, prompt=None):
                """How many written equations are wrong (or not plain arithmetic)."""
                return float(sum(1 for value, result in equations_in(completion) if value != result))
            ''',
            needs=("equations_in",),
        ),
        _f(
            "answer_follows_last_equation",
            "the final answer is the result of the last equation",
            '''
            def answer_follows_last_equation(completion, reference=None, prompt=None):
                """1.0 when the answer tag holds the right side of the last equation."""
                equations = equations_in(completion)
                answer = final_answer_number(completion)
                return 1.0 if equations and answer is not None and answer == equations[-1][1] else 0.0
            ''',
            needs=("equations_in", "final_answer_number"),
        ),
        _f(
            "prompt_numbers_used",
            "share of the prompt's numbers that the reasoning uses",
            '''
            def prompt_numbers_used(completion, reference=None, prompt=None):
                """Distinct numbers of the prompt that also appear in the response, among the
                prompt's distinct numbers (0.0 when the prompt has none)."""
                given = set(numbers_in_text(prompt or ""))
                used = set(numbers_in_text(completion))
                return len(given & used) / len(given) if given else 0.0
            ''',
            needs=("numbers_in_text",),
        ),
        _f(
            "tags_exact",
            "exactly one reasoning block then one answer block, nothing around",
            '''
            def tags_exact(completion, reference=None, prompt=None):
                """1.0 when the response is one non-empty THINK_TAG block followed by one
                non-empty ANSWER_TAG block, with only whitespace around them."""
                rest = completion
                for tag in (THINK_TAG, ANSWER_TAG):
                    opening, closing = "<" + tag + ">", "</" + tag + ">"
                    if completion.count(opening) != 1 or completion.count(closing) != 1:
                        return 0.0
                    rest = rest.strip()
                    end = rest.find(closing)
                    if not rest.startswith(opening) or end < 0 or not rest[len(opening) : end].strip():
                        return 0.0
                    rest = rest[end + len(closing) :]
                return 0.0 if rest.strip() else 1.0
            ''',
        ),
        _f(
            "tags_once_share",
            "share of the four tags that appear exactly once",
            '''
            def tags_once_share(completion, reference=None, prompt=None):
                """Opening and closing THINK_TAG and ANSWER_TAG tags written exactly once,
                among the four."""
                tags = ("<" + THINK_TAG + ">", "</" + THINK_TAG + ">", "<" + ANSWER_TAG + ">", "</" + ANSWER_TAG + ">")
                return sum(1 for tag in tags if completion.count(tag) == 1) / 4
            ''',
        ),
        _f(
            "text_outside_tags",
            "characters outside the tag blocks",
            '''
            def text_outside_tags(completion, reference=None, prompt=None):
                """Non-space characters outside the THINK_TAG and ANSWER_TAG blocks."""
                rest = completion
                for tag in (THINK_TAG, ANSWER_TAG):
                    # ends at the next opening tag: linear on many unclosed ones
                    block = "<" + tag + ">(?:(?!<" + tag + ">).)*?</" + tag + ">"
                    rest = re.sub(block, " ", rest, flags=re.DOTALL)
                return float(len("".join(rest.split())))
            ''',
            imports=("re",),
        ),
        _f(
            "answer_is_number",
            "the answer tag holds a single number",
            '''
            def answer_is_number(completion, reference=None, prompt=None):
                """1.0 when the last ANSWER_TAG block holds one number and nothing else."""
                return 0.0 if final_answer_number(completion) is None else 1.0
            ''',
            needs=("final_answer_number",),
        ),
        _f(
            "reasoning_steps",
            "sentences in the reasoning block",
            '''
            def reasoning_steps(completion, reference=None, prompt=None):
                """Sentences (text ending in '.', '!' or '?') inside the THINK_TAG block."""
                inner = tag_content(completion, THINK_TAG) or ""
                return float(len([s for s in re.split(r"[.!?](?:\\s|$)", inner) if s.strip()]))
            ''',
            imports=("re",),
            needs=("tag_content",),
        ),
        _f(
            "answer_closeness",
            "how close the answer's number is to the reference's",
            '''
            def answer_closeness(completion, reference=None, prompt=None):
                """1 / (1 + |answer - reference| / max(1, |reference|)) for the number in the
                answer tag and the reference's last number; 0.0 when either has none."""
                answer = final_answer_number(completion)
                expected = numbers_in_text(str(reference)) if reference is not None else []
                if answer is None or not expected:
                    return 0.0
                gap = abs(answer - expected[-1]) / max(1, abs(expected[-1]))
                return float(1 / (1 + gap))
            ''',
            needs=("final_answer_number", "numbers_in_text"),
        ),
        _f(
            "reference_in_reasoning",
            "the reference's number appears in the reasoning",
            '''
            def reference_in_reasoning(completion, reference=None, prompt=None):
                """1.0 when the reference's last number is among the reasoning's numbers."""
                expected = numbers_in_text(str(reference)) if reference is not None else []
                inner = tag_content(completion, THINK_TAG) or ""
                return 1.0 if expected and expected[-1] in numbers_in_text(inner) else 0.0
            ''',
            needs=("tag_content", "numbers_in_text"),
        ),
    )
}

FEATURE_INFO: dict[str, FeatureInfo] = {
    "line_count": FeatureInfo("count", (1, 2, 3, 5, 10)),
    "blank_line_share": FeatureInfo("share", (0.1, 0.25, 0.5)),
    "repeated_line_share": FeatureInfo("share", (0.1, 0.25, 0.5)),
    "char_length": FeatureInfo("chars", (40, 60, 80, 120, 200, 400)),
    "word_count": FeatureInfo("count", (3, 5, 10, 20, 40)),
    "arithmetic_density": FeatureInfo("share", (0.2, 0.3, 0.4, 0.5)),
    "equation_count": FeatureInfo("count", (1, 2, 3, 4)),
    "correct_equation_share": FeatureInfo("share", (0.5, 0.75, 1.0)),
    "wrong_equation_count": FeatureInfo("count", (0, 1, 2)),
    "answer_follows_last_equation": FeatureInfo("flag"),
    "prompt_numbers_used": FeatureInfo("share", (0.5, 0.75, 1.0)),
    "tags_exact": FeatureInfo("flag"),
    "tags_once_share": FeatureInfo("share", (0.5, 1.0)),
    "text_outside_tags": FeatureInfo("chars", (0, 5, 20, 50)),
    "answer_is_number": FeatureInfo("flag"),
    "reasoning_steps": FeatureInfo("count", (1, 2, 3, 4)),
    "answer_closeness": FeatureInfo("share", (0.5, 0.9), needs_reference=True),
    "reference_in_reasoning": FeatureInfo("flag", needs_reference=True),
}
assert set(FEATURE_INFO) == set(FEATURES), "every feature needs its FeatureInfo"
#: Constants the feature sources read; a program defines them (see `rewardsmith.search.program`).
FEATURE_CONSTANTS = {"MAX_DIGITS": 30, "MAX_EQUATIONS": 200}
#: Tag names programs use unless a task names others (the testbed's answer format).
DEFAULT_THINK_TAG = "thinking"
DEFAULT_ANSWER_TAG = "solution"
