"""The small interface every rod model of the seeds shares, so a Blender object can pick one.

    rod = Model(points (K, 3) [m], radius [m], youngs_modulus [Pa], torsion_modulus [Pa] | None,
                density [kg/m³], pinned=("start",), twist_rate=0.0 [rad/m], iterations=10,
                gravity=(0, 0, -9.81) [m/s²], damping=0.0 [1/s])
    rod.step(dt)            # advance dt [s]
    rod.centerline()        # (K, 3) current points [m]
    rod.residual()          # the model's own convergence measure at the end of the last step
    rod.twist_end("end", angle)   # drive a clamped end: turn it about its rest axis [rad]

Material frames are parallel-transported along the polyline (Kugelstadt & Schömer §7: minimal rest
Darboux vector, no flipping) and then turned about the tangent by ``twist_rate · s`` (intrinsic twist).
A pinned end clamps its end edge (both end points and the edge's frame).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import quaternion as quat
from ..core.model import _cumulative_left_product, cross_section_moments

ENDS = ("start", "end")


def _finite_positive(name: str, value) -> float:
    v = float(value)
    if not (np.isfinite(v) and v > 0.0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return v


def check_polyline(points) -> tuple[np.ndarray, np.ndarray]:
    """Validated points (K, 3) [m] and edge lengths (K-1,) [m]; ValueError naming the bad item."""
    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2 or pts.shape[1] != 3 or pts.shape[0] < 3:
        raise ValueError(f"points: expected shape (K, 3) with K ≥ 3, got {pts.shape}")
    bad = np.argwhere(~np.isfinite(pts))
    if bad.size:
        raise ValueError(f"points[{int(bad[0, 0])}] is not finite (NaN or inf)")
    lengths = np.linalg.norm(np.diff(pts, axis=0), axis=1)
    bad = np.flatnonzero(~(lengths > 0.0))
    if bad.size:
        raise ValueError(f"edge {int(bad[0])} (points {int(bad[0])} and {int(bad[0]) + 1}) has zero length")
    return pts, lengths


def edge_frames(points: np.ndarray, twist_rate: float = 0.0) -> np.ndarray:
    """Unit quaternions (K-1, 4) of the edges' material frames, local +z along each edge.

    Parallel transport (shortest-arc rotation from one tangent to the next, Bergou et al. 2008) from a
    first frame that takes +z onto the first edge, then a turn by ``twist_rate · s`` about the tangent,
    s [m] the arc length at the edge's midpoint.
    """
    pts = np.asarray(points, dtype=float)
    edges = np.diff(pts, axis=0)
    lengths = np.linalg.norm(edges, axis=1)
    dirs = edges / lengths[:, None]
    q0 = quat.from_two_vectors(np.array([0.0, 0.0, 1.0]), dirs[0])
    transport = quat.from_two_vectors(dirs[:-1], dirs[1:]) if dirs.shape[0] > 1 else np.zeros((0, 4))
    frames = quat.normalize(quat.multiply(_cumulative_left_product(transport), q0))
    if twist_rate:
        s = np.cumsum(lengths) - 0.5 * lengths
        half = 0.5 * twist_rate * s
        turn = np.stack((np.cos(half), np.zeros_like(half), np.zeros_like(half), np.sin(half)), axis=1)
        frames = quat.normalize(quat.multiply(frames, turn))
    return frames


def axis_angle(axis, angle) -> np.ndarray:
    """Unit quaternion of a rotation by ``angle`` [rad] about ``axis`` (need not be unit)."""
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    return np.concatenate(([np.cos(0.5 * angle)], np.sin(0.5 * angle) * a))


@dataclass(frozen=True)
class RodSettings:
    """The keyword settings every rod model takes: ``pinned`` ends (``"start"`` and/or ``"end"``: the end edge
    clamped), intrinsic ``twist_rate`` [rad/m], solver ``iterations`` per step, ``gravity`` [m/s²] and mass
    ``damping`` [1/s]."""

    pinned: Any = ("start",)
    twist_rate: float = 0.0
    iterations: int = 10
    gravity: Any = (0.0, 0.0, -9.81)
    damping: float = 0.0


def _point_radii(radius, k: int) -> np.ndarray:
    """The radius [m] at each of ``k`` points (a scalar broadcast), checked finite and > 0."""
    rad = np.asarray(radius, dtype=float)
    try:
        rad = np.broadcast_to(rad, (k,)).copy()
    except ValueError:
        raise ValueError(f"radius: expected a scalar or one value per point ({k}), got shape {rad.shape}") from None
    bad = np.flatnonzero(~(np.isfinite(rad) & (rad > 0.0)))
    if bad.size:
        raise ValueError(f"radius[{int(bad[0])}] must be finite and > 0, got {rad[bad[0]]}")
    return rad


def _checked_settings(settings: RodSettings) -> tuple[set, np.ndarray]:
    """``(pinned ends, gravity (3,))`` of ``settings``, every setting checked."""
    pinned, twist_rate, iterations = settings.pinned, settings.twist_rate, settings.iterations
    gravity, damping = settings.gravity, settings.damping
    ends = {pinned} if isinstance(pinned, str) else set(pinned)
    unknown = ends - set(ENDS)
    if unknown:
        raise ValueError(f"pinned: unknown end(s) {sorted(unknown)}; use 'start' and/or 'end'")
    if not np.isfinite(twist_rate):
        raise ValueError(f"twist_rate must be finite (rad/m), got {twist_rate!r}")
    if isinstance(iterations, bool) or int(iterations) != iterations or iterations < 1:
        raise ValueError(f"iterations must be an integer ≥ 1, got {iterations!r}")
    g = np.asarray(gravity, dtype=float)
    if g.shape != (3,) or not np.all(np.isfinite(g)):
        raise ValueError(f"gravity must be a finite 3-vector in m/s², got {gravity!r}")
    if not (np.isfinite(damping) and damping >= 0.0):
        raise ValueError(f"damping must be finite and ≥ 0 (1/s), got {damping!r}")
    return ends, g


class PolylineRod:
    """Validated inputs, material arrays and clamp driving shared by every rod model.

    ``settings``: the fields of :class:`RodSettings` as keywords (``pinned``, ``twist_rate``, ``iterations``,
    ``gravity``, ``damping``). Attributes set here: ``rest_points`` (K, 3), ``lengths`` (n,) [m] per edge,
    ``point_radius`` (K,) and ``edge_radius`` (n,) [m], ``frames`` (n, 4) rest material frames, ``edge_mass``
    (n,) [kg] (solid cylinders ρπr²l), ``bend_twist_stiffness`` (n-1, 3) = (E I1, E I2, G J) [N·m²] at the
    interior points (Deul Eq. 5), ``joint_lengths`` (n-1,) [m] (mean of the two edges; half the
    free edge next to a clamped end),
    ``pinned_ends`` (set of "start"/"end"), ``time`` [s].
    """

    name = "rod"

    def __init__(
        self,
        points,
        radius,
        youngs_modulus: float,
        torsion_modulus: float | None = None,
        density: float = 1000.0,
        **settings: Any,
    ):
        opts = RodSettings(**settings)
        pts, lengths = check_polyline(points)
        k = pts.shape[0]
        rad = _point_radii(radius, k)
        self.youngs_modulus = _finite_positive("youngs_modulus", youngs_modulus)
        self.torsion_modulus = (
            self.youngs_modulus / 2.6
            if torsion_modulus is None
            else _finite_positive("torsion_modulus", torsion_modulus)
        )
        self.density = _finite_positive("density", density)
        ends, g = _checked_settings(opts)
        self.rest_points = pts
        self.lengths = lengths
        self.point_radius = rad
        self.edge_radius = 0.5 * (rad[:-1] + rad[1:])
        self.pinned_ends = ends
        self.twist_rate = float(opts.twist_rate)
        self.iterations = int(opts.iterations)
        self.gravity = g
        self.damping = float(opts.damping)
        self.frames = edge_frames(pts, opts.twist_rate)
        self.edge_mass = self.density * np.pi * self.edge_radius**2 * lengths
        i1, i2, j = cross_section_moments(np.repeat(rad[1:-1, None], 2, axis=1))
        self.bend_twist_stiffness = np.stack(
            (self.youngs_modulus * i1, self.youngs_modulus * i2, self.torsion_modulus * j), axis=1
        )
        # Darboux length of each interior point: its share of the rod; a clamped end edge is support,
        # not rod, so the joint next to it stands for half of the free edge only (as Deul's cantilever)
        self.joint_lengths = 0.5 * (lengths[:-1] + lengths[1:])
        if "start" in ends:
            self.joint_lengths[0] = 0.5 * lengths[1]
        if "end" in ends:
            self.joint_lengths[-1] = 0.5 * lengths[-2]
        self.time = 0.0
        self.last_dt: float | None = None
        # clamp drive per end: rotation (4,) about the end edge's rest midpoint, then translation (3,) [m]
        self._clamp = {end: (np.array([1.0, 0.0, 0.0, 0.0]), np.zeros(3)) for end in ENDS}

    # ------------------------------------------------------------------ interface
    @property
    def n_points(self) -> int:
        return int(self.rest_points.shape[0])

    @property
    def n_edges(self) -> int:
        return int(self.lengths.shape[0])

    def step(self, dt: float) -> None:
        raise NotImplementedError

    def centerline(self) -> np.ndarray:
        raise NotImplementedError

    def residual(self) -> float:
        raise NotImplementedError

    def _check_dt(self, dt) -> float:
        dt = _finite_positive("dt", dt)
        self.last_dt = dt
        return dt

    # ------------------------------------------------------------------ clamps
    def end_edge(self, end: str) -> int:
        if end not in ENDS:
            raise ValueError(f"end must be 'start' or 'end', got {end!r}")
        return 0 if end == "start" else self.n_edges - 1

    def drive_end(self, end: str, rotation=(1.0, 0.0, 0.0, 0.0), translation=(0.0, 0.0, 0.0)) -> None:
        """Pose of a pinned end's clamp: its rest pose turned by ``rotation`` (unit quaternion, world
        frame, about the end edge's rest midpoint) and then moved by ``translation`` [m]."""
        self.end_edge(end)
        if end not in self.pinned_ends:
            raise ValueError(f"end {end!r} is not pinned (pinned ends: {sorted(self.pinned_ends)})")
        r = np.asarray(rotation, dtype=float).reshape(4)
        t = np.asarray(translation, dtype=float).reshape(3)
        if not (np.all(np.isfinite(r)) and np.all(np.isfinite(t)) and np.linalg.norm(r) > 0):
            raise ValueError(f"drive_end({end!r}): rotation and translation must be finite, rotation non-zero")
        self._clamp[end] = (r / np.linalg.norm(r), t)

    def twist_end(self, end: str, angle: float, translation=(0.0, 0.0, 0.0)) -> None:
        """Turn a pinned end by ``angle`` [rad] about its rest edge axis (and move it by ``translation``)."""
        e = self.end_edge(end)
        axis = self.rest_points[e + 1] - self.rest_points[e]
        self.drive_end(end, axis_angle(axis, angle), translation)

    def clamp_transform(self, end: str, rest_points: np.ndarray) -> np.ndarray:
        """World positions of points given in the rest pose, moved with the clamp of ``end``."""
        e = self.end_edge(end)
        r, t = self._clamp[end]
        centre = 0.5 * (self.rest_points[e] + self.rest_points[e + 1])
        return centre + t + quat.rotate(r, np.asarray(rest_points, dtype=float) - centre)

    def clamp_rotation(self, end: str) -> np.ndarray:
        return self._clamp[end][0]
