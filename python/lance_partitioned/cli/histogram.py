"""The PNG histogram of rows per partition (``skew --png``). matplotlib is the optional extra
``lance-partitioned[plot]``; it is drawn with the Agg canvas directly (no pyplot, no global
backend switch)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from lance_partitioned.cli.app import CliError

__all__ = ["DPI", "FIGSIZE", "INSTALL_HINT", "write_histogram"]

FIGSIZE = (8.0, 4.5)
"""Inches; at :data:`DPI` the PNG is 800 x 450 pixels."""
DPI = 100
MAX_BINS = 60
INSTALL_HINT = "pip install 'lance-partitioned[plot]'"


def write_histogram(rows: Sequence[int], path: str, title: str) -> None:
    """Writes a histogram of ``rows`` (one value per partition) to the PNG file ``path``, with
    the median and the mean marked."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise CliError(f"--png needs matplotlib: {INSTALL_HINT}") from None
    import statistics

    fig = Figure(figsize=FIGSIZE, dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    values = list(rows)
    if values:
        bins = min(MAX_BINS, max(1, math.ceil(math.sqrt(len(values)))))
        ax.hist(values, bins=bins, color="#4878a8", edgecolor="white", linewidth=0.5)
        median = statistics.median(values)
        mean = statistics.fmean(values)
        ax.axvline(median, color="#d08030", linestyle="--", label=f"median {median:,.0f}")
        ax.axvline(mean, color="#a03040", linestyle=":", label=f"mean {mean:,.0f}")
        ax.legend(loc="upper right", fontsize="small")
    else:
        ax.text(0.5, 0.5, "no partitions", ha="center", va="center", transform=ax.transAxes)
    ax.set_title(title, fontsize="medium")
    ax.set_xlabel("rows per partition")
    ax.set_ylabel("partitions")
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=DPI)
