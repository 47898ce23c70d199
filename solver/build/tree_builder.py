"""Build a rod forest from branch polylines: one segment per span, branches joined where they start.

This is how trees and multi-spline curves become a :class:`RodModel`: a branch is a polyline with a
radius per point; its segments are joined end to end, and its first point is attached to the span
of an earlier branch that passes through it (given explicitly, e.g. from Sapling's bone parents, or
found geometrically). A root branch is clamped at its first point by a kinematic anchor segment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

from ..core import quaternion as quat
from ..core.model import (
    DEFAULT_SHEAR_COEFFICIENT,
    DEFAULT_STRETCH_COMPLIANCE,
    JOINT_KINDS,
    STRETCH_MODES,
    RodModel,
    _cumulative_left_product,
)


@dataclass
class BranchMap:
    """Where each input item went: ``span_segment[b][k]`` is the segment of span k (points k → k+1) of
    branch b; ``branch_parent[b]`` is ``(parent branch, parent span)`` or ``None`` for a root;
    ``anchors`` the pinned anchor segments (one per root branch)."""

    span_segment: list
    branch_parent: list
    anchors: np.ndarray


def _frames(points: np.ndarray) -> np.ndarray:
    """Parallel-transported unit quaternions whose local +z follows each span of a polyline."""
    d = np.diff(points, axis=0)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    q0 = quat.from_two_vectors(np.array([0.0, 0.0, 1.0]), d[0])
    transport = quat.from_two_vectors(d[:-1], d[1:]) if d.shape[0] > 1 else np.zeros((0, 4))
    return quat.normalize(quat.multiply(_cumulative_left_product(transport), q0))


def _turn_to_hinge(q: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """A branch's frames ``q`` turned about their own axes alike, so that the first one's d1 is ``axis``'s
    component across it (unchanged when ``axis`` is along it)."""
    d = quat.rotate(q[0], np.array([0.0, 0.0, 1.0]))
    across = axis - np.dot(axis, d) * d
    if np.linalg.norm(across) < 1e-6:
        return q
    x = quat.rotate(q[0], np.array([1.0, 0.0, 0.0]))
    angle = np.arctan2(np.dot(np.cross(x, across), d), np.dot(x, across))
    turn = np.array([np.cos(angle / 2), 0.0, 0.0, np.sin(angle / 2)])
    return quat.normalize(quat.multiply(q, np.broadcast_to(turn, q.shape)))


def _root_joint_axis(kind: str, axis, frame) -> np.ndarray:
    """``joint_axis`` of a root joint: a rail's direction in the anchor's frame ``frame``; a hinge's section axis
    of the first segment (whose frame :func:`_turn_to_hinge` turned to it): d1 across the rod, d3 along it."""
    if axis is None:
        return np.array([0.0, 0.0, 1.0])
    if kind == "rail":
        return quat.rotate_inverse(frame, axis)
    if kind == "hinge":
        d = quat.rotate(frame, np.array([0.0, 0.0, 1.0]))
        across = np.linalg.norm(axis - np.dot(axis, d) * d)
        return np.array([1.0, 0.0, 0.0]) if across >= 1e-6 else np.array([0.0, 0.0, 1.0])
    return np.array([0.0, 0.0, 1.0])


def _as_branches(branches):
    """``[(points (K, 3), radii (K,))]`` as float arrays (a scalar radius is broadcast)."""
    return [(np.asarray(p, float), np.broadcast_to(np.asarray(r, float), (len(p),)).copy()) for p, r in branches]


def find_parent_spans(branches, max_distance_factor: float = 3.0):
    """For every branch, the earlier branch span nearest to its first point, if that point lies within
    ``max_distance_factor`` × the parent's radius there (a child starts inside its parent's bark).
    Returns a list of ``(parent branch, span, distance)`` or ``None``."""
    branches = _as_branches(branches)
    starts, owner, span, radius = [], [], [], []
    samples = 8
    t = (np.arange(samples) + 0.5) / samples
    for b, (pts, rad) in enumerate(branches):
        a, c = pts[:-1], pts[1:]
        p = a[:, None, :] + t[None, :, None] * (c - a)[:, None, :]
        starts.append(p.reshape(-1, 3))
        owner.append(np.full(p.shape[0] * samples, b))
        span.append(np.repeat(np.arange(a.shape[0]), samples))
        r = rad[:-1, None] + t[None, :] * (rad[1:] - rad[:-1])[:, None]
        radius.append(r.ravel())
    pts_all = np.concatenate(starts)
    owner = np.concatenate(owner)
    span = np.concatenate(span)
    radius = np.concatenate(radius)
    tree = cKDTree(pts_all)
    result: list[tuple[int, int, float] | None] = []
    for b, (pts, _) in enumerate(branches):
        if b == 0:
            result.append(None)
            continue
        k = min(64, pts_all.shape[0])
        dist, idx = tree.query(pts[0], k=k)
        ok = owner[idx] < b
        if not np.any(ok):
            result.append(None)
            continue
        # exact distance to the candidate spans (closest point on the chord)
        best = None
        for i in idx[ok]:
            pb, s = int(owner[i]), int(span[i])
            a, c = branches[pb][0][s], branches[pb][0][s + 1]
            ac = c - a
            u = np.clip(np.dot(pts[0] - a, ac) / np.dot(ac, ac), 0.0, 1.0)
            d = float(np.linalg.norm(a + u * ac - pts[0]))
            r = branches[pb][1][s] * (1 - u) + branches[pb][1][s + 1] * u
            if d <= max_distance_factor * r + 1e-9 and (best is None or d < best[2]):
                best = (pb, s, d)
        result.append(best)
    return result


@dataclass(frozen=True)
class TreeOptions:
    """How :func:`tree_from_branches` makes the rods: material, stretch model, root support and rest shape.

    ``youngs_modulus``, ``torsion_modulus`` [Pa] (None: E / (2 (1 + ν)), ν = 0.3) and ``density`` [kg/m³].
    ``stretch``: ``"inextensible"`` (``stretch_compliance`` [m/N] in every position row, for trees) or
    ``"physical"`` (stretch ``l/(E A)``, shear ``l/(κ G A)``, κ = ``shear_coefficient``), as in
    :func:`solver.core.model.rod_from_polyline`. With ``pin_roots`` each root branch is held at its first point
    by a pinned anchor segment (the joint's Darboux length is half a segment, as for a clamped beam), jointed by
    ``root_joint``, a kind of :data:`JOINT_KINDS` (``"clamp"``, ``"ball"``, ``"ball_twist_lock"``, ``"hinge"``,
    ``"rail"``). ``root_axis``: a world direction (3,), or None for the root span's own axis: the rail's
    direction, or the hinge's axis (the branch's material frames are turned about its axis so that their d1 is
    the given axis's component across the first span; an axis along the span makes a twist hinge). ``rest``:
    None (the rest shape is the drawn pose) or ``"straight"`` (the joints along a branch and to its root anchor
    are straight at rest; junctions keep the drawn angle of a branch to its parent).
    """

    youngs_modulus: float
    torsion_modulus: float | None = None
    density: float = 1000.0
    pin_roots: bool = True
    stretch_compliance: float = DEFAULT_STRETCH_COMPLIANCE
    root_joint: str = "clamp"
    root_axis: Any = None
    stretch: str = "inextensible"
    shear_coefficient: float = DEFAULT_SHEAR_COEFFICIENT
    rest: str | None = None


def _root_axis_world(options: TreeOptions) -> np.ndarray | None:
    """The options' checked, then the root axis as a unit world direction (None when not given)."""
    if options.root_joint not in JOINT_KINDS:
        raise ValueError(f"root_joint: {options.root_joint!r} is not a joint kind; use one of {', '.join(JOINT_KINDS)}")
    if options.stretch not in STRETCH_MODES:
        raise ValueError(f"stretch must be one of {STRETCH_MODES}, got {options.stretch!r}")
    if options.rest not in (None, "straight"):
        raise ValueError(f"rest must be None or 'straight', got {options.rest!r}")
    if options.root_axis is None:
        return None
    axis_world = np.asarray(options.root_axis, float).reshape(3)
    if not (np.all(np.isfinite(axis_world)) and np.linalg.norm(axis_world) > 1e-12):
        raise ValueError(f"root_axis must be a finite non-zero direction, got {axis_world.tolist()}")
    return axis_world / np.linalg.norm(axis_world)


def _check_branches(branches) -> None:
    """Every branch has at least 2 finite points, positive radii and spans of non-zero length."""
    for b, (p, r) in enumerate(branches):
        if p.ndim != 2 or p.shape[1] != 3 or p.shape[0] < 2:
            raise ValueError(f"branch {b}: needs at least 2 points of shape (K, 3), got {p.shape}")
        if not (np.all(np.isfinite(p)) and np.all(np.isfinite(r))):
            raise ValueError(f"branch {b}: points and radii must be finite")
        if np.any(r <= 0):
            raise ValueError(f"branch {b}: radius at point {int(np.argmax(r <= 0))} must be > 0")
        seg = np.linalg.norm(np.diff(p, axis=0), axis=1)
        if np.any(seg <= 0):
            raise ValueError(f"branch {b}: span {int(np.argmax(seg <= 0))} has zero length")


def _parent_spans(branches, parents) -> list[tuple[int, int] | None]:
    """``(parent branch, parent span)`` or None (a root) per branch: as given in ``parents``, else found by
    :func:`find_parent_spans`."""
    need_search = parents is None or any(x is None for x in parents)
    found = find_parent_spans(branches) if need_search else None
    parent_of: list[tuple[int, int] | None] = []
    for b in range(len(branches)):
        given = parents[b] if parents is not None else None
        if given is not None:
            parent_of.append((int(given[0]), int(given[1])))
        elif found is not None and found[b] is not None:
            parent_of.append(found[b][:2])
        else:
            parent_of.append(None)
    return parent_of


class _TreeArrays:
    """The segment and joint arrays of a tree, gathered per branch and per junction or root anchor (arrays, or
    one-element lists) and concatenated by :meth:`model`."""

    def __init__(self) -> None:
        self.pos: list[np.ndarray] = []
        self.ori: list[np.ndarray] = []
        self.length: list[np.ndarray | list] = []
        self.radius: list[np.ndarray | list] = []
        self.pinned: list[np.ndarray | list] = []
        self.jp: list[np.ndarray | list] = []
        self.jc: list[np.ndarray | list] = []
        self.pp: list[np.ndarray] = []
        self.pc: list[np.ndarray] = []
        self.jr: list[np.ndarray | list] = []
        self.jl: list[np.ndarray | list] = []
        self.span_segment: list[np.ndarray] = []
        self.anchors: list[int] = []
        self.along: list[np.ndarray | list] = []  # per joint: straight at rest with rest="straight" (not a junction)
        self.root_joints: list[int] = []  # input index of each root joint
        self.root_axes: list[np.ndarray] = []  # and its axis (anchor or child frame)
        self.m = 0  # joints so far
        self.n = 0  # segments so far

    def add_branch(self, p: np.ndarray, r: np.ndarray, q: np.ndarray) -> None:
        """One segment per span of the polyline ``p`` (radii ``r`` at its points, frames ``q``), jointed end to
        end at its interior points."""
        seg_len = np.linalg.norm(np.diff(p, axis=0), axis=1)
        k = seg_len.size
        idx = self.n + np.arange(k)
        self.span_segment.append(idx)
        self.pos.append(0.5 * (p[:-1] + p[1:]))
        self.ori.append(q)
        self.length.append(seg_len)
        self.radius.append(0.5 * (r[:-1] + r[1:]))
        self.pinned.append(np.zeros(k, bool))
        self.n += k
        if k > 1:  # joints along the branch, at its interior points
            self.jp.append(idx[:-1])
            self.jc.append(idx[1:])
            self.pp.append(np.stack((np.zeros(k - 1), np.zeros(k - 1), 0.5 * seg_len[:-1]), 1))
            self.pc.append(np.stack((np.zeros(k - 1), np.zeros(k - 1), -0.5 * seg_len[1:]), 1))
            self.jr.append(r[1:-1])
            self.jl.append(0.5 * (seg_len[:-1] + seg_len[1:]))
            self.along.append(np.ones(k - 1, bool))
            self.m += k - 1

    def add_junction(self, b: int, p: np.ndarray, r: np.ndarray, parent: tuple[int, int]) -> None:
        """Joint branch ``b``'s first segment to the span ``parent`` = (branch, span) where its first point lies."""
        first = self.span_segment[b][0]
        l0 = self.length[b][0]
        pb, s = parent
        if not (0 <= pb < len(self.span_segment)) or pb == b or not (0 <= s < len(self.span_segment[pb])):
            raise ValueError(f"branch {b}: parent span ({pb}, {s}) does not exist")
        ps = self.span_segment[pb][s]
        centre = self.pos[pb][s]
        local = quat.rotate_inverse(self.ori[pb][s], p[0] - centre)
        self.jp.append([ps])
        self.jc.append([first])
        self.pp.append(local[None])
        self.pc.append(np.array([[0.0, 0.0, -0.5 * l0]]))
        # the junction stands for the child's first half segment (the parent bends at its own joints)
        self.jr.append([r[0]])
        self.jl.append([0.5 * l0])
        self.along.append([False])
        self.m += 1

    def add_root_anchor(self, b: int, p: np.ndarray, r: np.ndarray, root_joint: str, axis_world) -> None:
        """A pinned anchor segment half a segment behind root branch ``b``'s first point, jointed to its first
        segment by a ``root_joint``."""
        first = self.span_segment[b][0]
        l0 = self.length[b][0]
        d = quat.rotate(self.ori[b][0], np.array([0.0, 0.0, 1.0]))
        self.pos.append((p[0] - 0.5 * l0 * d)[None])
        self.ori.append(self.ori[b][:1])
        self.length.append([l0])
        self.radius.append([r[0]])
        self.pinned.append([True])
        self.anchors.append(self.n)
        self.jp.append([self.n])
        self.jc.append([first])
        self.pp.append(np.array([[0.0, 0.0, 0.5 * l0]]))
        self.pc.append(np.array([[0.0, 0.0, -0.5 * l0]]))
        self.jr.append([r[0]])
        self.jl.append([0.5 * l0])
        self.along.append([True])
        self.root_joints.append(self.m)
        self.root_axes.append(_root_joint_axis(root_joint, axis_world, self.ori[b][0]))
        self.m += 1
        self.n += 1

    def model(self, options: TreeOptions) -> RodModel:
        """The :class:`RodModel` of the gathered arrays; root joints of kind ``options.root_joint``, the others
        clamps; with ``rest="straight"`` the joints along branches straight at rest."""
        cat = np.concatenate
        m = self.m
        kinds = ["clamp"] * m
        axes = np.tile([0.0, 0.0, 1.0], (m, 1))
        for j, a in zip(self.root_joints, self.root_axes, strict=True):
            kinds[j], axes[j] = options.root_joint, a
        model = RodModel.from_arrays(
            cat(self.pos),
            cat(self.ori),
            cat(self.length),
            cat(self.radius),
            options.density,
            joint_parent=cat(self.jp).astype(np.int64) if self.jp else [],
            joint_child=cat(self.jc).astype(np.int64) if self.jc else [],
            joint_point_parent=cat(self.pp) if self.pp else None,
            joint_point_child=cat(self.pc) if self.pc else None,
            joint_radii=cat(self.jr) if self.jr else None,
            joint_lengths=cat(self.jl) if self.jl else None,
            youngs_modulus=options.youngs_modulus,
            torsion_modulus=options.torsion_modulus,
            stretch_compliance=options.stretch_compliance,
            joint_kind=kinds if m else "clamp",
            joint_axis=axes if m else None,
            physical_stretch=options.stretch == "physical",
            shear_coefficient=options.shear_coefficient,
            pinned=cat(self.pinned),
        )
        if options.rest == "straight" and m:
            straight = cat(self.along).astype(bool)[model.joint_input_index]
            darboux = model.rest_darboux.copy()
            darboux[straight] = (1.0, 0.0, 0.0, 0.0)
            model = model.with_rest_darboux(darboux)
        return model


def tree_from_branches(branches, *, parents=None, **options: Any) -> tuple[RodModel, BranchMap]:
    """A :class:`RodModel` and :class:`BranchMap` from ``branches`` = list of ``(points (K, 3) [m],
    radii (K,) [m])``.

    ``parents``: optional list with ``(parent branch, parent span)`` or ``None`` per branch; where
    ``None`` (or no list), :func:`find_parent_spans` decides. Branches whose parent is not found are roots.
    ``options``: the fields of :class:`TreeOptions` as keywords (``youngs_modulus`` is required): material,
    stretch model, root support (``pin_roots``, ``root_joint``, ``root_axis``) and rest shape.
    """
    opts = TreeOptions(**options)
    axis_world = _root_axis_world(opts)
    branches = _as_branches(branches)
    _check_branches(branches)
    parent_of = _parent_spans(branches, parents)
    tree = _TreeArrays()
    for b, (p, r) in enumerate(branches):
        q = _frames(p)
        if opts.root_joint == "hinge" and axis_world is not None and parent_of[b] is None and opts.pin_roots:
            q = _turn_to_hinge(q, axis_world)
        tree.add_branch(p, r, q)
    for b, (p, r) in enumerate(branches):
        parent = parent_of[b]
        if parent is not None:
            tree.add_junction(b, p, r, parent)
        elif opts.pin_roots:
            tree.add_root_anchor(b, p, r, opts.root_joint, axis_world)
    model = tree.model(opts)
    return model, BranchMap(tree.span_segment, parent_of, np.asarray(tree.anchors, dtype=np.int64))


@dataclass(frozen=True)
class LeafMaterial:
    """A leaf's plate and joint (Deul §5: every leaf a segment, E = 1.2 GPa, G = 0.6 GPa): ``thickness`` [m] of
    the blade, ``density`` [kg/m³], moduli [Pa] of its joint, and ``petiole_radius`` [m] (None: the joint bends
    and twists the blade section itself). Defaults: a 0.2 mm blade (with ρ = 1000 kg/m³, 0.2 kg/m², a fresh
    broadleaf's mass per area) on a 1 mm petiole; how far that droops: docs/notes/build.md."""

    thickness: float = 2e-4
    density: float = 1000.0
    youngs_modulus: float = 1.2e9
    torsion_modulus: float = 0.6e9
    petiole_radius: float | None = 1e-3


def _leaf_inputs(stem, axis, normal, length, width, parent):
    """The per-leaf inputs as float arrays of L leaves (``axis``, ``normal``, ``length``, ``width`` broadcast),
    each checked finite, lengths and widths checked > 0."""
    stem = np.asarray(stem, float).reshape(-1, 3)
    count = stem.shape[0]
    axis = np.broadcast_to(np.asarray(axis, float), (count, 3))
    normal = np.broadcast_to(np.asarray(normal, float), (count, 3))
    length = np.broadcast_to(np.asarray(length, float), (count,))
    width = np.broadcast_to(np.asarray(width, float), (count,))
    parent = np.asarray(parent, np.int64).reshape(-1, 2)
    for name, arr in (("stem", stem), ("axis", axis), ("normal", normal), ("length", length), ("width", width)):
        bad = np.flatnonzero(~np.all(np.isfinite(arr.reshape(count, -1)), axis=1))
        if bad.size:
            raise ValueError(f"leaf {int(bad[0])}: {name} is not finite")
    for name, arr in (("length", length), ("width", width)):
        bad = np.flatnonzero(~(arr > 0))
        if bad.size:
            raise ValueError(f"leaf {int(bad[0])}: {name} must be > 0 m, got {float(arr[bad[0]])}")
    return stem, axis, normal, length, width, parent


def _parent_segments(parent: np.ndarray, branch_map: BranchMap, count: int) -> np.ndarray:
    """The segment of each leaf's ``parent`` = (branch, span), checked to exist."""
    if parent.shape[0] != count:
        raise ValueError(f"parent: expected one (branch, span) per leaf ({count}), got {parent.shape[0]}")
    counts = np.array([len(s) for s in branch_map.span_segment])
    bad = np.flatnonzero((parent[:, 0] < 0) | (parent[:, 0] >= counts.size))
    if bad.size == 0:
        bad = np.flatnonzero((parent[:, 1] < 0) | (parent[:, 1] >= counts[parent[:, 0]]))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"leaf {i}: parent span ({int(parent[i, 0])}, {int(parent[i, 1])}) does not exist")
    offsets = np.concatenate(([0], np.cumsum(counts)))
    flat = np.concatenate(branch_map.span_segment)
    return flat[offsets[parent[:, 0]] + parent[:, 1]]


def _blade_frames(axis: np.ndarray, normal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(z (L, 3), q (L, 4))``: each leaf's unit axis and its frame (local z along the axis, y the normal made
    orthogonal to it, x = y × z)."""
    z = axis / np.linalg.norm(axis, axis=1, keepdims=True)
    y = normal - np.sum(normal * z, axis=1, keepdims=True) * z
    y_len = np.linalg.norm(y, axis=1)
    bad = np.flatnonzero(~(y_len > 1e-6 * np.linalg.norm(normal, axis=1)))
    if bad.size:
        raise ValueError(f"leaf {int(bad[0])}: normal is parallel to the axis (or zero)")
    y /= y_len[:, None]
    frame = np.stack((np.cross(y, z), y, z), axis=2)  # columns: local x, y, z in world
    return z, quat.from_matrix(frame)


def _leaf_joint_section(material: LeafMaterial, a: np.ndarray, b: float, count: int):
    """``(joint radii (L, 2), torsion modulus (L,))`` of the leaf joints: a round petiole (I = πr⁴/4, J = 2I), or
    the blade's elliptic section (semi-axes a, b) whose torsion modulus is scaled by the Saint-Venant ratio
    J/(I1 + I2), J = π a³b³/(a² + b²): the model's twist stiffness G·(I1 + I2) (Eq. 6) is ≈ (a/b)² too stiff
    for a thin blade."""
    if material.petiole_radius is None:
        joint_radii = np.stack((a, np.full(count, b)), axis=1)
        joint_torsion = material.torsion_modulus * 4.0 * a**2 * b**2 / (a**2 + b**2) ** 2
    elif material.petiole_radius > 0:
        joint_radii = np.full((count, 2), float(material.petiole_radius))
        joint_torsion = np.full(count, float(material.torsion_modulus))
    else:
        raise ValueError(f"petiole_radius must be > 0 m, got {material.petiole_radius}")
    return joint_radii, joint_torsion


def attach_leaves(
    model: RodModel, branch_map: BranchMap, *, stem, axis, normal, length, width, parent, **material: Any
) -> tuple[RodModel, np.ndarray]:
    """Add one rigid leaf segment per leaf (Deul §5: every leaf a segment, E = 1.2 GPa, G = 0.6 GPa).

    Per leaf (L of them): ``stem`` (L, 3) [m] the stem point, where the leaf is welded to the segment
    of ``parent`` (L, 2) = (branch, span) (``branch_map`` of :func:`tree_from_branches`); ``axis``
    (L, 3) stem → tip and ``normal`` (L, 3) the blade normal (made orthogonal to the axis); ``length``
    and ``width`` (L,) [m]. A leaf is a thin plate (``model.leaf``): local +z along ``axis`` over
    ``length``, width along local x, ``thickness`` [m] along local y = the normal. ``material``: the fields of
    :class:`LeafMaterial` as keywords (``thickness``, ``density``, ``youngs_modulus``, ``torsion_modulus``,
    ``petiole_radius``). The leaf's joint bends and twists over half the leaf length, either the blade section
    (semi-axes width/2, thickness/2, ``petiole_radius=None``) or a round leaf stalk of ``petiole_radius``
    (default 1 mm): a thin blade alone is far more flexible than a real leaf, which hangs on its petiole and
    midrib. Returns the new :class:`RodModel` and the leaf segment indices (L,).
    """
    leaf = LeafMaterial(**material)
    stem, axis, normal, length, width, parent = _leaf_inputs(stem, axis, normal, length, width, parent)
    count = stem.shape[0]
    if not leaf.thickness > 0:
        raise ValueError(f"leaf thickness must be > 0 m, got {leaf.thickness}")
    parent_seg = _parent_segments(parent, branch_map, count)
    z, q = _blade_frames(axis, normal)
    n = model.n_segments
    leaves = n + np.arange(count)
    a, b = 0.5 * width, 0.5 * leaf.thickness
    local = quat.rotate_inverse(model.orientations[parent_seg], stem - model.positions[parent_seg])
    joints = model.input_joint_arrays()
    child_point = np.zeros((count, 3))
    child_point[:, 2] = -0.5 * length
    joint_radii, joint_torsion = _leaf_joint_section(leaf, a, b, count)
    new = dict(
        joint_parent=parent_seg,
        joint_child=leaves,
        joint_point_parent=local,
        joint_point_child=child_point,
        joint_radii=joint_radii,
        youngs_modulus=np.full(count, float(leaf.youngs_modulus)),
        torsion_modulus=joint_torsion,
        joint_lengths=0.5 * length,
        stretch_compliance=np.full(count, DEFAULT_STRETCH_COMPLIANCE),
    )
    if "joint_kind" in joints:  # the model has ball, hinge, rail or physically stretching joints: leaves are clamped
        new.update(
            joint_kind=np.zeros(count, dtype=joints["joint_kind"].dtype),
            joint_axis=np.tile([0.0, 0.0, 1.0], (count, 1)),
            physical_stretch=np.zeros(count, bool),
            shear_coefficient=np.full(count, DEFAULT_SHEAR_COEFFICIENT),
        )
    joints = {k: np.concatenate((v, new[k])) for k, v in joints.items()}
    cat = np.concatenate
    leaf_model = RodModel.from_arrays(
        cat((model.positions, stem + 0.5 * length[:, None] * z)),
        cat((model.orientations, q)),
        cat((model.lengths, length)),
        cat((model.radii, np.stack((a, np.full(count, b)), axis=1))),
        cat((model.densities, np.full(count, float(leaf.density)))),
        pinned=cat((model.pinned, np.zeros(count, bool))),
        leaf=cat((model.leaf, np.ones(count, bool))),
        **joints,
    )
    return leaf_model, leaves
