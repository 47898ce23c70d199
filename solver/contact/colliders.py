"""Static or animated colliders for rod contacts: plane, sphere, capsule, box and triangle mesh (SDF grid).

Every collider is a signed distance function ``φ`` [m] (negative inside) with unit outward normal
``∇φ``, defined in the collider's own frame and placed in the world by ``pose``: ``None`` (the
identity, static) or a callable ``pose(t) -> (translation (3,) [m], orientation (4,) unit quaternion
(w, x, y, z))`` for an animated collider (Deul Algorithm 1 generates the contacts against the pose at
the end of the step). ``friction`` is the Coulomb coefficient μ of contacts with this collider
(``None``: the contact set's default).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..core import quaternion as quat
from .sdf import SignedDistanceGrid, mesh_signed_distance_grid

Pose = Callable[[float], tuple]


def closest_points_on_segments(p1, q1, p2, q2):
    """Parameters ``s, t ∈ [0, 1]`` of the closest points ``p1 + s (q1 − p1)``, ``p2 + t (q2 − p2)`` of
    segment pairs (..., 3), vectorised (Ericson, *Real-Time Collision Detection* §5.1.9)."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a = np.einsum("...i,...i", d1, d1)
    e = np.einsum("...i,...i", d2, d2)
    f = np.einsum("...i,...i", d2, r)
    c = np.einsum("...i,...i", d1, r)
    b = np.einsum("...i,...i", d1, d2)
    tiny = 1e-300
    denom = a * e - b * b
    # Parallel segments (denom ≈ 0): any s works; take s = 0 and let the clamping below fix t.
    s = np.where(
        denom > 1e-12 * np.maximum(a * e, tiny), np.clip((b * f - c * e) / np.maximum(denom, tiny), 0.0, 1.0), 0.0
    )
    t = (b * s + f) / np.maximum(e, tiny)
    s = np.where(
        t < 0.0,
        np.clip(-c / np.maximum(a, tiny), 0.0, 1.0),
        np.where(t > 1.0, np.clip((b - c) / np.maximum(a, tiny), 0.0, 1.0), s),
    )
    t = np.clip(t, 0.0, 1.0)
    return s, t


def closest_point_parameter(p, a, b):
    """``s ∈ [0, 1]`` of the point of segment a→b closest to p (arrays broadcast over (..., 3))."""
    d = b - a
    dd = np.maximum(np.einsum("...i,...i", d, d), 1e-300)
    return np.clip(np.einsum("...i,...i", p - a, d) / dd, 0.0, 1.0)


def golden_section(f, k: int, iterations: int = 24):
    """Golden-section search of k convex functions over [0, 1] at once (``f``: (k,) parameters -> (k,) values):
    the final brackets lo, hi (k,) (they shrink by 0.618 per iteration: 0.618²⁴ ≈ 1e-5) and the smallest value
    met inside them."""
    lo, hi = np.zeros(k), np.ones(k)
    g = 0.5 * (np.sqrt(5.0) - 1.0)
    x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = f(x1), f(x2)
    for _ in range(iterations):
        left = f1 < f2
        hi = np.where(left, x2, hi)
        lo = np.where(left, lo, x1)
        x2n = np.where(left, x1, lo + g * (hi - lo))
        x1n = np.where(left, hi - g * (hi - lo), x2)
        fn = f(np.where(left, x1n, x2n))
        f2, f1 = np.where(left, f1, fn), np.where(left, fn, f2)
        x1, x2 = x1n, x2n
    return lo, hi, np.minimum(f1, f2)


def wedge_normals(d, n1, n2, with_distance=False):
    """Outward normals [unit] (k, 3) of the wedge of faces n1, n2 at points d (k, 3) from their edge: a
    face's normal where d is over that face, d's own direction (less its part along the edge) in the
    edge's region, the nearer face's normal inside; and the distance to the wedge [m] (0 inside)."""
    h1, h2 = np.einsum("ij,ij->i", d, n1), np.einsum("ij,ij->i", d, n2)
    v = np.maximum(h1, 0.0)[:, None] * n1 + np.maximum(h2, 0.0)[:, None] * n2
    length = np.sqrt(np.einsum("ij,ij->i", v, v))
    inside = np.where((h1 >= h2)[:, None], n1, n2)
    n = np.where((length > 0.0)[:, None], v / np.maximum(length, 1e-300)[:, None], inside)
    return (n, length) if with_distance else n


def _vector3(name: str, value) -> np.ndarray:
    v = np.asarray(value, dtype=float).reshape(-1)
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be a finite 3-vector, got {value!r}")
    return v


def _positive(name: str, value) -> float:
    value = float(value)
    if not (np.isfinite(value) and value > 0.0):
        raise ValueError(f"{name} must be finite and > 0, got {value}")
    return value


class Collider:
    """Base class: pose handling, world ↔ local transforms, and the closest point of a segment."""

    bounds_local: tuple | None = None  # (lo, hi) AABB in the collider frame [m]; None: unbounded

    def __init__(self, pose: Pose | None = None, friction: float | None = None):
        if pose is not None and not callable(pose):
            raise ValueError("pose must be None or a callable t -> (translation, quaternion)")
        if friction is not None and not (np.isfinite(friction) and friction >= 0.0):
            raise ValueError(f"friction must be ≥ 0, got {friction}")
        self.pose = pose
        self.friction = friction

    def transform(self, t: float):
        """World translation [m] and unit quaternion of the collider frame at time ``t`` [s]."""
        if self.pose is None:
            return np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])
        tr, q = self.pose(t)
        tr = _vector3("pose translation", tr)
        q = np.asarray(q, dtype=float).reshape(4)
        if not (np.all(np.isfinite(q)) and np.linalg.norm(q) > 1e-12):
            raise ValueError(f"pose orientation at t = {t} must be a finite non-zero quaternion, got {q!r}")
        return tr, quat.normalize(q)

    # The shape, in the collider frame: φ [m] and outward unit normal (k, 3).
    def local_distance(self, p: np.ndarray):
        raise NotImplementedError

    def distance(self, points, t: float = 0.0):
        """Signed distance [m] (k,) and outward unit normal (k, 3) of world points at time ``t``."""
        tr, q = self.transform(t)
        phi, n = self.local_distance(quat.rotate_inverse(q, np.asarray(points, dtype=float) - tr))
        return phi, quat.rotate(q, n)

    def displacement(self, points, t0: float, t1: float) -> np.ndarray:
        """How far the collider's material point now at ``points`` (time t1) moved since t0 [m] (k, 3)."""
        if self.pose is None:
            return np.zeros_like(np.asarray(points, dtype=float))
        tr1, q1 = self.transform(t1)
        tr0, q0 = self.transform(t0)
        local = quat.rotate_inverse(q1, points - tr1)
        return points - (tr0 + quat.rotate(q0, local))

    def world_bounds(self, t: float):
        """World AABB (lo, hi) at time t, or None for an unbounded collider."""
        if self.bounds_local is None:
            return None
        lo, hi = self.bounds_local
        corners = np.array(np.meshgrid(*zip(lo, hi, strict=True), indexing="ij")).reshape(3, -1).T
        tr, q = self.transform(t)
        w = quat.rotate(q, corners) + tr
        return w.min(axis=0), w.max(axis=0)

    def edges(self, t: float):
        """The collider's sharp convex edges at time ``t``, or None (a smooth collider): world ends a, b
        (e, 3) [m] and the outward unit normals n1, n2 (e, 3) of the two faces that meet there. Rods get a
        contact row against each edge that follows the rod over it (:class:`~solver.contact.contacts.Contacts`)."""
        return None

    def closest_parameter(self, a: np.ndarray, b: np.ndarray, t: float) -> np.ndarray:
        """``s ∈ [0, 1]`` along world segments a→b (k, 3) where φ is smallest: golden-section search,
        exact for convex colliders (φ along a line is then convex)."""
        d = b - a
        lo, hi, _ = golden_section(lambda s: self.distance(a + s[:, None] * d, t)[0], a.shape[0])
        return 0.5 * (lo + hi)


class Plane(Collider):
    """Half-space ``n·p ≥ offset`` is free, with unit ``normal`` n and ``offset`` [m] (collider frame)."""

    def __init__(self, normal=(0.0, 0.0, 1.0), offset: float = 0.0, *, point=None, pose=None, friction=None):
        super().__init__(pose, friction)
        n = _vector3("normal", normal)
        if np.linalg.norm(n) < 1e-12:
            raise ValueError("normal must be a non-zero vector")
        self.normal = n / np.linalg.norm(n)
        self.offset = float(offset) if point is None else float(self.normal @ _vector3("point", point))

    def local_distance(self, p):
        return p @ self.normal - self.offset, np.broadcast_to(self.normal, p.shape).copy()

    def closest_parameter(self, a, b, t):
        phi_a, phi_b = self.distance(a, t)[0], self.distance(b, t)[0]
        return np.where(phi_b < phi_a, 1.0, 0.0)


class Sphere(Collider):
    """Ball of ``radius`` [m] about ``center`` [m] (collider frame)."""

    def __init__(self, center=(0.0, 0.0, 0.0), radius: float = 1.0, *, pose=None, friction=None):
        super().__init__(pose, friction)
        self.center = _vector3("center", center)
        self.radius = _positive("radius", radius)
        self.bounds_local = (self.center - self.radius, self.center + self.radius)

    def local_distance(self, p):
        d = p - self.center
        r = np.linalg.norm(d, axis=-1)
        n = np.where(r[:, None] > 1e-12, d / np.maximum(r, 1e-300)[:, None], [0.0, 0.0, 1.0])
        return r - self.radius, n

    def closest_parameter(self, a, b, t):
        tr, q = self.transform(t)
        return closest_point_parameter(tr + quat.rotate(q, self.center), a, b)


class Capsule(Collider):
    """All points within ``radius`` [m] of the segment ``a``–``b`` [m] (collider frame)."""

    def __init__(self, a=(0.0, 0.0, 0.0), b=(0.0, 0.0, 1.0), radius: float = 0.1, *, pose=None, friction=None):
        super().__init__(pose, friction)
        self.a = _vector3("a", a)
        self.b = _vector3("b", b)
        self.radius = _positive("radius", radius)
        self.bounds_local = (np.minimum(self.a, self.b) - self.radius, np.maximum(self.a, self.b) + self.radius)

    def local_distance(self, p):
        s = closest_point_parameter(p, self.a, self.b)
        d = p - (self.a + s[:, None] * (self.b - self.a))
        r = np.linalg.norm(d, axis=-1)
        axis = self.b - self.a
        fallback = np.cross(axis, [1.0, 0.0, 0.0] if abs(axis[0]) < 0.9 * np.linalg.norm(axis) else [0.0, 1.0, 0.0])
        fallback = fallback / max(np.linalg.norm(fallback), 1e-300)
        n = np.where(r[:, None] > 1e-12, d / np.maximum(r, 1e-300)[:, None], fallback)
        return r - self.radius, n

    def closest_parameter(self, a, b, t):
        tr, q = self.transform(t)
        ca, cb = tr + quat.rotate(q, self.a), tr + quat.rotate(q, self.b)
        s, _ = closest_points_on_segments(a, b, np.broadcast_to(ca, a.shape), np.broadcast_to(cb, a.shape))
        return s


class Box(Collider):
    """Oriented box with ``half_extents`` [m] about ``center`` [m], rotated by ``orientation`` (collider frame)."""

    def __init__(
        self,
        center=(0.0, 0.0, 0.0),
        half_extents=(0.5, 0.5, 0.5),
        orientation=(1.0, 0.0, 0.0, 0.0),
        *,
        pose=None,
        friction=None,
    ):
        super().__init__(pose, friction)
        self.center = _vector3("center", center)
        self.half_extents = _vector3("half_extents", half_extents)
        if np.any(self.half_extents <= 0.0):
            raise ValueError(f"half_extents must be > 0, got {self.half_extents.tolist()}")
        q = np.asarray(orientation, dtype=float).reshape(4)
        if not (np.all(np.isfinite(q)) and np.linalg.norm(q) > 1e-12):
            raise ValueError(f"orientation must be a non-zero quaternion, got {orientation!r}")
        self.orientation = quat.normalize(q)
        h = self.half_extents
        corners = np.array(np.meshgrid(*zip(-h, h, strict=True), indexing="ij")).reshape(3, -1).T
        w = quat.rotate(self.orientation, corners) + self.center
        self.bounds_local = (w.min(axis=0), w.max(axis=0))
        # the 12 edges: corner pairs that differ in one coordinate (meshgrid order: bit 4 x, 2 y, 1 z); the
        # faces meeting there are normal to the other two axes, outward on the corner's side
        bits = np.array([4, 2, 1])
        ends, faces = [], []
        for axis, bit in enumerate(bits):
            for i in range(8):
                if i & bit:
                    continue
                ends.append((i, i | bit))
                faces.append([np.where(i & bits[k], 1.0, -1.0) * np.eye(3)[k] for k in range(3) if k != axis])
        ends, faces = np.array(ends), np.array(faces)
        self._edge_local = (
            w[ends[:, 0]],
            w[ends[:, 1]],
            quat.rotate(self.orientation, faces[:, 0]),
            quat.rotate(self.orientation, faces[:, 1]),
        )

    def edges(self, t):
        tr, q = self.transform(t)
        a, b, n1, n2 = self._edge_local
        return quat.rotate(q, a) + tr, quat.rotate(q, b) + tr, quat.rotate(q, n1), quat.rotate(q, n2)

    def local_distance(self, p):
        x = quat.rotate_inverse(self.orientation, p - self.center)
        d = np.abs(x) - self.half_extents
        outside = np.maximum(d, 0.0)
        out_len = np.linalg.norm(outside, axis=-1)
        inside = np.minimum(d.max(axis=-1), 0.0)
        phi = out_len + inside
        # Normal: outside, the direction to the nearest box point; inside, the nearest face.
        face = np.zeros_like(x)
        face[np.arange(x.shape[0]), np.argmax(d, axis=-1)] = 1.0
        g = np.where(out_len[:, None] > 0.0, outside / np.maximum(out_len, 1e-300)[:, None], face)
        n = g * np.where(x < 0.0, -1.0, 1.0)
        return phi, quat.rotate(self.orientation, n)


class Mesh(Collider):
    """Closed triangle mesh as a signed distance grid (``solver.contact.sdf``): ``vertices`` (V, 3) [m], ``faces``
    (F, 3) vertex indices, grid spacing ``cell_size`` [m] (distances are exact at grid nodes and
    trilinear between them)."""

    def __init__(self, vertices, faces, cell_size: float, *, padding: int = 3, pose=None, friction=None):
        super().__init__(pose, friction)
        self.grid: SignedDistanceGrid = mesh_signed_distance_grid(
            vertices, faces, _positive("cell_size", cell_size), padding=padding
        )
        self.bounds_local = (
            self.grid.origin,
            self.grid.origin + self.grid.cell_size * (np.array(self.grid.phi.shape) - 1),
        )

    def local_distance(self, p):
        return self.grid.evaluate(p)
