"""The rod model: a forest of rigid segments joined parent → child by Cosserat joints.

Everything here is computed once per topology. Units are SI throughout: lengths and radii in m,
densities in kg/m³, moduli in Pa, masses in kg, inertia in kg·m², compliances in m/N (stretch)
and 1/(N·m) (bend/twist, per joint, after the discretisation length is folded in).

A segment is a solid (elliptic) cylinder whose local +z axis is the rod axis (the director d3 of
Deul §3); its local x and y axes are d1 and d2 and carry the cross-section semi-axes ``radius[:, 0]``
and ``radius[:, 1]``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from . import quaternion as quat

DEFAULT_STRETCH_COMPLIANCE = 1e-10  # m/N; Deul §4.3 uses 1e-10…1e-8 to keep the KKT system well conditioned


def _as_array(name: str, value, shape_tail: tuple, count: int, dtype=float) -> np.ndarray:
    """Broadcast ``value`` to ``(count, *shape_tail)`` and reject NaN/inf, naming the input."""
    arr = np.asarray(value, dtype=dtype)
    try:
        arr = np.broadcast_to(arr, (count,) + shape_tail).copy()
    except ValueError:
        raise ValueError(f"{name}: expected shape ({count}, {', '.join(map(str, shape_tail))}) "
                         f"or broadcastable, got {np.shape(value)}") from None
    if dtype is float and not np.all(np.isfinite(arr)):
        bad = int(np.argwhere(~np.isfinite(arr.reshape(count, -1)))[0, 0])
        raise ValueError(f"{name}[{bad}] is not finite (NaN or inf)")
    return arr


def _section_radii(name: str, value, count: int) -> np.ndarray:
    """Cross-section semi-axes (count, 2): a scalar or a 1-D array is a circular radius (per item);
    elliptic sections are given as shape (count, 2) or (1, 2)."""
    arr = np.asarray(value, dtype=float)
    if arr.ndim <= 1:
        arr = np.stack([np.broadcast_to(arr, (count,)) if arr.ndim == 0 or arr.shape[0] == count
                        else _as_array(name, arr, (), count)] * 2, axis=1)
    return _as_array(name, arr, (2,), count)


def _require_positive(name: str, arr: np.ndarray) -> None:
    flat = arr.reshape(arr.shape[0], -1)
    bad = np.argwhere(~(flat > 0.0))
    if bad.size:
        i = int(bad[0, 0])
        raise ValueError(f"{name}[{i}] must be > 0, got {arr[i].tolist() if arr.ndim > 1 else float(arr[i])}")


def cross_section_moments(radius: np.ndarray):
    """Second moments of area of an elliptic cross-section with semi-axes ``(a, b)`` along (d1, d2).

    Deul Eq. 6: ``I1 = ∫ x2² dA = π a b³/4``, ``I2 = ∫ x1² dA = π a³ b/4``, ``J = I1 + I2`` (m⁴).
    A circle (a = b = r) gives ``I1 = I2 = π r⁴/4``.
    """
    a, b = radius[..., 0], radius[..., 1]
    i1 = np.pi * a * b**3 / 4.0
    i2 = np.pi * a**3 * b / 4.0
    return i1, i2, i1 + i2


@dataclass
class RodModel:
    """Segments and joints of a rod forest, validated and with derived mass properties.

    Segment arrays (n segments): ``positions`` (n, 3) centre of mass [m], ``orientations`` (n, 4)
    unit quaternions (w, x, y, z), ``lengths`` (n,) [m], ``radii`` (n, 2) cross-section semi-axes [m],
    ``densities`` (n,) [kg/m³], ``pinned`` (n,) bool (kinematic: infinite mass).

    Joint arrays (m joints, parent → child): ``joint_parent``/``joint_child`` (m,) segment indices,
    ``joint_point_parent``/``joint_point_child`` (m, 3) attachment points in each segment's local
    frame [m], ``joint_radii`` (m, 2) [m] for the bending/twisting stiffness, ``youngs_modulus`` and
    ``torsion_modulus`` (m,) [Pa], ``joint_lengths`` (m,) [m] (the Darboux discretisation length l of
    Eq. 7; default: the mean of the two segment lengths) and ``stretch_compliance`` (m,) [m/N].
    The rest Darboux quaternion ``q̄_parent⁰ q_child⁰`` of every joint is taken from the initial pose.
    """

    positions: np.ndarray
    orientations: np.ndarray
    lengths: np.ndarray
    radii: np.ndarray
    densities: np.ndarray
    pinned: np.ndarray
    joint_parent: np.ndarray
    joint_child: np.ndarray
    joint_point_parent: np.ndarray
    joint_point_child: np.ndarray
    joint_radii: np.ndarray
    youngs_modulus: np.ndarray
    torsion_modulus: np.ndarray
    joint_lengths: np.ndarray
    stretch_compliance: np.ndarray
    # derived
    masses: np.ndarray = field(init=False)
    inertia: np.ndarray = field(init=False)
    rest_darboux: np.ndarray = field(init=False)
    bend_twist_stiffness: np.ndarray = field(init=False)

    @classmethod
    def from_arrays(
        cls,
        positions,
        orientations,
        lengths,
        radii,
        densities,
        *,
        joint_parent: Sequence[int] = (),
        joint_child: Sequence[int] = (),
        joint_point_parent=None,
        joint_point_child=None,
        joint_radii=None,
        youngs_modulus=1e9,
        torsion_modulus=None,
        joint_lengths=None,
        stretch_compliance=DEFAULT_STRETCH_COMPLIANCE,
        pinned=None,
    ) -> "RodModel":
        """Build and validate a model from segment and joint arrays (broadcasting scalars).

        Radii: a scalar or one value per segment (circular), or semi-axes (a, b) as shape (n, 2). Joint radii
        default to the mean of the two segments' radii. ``torsion_modulus`` defaults to
        ``E / (2 (1 + ν))`` with ν = 0.3. Raises ``ValueError`` naming the offending item.
        """
        positions = np.asarray(positions, dtype=float)
        if positions.ndim != 2 or positions.shape[1] != 3 or positions.shape[0] == 0:
            raise ValueError(f"positions: expected shape (n, 3) with n ≥ 1, got {positions.shape}")
        n = positions.shape[0]
        positions = _as_array("positions", positions, (3,), n)
        orientations = _as_array("orientations", orientations, (4,), n)
        norms = np.linalg.norm(orientations, axis=1)
        bad = np.argwhere(norms < 1e-12)
        if bad.size:
            raise ValueError(f"orientations[{int(bad[0, 0])}] is a zero quaternion")
        orientations = orientations / norms[:, None]
        lengths = _as_array("lengths", lengths, (), n)
        _require_positive("lengths", lengths)
        radii = _section_radii("radii", radii, n)
        _require_positive("radii", radii)
        densities = _as_array("densities", densities, (), n)
        _require_positive("densities", densities)
        pinned = np.zeros(n, bool) if pinned is None else _as_array("pinned", pinned, (), n, dtype=bool)

        jp = np.asarray(joint_parent, dtype=np.int64).reshape(-1)
        jc = np.asarray(joint_child, dtype=np.int64).reshape(-1)
        if jp.shape != jc.shape:
            raise ValueError(f"joint_parent and joint_child differ in length ({jp.size} vs {jc.size})")
        m = jp.size
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

        def joint_vec(name, value, default):
            return _as_array(name, default if value is None else value, (3,), m)

        half_p = np.zeros((m, 3)); half_p[:, 2] = 0.5 * lengths[jp]
        half_c = np.zeros((m, 3)); half_c[:, 2] = -0.5 * lengths[jc]
        joint_point_parent = joint_vec("joint_point_parent", joint_point_parent, half_p)
        joint_point_child = joint_vec("joint_point_child", joint_point_child, half_c)
        if joint_radii is None:
            joint_radii = 0.5 * (radii[jp] + radii[jc])
        joint_radii = _section_radii("joint_radii", joint_radii, m)
        _require_positive("joint_radii", joint_radii)
        youngs_modulus = _as_array("youngs_modulus", youngs_modulus, (), m)
        _require_positive("youngs_modulus", youngs_modulus)
        if torsion_modulus is None:
            torsion_modulus = youngs_modulus / (2.0 * 1.3)
        torsion_modulus = _as_array("torsion_modulus", torsion_modulus, (), m)
        _require_positive("torsion_modulus", torsion_modulus)
        if joint_lengths is None:
            joint_lengths = 0.5 * (lengths[jp] + lengths[jc])
        joint_lengths = _as_array("joint_lengths", joint_lengths, (), m)
        _require_positive("joint_lengths", joint_lengths)
        stretch_compliance = _as_array("stretch_compliance", stretch_compliance, (), m)
        _require_positive("stretch_compliance", stretch_compliance)

        model = cls(positions, orientations, lengths, radii, densities, pinned, jp, jc,
                    joint_point_parent, joint_point_child, joint_radii, youngs_modulus,
                    torsion_modulus, joint_lengths, stretch_compliance)
        model._check_forest()
        return model

    def __post_init__(self):
        a, b = self.radii[:, 0], self.radii[:, 1]
        l = self.lengths
        self.masses = self.densities * np.pi * a * b * l
        # Solid elliptic cylinder about its centre of mass, body axes (d1, d2, d3): the cross-section
        # terms ρ·l·(I1, I2, J) of Deul Eq. 28 plus m·l²/12 about the two transverse axes.
        m = self.masses
        self.inertia = np.stack((m * (b**2 / 4 + l**2 / 12), m * (a**2 / 4 + l**2 / 12), m * (a**2 + b**2) / 4), axis=1)
        i1, i2, j = cross_section_moments(self.joint_radii)
        # K = diag(E I1, E I2, G J) of Deul Eq. 5 (N·m²).
        self.bend_twist_stiffness = np.stack((self.youngs_modulus * i1, self.youngs_modulus * i2, self.torsion_modulus * j), axis=1)
        self.rest_darboux = quat.multiply(quat.conjugate(self.orientations[self.joint_parent]), self.orientations[self.joint_child])

    # ------------------------------------------------------------------ topology
    @property
    def n_segments(self) -> int:
        return int(self.positions.shape[0])

    @property
    def n_joints(self) -> int:
        return int(self.joint_parent.shape[0])

    def _check_forest(self) -> None:
        """Joints among free segments must form a forest; name the first joint that closes a cycle.

        Pinned segments are not nodes of the KKT system (their rows vanish), so a free rod hanging
        between two pinned segments is still a tree for the direct solver.
        """
        free = ~self.pinned
        both = free[self.joint_parent] & free[self.joint_child]
        n = self.n_segments
        if not np.any(both):
            return
        p, c = self.joint_parent[both], self.joint_child[both]
        graph = coo_matrix((np.ones(p.size), (p, c)), shape=(n, n))
        n_comp, _ = connected_components(graph, directed=False)
        if p.size == n - n_comp and not _has_duplicate_pairs(p, c):
            return
        parent = list(range(n))

        def find(i):
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        for j in np.flatnonzero(both):
            ra, rb = find(int(self.joint_parent[j])), find(int(self.joint_child[j]))
            if ra == rb:
                raise ValueError(
                    f"joint {int(j)} ({int(self.joint_parent[j])} → {int(self.joint_child[j])}) closes a cycle: "
                    "the joints must form a forest (loops are loop-closing constraints, not joints)")
            parent[ra] = rb

    def copy_with(self, **changes) -> "RodModel":
        """A new validated model with some constructor arrays replaced."""
        fields = dict(
            positions=self.positions, orientations=self.orientations, lengths=self.lengths, radii=self.radii,
            densities=self.densities, pinned=self.pinned, joint_parent=self.joint_parent,
            joint_child=self.joint_child, joint_point_parent=self.joint_point_parent,
            joint_point_child=self.joint_point_child, joint_radii=self.joint_radii,
            youngs_modulus=self.youngs_modulus, torsion_modulus=self.torsion_modulus,
            joint_lengths=self.joint_lengths, stretch_compliance=self.stretch_compliance)
        fields.update(changes)
        pos = fields.pop("positions"); ori = fields.pop("orientations"); ln = fields.pop("lengths")
        rad = fields.pop("radii"); den = fields.pop("densities")
        return RodModel.from_arrays(pos, ori, ln, rad, den, **fields)


def _has_duplicate_pairs(p: np.ndarray, c: np.ndarray) -> bool:
    pairs = np.sort(np.stack((p, c), axis=1), axis=1)
    return np.unique(pairs, axis=0).shape[0] != pairs.shape[0]


def _cumulative_left_product(r: np.ndarray) -> np.ndarray:
    """``out[k] = r[k-1] ⊗ … ⊗ r[0]`` (``out[0]`` = identity), by a log-depth Hillis–Steele scan."""
    n = r.shape[0] + 1
    out = np.zeros((n, 4)); out[:, 0] = 1.0
    out[1:] = r
    s = 1
    while s < n:
        out[s:] = quat.multiply(out[s:], out[:-s])
        s *= 2
    return quat.normalize(out)


def rod_from_polyline(
    points,
    radius,
    youngs_modulus: float,
    torsion_modulus: float | None = None,
    density: float = 1000.0,
    *,
    pinned: Iterable[str] = (),
    stretch_compliance: float = DEFAULT_STRETCH_COMPLIANCE,
    twist: float = 0.0,
) -> RodModel:
    """A single rod: one segment per polyline edge, one joint per interior point.

    ``points`` (k, 3) [m]; ``radius`` [m] a scalar or one value per point (a segment takes the mean
    of its end radii, a joint the radius at its point); ``youngs_modulus``/``torsion_modulus`` [Pa];
    ``density`` [kg/m³]; ``pinned`` any of ``"start"``, ``"end"``: that end segment is kinematic
    (clamped). Material frames are parallel-transported along the polyline (no rest twist), then
    optionally turned by ``twist`` [rad] about the axis of the first segment.
    """
    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise ValueError(f"points: expected shape (k, 3), got {pts.shape}")
    if pts.shape[0] < 2:
        raise ValueError(f"points: a rod needs at least 2 points, got {pts.shape[0]}")
    if not np.all(np.isfinite(pts)):
        raise ValueError(f"points[{int(np.argwhere(~np.isfinite(pts))[0, 0])}] is not finite (NaN or inf)")
    k = pts.shape[0]
    rad = _as_array("radius", radius, (), k)
    _require_positive("radius", rad)
    edges = np.diff(pts, axis=0)
    lengths = np.linalg.norm(edges, axis=1)
    bad = np.argwhere(~(lengths > 0.0))
    if bad.size:
        i = int(bad[0, 0])
        raise ValueError(f"segment {i} (points {i} and {i + 1}) has zero length")
    dirs = edges / lengths[:, None]
    q0 = quat.from_two_vectors(np.array([0.0, 0.0, 1.0]), dirs[0])
    if twist:
        q0 = quat.multiply(q0, np.array([np.cos(twist / 2), 0.0, 0.0, np.sin(twist / 2)]))
    transport = quat.from_two_vectors(dirs[:-1], dirs[1:]) if k > 2 else np.zeros((0, 4))
    orientations = quat.normalize(quat.multiply(_cumulative_left_product(transport), q0))
    ends = set(pinned)
    unknown = ends - {"start", "end"}
    if unknown:
        raise ValueError(f"pinned: unknown end(s) {sorted(unknown)}; use 'start' and/or 'end'")
    pin = np.zeros(k - 1, bool)
    pin[0] |= "start" in ends
    pin[-1] |= "end" in ends
    seg_r = 0.5 * (rad[:-1] + rad[1:])
    j = np.arange(k - 2)
    return RodModel.from_arrays(
        0.5 * (pts[:-1] + pts[1:]), orientations, lengths, seg_r, density,
        joint_parent=j, joint_child=j + 1, joint_radii=rad[1:-1],
        youngs_modulus=youngs_modulus, torsion_modulus=torsion_modulus,
        stretch_compliance=stretch_compliance, pinned=pin)
