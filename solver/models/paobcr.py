"""Position and Orientation Based Cosserat Rods (Kugelstadt & Schömer 2016, seed 002), with XPBD compliance.

A rod of n edges is K = n + 1 particles and one quaternion per edge (staggered grid, §5). Two vector
constraints per edge:

- stretch–shear (Eq. 31), here ``C_s = x_{i+1} − x_i − l·d3(q)`` [m] (Eq. 31 times l, so that its
  residual is in metres like Deul's zero-stretch row); compliance σ⁻¹ [m/N] as Deul's stretch rows.
  J W Jᵀ = (w_i + w_{i+1} + 4 l² w_q)·1 (Eq. 36): no matrix inversion; the updates are Eq. 37.
- bend–twist (Eqs. 32, 33) between neighbouring edges, here ``C_b = (2/l)(Im(q̄u) − s·Im(q̄⁰u⁰))``
  [1/m] — the discrete Darboux vector ΔΩ in the frame of q — with the sign s of Eq. 33 that takes the
  nearer of the two rest poses ±Ω⁰. J W Jᵀ = (4/l²)(w_q + w_u)·1; updates Eq. 40.

Compliance as Deul §5 used for the comparison: bending and twisting with α = (K l)⁻¹, K = diag(E I1,
E I2, G J) (Deul Eqs. 5, 24), instead of PBD stiffness factors. Masses lumped from Deul's segments:
each particle carries half of each adjacent edge's mass; the quaternion weight is w_q = 1/(4 I⊥)
with I⊥ = m (r²/4 + l²/12) the segment's inertia about an axis orthogonal to the centerline (the
factor 4 because |δq| = |δφ|/2). Quaternions are renormalised after every update (the unit-length
constraint of §4). Default order: bilateral interleaving (§7, Fig. 4).
"""

from __future__ import annotations

import numpy as np

from ..core import quaternion as quat
from ..core.model import DEFAULT_STRETCH_COMPLIANCE
from .position_based_rod import PositionBasedRod

_E3_CONJ = np.array([0.0, 0.0, 0.0, -1.0])  # ē3 as a quaternion


def _pure(v: np.ndarray) -> np.ndarray:
    return np.concatenate((np.zeros(v.shape[:-1] + (1,)), v), axis=-1)


def director_d3(q: np.ndarray) -> np.ndarray:
    """Third director R(q) e3 (Eq. 7, third column) for unit quaternions (m, 4)."""
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    return np.stack((2.0 * (x * z + w * y), 2.0 * (y * z - w * x), 1.0 - 2.0 * (x * x + y * y)), axis=1)


def darboux_sign(omega: np.ndarray, omega0: np.ndarray) -> np.ndarray:
    """Eq. 33: +1 where Ω is nearer to Ω⁰ than to −Ω⁰, else −1."""
    return np.where(np.sum((omega - omega0) ** 2, axis=1) <= np.sum((omega + omega0) ** 2, axis=1), 1.0, -1.0)


class StretchShear:
    """Eq. 31 per edge e: particles e, e+1 and quaternion e."""

    def __init__(self, lengths: np.ndarray, compliance: np.ndarray):
        self.l = lengths
        self.alpha = np.repeat(compliance[:, None], 3, axis=1)
        self.lam = np.zeros((lengths.size, 3))

    def value(self, rod) -> np.ndarray:
        return rod.x[1 : rod.n_points] - rod.x[: rod.n_points - 1] - self.l[:, None] * director_d3(rod.q)

    def project(self, rod, idx: np.ndarray, inv_dt2: float) -> None:
        a, b = idx, idx + 1
        q = rod.q[idx]
        length = self.l[idx]
        c = rod.x[b] - rod.x[a] - length[:, None] * director_d3(q)
        wa, wb, wq = rod.w[a], rod.w[b], rod.wq[idx]
        at = self.alpha[idx, 0] * inv_dt2
        dlam = -(c + at[:, None] * self.lam[idx]) / (wa + wb + 4.0 * length * length * wq + at)[:, None]
        self.lam[idx] += dlam
        rod.x[a] -= wa[:, None] * dlam
        rod.x[b] += wb[:, None] * dlam
        # W ∇_qCᵀ Δλ = −2 l w_q (0, Δλ) q ē3  (Eqs. 11, 35, 37)
        dq = quat.multiply(quat.multiply(_pure(dlam), q), _E3_CONJ)
        rod.q[idx] = quat.normalize(q - (2.0 * length * wq)[:, None] * dq)


class BendTwist:
    """Eqs. 32, 33 per interior point j: quaternions j (q) and j+1 (u)."""

    def __init__(self, rest_orientations: np.ndarray, joint_lengths: np.ndarray, stiffness: np.ndarray):
        r0 = quat.multiply(quat.conjugate(rest_orientations[:-1]), rest_orientations[1:])
        self.omega0 = r0[:, 1:]  # Im(q̄⁰u⁰), dimensionless (= l/2 · Ω⁰)
        self.l = joint_lengths
        self.alpha = 1.0 / (stiffness * joint_lengths[:, None])  # (K l)⁻¹ [1/(N·m)], Deul Eq. 24
        self.lam = np.zeros((joint_lengths.size, 3))

    def _c(self, qa, qb, j):
        om = quat.multiply(quat.conjugate(qa), qb)[:, 1:]
        s = darboux_sign(om, self.omega0[j])
        return (2.0 / self.l[j])[:, None] * (om - s[:, None] * self.omega0[j])

    def value(self, rod) -> np.ndarray:
        j = np.arange(self.l.size)
        return self._c(rod.q[:-1], rod.q[1:], j)

    def project(self, rod, idx: np.ndarray, inv_dt2: float) -> None:
        qa, qb = rod.q[idx], rod.q[idx + 1]
        c = self._c(qa, qb, idx)
        wa, wb = rod.wq[idx], rod.wq[idx + 1]
        two_l = 2.0 / self.l[idx]
        at = self.alpha[idx] * inv_dt2
        dlam = -(c + at * self.lam[idx]) / ((two_l * two_l * (wa + wb))[:, None] + at)
        self.lam[idx] += dlam
        p = _pure(dlam)
        # W ∇Cᵀ Δλ: Δq = −w_q (2/l) u (0,Δλ), Δu = +w_u (2/l) q (0,Δλ)  (Eqs. 38–40)
        rod.q[idx] = quat.normalize(qa - (wa * two_l)[:, None] * quat.multiply(qb, p))
        rod.q[idx + 1] = quat.normalize(qb + (wb * two_l)[:, None] * quat.multiply(qa, p))


class PaOBCRRod(PositionBasedRod):
    """PaOBCR rod from a polyline (see :mod:`solver.models.rod_interface` for the shared parameters).

    Extra: ``ordering`` "bilateral" (paper, §7) or "colored" (even/odd, vectorised);
    ``stretch_compliance`` [m/N] of the stretch–shear rows (Deul's default 1e-10).
    """

    name = "paobcr"

    def __init__(
        self,
        *args,
        ordering: str = "bilateral",
        stretch_compliance: float = DEFAULT_STRETCH_COMPLIANCE,
        **kw,
    ):
        super().__init__(*args, **kw)  # the interface's parameters (rod_interface.PolylineRod)
        if not (np.isfinite(stretch_compliance) and stretch_compliance > 0):
            raise ValueError(f"stretch_compliance must be finite and > 0 (m/N), got {stretch_compliance!r}")
        n, k = self.n_edges, self.n_points
        m_p = np.zeros(k)
        m_p[:-1] += 0.5 * self.edge_mass
        m_p[1:] += 0.5 * self.edge_mass
        r, lengths = self.edge_radius, self.lengths
        i_perp = self.edge_mass * (r * r / 4.0 + lengths * lengths / 12.0)
        self._init_state(
            self.rest_points,
            1.0 / m_p,
            self.frames,
            1.0 / (4.0 * i_perp),
            pinned_particles={"start": [0, 1], "end": [k - 2, k - 1]},
            pinned_quats={"start": [0], "end": [n - 1]},
        )
        self.kinds = {
            "stretch": StretchShear(lengths, np.full(n, float(stretch_compliance))),
            "bend": BendTwist(self.frames, self.joint_lengths, self.bend_twist_stiffness),
        }
        e = np.arange(n)
        j = np.arange(n - 1)
        variables = {"stretch": np.stack((e, e + 1, k + e), axis=1), "bend": np.stack((k + j, k + j + 1), axis=1)}
        active = {"stretch": (self.w[e] + self.w[e + 1] + self.wq[e]) > 0, "bend": (self.wq[j] + self.wq[j + 1]) > 0}
        natural = [("stretch", 0)]
        for i in range(n - 1):  # s0, b0, s1, b1, …, s_{n-1}: along the rod
            natural += [("bend", i), ("stretch", i + 1)]
        self._build_sweep(ordering, natural, ["stretch", "bend"], variables, active)
