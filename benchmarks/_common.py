"""The command line every benchmark shares: its docstring as ``--help``, ``--json``, and the report (one
line per result unless ``--json``, then the result as one JSON object, the last line on stdout)."""

import argparse
import json
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
