"""Position-Based Elastic Rods (Umetani, Schmidt & Stam 2014, seed 001), with XPBD compliance.

A rod of n edges is K = n + 1 centerline particles plus one ghost point per edge (particles K … K+n-1).
The material frame of edge e = (a, b) with ghost g is d3 = (x_b − x_a)/|…|, d2 = d3 × (g − x_a)
normalised, d1 = d2 × d3, so d1 points from the edge towards its ghost. Constraints:

- edge length ``|x_b − x_a| − l`` [m];
- perpendicular bisector ``(g − m)·(x_b − x_a) / l`` [m] (m the edge midpoint): the ghost stays on
  the plane that bisects its edge;
- ghost distance ``|g − m| − l_g`` [m];
- bend–twist at each interior point: ``Ω − Ω⁰`` [1/m], the modified discrete Darboux vector
  ``Ω_i = (2/l) (d_A^k·d_B^j − d_A^j·d_B^k) / (1 + Σ_n d_A^n·d_B^n)`` (tan θ/2 form, Kugelstadt &
  Schömer Eq. 30), a vector constraint on 5 points (3 centerline, 2 ghosts) projected with the
  variational (block) formula ``Δp_s = −w_s ∇_sCᵀ (Σ_t w_t ∇_tC ∇_tCᵀ + α̃)⁻¹ (C + α̃λ)``.

XPBD compliance as Deul §5: α = (K l)⁻¹ for the Darboux rows (K = diag(E I1, E I2, G J)), σ⁻¹ [m/N]
for the three positional constraints. Masses as Deul §5: each edge's mass goes ⅓ to each of its two
particles and ⅓ to its ghost. Order: bidirectional (the natural order along the rod visited from both
ends alternately) by default. Ghost gravity (``ghost_gravity``): "selective" (default) gives a ghost
the acceleration its edge actually had over the previous step — g in free fall, ≈ 0 for a rod held
at rest — so ghosts fall with a falling rod but do not twist a hanging one (the bias the talk's
"selective gravity" removes); "full" applies g to ghosts, "none" nothing.
"""

from __future__ import annotations

import numpy as np

from ..core import quaternion as quat
from ..core.model import DEFAULT_STRETCH_COMPLIANCE
from .position_based_rod import PositionBasedRod, project_scalar

GHOST_GRAVITY = ("selective", "full", "none")


def material_frame(pa, pb, g, with_jacobians: bool = False):
    """Directors (m, 3, 3) — rows d1, d2, d3 — of edges (pa, pb) with ghosts g; optionally their
    Jacobians J (m, 3 directors, 3 points (pa, pb, g), 3, 3)."""
    e = pb - pa
    le = np.linalg.norm(e, axis=1)
    d3 = e / le[:, None]
    h = g - pa
    c = np.cross(d3, h)
    lc = np.linalg.norm(c, axis=1)
    d2 = c / lc[:, None]
    d1 = np.cross(d2, d3)
    frame = np.stack((d1, d2, d3), axis=1)
    if not with_jacobians:
        return frame
    eye = np.eye(3)
    p3 = (eye - d3[:, :, None] * d3[:, None, :]) / le[:, None, None]
    p2 = (eye - d2[:, :, None] * d2[:, None, :]) / lc[:, None, None]
    sk_d3, sk_h, sk_d2 = quat.skew(d3), quat.skew(h), quat.skew(d2)
    jd3 = np.stack((-p3, p3, np.zeros_like(p3)), axis=1)  # ∂d3/∂(pa, pb, g)
    hp3 = sk_h @ p3
    jc = np.stack((-sk_d3 + hp3, -hp3, sk_d3), axis=1)  # c = d3 × h
    jd2 = p2[:, None] @ jc
    jd1 = -sk_d3[:, None] @ jd2 + sk_d2[:, None] @ jd3  # d1 = d2 × d3
    return frame, np.stack((jd1, jd2, jd3), axis=1)


_CYCLIC = ((2, 1), (0, 2), (1, 0))  # Ω_i from R_jk − R_kj with (j, k) = (3,2), (1,3), (2,1) (0-based)


def darboux(frame_a, frame_b, mid_length):
    """Modified discrete Darboux vector (m, 3) [1/m] of frame B relative to A, in A's frame:
    (2/l) tan(θ/2) n for a relative rotation by θ about n."""
    r = frame_a @ np.swapaxes(frame_b, 1, 2)  # R_jk = d_A^j · d_B^k
    n = np.stack([r[:, j, k] - r[:, k, j] for j, k in _CYCLIC], axis=1)
    d = 1.0 + np.trace(r, axis1=1, axis2=2)
    return (2.0 / mid_length)[:, None] * n / d[:, None]


def darboux_with_gradient(pa, pb, pc, ga, gb, mid_length):
    """Ω (m, 3) and ∂Ω/∂(pa, pb, pc, ga, gb) as (m, 5, 3, 3) (rows: Ω components)."""
    fa, ja = material_frame(pa, pb, ga, True)
    fb, jb = material_frame(pb, pc, gb, True)
    r = fa @ np.swapaxes(fb, 1, 2)
    # ∂R_jk/∂x for A's points (pa, pb, ga) and B's points (pb, pc, gb): (m, 3, 3, 3 pts, 3 coords)
    dr_a = np.einsum("mkc,mjpcx->mjkpx", fb, ja)
    dr_b = np.einsum("mjc,mkpcx->mjkpx", fa, jb)
    m = pa.shape[0]
    dr = np.zeros((m, 3, 3, 5, 3))
    dr[:, :, :, [0, 1, 3]] += dr_a
    dr[:, :, :, [1, 2, 4]] += dr_b
    n = np.stack([r[:, j, k] - r[:, k, j] for j, k in _CYCLIC], axis=1)
    dn = np.stack([dr[:, j, k] - dr[:, k, j] for j, k in _CYCLIC], axis=1)  # (m, 3, 5, 3)
    d = 1.0 + np.trace(r, axis1=1, axis2=2)
    dd = dr[:, 0, 0] + dr[:, 1, 1] + dr[:, 2, 2]  # (m, 5, 3)
    f = (2.0 / mid_length) / d
    omega = f[:, None] * n
    grad = f[:, None, None, None] * (dn - (n / d[:, None])[:, :, None, None] * dd[:, None])
    return omega, np.swapaxes(grad, 1, 2)


class _Edges:
    """Edge-local scalar constraint (edge length, bisector or ghost distance) of every edge."""

    def __init__(self, rod, kind: str, compliance: float):
        self.kind = kind
        n = rod.n_edges
        self.alpha = np.full((n, 1), compliance)
        self.lam = np.zeros((n, 1))
        self.l = rod.lengths
        self.lg = rod.ghost_distance

    def _eval(self, rod, idx):
        k = rod.n_points
        pa, pb, g = rod.x[idx], rod.x[idx + 1], rod.x[k + idx]
        if self.kind == "length":
            e = pb - pa
            le = np.linalg.norm(e, axis=1)
            d3 = e / le[:, None]
            return le - self.l[idx], [idx, idx + 1], [-d3, d3]
        mid_off = g - 0.5 * (pa + pb)
        if self.kind == "bisector":
            e = pb - pa
            inv_l = (1.0 / self.l[idx])[:, None]
            c = np.einsum("ij,ij->i", mid_off, e) * inv_l[:, 0]
            return c, [idx, idx + 1, k + idx], [(-0.5 * e - mid_off) * inv_l, (-0.5 * e + mid_off) * inv_l, e * inv_l]
        dist = np.linalg.norm(mid_off, axis=1)
        u = mid_off / dist[:, None]
        return dist - self.lg[idx], [idx, idx + 1, k + idx], [-0.5 * u, -0.5 * u, u]

    def value(self, rod):
        return self._eval(rod, np.arange(rod.n_edges))[0][:, None]

    def project(self, rod, idx, inv_dt2):
        c, points, grads = self._eval(rod, idx)
        project_scalar(rod, self, idx, c, points, grads, inv_dt2)


class _BendTwist:
    """Darboux-vector constraint at interior point j: points j, j+1, j+2, ghosts j, j+1."""

    def __init__(self, rod):
        k = rod.n_points
        j = np.arange(rod.n_edges - 1)
        self.l = rod.joint_lengths
        self.pts = np.stack((j, j + 1, j + 2, k + j, k + j + 1), axis=1)
        self.alpha = 1.0 / (rod.bend_twist_stiffness * self.l[:, None])
        self.lam = np.zeros((j.size, 3))
        self.omega0 = self._omega(rod.x, j)

    def _omega(self, x, idx):
        p = x[self.pts[idx]]
        fa = material_frame(p[:, 0], p[:, 1], p[:, 3])
        fb = material_frame(p[:, 1], p[:, 2], p[:, 4])
        return darboux(fa, fb, self.l[idx])

    def value(self, rod):
        j = np.arange(self.l.size)
        return self._omega(rod.x, j) - self.omega0

    def project(self, rod, idx, inv_dt2):
        pts = self.pts[idx]
        p = rod.x[pts]
        omega, grad = darboux_with_gradient(p[:, 0], p[:, 1], p[:, 2], p[:, 3], p[:, 4], self.l[idx])
        c = omega - self.omega0[idx]
        w = rod.w[pts]  # (m, 5)
        at = self.alpha[idx] * inv_dt2
        s = np.einsum("ms,msix,msjx->mij", w, grad, grad)
        s[:, [0, 1, 2], [0, 1, 2]] += at
        dlam = np.linalg.solve(s, -(c + at * self.lam[idx])[:, :, None])[:, :, 0]
        self.lam[idx] += dlam
        dx = w[:, :, None] * np.einsum("msix,mi->msx", grad, dlam)
        np.add.at(rod.x, pts, dx)


class PBERRod(PositionBasedRod):
    """PBER rod from a polyline (see :mod:`solver.models.rod_interface` for the shared parameters).

    Extra: ``ordering`` "bilateral" (bidirectional, paper) or "colored"; ``ghost_gravity`` (see the
    module doc); ``ghost_distance`` [m] (default: each edge's length); ``stretch_compliance`` [m/N].
    """

    name = "pber"

    def __init__(
        self,
        *args,
        ordering: str = "bilateral",
        ghost_gravity: str = "selective",
        ghost_distance=None,
        stretch_compliance: float = DEFAULT_STRETCH_COMPLIANCE,
        **kw,
    ):
        super().__init__(*args, **kw)  # the interface's parameters (rod_interface.PolylineRod)
        if ghost_gravity not in GHOST_GRAVITY:
            raise ValueError(f"ghost_gravity must be one of {GHOST_GRAVITY}, got {ghost_gravity!r}")
        if not (np.isfinite(stretch_compliance) and stretch_compliance > 0):
            raise ValueError(f"stretch_compliance must be finite and > 0 (m/N), got {stretch_compliance!r}")
        n, k = self.n_edges, self.n_points
        lg = (
            self.lengths.copy()
            if ghost_distance is None
            else np.broadcast_to(np.asarray(ghost_distance, float), (n,)).copy()
        )
        bad = np.flatnonzero(~(np.isfinite(lg) & (lg > 0)))
        if bad.size:
            raise ValueError(f"ghost_distance[{int(bad[0])}] must be finite and > 0")
        self.ghost_distance = lg
        self.ghost_gravity = ghost_gravity
        mid = 0.5 * (self.rest_points[:-1] + self.rest_points[1:])
        d1 = quat.rotate(self.frames, np.array([1.0, 0.0, 0.0]))
        x = np.concatenate((self.rest_points, mid + lg[:, None] * d1))
        third = self.edge_mass / 3.0
        m = np.zeros(k + n)
        m[: k - 1] += third
        m[1:k] += third
        m[k:] = third
        e = np.arange(n)
        self._init_state(
            x,
            1.0 / m,
            np.zeros((0, 4)),
            np.zeros(0),
            pinned_particles={"start": [0, 1, k], "end": [k - 2, k - 1, k + n - 1]},
            pinned_quats={"start": [], "end": []},
        )
        # first step: the edge's external acceleration (g for a free edge), measured afterwards
        self._edge_acc = 0.5 * (self._free_x[: k - 1].astype(float) + self._free_x[1:k])[:, None] * self.gravity
        self._v_edge_prev = None
        self.kinds = {
            "length": _Edges(self, "length", stretch_compliance),
            "bisector": _Edges(self, "bisector", stretch_compliance),
            "ghost": _Edges(self, "ghost", stretch_compliance),
        }
        bend_twist = _BendTwist(self)
        self.kinds["darboux"] = bend_twist
        edge_vars = np.stack((e, e + 1, k + e), axis=1)
        variables = {
            "length": edge_vars[:, :2],
            "bisector": edge_vars,
            "ghost": edge_vars,
            "darboux": bend_twist.pts,
        }
        edge_free = (self.w[e] + self.w[e + 1] + self.w[k + e]) > 0
        active = {
            "length": (self.w[e] + self.w[e + 1]) > 0,
            "bisector": edge_free,
            "ghost": edge_free,
            "darboux": np.any(self.w[variables["darboux"]] > 0, axis=1),
        }
        natural = []
        for i in range(n):  # per edge: length, bisector, ghost; then Darboux i
            natural += [("length", i), ("bisector", i), ("ghost", i)]
            if i < n - 1:
                natural.append(("darboux", i))
        self._build_sweep(ordering, natural, ["length", "bisector", "ghost", "darboux"], variables, active)

    def particle_acceleration(self) -> np.ndarray:
        k = self.n_points
        acc = super().particle_acceleration()
        if self.ghost_gravity == "none":
            acc[k:] = 0.0
        elif self.ghost_gravity == "selective":
            acc[k:] = np.where(self._free_x[k:, None], self._edge_acc, 0.0)
        return acc

    def end_step(self) -> None:
        super().end_step()
        k = self.n_points
        v_edge = 0.5 * (self.v[: k - 1] + self.v[1:k])
        if self._v_edge_prev is not None:
            self._edge_acc = (v_edge - self._v_edge_prev) / self.last_dt
        self._v_edge_prev = v_edge

    def ghost_twist(self) -> np.ndarray:
        """Angle [rad] of each edge's d1 about its d3 relative to the rest frame parallel-transported
        onto the current edge (for the ghost-gravity bias)."""
        k = self.n_points
        f = material_frame(self.x[: k - 1], self.x[1:k], self.x[k:])
        rest = quat.rotate(self.frames, np.array([1.0, 0.0, 0.0]))
        t = quat.from_two_vectors(quat.rotate(self.frames, np.array([0.0, 0.0, 1.0])), f[:, 2])
        ref = quat.rotate(t, rest)
        return np.arctan2(np.einsum("ij,ij->i", np.cross(ref, f[:, 0]), f[:, 2]), np.einsum("ij,ij->i", ref, f[:, 0]))
