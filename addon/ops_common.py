"""What every operator does alike: prepare the solver, find the trees it acts on, report what it leaves out."""

from __future__ import annotations

import bpy

from ..solver import known_compiled_status, prepare_compiled
from . import forest


def prepare_solver(op) -> None:
    """Load the compiled solver before the first model is built; the first start after an install compiles it
    (a few seconds) and says so. Without numba the numpy solver runs: a WARNING says it once (and the panel)."""
    known = known_compiled_status()
    if known is not None:
        return
    active, message = prepare_compiled(lambda text: op.report({"INFO"}, f"Stiff Rods: {text}"))
    if not active:
        op.report({"WARNING"}, f"Stiff Rods: {message}")


def report_skipped_colliders(op, s) -> None:
    """A WARNING for each Collision object ``s`` left out of its colliders when it last read them."""
    for message in s.skipped_colliders:
        op.report({"WARNING"}, message)


def chosen(context, check: bool):
    """The trees of a forest the operators act on (addon/forest.py:chosen), or None: the active object alone."""
    return forest.chosen(context, check)


def owners(found) -> list:
    return [bpy.data.objects[t.name] for t in found.trees]


def report_refused(op, found, level="WARNING") -> None:
    """One report per chosen object that is refused (and why); one for those that are no tree or curve."""
    for r in found.refused:
        op.report({level}, f"'{r.name}' " + ("cannot be baked" if level == "ERROR" else "left out") + f": {r.reason}")
    if found.ignored:
        names = ", ".join(r.name for r in found.ignored)
        op.report({"INFO"}, f"Not a tree or curve, left out: {names}")


def nothing_chosen(op, found) -> set:
    op.report(
        {"ERROR"},
        "No Sapling tree or curve to work on among the chosen objects (the selection, or the "
        "Forest Collection): select trees, or pick a collection that holds them",
    )
    return {"CANCELLED"}


def redraw_panels(context) -> None:
    for area in context.screen.areas if context.screen else ():
        if area.type == "VIEW_3D":
            area.tag_redraw()
