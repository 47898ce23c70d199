"""The arrays a :class:`~solver.core.model.RodModel` is built from, checked and broadcast: segment arrays, then the
joint arrays between them (:meth:`RodModel.from_arrays`). Each check raises a ValueError naming the offending item.
"""

from __future__ import annotations

import numpy as np

DEFAULT_STRETCH_COMPLIANCE = 1e-10  # m/N; Deul §4.3 uses 1e-10…1e-8 to keep the KKT system well conditioned
# Timoshenko shear coefficient κ of a solid round section: 6(1 + ν)/(7 + 6ν) (Cowper 1966) is 0.886 at
# ν = 0.3 and 0.9 at ν = 0.5 (rubber); values 0.9–1.0 are usual for round sections.
DEFAULT_SHEAR_COEFFICIENT = 0.9

# Joint kinds: which of the six constraint rows (3 position, then bend d1, bend d2, twist d3) a joint keeps.
#   clamp: all six; ball: the position rows (rotation free); ball_twist_lock: a ball that keeps the twist row;
#   hinge: the position rows and the two rotation rows that keep the hinge axis (free rotation about it);
#   rail: the rotation rows and the position rows across the rail axis (free sliding along it).
JOINT_KINDS = ("clamp", "ball", "ball_twist_lock", "hinge", "rail")


def as_array(name: str, value, shape_tail: tuple, count: int, dtype=float) -> np.ndarray:
    """Broadcast ``value`` to ``(count, *shape_tail)`` and reject NaN/inf, naming the input."""
    arr = np.asarray(value, dtype=dtype)
    try:
        arr = np.broadcast_to(arr, (count,) + shape_tail).copy()
    except ValueError:
        raise ValueError(
            f"{name}: expected shape ({count}, {', '.join(map(str, shape_tail))}) "
            f"or broadcastable, got {np.shape(value)}"
        ) from None
    if dtype is float and not np.all(np.isfinite(arr)):
        bad = int(np.argwhere(~np.isfinite(arr.reshape(count, -1)))[0, 0])
        raise ValueError(f"{name}[{bad}] is not finite (NaN or inf)")
    return arr


def section_radii(name: str, value, count: int) -> np.ndarray:
    """Cross-section semi-axes (count, 2): a scalar or a 1-D array is a circular radius (per item);
    elliptic sections are given as shape (count, 2) or (1, 2)."""
    arr = np.asarray(value, dtype=float)
    if arr.ndim <= 1:
        arr = np.stack(
            [
                np.broadcast_to(arr, (count,))
                if arr.ndim == 0 or arr.shape[0] == count
                else as_array(name, arr, (), count)
            ]
            * 2,
            axis=1,
        )
    return as_array(name, arr, (2,), count)


def require_positive(name: str, arr: np.ndarray) -> None:
    if arr.size == 0:
        return
    flat = arr.reshape(arr.shape[0], -1)
    bad = np.argwhere(~(flat > 0.0))
    if bad.size:
        i = int(bad[0, 0])
        raise ValueError(f"{name}[{i}] must be > 0, got {arr[i].tolist() if arr.ndim > 1 else float(arr[i])}")


def positive(name: str, value, count: int) -> np.ndarray:
    """``value`` broadcast to (count,), every entry finite and > 0."""
    arr = as_array(name, value, (), count)
    require_positive(name, arr)
    return arr


def joint_kinds(value, m: int) -> np.ndarray:
    """Joint kinds (a name of :data:`JOINT_KINDS` or its index, one for all or one per joint) as indices."""
    arr = np.asarray(value)
    if arr.dtype.kind in "iu":
        codes = as_array("joint_kind", arr, (), m, dtype=np.int64)
        bad = np.argwhere((codes < 0) | (codes >= len(JOINT_KINDS)))
        if bad.size:
            i = int(bad[0, 0])
            raise ValueError(f"joint_kind[{i}] = {int(codes[i])} is not a joint kind index (0…{len(JOINT_KINDS) - 1})")
        return codes
    names = as_array("joint_kind", arr, (), m, dtype=object)
    codes = np.zeros(m, np.int64)
    for i, name in enumerate(names):
        if name not in JOINT_KINDS:
            raise ValueError(f"joint_kind[{i}] = {name!r} is not a joint kind; use one of {', '.join(JOINT_KINDS)}")
        codes[i] = JOINT_KINDS.index(name)
    return codes


def segment_arrays(positions, orientations, lengths, radii, densities, pinned, leaf) -> dict:
    """The segment arrays of :meth:`RodModel.from_arrays`, checked: orientations normalised, radii as semi-axes
    (n, 2), ``pinned``/``leaf`` (n,) bool (None: none)."""
    positions = np.asarray(positions, dtype=float)
    if positions.ndim != 2 or positions.shape[1] != 3 or positions.shape[0] == 0:
        raise ValueError(f"positions: expected shape (n, 3) with n ≥ 1, got {positions.shape}")
    n = positions.shape[0]
    positions = as_array("positions", positions, (3,), n)
    orientations = as_array("orientations", orientations, (4,), n)
    norms = np.linalg.norm(orientations, axis=1)
    bad = np.argwhere(norms < 1e-12)
    if bad.size:
        raise ValueError(f"orientations[{int(bad[0, 0])}] is a zero quaternion")
    orientations = orientations / norms[:, None]
    lengths = positive("lengths", lengths, n)
    radii = section_radii("radii", radii, n)
    require_positive("radii", radii)
    return dict(
        positions=positions,
        orientations=orientations,
        lengths=lengths,
        radii=radii,
        densities=positive("densities", densities, n),
        pinned=np.zeros(n, bool) if pinned is None else as_array("pinned", pinned, (), n, dtype=bool),
        leaf=np.zeros(n, bool) if leaf is None else as_array("leaf", leaf, (), n, dtype=bool),
    )


def _joint_ends(joint_parent, joint_child, pinned: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each joint's parent and child segment (m,), checked: segment indices, two segments, not both pinned."""
    n = pinned.size
    jp = np.asarray(joint_parent, dtype=np.int64).reshape(-1)
    jc = np.asarray(joint_child, dtype=np.int64).reshape(-1)
    if jp.shape != jc.shape:
        raise ValueError(f"joint_parent and joint_child differ in length ({jp.size} vs {jc.size})")
    for name, idx in (("joint_parent", jp), ("joint_child", jc)):
        bad = np.argwhere((idx < 0) | (idx >= n))
        if bad.size:
            j = int(bad[0, 0])
            raise ValueError(f"{name}[{j}] = {int(idx[j])} is not a segment index (0…{n - 1})")
    bad = np.argwhere(jp == jc)
    if bad.size:
        j = int(bad[0, 0])
        raise ValueError(f"joint {j} joins segment {int(jp[j])} to itself")
    bad = np.argwhere(pinned[jp] & pinned[jc])
    if bad.size:
        j = int(bad[0, 0])
        raise ValueError(f"joint {j} joins two pinned segments ({int(jp[j])}, {int(jc[j])}): nothing can move")
    return jp, jc


def _joint_material(segments: dict, jp: np.ndarray, jc: np.ndarray, options: dict) -> dict:
    """Attachment points, radii, moduli, discretisation lengths and stretch compliance per joint, defaults from the
    two segments (points at their facing ends, the mean radius and length, G from E)."""
    m, lengths, radii = jp.size, segments["lengths"], segments["radii"]
    half_p = np.zeros((m, 3))
    half_p[:, 2] = 0.5 * lengths[jp]
    half_c = np.zeros((m, 3))
    half_c[:, 2] = -0.5 * lengths[jc]
    point_parent, point_child = options["joint_point_parent"], options["joint_point_child"]
    out = dict(
        joint_point_parent=as_array("joint_point_parent", half_p if point_parent is None else point_parent, (3,), m),
        joint_point_child=as_array("joint_point_child", half_c if point_child is None else point_child, (3,), m),
    )
    joint_radii = options["joint_radii"]
    if joint_radii is None:
        joint_radii = 0.5 * (radii[jp] + radii[jc])
    out["joint_radii"] = section_radii("joint_radii", joint_radii, m)
    require_positive("joint_radii", out["joint_radii"])
    out["youngs_modulus"] = youngs_modulus = positive("youngs_modulus", options["youngs_modulus"], m)
    torsion_modulus = options["torsion_modulus"]
    if torsion_modulus is None:
        torsion_modulus = youngs_modulus / (2.0 * 1.3)  # G = E / (2 (1 + ν)), ν = 0.3
    out["torsion_modulus"] = positive("torsion_modulus", torsion_modulus, m)
    joint_lengths = options["joint_lengths"]
    if joint_lengths is None:
        joint_lengths = 0.5 * (lengths[jp] + lengths[jc])
    out["joint_lengths"] = positive("joint_lengths", joint_lengths, m)
    out["stretch_compliance"] = positive("stretch_compliance", options["stretch_compliance"], m)
    return out


def _joint_kind_arrays(m: int, options: dict) -> dict:
    """Kinds, unit axes (a hinge's one of the child's section axes), physical stretch and shear coefficient."""
    joint_kind = joint_kinds(options["joint_kind"], m)
    axis = options["joint_axis"]
    joint_axis = as_array("joint_axis", np.array([0.0, 0.0, 1.0]) if axis is None else axis, (3,), m)
    norms = np.linalg.norm(joint_axis, axis=1)
    bad = np.argwhere(~(norms > 1e-12))
    if bad.size:
        i = int(bad[0, 0])
        raise ValueError(f"joint_axis[{i}] is a zero vector: a rail or hinge axis needs a direction")
    joint_axis = joint_axis / norms[:, None]
    hinge = np.flatnonzero(joint_kind == JOINT_KINDS.index("hinge"))
    off_axis = 1.0 - np.max(np.abs(joint_axis[hinge]), axis=1) if hinge.size else np.zeros(0)
    bad = np.argwhere(off_axis > 1e-9)
    if bad.size:
        i = int(hinge[int(bad[0, 0])])
        raise ValueError(
            f"joint_axis[{i}] = {joint_axis[i].tolist()}: a hinge axis must be one of the child segment's "
            "section axes, (1, 0, 0), (0, 1, 0) or (0, 0, 1) in its frame"
        )
    return dict(
        joint_kind=joint_kind,
        joint_axis=joint_axis,
        physical_stretch=as_array("physical_stretch", options["physical_stretch"], (), m, dtype=bool),
        shear_coefficient=positive("shear_coefficient", options["shear_coefficient"], m),
    )


def joint_arrays(segments: dict, options: dict) -> dict:
    """The joint arrays of :meth:`RodModel.from_arrays` (``options``: its joint keywords), checked and with their
    defaults, between the checked ``segments`` (:func:`segment_arrays`)."""
    jp, jc = _joint_ends(options["joint_parent"], options["joint_child"], segments["pinned"])
    return dict(
        joint_parent=jp,
        joint_child=jc,
        **_joint_material(segments, jp, jc, options),
        **_joint_kind_arrays(jp.size, options),
    )
