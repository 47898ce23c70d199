"""Bones for the simulated branches that Sapling gave none (the rotations from segment motion: addon/bone_maps.py).

Sapling's curve trees get a bone on every span, but its mesh trees only on the first ``armLevels`` levels,
and artists prune rigs by hand; the tree curve follows the armature through bone envelopes, so a branch
without bones would stand still in a baked animation while its parent sways. With *Bones for All
Branches* the bake adds one bone per span of every such branch, the way Sapling makes its own: named
``bone<spline>.<point>``, head and tail at the span's control points, envelope radii = the points' radii,
envelope distance 1 mm, the first bone of a branch parented to the bone of the parent span it grows from
(not connected), the others connected in a chain. Free Bake removes exactly those bones (their names are
kept on the armature object).
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy
import numpy as np

from .frames import metric

ADDED_BONES = "stiff_rods_added_bones"
ENVELOPE_DISTANCE = 0.001  # m, Sapling's


@dataclass
class BonePlan:
    """New bones, parents first: ``names``, ``parents`` (a bone name, existing or new, or None), ``head``
    and ``tail`` (k, 3) in armature space, envelope ``radius`` (k, 2) at head and tail, the model
    ``segments`` (k,) whose motion each bone follows."""

    names: list
    parents: list
    head: np.ndarray
    tail: np.ndarray
    radius: np.ndarray
    segments: np.ndarray


def plan_missing_bones(session) -> BonePlan | None:
    """The bones a Sapling tree lacks for its simulated branches (module docstring), or None."""
    src = session.source
    arm = src.armature
    have = {int(b) for b in src.bone_span[:, 0]}
    missing = [b for b in range(len(src.branches)) if b not in have]
    if arm is None or not missing:
        return None
    covering = {}  # (branch, span) -> bone name, for the parents of new branches
    for name, (b, k) in zip(src.bone_names, src.bone_span, strict=True):
        covering[(int(b), int(k))] = name

    def bone_at(branch, span):
        while span >= 0:  # a Sapling bone may span several points (boneStep): the last start ≤ span
            name = covering.get((branch, span))
            if name is not None:
                return name
            span -= 1
        return None

    inv = np.linalg.inv(metric(arm.matrix_world, session.unit))  # world metres → armature space
    existing = set(arm.data.bones.keys())
    parent_of = session.branch_map.branch_parent
    order: list[int] = []
    placed = set(have)
    while len(order) < len(missing):  # parents before children
        progress = False
        for b in missing:
            if b in placed:
                continue
            p = parent_of[b]
            if p is None or p[0] in placed:
                order.append(b)
                placed.add(b)
                progress = True
        if not progress:
            raise ValueError("Bones for All Branches: the branch hierarchy has a cycle")
    names: list[str] = []
    parents: list[str | None] = []
    heads, tails, radii, segs = [], [], [], []
    splines = src.curve.data.splines
    for b in order:
        pts, _ = src.branches[b]
        local = pts @ inv[:3, :3].T + inv[:3, 3]
        spline = src.spline_index[b]
        rad = np.empty(len(splines[spline].bezier_points))
        splines[spline].bezier_points.foreach_get("radius", rad)
        p = parent_of[b]
        for k in range(local.shape[0] - 1):
            name = f"bone{spline:03d}.{k:03d}"
            if name in existing:
                raise ValueError(f"Bones for All Branches: bone '{name}' exists already but has no span")
            parents.append(names[-1] if k else (bone_at(*p) if p is not None else None))
            names.append(name)
            covering[(b, k)] = name
            heads.append(local[k])
            tails.append(local[k + 1])
            radii.append((rad[k], rad[k + 1]))
            segs.append(session.branch_map.span_segment[b][k])
    return BonePlan(
        names, parents, np.array(heads), np.array(tails), np.array(radii, dtype=float), np.array(segs, dtype=np.int64)
    )


def check_editable(arm) -> bpy.types.ViewLayer:
    """Raise ValueError unless ``arm`` can enter edit mode (in the view layer, visible); returns the view layer."""
    view_layer = bpy.context.view_layer
    if view_layer is None or arm.name not in view_layer.objects or not arm.visible_get():
        raise ValueError(
            f"Bones for All Branches: armature '{arm.name}' must be visible to add bones; unhide it "
            "or turn the setting off"
        )
    return view_layer


def _edit_mode(arm):
    """Enter edit mode on ``arm``; returns what to restore with :func:`_leave`."""
    view_layer = check_editable(arm)
    state = (view_layer.objects.active, arm.mode)
    if bpy.context.mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")
    view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    return state


def _leave(state) -> None:
    active, mode = state
    bpy.ops.object.mode_set(mode="OBJECT")
    view_layer = bpy.context.view_layer
    if view_layer is not None:  # the one _edit_mode entered from
        view_layer.objects.active = active
    if mode != "OBJECT" and active is not None:
        bpy.ops.object.mode_set(mode=mode)


def add_bones(arm, plan: BonePlan) -> None:
    """Create the planned bones in ``arm`` and remember their names for Free Bake."""
    state = _edit_mode(arm)
    try:
        eb = arm.data.edit_bones
        for i, name in enumerate(plan.names):
            b = eb.new(name)
            b.head, b.tail = plan.head[i].tolist(), plan.tail[i].tolist()
            b.head_radius, b.tail_radius = float(plan.radius[i, 0]), float(plan.radius[i, 1])
            b.envelope_distance = ENVELOPE_DISTANCE
            if plan.parents[i] is not None:
                b.parent = eb[plan.parents[i]]
                b.use_connect = bool(i and plan.parents[i] == plan.names[i - 1])
    finally:
        _leave(state)
    arm[ADDED_BONES] = list(plan.names)


def remove_added_bones(arm) -> int:
    """Remove the bones a bake added (Free Bake); returns how many."""
    names = [n for n in arm.get(ADDED_BONES, []) if n in arm.data.bones]
    if names:
        state = _edit_mode(arm)
        try:
            eb = arm.data.edit_bones
            for n in names:
                eb.remove(eb[n])
        finally:
            _leave(state)
    if ADDED_BONES in arm:
        del arm[ADDED_BONES]
    return len(names)
