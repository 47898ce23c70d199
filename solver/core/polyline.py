"""A single rod from a polyline: one segment per edge, one joint per interior point (:func:`rod_from_polyline`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from . import quaternion as quat
from .model_arrays import DEFAULT_SHEAR_COEFFICIENT, DEFAULT_STRETCH_COMPLIANCE, JOINT_KINDS, as_array, require_positive

if TYPE_CHECKING:
    from .model import RodModel

STRETCH_MODES = ("inextensible", "physical")


def _cumulative_left_product(r: np.ndarray) -> np.ndarray:
    """``out[k] = r[k-1] ⊗ … ⊗ r[0]`` (``out[0]`` = identity), by a log-depth Hillis–Steele scan."""
    n = r.shape[0] + 1
    out = np.zeros((n, 4))
    out[:, 0] = 1.0
    out[1:] = r
    s = 1
    while s < n:
        out[s:] = quat.multiply(out[s:], out[:-s])
        s *= 2
    return quat.normalize(out)


def _polyline_frames(name: str, points, twist: float):
    """Edge lengths (k−1,) and material frames (k−1, 4) of a polyline (k, 3): parallel transport along it (no
    rest twist), turned by ``twist`` [rad] about the first edge. ValueError naming ``name`` on bad input."""
    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise ValueError(f"{name}: expected shape (k, 3), got {pts.shape}")
    if pts.shape[0] < 2:
        raise ValueError(f"{name}: a rod needs at least 2 points, got {pts.shape[0]}")
    if not np.all(np.isfinite(pts)):
        raise ValueError(f"{name}[{int(np.argwhere(~np.isfinite(pts))[0, 0])}] is not finite (NaN or inf)")
    edges = np.diff(pts, axis=0)
    lengths = np.linalg.norm(edges, axis=1)
    bad = np.argwhere(~(lengths > 0.0))
    if bad.size:
        i = int(bad[0, 0])
        raise ValueError(f"{name}: segment {i} (points {i} and {i + 1}) has zero length")
    dirs = edges / lengths[:, None]
    q0 = quat.from_two_vectors(np.array([0.0, 0.0, 1.0]), dirs[0])
    if twist:
        q0 = quat.multiply(q0, np.array([np.cos(twist / 2), 0.0, 0.0, np.sin(twist / 2)]))
    transport = quat.from_two_vectors(dirs[:-1], dirs[1:]) if pts.shape[0] > 2 else np.zeros((0, 4))
    return lengths, quat.normalize(quat.multiply(_cumulative_left_product(transport), q0))


def _end_kinds(pinned: Iterable[str], start: str | None, end: str | None) -> tuple[str | None, str | None]:
    """The joint kinds at the rod's start and end (None: free), from the ``pinned`` ends and ``start``/``end``."""
    ends = set(pinned)
    unknown = ends - {"start", "end"}
    if unknown:
        raise ValueError(f"pinned: unknown end(s) {sorted(unknown)}; use 'start' and/or 'end'")
    for name, kind in (("start", start), ("end", end)):
        if kind is not None and kind not in JOINT_KINDS:
            raise ValueError(f"{name}: {kind!r} is not a joint kind; use None or one of {', '.join(JOINT_KINDS)}")
    start_kind = start if start is not None else ("clamp" if "start" in ends else None)
    end_kind = end if end is not None else ("clamp" if "end" in ends else None)
    return start_kind, end_kind


def _end_joints(k: int, start: tuple, end: tuple) -> tuple[np.ndarray, list[str], np.ndarray]:
    """The pinned segments (k − 1,), joint kinds and axes (k − 2) of a rod of ``k`` points whose ``start`` and
    ``end`` are (joint kind or None, axis): a jointed end's segment is a kinematic anchor."""
    pin = np.zeros(k - 1, bool)
    pin[0] |= start[0] is not None
    pin[-1] |= end[0] is not None
    kinds = ["clamp"] * (k - 2)
    axes = np.tile([0.0, 0.0, 1.0], (k - 2, 1))
    if start[0] is not None:
        kinds[0], axes[0] = start
    if end[0] is not None:
        kinds[-1], axes[-1] = end
    return pin, kinds, axes


def _rest_shape(rest, lengths: np.ndarray, twist: float, k: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Segment lengths and rest Darboux quaternions (k − 2, 4) of the rest shape ``rest`` (None: the initial pose,
    whose Darboux quaternions the model takes itself)."""
    if rest is None:
        return lengths, None
    if isinstance(rest, str):
        if rest != "straight":
            raise ValueError(f"rest must be 'straight' or points of shape ({k}, 3), got {rest!r}")
        return lengths, np.tile([1.0, 0.0, 0.0, 0.0], (k - 2, 1))
    rest_lengths, rest_q = _polyline_frames("rest", rest, twist)
    if rest_lengths.shape != lengths.shape:
        raise ValueError(f"rest: expected {k} points as in points, got {rest_lengths.size + 1}")
    return rest_lengths, quat.multiply(quat.conjugate(rest_q[:-1]), rest_q[1:])


def rod_from_polyline(  # noqa: PLR0913 (the public keyword options of a rod)
    points,
    radius,
    youngs_modulus: float,
    torsion_modulus: float | None = None,
    density: float = 1000.0,
    *,
    pinned: Iterable[str] = (),
    stretch_compliance: float = DEFAULT_STRETCH_COMPLIANCE,
    twist: float = 0.0,
    start: str | None = None,
    end: str | None = None,
    start_axis=(0.0, 0.0, 1.0),
    end_axis=(0.0, 0.0, 1.0),
    stretch: str = "inextensible",
    shear_coefficient: float = DEFAULT_SHEAR_COEFFICIENT,
    rest=None,
) -> RodModel:
    """A single rod: one segment per polyline edge, one joint per interior point.

    ``points`` (k, 3) [m]: the initial pose; ``radius`` [m] a scalar or one value per point (a segment takes
    the mean of its end radii, a joint the radius at its point); ``youngs_modulus``/``torsion_modulus`` [Pa];
    ``density`` [kg/m³]. Material frames are parallel-transported along the polyline (no rest twist), then
    optionally turned by ``twist`` [rad] about the axis of the first segment.

    Ends: ``start``/``end`` a joint kind of :data:`JOINT_KINDS` (``"clamp"``, ``"ball"``, ``"ball_twist_lock"``,
    ``"hinge"``, ``"rail"``) or None (free): the end segment (the first or last polyline edge) becomes a
    kinematic anchor, and its joint to the rod that kind, at ``points[1]`` (``points[-2]``). ``pinned``
    ``["start"]``/``["end"]`` is ``start``/``end="clamp"``. ``start_axis``/``end_axis``: the axis of a rail
    (in the anchor's frame at the start, the last free segment's at the end; (0, 0, 1) is along the rod) or of a
    hinge (in the first free segment's frame at the start, the anchor's at the end: (1, 0, 0), (0, 1, 0) or
    (0, 0, 1)).

    ``stretch``: ``"inextensible"`` (the default, for trees: ``stretch_compliance`` [m/N] in every position row)
    or ``"physical"``: stretch ``l/(E A)`` and shear ``l/(κ G A)`` per joint, κ = ``shear_coefficient``.

    ``rest``: the rest shape, if not the initial pose: ``"straight"`` or points (k, 3). Rest Darboux vectors and
    segment lengths come from it, positions and orientations from ``points`` (where its edge lengths differ
    from the rest lengths, the joints start stretched and pull the segments together).
    """
    from .model import RodModel  # (late: model imports this module)

    lengths, orientations = _polyline_frames("points", points, twist)
    pts = np.asarray(points, dtype=float)
    k = pts.shape[0]
    rad = as_array("radius", radius, (), k)
    require_positive("radius", rad)
    start_kind, end_kind = _end_kinds(pinned, start, end)
    if stretch not in STRETCH_MODES:
        raise ValueError(f"stretch must be one of {STRETCH_MODES}, got {stretch!r}")
    if (start is not None or end is not None) and k < 3:
        raise ValueError(f"points: a rod with a jointed end needs at least 3 points (anchor and rod), got {k}")
    pin, kinds, axes = _end_joints(k, (start_kind, start_axis), (end_kind, end_axis))
    lengths, rest_darboux = _rest_shape(rest, lengths, twist, k)
    seg_r = 0.5 * (rad[:-1] + rad[1:])
    j = np.arange(k - 2)
    model = RodModel.from_arrays(
        0.5 * (pts[:-1] + pts[1:]),
        orientations,
        lengths,
        seg_r,
        density,
        joint_parent=j,
        joint_child=j + 1,
        joint_radii=rad[1:-1],
        youngs_modulus=youngs_modulus,
        torsion_modulus=torsion_modulus,
        stretch_compliance=stretch_compliance,
        joint_kind=kinds,
        joint_axis=axes,
        physical_stretch=stretch == "physical",
        shear_coefficient=shear_coefficient,
        pinned=pin,
    )
    return model if rest_darboux is None else model.with_rest_darboux(rest_darboux)
