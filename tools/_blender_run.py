"""Shared by the tools that start Blender on their own file (render_birch.py, screenshot_panel.py): the same
script is the launcher (plain Python) and, given ``--worker`` after Blender's ``--``, the worker inside
Blender; the launcher runs Debian's Blender in an environment where it finds the system Python."""

import argparse
import os
import sys


def blender_env(**extra) -> dict:
    """This process's environment for Debian's Blender, plus the variables ``extra``.

    Debian's Blender finds its Python (with apt's numpy and scipy) through the python3 on PATH: the PYTHON*
    variables are dropped and this interpreter's bin folder (a venv's) is left out of PATH."""
    own_bin = os.path.realpath(os.path.dirname(sys.executable))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PATH"] = os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if p and os.path.realpath(p) != own_bin
    )
    env.update(extra)
    return env


def add_size(ap: argparse.ArgumentParser, flag: str, default: tuple[int, int], what: str) -> None:
    """An option ``flag W H`` (pixels); its help is ``what`` and the default."""
    ap.add_argument(
        flag,
        type=int,
        nargs=2,
        default=default,
        metavar=("W", "H"),
        help=f"{what} (default {default[0]} {default[1]})",
    )


def parse(ap: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``ap``'s arguments with the two every such tool has: ``--blender`` and the hidden ``--worker``."""
    ap.add_argument("--blender", default="blender", help="Blender binary (default: blender on PATH)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main(parse_args, launch, work) -> None:
    """Parse the arguments after Blender's ``--`` (inside Blender) or after the script's name, then run
    ``work`` (with ``--worker``) or ``launch``."""
    argv = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]
    args = parse_args(argv)
    if args.worker:
        work(args)
    else:
        launch(args)
