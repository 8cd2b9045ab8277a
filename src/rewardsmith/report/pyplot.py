"""matplotlib's pyplot on the Agg backend (files only, no display), imported on first use."""

from __future__ import annotations

from typing import Any

from rewardsmith.errors import MissingDependencyError


def pyplot() -> Any:
    """`matplotlib.pyplot` with the Agg backend; `MissingDependencyError` without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise MissingDependencyError("matplotlib", "rl") from exc
    return plt


def integer_ticks(axis: Any) -> None:
    """Ticks at whole numbers only on `axis` (`ax.xaxis` / `ax.yaxis`): steps, rounds, ranks
    and counts have no 2.5."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))
