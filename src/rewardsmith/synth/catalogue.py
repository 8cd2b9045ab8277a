"""The catalogue of reward-program primitives: each one's source, summary, needs and cost.

Every source is a top-level function over the sandbox's import allowlist, with no dunder or
private names, so a program of them passes `rewardsmith.sandbox.check_reward_code`; the API
over the catalogue (compositions, rendering, evaluation) is `rewardsmith.synth.primitives`.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["extractor", "normalizer", "comparator", "feature"]


@dataclass(frozen=True)
class Primitive:
    """One building block: its Python source (a top-level `def name(...)`), what it does in
    one line, the helpers and modules it needs, and its cost in the simplicity order."""

    name: str
    kind: Kind
    summary: str
    source: str
    imports: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    cost: int = 1
    host: bool = False  # needs the host (the math tool): cannot run in the sandbox


def _p(name: str, kind: Kind, summary: str, source: str, **kw: Any) -> Primitive:
    return Primitive(name, kind, summary, textwrap.dedent(source).strip() + "\n", **kw)


# -- helpers used by several primitives ----------------------------------------------------

HELPERS: dict[str, Primitive] = {
    p.name: p
    for p in (
        _p(
            "list_separator",
            "normalizer",
            "how a list is written",
            '''
            def list_separator(text):
                """How a list is written: "[" for a JSON array, else the first of a comma,
                a semicolon or a new line that the text contains, else a space."""
                text = text.strip()
                if text.startswith("[") and text.endswith("]"):
                    try:
                        if isinstance(json.loads(text), list):
                            return "["
                    except ValueError:
                        pass
                for separator in (",", ";", "\\n"):
                    if separator in text:
                        return separator
                return " "
            ''',
            imports=("json",),
        ),
        _p(
            "list_items",
            "normalizer",
            "the items of a list",
            '''
            def list_items(text, separator=None):
                """The items of a list written with `separator` (see list_separator; found
                from the text itself when None), each stripped; None when the text is not
                such a list."""
                text = text.strip()
                separator = separator or list_separator(text)
                if separator == "[":
                    try:
                        value = json.loads(text)
                    except ValueError:
                        return None
                    if not isinstance(value, list):
                        return None
                    return [item if isinstance(item, str) else json.dumps(item)
                            for item in value]
                if separator == " ":
                    return text.split()
                return [item.strip() for item in text.split(separator)]
            ''',
            imports=("json",),
            needs=("list_separator",),
        ),
        _p(
            "number_value",
            "normalizer",
            "a number's exact value",
            '''
            def number_value(text):
                """The exact value of a number written as 12, -3.5, 1,000, 3/4 or 25%, or None."""
                text = text.strip().replace(",", "").replace("$", "")
                scale = 1
                if text.endswith("%"):
                    text, scale = text[:-1], 100
                try:
                    return Fraction(text) / scale
                except (ValueError, ZeroDivisionError):
                    return None
            ''',
            imports=("fractions.Fraction",),
        ),
    )
}

# -- extractors: completion text -> answer text or None -----------------------------------

EXTRACTORS: dict[str, Primitive] = {
    p.name: p
    for p in (
        _p(
            "answer_in_tags",
            "extractor",
            "the text inside the last <answer>...</answer> tags",
            '''
            def answer_in_tags(text):
                """The text inside the last <answer>...</answer> tags, or None."""
                # an attempt ends at the next opening tag: linear on many unclosed ones
                found = re.findall(r"<answer>((?:(?!<answer>).)*?)</answer>", text, flags=re.DOTALL)
                return found[-1].strip() if found else None
            ''',
            imports=("re",),
            cost=0,
        ),
        _p(
            "boxed_answer",
            "extractor",
            "the content of the last \\boxed{...}",
            '''
            def boxed_answer(text):
                """The content of the last \\\\boxed{...} (nested braces allowed), or None."""
                start = text.rfind("\\\\boxed{")
                if start < 0:
                    return None
                begin = start + len("\\\\boxed{")
                depth = 0
                for i in range(begin, len(text)):
                    if text[i] == "{":
                        depth += 1
                    elif text[i] == "}":
                        if depth == 0:
                            return text[begin:i].strip()
                        depth -= 1
                return None
            ''',
            cost=0,
        ),
        _p(
            "json_answer_field",
            "extractor",
            'the "answer" field of the last JSON object',
            '''
            def json_answer_field(text):
                """The "answer" field of the last JSON object in the text, as text, or None."""
                decoder = json.JSONDecoder()
                starts = [i for i, ch in enumerate(text) if ch == "{"][-20:]
                for start in reversed(starts):
                    try:
                        value, _ = decoder.raw_decode(text, start)
                    except ValueError:
                        continue
                    if isinstance(value, dict) and "answer" in value:
                        answer = value["answer"]
                        return answer if isinstance(answer, str) else json.dumps(answer)
                return None
            ''',
            imports=("json",),
            cost=0,
        ),
        _p(
            "answer_after_hashes",
            "extractor",
            "the text after the last '####'",
            '''
            def answer_after_hashes(text):
                """The rest of the line after the last '####', or None."""
                found = re.findall(r"####[ \\t]*(.+)", text)
                return found[-1].strip() if found else None
            ''',
            imports=("re",),
            cost=0,
        ),
        _p(
            "answer_after_phrase",
            "extractor",
            "the rest of the line after the last 'answer is' or 'answer:'",
            '''
            def answer_after_phrase(text):
                """The rest of the line after the last "answer is" or "answer:", or None."""
                found = re.findall(
                    r"\\banswer[ \\t]*(?:is|:)[ \\t:]*([^\\s:].*)", text, flags=re.IGNORECASE
                )
                if not found:
                    return None
                answer = found[-1].strip().strip("*").strip()
                return answer or None
            ''',
            imports=("re",),
            cost=0,
        ),
        _p(
            "code_block",
            "extractor",
            "the content of the last ``` fenced block",
            '''
            def code_block(text):
                """The content of the last ``` fenced block, or None."""
                found = re.findall(r"```[^\\n]*\\n(.*?)```", text, flags=re.DOTALL)
                return found[-1].strip() if found else None
            ''',
            imports=("re",),
            cost=0,
        ),
        _p(
            "last_line",
            "extractor",
            "the last non-empty line",
            '''
            def last_line(text):
                """The last non-empty line, stripped, or None."""
                lines = [line.strip() for line in text.splitlines() if line.strip()]
                return lines[-1] if lines else None
            ''',
            cost=0,
        ),
        _p(
            "last_number",
            "extractor",
            "the last number",
            '''
            def last_number(text):
                """The last number in the text (thousands separators removed), or None."""
                found = re.findall(r"-?\\d{1,3}(?:,\\d{3})+(?:\\.\\d+)?|-?\\d+(?:\\.\\d+)?", text)
                return found[-1].replace(",", "") if found else None
            ''',
            imports=("re",),
            # It reads a number out of almost anything: used only when no marker fits.
            cost=3,
        ),
        _p(
            "whole_text",
            "extractor",
            "the whole completion",
            '''
            def whole_text(text):
                """The whole completion, stripped, or None when it is empty."""
                return text.strip() or None
            ''',
            cost=0,
        ),
        *(
            _p(
                name,
                "extractor",
                f"the final answer in every common style{what}",
                f'''
                def {name}(text):
                    """The final answer in any common style{what} (read_final)."""
                    found = read_final(text, {sentence})
                    return None if found is None else found[1]
                ''',
                cost=cost,
            )
            for name, what, sentence, cost in (
                ("answer_in_any_style", "", True, 0),
                ("answer_in_any_style_as_written", ", its period kept", False, 1),
            )
        ),
    )
}
# What CodeVerify reads answers with (as written: a labeled example counts a period).
ANY_STYLE, ANY_STYLE_AS_WRITTEN = "answer_in_any_style", "answer_in_any_style_as_written"

# -- normalizers: text -> text, applied to the answer and the reference --------------------

NORMALIZERS: dict[str, Primitive] = {
    p.name: p
    for p in (
        _p(
            "lowercase",
            "normalizer",
            "lower case",
            '''
            def lowercase(text):
                """Lower case: the task accepts any capitalization."""
                return text.lower()
            ''',
        ),
        _p(
            "collapse_whitespace",
            "normalizer",
            "runs of whitespace as one space",
            '''
            def collapse_whitespace(text):
                """Runs of spaces, tabs and new lines as one space, none at the ends."""
                return " ".join(text.split())
            ''',
        ),
        _p(
            "remove_whitespace",
            "normalizer",
            "no whitespace at all",
            '''
            def remove_whitespace(text):
                """No whitespace at all: the task ignores spacing."""
                return "".join(text.split())
            ''',
        ),
        _p(
            "strip_punctuation",
            "normalizer",
            "no punctuation, quotes or $ at the ends",
            '''
            def strip_punctuation(text):
                """No punctuation, quotes, emphasis or $ signs at either end."""
                return text.strip().strip(".,;:!?'\\"`*$").strip()
            ''',
        ),
        _p(
            "canonical_numbers",
            "normalizer",
            "numbers without thousands separators, plus signs or trailing zeros",
            '''
            def canonical_numbers(text):
                """Every number written one way: 1,000.50 -> 1000.5, +3 -> 3, 2.0 -> 2."""

                def canonical(match):
                    number = match.group(0).replace(",", "").lstrip("+")
                    if "." in number:
                        number = number.rstrip("0").rstrip(".")
                    return "0" if number in ("", "-", "-0") else number

                return re.sub(
                    r"[-+]?\\d{1,3}(?:,\\d{3})+(?:\\.\\d+)?|[-+]?\\d+(?:\\.\\d+)?", canonical, text
                )
            ''',
            imports=("re",),
        ),
        _p(
            "canonical_list",
            "normalizer",
            "any list syntax written as 'a, b, c'",
            '''
            def canonical_list(text):
                """Any list syntax ([...] with either quote, commas, spaces) as 'a, b, c'."""
                text = text.strip()
                if text.startswith("[") and text.endswith("]"):
                    text = text[1:-1]
                items = list_items(text)
                return ", ".join(item.strip("'\\" ") for item in items or [text])
            ''',
            needs=("list_items",),
        ),
        _p(
            "sort_items",
            "normalizer",
            "list items in sorted order",
            '''
            def sort_items(text):
                """The list's items in sorted order: the task accepts any order."""
                text = text.strip()
                if text.startswith("["):
                    try:
                        value = json.loads(text)
                    except ValueError:
                        value = None
                    if isinstance(value, list):
                        return json.dumps(sorted(value, key=json.dumps))
                return ", ".join(sorted(list_items(text) or [text]))
            ''',
            imports=("json",),
            needs=("list_items",),
        ),
        _p(
            "sort_nested_items",
            "normalizer",
            "items sorted at every level of nesting",
            '''
            def sort_nested_items(text):
                """Lists sorted at every level of nesting (groups of groups in any order)."""

                def sort_all(value):
                    if isinstance(value, list):
                        return sorted((sort_all(item) for item in value), key=json.dumps)
                    return value

                try:
                    return json.dumps(sort_all(json.loads(text)))
                except ValueError:
                    return text
            ''',
            imports=("json",),
            cost=2,
        ),
    )
}
# Normalizers run in this order whatever order a composition lists them in: case and
# whitespace before punctuation, number formats before list parsing, sorting last.
NORMALIZER_ORDER: tuple[str, ...] = tuple(NORMALIZERS)

# -- comparators: (answer, reference) -> bool ------------------------------------------

COMPARATORS: dict[str, Primitive] = {
    p.name: p
    for p in (
        _p(
            "same_text",
            "comparator",
            "the same text",
            '''
            def same_text(answer, reference):
                """The same text, character for character."""
                return answer == reference
            ''',
            cost=0,
        ),
        _p(
            "same_number",
            "comparator",
            "the same numeric value",
            '''
            def same_number(answer, reference):
                """The same numeric value (1/2 = 0.5 = 50%)."""
                a, b = number_value(answer), number_value(reference)
                return a is not None and b is not None and a == b
            ''',
            needs=("number_value",),
        ),
        _p(
            "same_sequence",
            "comparator",
            "the same items in the same order",
            '''
            def same_sequence(answer, reference):
                """The same items in the same order, listed the way the reference lists
                them (spacing around separators ignored)."""
                separator = list_separator(reference)
                items = list_items(answer, separator)
                return items is not None and items == list_items(reference, separator)
            ''',
            needs=("list_separator", "list_items"),
        ),
        _p(
            "same_json",
            "comparator",
            "the same JSON value",
            '''
            def same_json(answer, reference):
                """The same JSON value (spacing ignored); False when either is not JSON."""
                try:
                    return json.loads(answer) == json.loads(reference)
                except ValueError:
                    return False
            ''',
            imports=("json",),
        ),
        _p(
            "same_items",
            "comparator",
            "the same items in any order",
            '''
            def same_items(answer, reference):
                """The same items, each as often, in any order, listed the way the reference
                lists them."""
                separator = list_separator(reference)
                items = list_items(answer, separator)
                expected = list_items(reference, separator)
                if items is None or expected is None:
                    return False
                return sorted(items) == sorted(expected)
            ''',
            needs=("list_items",),
            cost=2,
        ),
        _p(
            "math_equivalent",
            "comparator",
            "mathematically equivalent (the math tool, math-verify)",
            '''
            def math_equivalent(answer, reference):
                """Mathematically equivalent, decided by rewardsmith's `math` tool
                (math-verify); the host provides it, it is not part of this program."""
                raise NotImplementedError("provided by rewardsmith.synth.tools.MathComposedTool")
            ''',
            # Costlier than any sandboxed composition of equal shape: it needs the host.
            cost=4,
            host=True,
        ),
    )
}

PRIMITIVES: dict[str, Primitive] = {**EXTRACTORS, **NORMALIZERS, **COMPARATORS}
# Reference extractors: for references that carry a worked solution ("... #### 18") or a
# boxed answer rather than the bare answer.
REFERENCE_EXTRACTORS: tuple[str, ...] = ("answer_after_hashes", "boxed_answer")
