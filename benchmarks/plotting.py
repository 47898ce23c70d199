"""Plot helpers shared by the comparison benchmarks: PNGs go to docs/ when matplotlib is installed
(benchmarks/requirements.txt); without it the benchmarks still run and report ``"plot": null``."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pyplot():
    """matplotlib.pyplot on the Agg backend, or None when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def save(fig, name: str) -> str:
    """Write ``fig`` to docs/NAME (110 dpi) and return the path relative to the repository."""
    path = ROOT / "docs" / name
    path.parent.mkdir(exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return str(path.relative_to(ROOT))
