"""Build a rod forest from branch polylines: one segment per span, branches joined where they start.

This is how trees and multi-spline curves become a :class:`RodModel`: a branch is a polyline with a
radius per point; its segments are joined end to end, and its first point is attached to the span
of an earlier branch that passes through it (given explicitly, e.g. from Sapling's bone parents, or
found geometrically). A root branch is clamped at its first point by a kinematic anchor segment.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def tree_from_branches(
    branches,
    *,
    youngs_modulus: float,
    torsion_modulus: float | None = None,
    density: float = 1000.0,
    parents=None,
    pin_roots: bool = True,
    stretch_compliance: float = DEFAULT_STRETCH_COMPLIANCE,
    root_joint: str = "clamp",
    root_axis=None,
    stretch: str = "inextensible",
    shear_coefficient: float = DEFAULT_SHEAR_COEFFICIENT,
    rest=None,
):
    """A :class:`RodModel` and :class:`BranchMap` from ``branches`` = list of ``(points (K, 3) [m],
    radii (K,) [m])``.

    ``parents``: optional list with ``(parent branch, parent span)`` or ``None`` per branch; where
    ``None`` (or no list), :func:`find_parent_spans` decides. Branches whose parent is not found are roots; with
    ``pin_roots`` each root is held at its first point by a pinned anchor segment (the joint's Darboux length is
    half a segment, as for a clamped beam), jointed by ``root_joint``, a kind of :data:`JOINT_KINDS`
    (``"clamp"``, ``"ball"``, ``"ball_twist_lock"``, ``"hinge"``, ``"rail"``). ``root_axis``: a world direction
    (3,), or None for the root span's own axis: the rail's direction, or the hinge's axis (the branch's material
    frames are turned about its axis so that their d1 is the given axis's component across the first span; an
    axis along the span makes a twist hinge).

    ``stretch``: ``"inextensible"`` (``stretch_compliance`` [m/N] in every position row, for trees) or
    ``"physical"`` (stretch ``l/(E A)``, shear ``l/(κ G A)``, κ = ``shear_coefficient``), as in
    :func:`solver.core.model.rod_from_polyline`. ``rest``: None (the rest shape is the drawn pose) or
    ``"straight"`` (the joints along a branch and to its root anchor are straight at rest; junctions keep the
    drawn angle of a branch to its parent).
    """
    if root_joint not in JOINT_KINDS:
        raise ValueError(f"root_joint: {root_joint!r} is not a joint kind; use one of {', '.join(JOINT_KINDS)}")
    if stretch not in STRETCH_MODES:
        raise ValueError(f"stretch must be one of {STRETCH_MODES}, got {stretch!r}")
    if rest not in (None, "straight"):
        raise ValueError(f"rest must be None or 'straight', got {rest!r}")
    axis_world = None
    if root_axis is not None:
        axis_world = np.asarray(root_axis, float).reshape(3)
        if not (np.all(np.isfinite(axis_world)) and np.linalg.norm(axis_world) > 1e-12):
            raise ValueError(f"root_axis must be a finite non-zero direction, got {axis_world.tolist()}")
        axis_world = axis_world / np.linalg.norm(axis_world)
    branches = _as_branches(branches)
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

    # per branch and per junction or root anchor: arrays, or one-element lists, concatenated below
    pos: list[np.ndarray] = []
    ori: list[np.ndarray] = []
    length: list[np.ndarray | list] = []
    radius: list[np.ndarray | list] = []
    pinned: list[np.ndarray | list] = []
    jp: list[np.ndarray | list] = []
    jc: list[np.ndarray | list] = []
    pp: list[np.ndarray] = []
    pc: list[np.ndarray] = []
    jr: list[np.ndarray | list] = []
    jl: list[np.ndarray | list] = []
    span_segment = []
    anchors = []
    along: list[np.ndarray | list] = []  # per joint: straight at rest with rest="straight" (not a junction)
    root_joints, root_axes = [], []  # input index and axis (anchor or child frame) of each root joint
    m = 0  # joints so far
    n = 0
    for b, (p, r) in enumerate(branches):
        q = _frames(p)
        if root_joint == "hinge" and axis_world is not None and parent_of[b] is None and pin_roots:
            q = _turn_to_hinge(q, axis_world)
        seg_len = np.linalg.norm(np.diff(p, axis=0), axis=1)
        k = seg_len.size
        idx = n + np.arange(k)
        span_segment.append(idx)
        pos.append(0.5 * (p[:-1] + p[1:]))
        ori.append(q)
        length.append(seg_len)
        radius.append(0.5 * (r[:-1] + r[1:]))
        pinned.append(np.zeros(k, bool))
        n += k
        if k > 1:  # joints along the branch, at its interior points
            jp.append(idx[:-1])
            jc.append(idx[1:])
            pp.append(np.stack((np.zeros(k - 1), np.zeros(k - 1), 0.5 * seg_len[:-1]), 1))
            pc.append(np.stack((np.zeros(k - 1), np.zeros(k - 1), -0.5 * seg_len[1:]), 1))
            jr.append(r[1:-1])
            jl.append(0.5 * (seg_len[:-1] + seg_len[1:]))
            along.append(np.ones(k - 1, bool))
            m += k - 1
    for b, (p, r) in enumerate(branches):
        first = span_segment[b][0]
        l0 = length[b][0]
        child_local = np.array([[0.0, 0.0, -0.5 * l0]])
        parent = parent_of[b]
        if parent is not None:
            pb, s = parent
            if not (0 <= pb < len(branches)) or pb == b or not (0 <= s < len(span_segment[pb])):
                raise ValueError(f"branch {b}: parent span ({pb}, {s}) does not exist")
            ps = span_segment[pb][s]
            centre = pos[pb][s]
            local = quat.rotate_inverse(ori[pb][s], p[0] - centre)
            jp.append([ps])
            jc.append([first])
            pp.append(local[None])
            pc.append(child_local)
            # the junction stands for the child's first half segment (the parent bends at its own joints)
            jr.append([r[0]])
            jl.append([0.5 * l0])
            along.append([False])
            m += 1
        elif pin_roots:
            d = quat.rotate(ori[b][0], np.array([0.0, 0.0, 1.0]))
            pos.append((p[0] - 0.5 * l0 * d)[None])
            ori.append(ori[b][:1])
            length.append([l0])
            radius.append([r[0]])
            pinned.append([True])
            anchors.append(n)
            jp.append([n])
            jc.append([first])
            pp.append(np.array([[0.0, 0.0, 0.5 * l0]]))
            pc.append(child_local)
            jr.append([r[0]])
            jl.append([0.5 * l0])
            along.append([True])
            root_joints.append(m)
            root_axes.append(_root_joint_axis(root_joint, axis_world, ori[b][0]))
            m += 1
            n += 1
    cat = np.concatenate
    kinds = ["clamp"] * m
    axes = np.tile([0.0, 0.0, 1.0], (m, 1))
    for j, a in zip(root_joints, root_axes, strict=True):
        kinds[j], axes[j] = root_joint, a
    model = RodModel.from_arrays(
        cat(pos),
        cat(ori),
        cat(length),
        cat(radius),
        density,
        joint_parent=cat(jp).astype(np.int64) if jp else [],
        joint_child=cat(jc).astype(np.int64) if jc else [],
        joint_point_parent=cat(pp) if pp else None,
        joint_point_child=cat(pc) if pc else None,
        joint_radii=cat(jr) if jr else None,
        joint_lengths=cat(jl) if jl else None,
        youngs_modulus=youngs_modulus,
        torsion_modulus=torsion_modulus,
        stretch_compliance=stretch_compliance,
        joint_kind=kinds if m else "clamp",
        joint_axis=axes if m else None,
        physical_stretch=stretch == "physical",
        shear_coefficient=shear_coefficient,
        pinned=cat(pinned),
    )
    if rest == "straight" and m:
        straight = cat(along).astype(bool)[model.joint_input_index]
        darboux = model.rest_darboux.copy()
        darboux[straight] = (1.0, 0.0, 0.0, 0.0)
        model = model.with_rest_darboux(darboux)
    return model, BranchMap(span_segment, parent_of, np.asarray(anchors, dtype=np.int64))


def attach_leaves(
    model: RodModel,
    branch_map: BranchMap,
    *,
    stem,
    axis,
    normal,
    length,
    width,
    parent,
    thickness: float = 2e-4,
    density: float = 1000.0,
    youngs_modulus: float = 1.2e9,
    torsion_modulus: float = 0.6e9,
    petiole_radius: float | None = 1e-3,
):
    """Add one rigid leaf segment per leaf (Deul §5: every leaf a segment, E = 1.2 GPa, G = 0.6 GPa).

    Per leaf (L of them): ``stem`` (L, 3) [m] the stem point, where the leaf is welded to the segment
    of ``parent`` (L, 2) = (branch, span) (``branch_map`` of :func:`tree_from_branches`); ``axis``
    (L, 3) stem → tip and ``normal`` (L, 3) the blade normal (made orthogonal to the axis); ``length``
    and ``width`` (L,) [m]. A leaf is a thin plate (``model.leaf``): local +z along ``axis`` over
    ``length``, width along local x, ``thickness`` [m] along local y = the normal; ``density``
    [kg/m³]; moduli [Pa]. Its joint bends and twists the blade section (semi-axes width/2,
    thickness/2) over half the leaf length. The model's twist stiffness is G·(I1 + I2) (Eq. 6), which
    for a thin blade is ≈ (a/b)² too stiff, so the joint's torsion modulus is scaled by the
    Saint-Venant ratio J/(I1 + I2) with J = π a³b³/(a² + b²) of an elliptic section. With
    ``petiole_radius`` [m] (default 1 mm; None: the blade section above) the joint is a round leaf
    stalk of that radius instead (I = πr⁴/4, J = 2I): a thin blade alone is far more flexible than a
    real leaf, which hangs on its petiole and midrib. Defaults: a 0.2 mm blade (with ρ = 1000 kg/m³,
    0.2 kg/m², a fresh broadleaf's mass per area) on a 1 mm petiole, so a 17 cm birch leaf droops
    about 12° under its own weight.
    Returns the new :class:`RodModel` and the leaf segment indices (L,).
    """
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
    if not thickness > 0:
        raise ValueError(f"leaf thickness must be > 0 m, got {thickness}")
    if parent.shape[0] != count:
        raise ValueError(f"parent: expected one (branch, span) per leaf ({count}), got {parent.shape[0]}")
    counts = np.array([len(s) for s in branch_map.span_segment])
    bad = np.flatnonzero((parent[:, 0] < 0) | (parent[:, 0] >= counts.size))
    if bad.size == 0:
        bad = np.flatnonzero((parent[:, 1] < 0) | (parent[:, 1] >= counts[parent[:, 0]]))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"leaf {i}: parent span ({int(parent[i, 0])}, {int(parent[i, 1])}) does not exist")
    z = axis / np.linalg.norm(axis, axis=1, keepdims=True)
    y = normal - np.sum(normal * z, axis=1, keepdims=True) * z
    y_len = np.linalg.norm(y, axis=1)
    bad = np.flatnonzero(~(y_len > 1e-6 * np.linalg.norm(normal, axis=1)))
    if bad.size:
        raise ValueError(f"leaf {int(bad[0])}: normal is parallel to the axis (or zero)")
    y /= y_len[:, None]
    frame = np.stack((np.cross(y, z), y, z), axis=2)  # columns: local x, y, z in world
    q = quat.from_matrix(frame)

    offsets = np.concatenate(([0], np.cumsum(counts)))
    flat = np.concatenate(branch_map.span_segment)
    parent_seg = flat[offsets[parent[:, 0]] + parent[:, 1]]
    n = model.n_segments
    leaves = n + np.arange(count)
    a, b = 0.5 * width, 0.5 * thickness
    local = quat.rotate_inverse(model.orientations[parent_seg], stem - model.positions[parent_seg])
    joints = model.input_joint_arrays()
    child_point = np.zeros((count, 3))
    child_point[:, 2] = -0.5 * length
    if petiole_radius is None:
        joint_radii = np.stack((a, np.full(count, b)), axis=1)
        joint_torsion = torsion_modulus * 4.0 * a**2 * b**2 / (a**2 + b**2) ** 2
    elif petiole_radius > 0:
        joint_radii = np.full((count, 2), float(petiole_radius))
        joint_torsion = np.full(count, float(torsion_modulus))
    else:
        raise ValueError(f"petiole_radius must be > 0 m, got {petiole_radius}")
    new = dict(
        joint_parent=parent_seg,
        joint_child=leaves,
        joint_point_parent=local,
        joint_point_child=child_point,
        joint_radii=joint_radii,
        youngs_modulus=np.full(count, float(youngs_modulus)),
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
        cat((model.densities, np.full(count, float(density)))),
        pinned=cat((model.pinned, np.zeros(count, bool))),
        leaf=cat((model.leaf, np.ones(count, bool))),
        **joints,
    )
    return leaf_model, leaves
