"""The command line every benchmark shares: its docstring as ``--help``, ``--json``, and the report (one
line per result unless ``--json``, then the result as one JSON object, the last line on stdout)."""

import argparse
import json
import statistics
from collections.abc import Iterable


def arguments(doc: str | None) -> argparse.ArgumentParser:
    """A parser that shows the benchmark's docstring ``doc`` as written and has the ``--json`` flag."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="print only the JSON result (the last line on stdout)")
    return ap


def report(result: dict, as_json: bool, line: str = "{:>28}: {}", summary: Iterable[str] | None = None) -> None:
    """Print ``result``: unless ``as_json``, the lines of ``summary`` (by default a ``line.format(key, value)``
    per item of ``result``), then ``result`` as one JSON line. A generator as ``summary`` formats nothing in
    a ``--json`` run."""
    if not as_json:
        lines = summary if summary is not None else (line.format(key, value) for key, value in result.items())
        for text in lines:
            print(text)
    print(json.dumps(result))


def contact_convergence(reports) -> dict:
    """Over the steps with contact rows of ``reports`` (``Contacts.reports``): their count, the share at the
    iteration cap, the median iterations, the share the schur method solved with XPBD's iteration."""
    reps = [r for r in reports if r.rows]
    n = max(len(reps), 1)
    return {
        "contact_steps": len(reps),
        "cap_share": sum(r.hit_cap for r in reps) / n,
        "median_iterations": float(statistics.median(r.iterations for r in reps)) if reps else 0.0,
        "xpbd_fraction": sum(r.xpbd for r in reps) / n,
    }
