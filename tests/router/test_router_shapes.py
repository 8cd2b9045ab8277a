"""Never guess a tool for an unknown task: references that hold digits but are no quantity
(dates, times, ranges, versions, identifiers) are free text, and the router does not send
them to a math tool."""

from __future__ import annotations

import pytest

from rewardsmith import Library, Sample
from rewardsmith.router import Router
from rewardsmith.router.features import reference_format, sample_format
from rewardsmith.router.options import parse_options

pytestmark = pytest.mark.usefixtures("embedder")


@pytest.mark.parametrize(
    ("reference", "fmt"),
    [
        # dates and times: free text, never arithmetic
        ("2019-10-23", "free_text"),
        ("2019-10-23T14:05:00Z", "free_text"),
        ("10/23/2019", "free_text"),
        ("23.10.2019", "free_text"),
        ("9:30", "free_text"),
        ("14:05:00", "free_text"),
        ("9:30 pm", "free_text"),
        # ranges, versions, identifiers
        ("3-5", "free_text"),
        ("10 to 20", "free_text"),
        ("1.2.3", "free_text"),
        ("AB-123", "free_text"),
        ("ID_7", "free_text"),
        ("550e8400-e29b-41d4-a716-446655440000", "free_text"),
        # quantities stay what they were
        ("42", "number"),
        ("-3.5", "number"),
        ("1,000", "number"),
        ("\\frac{1}{2}", "latex"),
        ("x+1", "latex"),
        ("#### 18", "number"),
    ],
)
def test_reference_format_reads_non_quantities_as_text(reference: str, fmt: str) -> None:
    assert reference_format(reference) == fmt


MONTHS = ["January", "March", "May", "July", "October", "December"]


def date_samples() -> list[Sample]:
    out = []
    for i, month in enumerate(MONTHS):
        day, year = 3 + i * 4, 2001 + i * 3
        iso = f"{year}-{MONTHS.index(month) * 2 + 1:02d}-{day:02d}"
        prompt = f"Convert {month} {day}, {year} to an ISO 8601 date."
        out.append(Sample(f"<answer>{iso}</answer>", prompt, iso))
    return out


def test_iso_date_answers_are_synthesized_not_routed_to_math(library: Library) -> None:
    with Router(library, log_events=False) as router:
        decisions = router.route(date_samples())
    assert all(d.label not in ("math", "gsm8k") for d in decisions), [d.label for d in decisions]


# A list the prompt wants in an order is a sequence; math-verify compares bare lists as sets
# and would pay any order (the question's own unsorted list included).
ORDERED = [
    ("Sort these numbers in descending order: 2, 3, 61, 50", "61, 50, 3, 2"),
    ("Sort these numbers in ascending order: 73, 8, 64", "8, 64, 73"),
    ("Arrange 9, 4, 7 from smallest to largest.", "4, 7, 9"),
    ("List the primes below 10 in increasing order.", "2, 3, 5, 7"),
    ("Reverse this list: 5, 1, 8", "8, 1, 5"),
]
# Lists whose order does not matter, and values that are no lists, stay what they were.
UNORDERED = [
    ("Find all real solutions of x^2 - x - 2 = 0, separated by commas.", "-1, 2", "latex"),
    ("Sort the fractions: which is larger?", "\\frac{1}{2}", "latex"),
    ("Sort these numbers and give the largest.", "61", "number"),
    ("Give the point where the lines meet.", "(2, -1)", "latex"),
]


@pytest.mark.parametrize(("prompt", "reference"), ORDERED)
def test_a_list_asked_for_in_order_is_no_set_of_values(prompt: str, reference: str) -> None:
    assert sample_format(reference, parse_options(prompt), prompt) == "free_text"


@pytest.mark.parametrize(("prompt", "reference", "fmt"), UNORDERED)
def test_lists_without_an_order_and_single_values_keep_their_format(
    prompt: str, reference: str, fmt: str
) -> None:
    assert sample_format(reference, parse_options(prompt), prompt) == fmt


def test_ordered_lists_are_not_routed_to_math(library: Library) -> None:
    samples = [Sample(f"The answer is {ref}.", prompt, ref) for prompt, ref in ORDERED]
    with Router(library, log_events=False) as router:
        decisions = router.route(samples)
    assert all(d.label not in ("math", "gsm8k") for d in decisions), [d.label for d in decisions]
