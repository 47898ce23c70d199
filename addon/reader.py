"""Blender data → solver input: Sapling trees (armature + curve + leaves) and any curve object.

Sapling Tree Gen makes a curve ``tree`` (one Bézier spline per branch, radius per point, bevel
depth), an armature ``treeArm`` (bones ``bone<spline>.<point>`` spanning points k → k+1 of a
spline, hierarchy in bone parenting) and a mesh ``leaves``. The hierarchy is not on the curve, so
branch parents come from the bones where there are bones, and geometrically otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import bpy
import numpy as np

from ..solver import bezier_polyline, resample_polyline
from .frames import metric

BONE_NAME = re.compile(r"^bone(\d+)\.(\d+)$")


class ReadError(ValueError):
    """Input that cannot be simulated; the message is shown to the user as is."""


@dataclass
class TreeSource:
    curve: bpy.types.Object
    armature: bpy.types.Object | None
    leaves: bpy.types.Object | None
    branches: list  # [(points (K, 3) world m, radii (K,) m)]
    spline_index: list  # curve spline index of each branch
    parents: list  # (parent branch, parent span) from bones, or None
    bone_names: list = field(default_factory=list)
    bone_span: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))  # (branch, span) per bone
    bone_parent: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # index into bone_names or −1
    control_points: list = field(default_factory=list)  # plain curves: ControlPoints per branch
    curves: list = field(default_factory=list)  # Sapling trees: (dense points (M, 3) world m, span (M − 1,)) per branch


@dataclass
class ControlPoints:
    """The editable points of one spline, in the curve object's local frame [m]: what a curve bake keys."""

    spline: int  # index in curve.data.splines
    bezier: bool
    co: np.ndarray  # (K, 3)
    handle_left: np.ndarray | None  # (K, 3), Bézier only
    handle_right: np.ndarray | None
    w: np.ndarray | None  # (K,) NURBS/poly weight, kept as is


def read_control_points(curve, spline: int) -> ControlPoints:
    sp = curve.data.splines[spline]
    if sp.type == "BEZIER":
        pts = sp.bezier_points
        arrays = []
        for attr in ("co", "handle_left", "handle_right"):
            a = np.empty(3 * len(pts))
            pts.foreach_get(attr, a)
            arrays.append(a.reshape(-1, 3))
        return ControlPoints(spline, True, arrays[0], arrays[1], arrays[2], None)
    co4 = np.empty(4 * len(sp.points))
    sp.points.foreach_get("co", co4)
    co4 = co4.reshape(-1, 4)
    return ControlPoints(spline, False, co4[:, :3].copy(), None, None, co4[:, 3].copy())


def write_control_points(curve, cps: ControlPoints) -> None:
    sp = curve.data.splines[cps.spline]
    if cps.bezier:
        for attr in ("co", "handle_left", "handle_right"):
            sp.bezier_points.foreach_set(attr, np.ascontiguousarray(getattr(cps, attr)).ravel())
    else:
        assert cps.w is not None  # poly and NURBS points carry their weight
        sp.points.foreach_set("co", np.column_stack((cps.co, cps.w)).ravel())
    curve.data.update_tag()  # redraw: foreach_set does not tag the datablock itself


def is_sapling_armature(obj) -> bool:
    return (
        obj is not None
        and obj.type == "ARMATURE"
        and len(obj.data.bones) > 0
        and all(BONE_NAME.match(b.name) for b in obj.data.bones[:50])
        and any(c.type == "CURVE" for c in obj.children)
    )


def find_parts(obj):
    """(curve, armature, leaves) for a selected Sapling armature, Sapling curve or plain curve."""
    if obj is None:
        raise ReadError("Nothing selected: select a Sapling tree (its armature or curve) or a curve object")
    if obj.mode == "EDIT":
        raise ReadError(f"'{obj.name}' is in Edit Mode: switch to Object Mode first")
    if obj.type == "ARMATURE":
        if not is_sapling_armature(obj):
            raise ReadError(
                f"Armature '{obj.name}' is not a Sapling tree armature (bones 'bone<spline>.<point>' "
                "with a child curve): select a Sapling tree or a curve"
            )
        curve = next(c for c in obj.children if c.type == "CURVE")
        armature = obj
    elif obj.type == "CURVE":
        curve = obj
        armature = obj.parent if is_sapling_armature(obj.parent) else None
    else:
        raise ReadError(
            f"'{obj.name}' is a {obj.type.lower()}: select a Sapling tree (armature or curve) or a curve object"
        )
    leaves = next((c for c in curve.children if c.type == "MESH"), None)
    return curve, armature, leaves


SCALE_TOLERANCE = 1e-5  # relative spread of the singular values; float32 rotations through parents stay below 1e-6


def _fmt(values) -> str:
    return "(" + ", ".join(f"{v:.4g}" for v in values) + ")"


def check_transform(obj) -> None:
    """Refuse an object whose world matrix (parents included) the solver cannot represent: a mirror, a
    non-uniform scale or a shear, or a singular matrix. Rotation, translation and uniform scale are fine."""
    m = np.array(obj.matrix_world, dtype=float)[:3, :3]
    fix = "apply the scale (select it, its parents and the rest of its tree, Object > Apply > Scale)"
    if not np.all(np.isfinite(m)):
        raise ReadError(f"'{obj.name}' has a world matrix that is not finite: reset its transform")
    sv = np.linalg.svd(m, compute_uv=False)
    if sv[-1] <= 1e-12 * max(sv[0], 1e-300):
        raise ReadError(
            f"'{obj.name}' has zero scale on an axis in world space: Stiff Rods cannot simulate a flattened tree; "
            "give it a non-zero scale on every axis"
        )
    if np.linalg.det(m) < 0.0:
        raise ReadError(
            f"'{obj.name}' is mirrored (negative scale) in world space: Stiff Rods cannot simulate a "
            f"mirrored tree or curve; {fix} or remove the mirror"
        )
    if sv[0] - sv[-1] > SCALE_TOLERANCE * sv[0]:
        axes = np.linalg.norm(m, axis=0)
        cos = (m.T @ m) / np.outer(axes, axes)
        if np.all(np.abs(cos - np.eye(3)) <= SCALE_TOLERANCE):
            what = f"a non-uniform scale {_fmt(axes)}"
        else:
            what = f"a shear (scaled by {_fmt(sv)} along directions that are not its axes, e.g. from a parent)"
        raise ReadError(
            f"'{obj.name}' has {what} in world space: Stiff Rods needs the same scale on every axis; {fix} "
            "or scale it uniformly"
        )


def _uniform_scale(matrix) -> float:
    m = np.array(matrix)[:3, :3]
    return float(np.cbrt(abs(np.linalg.det(m))))


def read_curve_branches(curve, default_radius: float, segment_length: float | None = None, unit: float = 1.0):
    """World-space polylines and radii [m] of every spline with ≥ 2 distinct points; ``unit``: metres per
    Blender unit (the scene's Unit Scale).

    Radius = point radius × bevel depth × object scale (``default_radius``, in Blender units as the bevel
    depth, replaces the bevel depth of a curve without bevel). With ``segment_length`` [Blender units] each
    spline is evaluated (Bézier handles included) and resampled to segments of about that length; without it
    (Sapling trees, whose bones span control points) the control points are the segment ends, and the third
    value holds each spline as drawn: ``(dense points (M, 3) world m, span index (M − 1,))`` (Bézier
    handles included; empty for resampled curves)."""
    data = curve.data
    mw = metric(curve.matrix_world, unit)
    scale = _uniform_scale(curve.matrix_world)
    bevel = data.bevel_depth if data.bevel_depth > 0 else default_radius
    branches, index, curves = [], [], []
    for si, spline in enumerate(data.splines):
        handles = None
        if spline.type == "BEZIER":
            pts = spline.bezier_points
            co = np.empty(3 * len(pts))
            pts.foreach_get("co", co)
            hl = np.empty(3 * len(pts))
            pts.foreach_get("handle_left", hl)
            hr = np.empty(3 * len(pts))
            pts.foreach_get("handle_right", hr)
            handles = (hl.reshape(-1, 3), hr.reshape(-1, 3))
        else:
            pts = spline.points
            co4 = np.empty(4 * len(pts))
            pts.foreach_get("co", co4)
            co = co4.reshape(-1, 4)[:, :3].ravel()
        rad = np.empty(len(pts))
        pts.foreach_get("radius", rad)
        co = co.reshape(-1, 3)
        if co.shape[0] < 2:
            continue
        r = np.maximum(rad, 1e-3) * bevel * scale * unit
        if segment_length is not None:
            if handles is not None:
                co, r = bezier_polyline(co, handles[0], handles[1], r, cyclic=spline.use_cyclic_u)
            try:
                co, r = resample_polyline(co, r, segment_length / scale)
            except ValueError:
                raise ReadError(f"Curve '{curve.name}', spline {si} has zero length") from None
        if segment_length is None:
            # the curve as drawn, its span (control point interval) per piece: where a leaf meets its branch
            dense = bezier_polyline(co, handles[0], handles[1], r)[0] if handles is not None else co
            step = (dense.shape[0] - 1) // (co.shape[0] - 1)
            curves.append((dense @ mw[:3, :3].T + mw[:3, 3], np.arange(dense.shape[0] - 1) // step))
        world = co @ mw[:3, :3].T + mw[:3, 3]
        branches.append((world, r))
        index.append(si)
    if not branches:
        raise ReadError(f"Curve '{curve.name}' has no spline with at least 2 points: nothing to simulate")
    return branches, index, curves


def read_tree(obj, default_radius: float = 0.01, segment_length: float = 0.1, unit: float = 1.0) -> TreeSource:
    """Everything the solver needs from the selection, in metres (``unit``: metres per Blender unit); raises
    :class:`ReadError` naming the problem.

    Sapling trees keep one segment per bone span; other curves are resampled to ``segment_length``
    [Blender units, as the setting is shown: scene units]."""
    curve, armature, leaves = find_parts(obj)
    for part in (armature, curve, leaves):
        if part is not None:
            check_transform(part)
    branches, spline_index, curves = read_curve_branches(
        curve, default_radius, None if armature is not None else segment_length, unit
    )
    for b, (pts, _) in enumerate(branches):
        seg = np.linalg.norm(np.diff(pts, axis=0), axis=1)
        if np.any(seg <= 1e-9):
            k = int(np.argmax(seg <= 1e-9))
            raise ReadError(
                f"Curve '{curve.name}', spline {spline_index[b]}: points {k} and {k + 1} coincide (zero-length segment)"
            )
    src = TreeSource(curve, armature, leaves, branches, spline_index, [None] * len(branches), curves=curves)
    if armature is None:
        src.control_points = [read_control_points(curve, si) for si in spline_index]
        return src
    branch_of_spline = {s: b for b, s in enumerate(spline_index)}
    names, spans, parent_names = [], [], []
    for bone in armature.data.bones:
        m = BONE_NAME.match(bone.name)
        if not m:
            continue
        spline, point = int(m.group(1)), int(m.group(2))
        branch = branch_of_spline.get(spline)
        if branch is None or point >= len(branches[branch][0]) - 1:
            raise ReadError(
                f"Bone '{bone.name}' has no matching span on curve '{curve.name}' "
                "(the armature and the curve no longer belong together)"
            )
        if bone.length <= 1e-9:
            raise ReadError(f"Bone '{bone.name}' has zero length")
        names.append(bone.name)
        spans.append((branch, point))
        parent_names.append(bone.parent.name if bone.parent else None)
    lookup = {n: i for i, n in enumerate(names)}
    src.bone_names = names
    src.bone_span = np.array(spans, dtype=np.int64).reshape(-1, 2)
    src.bone_parent = np.array([lookup.get(p, -1) if p else -1 for p in parent_names], dtype=np.int64)
    for i, (b, point) in enumerate(spans):
        p = src.bone_parent[i]
        if point == 0 and p >= 0:
            pb, ps = spans[p]
            if pb != b:
                src.parents[b] = (pb, ps)
    return src


@dataclass
class LeafMesh:
    """Sapling's leaves mesh in world space: polygons, and the bone weights its Armature modifier uses."""

    co: np.ndarray  # (V, 3) world [m]
    co_local: np.ndarray  # (V, 3) float32, the mesh's own coordinates (restored exactly)
    loop_start: np.ndarray  # (L,)
    loop_total: np.ndarray  # (L,)
    loop_vertex: np.ndarray  # (loops,)
    weight_vertex: np.ndarray  # (W,) vertex of each (vertex, bone, weight) entry of a bone's vertex group
    weight_bone: np.ndarray  # (W,) index into TreeSource.bone_names
    weight: np.ndarray  # (W,) > 0
    matrix_world: np.ndarray  # (4, 4) of the leaves object at rest, to metres (frames.metric)


def read_leaf_mesh(leaves, bone_names, unit: float = 1.0) -> LeafMesh | None:
    """The leaves mesh of a Sapling tree (``unit``: metres per Blender unit), or None when it has no polygons."""
    me = leaves.data
    if len(me.polygons) == 0:
        return None
    mw = metric(leaves.matrix_world, unit)
    co_local = np.empty(3 * len(me.vertices), np.float32)
    me.vertices.foreach_get("co", co_local)
    co_local = co_local.reshape(-1, 3)
    co = co_local @ mw[:3, :3].T + mw[:3, 3]
    n = len(me.polygons)
    start = np.empty(n, np.int64)
    me.polygons.foreach_get("loop_start", start)
    total = np.empty(n, np.int64)
    me.polygons.foreach_get("loop_total", total)
    loops = np.empty(len(me.loops), np.int64)
    me.loops.foreach_get("vertex_index", loops)
    lookup = {name: i for i, name in enumerate(bone_names)}
    group_bone = np.array([lookup.get(g.name, -1) for g in leaves.vertex_groups], dtype=np.int64)
    entries = np.array(
        [(v.index, g.group, g.weight) for v in me.vertices for g in v.groups],  # once per convert
        dtype=float,
    ).reshape(-1, 3)
    wv, wg = entries[:, 0].astype(np.int64), entries[:, 1].astype(np.int64)
    bone = group_bone[wg]
    keep = (bone >= 0) & (entries[:, 2] > 0)  # groups that are no bone do not deform (Armature modifier)
    return LeafMesh(co, co_local, start, total, loops, wv[keep], bone[keep], entries[keep, 2], mw)


def hook_targets(curve, unit: float = 1.0) -> list:
    """(hook object, world position [m] of its first hooked control point) for each Hook modifier of ``curve``."""
    mw = metric(curve.matrix_world, unit)
    flat = []  # control point positions in the curve's index order
    for sp in curve.data.splines:
        if sp.type == "BEZIER":
            for p in sp.bezier_points:  # a Bézier point counts 3 hook indices: handle, point, handle
                flat += [p.handle_left, p.co, p.handle_right]
        else:
            flat += [p.co.xyz for p in sp.points]
    out = []
    for mod in curve.modifiers:
        if mod.type == "HOOK" and mod.object is not None and len(mod.vertex_indices):
            p = np.array(flat[mod.vertex_indices[0]])
            out.append((mod.object, mw[:3, :3] @ p + mw[:3, 3]))
    return out
