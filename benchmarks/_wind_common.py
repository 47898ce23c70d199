"""Shared by the wind benchmarks (wind_beam.py, tree_sway.py, storm.py): Sapling trees with materials and
leaves, and the kinetic-damping static solve."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sapling_data import load  # noqa: E402

from solver import Simulator  # noqa: E402
from solver.build import tree_builder  # noqa: E402
from solver.build.materials import Material  # noqa: E402


def sapling_tree(name: str, wood: Material, leaf: Material | None = None, scale: float = 1.0):
    """The Sapling preset ``name`` as a model of ``wood``, with its leaves as plate segments of ``leaf`` (if
    given and ``tree_builder.attach_leaves`` exists), every length × ``scale`` (a geometrically similar tree).
    Returns (model, branch_map, leaf segments, data) with ``data`` scaled."""
    data = dict(load(name))
    if scale != 1.0:
        data["branches"] = [(p * scale, r * scale) for p, r in data["branches"]]
        for key in ("leaf_stem", "leaf_center", "leaf_length", "leaf_width"):
            if key in data:
                data[key] = data[key] * scale
    model, branch_map = tree_builder.tree_from_branches(data["branches"], parents=data["parents"], **wood.rod_kwargs())
    attach = getattr(tree_builder, "attach_leaves", None)
    leaves = np.zeros(0, np.int64)
    if leaf is not None and attach is not None and "leaf_stem" in data:
        # sapling_data's leaf_stem, leaf_axis, ... are attach_leaves' per-leaf arguments stem, axis, ...
        per_leaf = {key: data[f"leaf_{key}"] for key in ("stem", "axis", "normal", "length", "width", "parent")}
        model, leaves = attach(
            model,
            branch_map,
            **per_leaf,
            density=leaf.density,
            youngs_modulus=leaf.youngs_modulus,
            torsion_modulus=leaf.torsion_modulus,
        )
    return model, branch_map, np.asarray(leaves, np.int64), data


def kinetic_damping(sim: Simulator, tol: float, max_steps: int) -> int:
    """Static equilibrium by kinetic damping: step with the velocities cleared after every step until no
    position moves more than ``tol`` [m] (then drag in still air vanishes, and a wind acts as on a body at
    rest). Returns the steps taken."""
    for k in range(1, max_steps + 1):
        before = sim.positions.copy()
        sim.step()
        sim.velocities[:] = 0.0
        sim.angular_velocities[:] = 0.0
        if np.max(np.abs(sim.positions - before)) < tol:
            return k
    return max_steps
