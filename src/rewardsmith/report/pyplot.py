"""matplotlib's pyplot on the Agg backend (files only, no display), imported on first use,
and the one way a figure is saved (`save_figure`: drawn in memory, written with
`files.atomic_write`, so a symlink planted where a plot goes is replaced, not written
through)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rewardsmith.errors import MissingDependencyError
from rewardsmith.files import atomic_write


def pyplot() -> Any:
    """`matplotlib.pyplot` with the Agg backend; `MissingDependencyError` without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise MissingDependencyError("matplotlib", "rl") from exc
    return plt


def save_figure(fig: Any, path: str | Path, dpi: int = 100) -> Path:
    """Save `fig` to `path` (PNG unless its suffix names another format) and close it."""
    path = Path(path)
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, dpi=dpi, format=path.suffix.lstrip(".") or "png")
    finally:
        pyplot().close(fig)
    return atomic_write(path, buffer.getvalue())


def integer_ticks(axis: Any) -> None:
    """Ticks at whole numbers only on `axis` (`ax.xaxis` / `ax.yaxis`): steps, rounds, ranks
    and counts have no 2.5."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))
