"""Plot helpers shared by the comparison benchmarks: a figure is drawn only when ``--plot PATH`` is given, and
written to PATH (matplotlib from benchmarks/requirements.txt; without it the benchmarks still run and report
``"plot": null``). A benchmark never writes into the repository unless PATH points there."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_plot_argument(ap: argparse.ArgumentParser, what: str) -> None:
    """Add ``--plot PATH`` to ``ap``: where to write the PNG of ``what`` (no plot without it)."""
    ap.add_argument("--plot", metavar="PATH", default=None, help=f"write {what} as a PNG to PATH (default: no plot)")


def pyplot(path: str | None = None):
    """matplotlib.pyplot on the Agg backend, or None when ``path`` is None or matplotlib is not installed."""
    if path is None:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def save(fig, path: str) -> str:
    """Write ``fig`` to ``path`` (110 dpi; its folder is made if missing) and return ``path``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(target, dpi=110)
    return str(path)
