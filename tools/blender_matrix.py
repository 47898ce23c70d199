#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Blenders that Stiff Rods is tested on, and the Python environments that run them (plain Python, no bpy).

    python3 tools/blender_matrix.py list            # one line per Blender: version, Python, numpy, zip, status
    python3 tools/blender_matrix.py setup [VERSION]  # make the venvs of the bpy-module Blenders (all, or those named)

Debian's Blender 3.4 is the application (``blender -b``, the legacy zip, apt's numpy/scipy/numba). Every newer one
is Blender's ``bpy`` module from PyPI in a venv of its own under ``.venvs/``, with nothing else installed (the
extension's bundled wheels are what it runs); the development venv ``.venv`` (requirements-dev.txt) has bpy 5.0.1
too, with scipy and numba of its own, and runs the full test suite. The ``bpy`` module takes the venv's numpy, so
each venv pins the numpy of that Blender: 1.26.4 for 4.2-5.0 (the 1.26.x Blender bundles up to 5.0), 2.5.5 for 5.2
and 5.3 (what their ``bpy`` wheels resolve to, ``numpy>=2.2,<3``: the numpy 2.x of Blender 5.1+).

The extension zip a Blender takes is named by the Blender range it is built for (tools/build_extension.py):
``stiff_rods-<version>-blender4.2-5.0-<platform>.zip`` (Python 3.11 wheels) and
``stiff_rods-<version>-blender5.1+-<platform>.zip`` (Python 3.13 wheels).
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENVS = ROOT / ".venvs"


@dataclass(frozen=True)
class Blender:
    """One Blender of the test matrix."""

    version: str  # Blender's version, e.g. "5.2.3"
    python: str  # the Python it runs, "3.11" or "3.13"
    numpy: str  # the numpy its venv pins ("system": Debian's python3-numpy)
    zip_range: str  # which zip it takes: "legacy", "4.2-5.0" or "5.1+"
    venv: Path | None  # the venv with its bpy module; None for Debian's Blender (an application)
    lts: bool = False

    @property
    def series(self) -> str:
        return ".".join(self.version.split(".")[:2])

    @property
    def is_module(self) -> bool:
        return self.venv is not None

    @property
    def python_exe(self) -> Path | None:
        return None if self.venv is None else self.venv / "bin" / "python"

    def available(self) -> str | None:
        """None when this Blender can run here, else why not."""
        if self.venv is None:
            return None if shutil.which("blender") else "Debian's blender is not installed (apt-get install blender)"
        exe = self.python_exe
        if exe is None or not exe.exists():
            return f"{self.venv} does not exist (python3 tools/blender_matrix.py setup {self.version})"
        site = self.venv / "lib" / f"python{self.python}" / "site-packages"
        for name, version in (("bpy", self.version), ("numpy", self.numpy)):
            if not (site / f"{name}-{version}.dist-info").is_dir():
                return f"{self.venv} has no {name} {version} (python3 tools/blender_matrix.py setup {self.version})"
        return None

    def zip_name(self, package_version: str, platform: str = "linux-x64") -> str:
        if self.zip_range == "legacy":
            return f"stiff_rods-{package_version}-legacy.zip"
        return f"stiff_rods-{package_version}-blender{self.zip_range}-{platform.replace('-', '_')}.zip"


MATRIX = (
    Blender("3.4", "3.11", "system", "legacy", None),
    Blender("4.2.23", "3.11", "1.26.4", "4.2-5.0", VENVS / "blender-4.2", lts=True),
    Blender("5.0.1", "3.11", "1.26.4", "4.2-5.0", VENVS / "blender-5.0"),
    Blender("5.2.3", "3.13", "2.5.5", "5.1+", VENVS / "blender-5.2", lts=True),
    Blender("5.3.0", "3.13", "2.5.5", "5.1+", VENVS / "blender-5.3"),
)
NEWEST = MATRIX[-1]
NEWEST_LTS = [b for b in MATRIX if b.lts][-1]


def by_version(version: str) -> Blender:
    for blender in MATRIX:
        if blender.version == version or blender.series == version:
            return blender
    raise KeyError(f"no Blender {version} in the matrix: {', '.join(b.version for b in MATRIX)}")


def find_python(series: str) -> str | None:
    """An interpreter of Python ``series`` (e.g. "3.13") that runs: ``python3.13`` on PATH, then pyenv's (a pyenv
    shim on PATH fails when that version is not the active one)."""
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found = [shutil.which(f"python{series}")]
    found += sorted(glob.glob(str(pyenv_root / "versions" / f"{series}.*" / "bin" / f"python{series}")), reverse=True)
    for exe in filter(None, found):
        done = subprocess.run([exe, "-c", "import venv, sys; print(sys.version)"], capture_output=True, text=True)
        if done.returncode == 0 and done.stdout.startswith(series + "."):
            return exe
    return None


def setup(blender: Blender, required: bool = True) -> bool:
    """Make ``blender``'s venv with its bpy module and numpy pinned (Debian's Blender comes from apt). Without its
    Python: an error if ``required``, else a line that says so, and False."""
    if blender.venv is None:
        return True
    if blender.available() is None:
        print(f"blender_matrix: Blender {blender.version}: {blender.venv} is ready", flush=True)
        return True
    python = find_python(blender.python)
    if python is None:
        message = (
            f"Blender {blender.version} runs Python {blender.python}, which is not installed (Debian 13, "
            f"Ubuntu 24.10+: apt-get install python{blender.python}-venv; elsewhere pyenv install {blender.python})"
        )
        if required:
            raise SystemExit("blender_matrix: " + message)
        print(f"blender_matrix: SKIPPED {message}; its tests skip", flush=True)
        return False
    if not (blender.venv / "bin" / "python").exists():
        subprocess.run([python, "-m", "venv", str(blender.venv)], check=True)
    pip = [str(blender.venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, f"bpy=={blender.version}", f"numpy=={blender.numpy}"], check=True)
    print(
        f"blender_matrix: Blender {blender.version} (bpy module, numpy {blender.numpy}) in {blender.venv}", flush=True
    )
    return True


# Every Blender series the add-on installs in, oldest first: (series, its Python, numpy, zip range). The CI-tested
# versions come from MATRIX.
SERIES = (
    ("3.4–4.1", "3.10–3.11", "Blender's", "legacy"),
    ("4.2 LTS", "3.11", "1.26", "4.2-5.0"),
    ("4.3–4.5", "3.11", "1.26", "4.2-5.0"),
    ("5.0", "3.11", "1.26", "4.2-5.0"),
    ("5.1", "3.13", "2.x", "5.1+"),
    ("5.2 LTS", "3.13", "2.x", "5.1+"),
    ("5.3", "3.13", "2.x", "5.1+"),
    ("newer", "3.13", "2.x", "5.1+"),
)
TABLE_START, TABLE_END = "<!-- blender-table:start -->", "<!-- blender-table:end -->"


def _compiled(zip_range: str) -> str:
    """Where the zip for ``zip_range`` runs the compiled solver (tools/bundled_wheels.py)."""
    if zip_range == "legacy":
        return "with numba in Blender's Python (Debian: python3-numba)"
    if str(ROOT / "tools") not in sys.path:  # loaded by path (the tests), not run from tools/
        sys.path.insert(0, str(ROOT / "tools"))
    import bundled_wheels

    without = [p for p in bundled_wheels.PLATFORMS if p not in bundled_wheels.RANGES[zip_range].numba_platforms]
    return "yes" + (f", not on {', '.join(without)} (no numba wheel: numpy solver)" if without else "")


def _tested(series: str) -> str:
    lo, _, hi = series.split(" ")[0].partition("–")
    key = [int(v) for v in lo.split(".")] if lo != "newer" else [99]
    top = [int(v) for v in (hi or lo).split(".")] if lo != "newer" else [99]
    hits = [b.version for b in MATRIX if key <= [int(v) for v in b.series.split(".")] <= top]
    if lo == "newer":
        return f"no (installs; one INFO line names {NEWEST.series}, the newest tested)"
    return "yes: " + ", ".join(hits) if hits else "no"


def table() -> str:
    """The README's compatibility table: Blender × zip × Python × numpy × tested in CI × compiled solver."""
    rows = ["| Blender | zip | Python | numpy | tested in CI | compiled solver |", "|---|---|---|---|---|---|"]
    for series, python, numpy, zip_range in SERIES:
        name = (
            "`stiff_rods-<v>-legacy.zip`"
            if zip_range == "legacy"
            else f"`stiff_rods-<v>-blender{zip_range}-<platform>.zip`"
        )
        rows.append(f"| {series} | {name} | {python} | {numpy} | {_tested(series)} | {_compiled(zip_range)} |")
    return "\n".join(rows) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the matrix and which Blenders can run here")
    sub.add_parser("table", help="the README's compatibility table (markdown)")
    one = sub.add_parser("setup", help="make the bpy-module venvs")
    one.add_argument("version", nargs="*", help="only these Blenders (e.g. 5.2 or 5.2.3); default: all")
    one.add_argument(
        "--require-all", action="store_true", help="fail when a Blender's Python is missing (default: skip it)"
    )
    args = ap.parse_args(argv)
    if args.command == "list":
        for b in MATRIX:
            status = b.available() or "ready"
            kind = f"bpy module in {b.venv.relative_to(ROOT)}" if b.venv else "Debian's blender"
            print(f"{b.version:7} Python {b.python}  numpy {b.numpy:7} zip {b.zip_range:8} {kind}: {status}")
        return 0
    if args.command == "table":
        print(table(), end="")
        return 0
    chosen = [by_version(v) for v in args.version] if args.version else list(MATRIX)
    for blender in chosen:
        setup(blender, required=bool(args.version) or args.require_all)
    return 0


if __name__ == "__main__":
    sys.exit(main())
