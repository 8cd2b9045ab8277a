"""Never guess a tool for an unknown task: references that hold digits but are no quantity
(dates, times, ranges, versions, identifiers) are free text, and the router does not send
them to a math tool."""

from __future__ import annotations

import pytest

from rewardsmith import Library, Sample
from rewardsmith.router import Router
from rewardsmith.router.features import reference_format

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
