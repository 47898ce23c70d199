"""The force-based deformable linear object of Cioacă & Cărămizaru (seed 004, §§3–4).

Each polyline point R_k carries two frame points Q_k = R_k + a d1 and P_k = R_k + a d2 (a the radius,
d1/d2 the material frame; the seed builds its frame from the binormal of neighbouring edges, which is
undefined on straight pieces, so the parallel-transported frames of :mod:`solver.models.rod_interface` are
used). Every edge (R_k, R_{k+1}) is split into three tetrahedra (R_{k+1} P_k Q_k R_k),
(R_{k+1} Q_{k+1} Q_k P_k), (R_{k+1} P_k P_{k+1} Q_{k+1}) (§4, Fig. 2). Forces:

- linear springs on every tetrahedron edge (Eq. 9), stiffness E A / (3 L₀) [N/m] (three parallel
  fibres carry the axial stiffness E A / l), with optional dashpots ``spring_damping`` β [s]
  (c = β k along the spring);
- volume preservation per tetrahedron (Eqs. 10–13), energy ½ K_V C_V², C_V = (V − V₀)/V₀, K_V = E V₀;
- a torsional spring at each interior node (Eq. 15): the torsion-compensating quaternion
  q̃_j = SLERP(Quat(R_iR_j, ½(u_ij⁰ − u_ij)), Quat(R_jR_k, ½(u_jk⁰ − u_jk))*, λ) says how R_jQ_j should
  turn; a spring of stiffness 2 G J / (l a²) pulls Q_j towards that target (and R_j back);
- gravity and mass-proportional ``damping`` [1/s].

The node mass (half of each adjacent edge's mass) is split equally among R_k, P_k and Q_k. The state
is integrated with one of :data:`solver.models.integrators.INTEGRATORS`. ``residual()`` is the largest net
force [N] on a free particle at zero velocity (static imbalance).
"""

from __future__ import annotations

import numpy as np

from ..core import quaternion as quat
from ..core.timestep import NonFiniteStateError
from .integrators import get_integrator
from .rod_interface import ENDS, PolylineRod


def _signed_angle(u, w, axis):
    """Angle [rad] from u to w about the unit ``axis`` (components along the axis removed)."""
    u = u - np.einsum("ij,ij->i", u, axis)[:, None] * axis
    w = w - np.einsum("ij,ij->i", w, axis)[:, None] * axis
    return np.arctan2(np.einsum("ij,ij->i", axis, np.cross(u, w)), np.einsum("ij,ij->i", u, w))


def _axis_angle(axis, angle):
    return np.concatenate((np.cos(0.5 * angle)[:, None], np.sin(0.5 * angle)[:, None] * axis), axis=1)


def slerp(a, b, t):
    """Spherical linear interpolation of unit quaternions (m, 4) with weights t (m,)."""
    d = np.einsum("ij,ij->i", a, b)
    b = np.where(d[:, None] < 0.0, -b, b)
    d = np.abs(d)
    theta = np.arccos(np.clip(d, -1.0, 1.0))
    small = theta < 1e-8
    s = np.where(small, 1.0, np.sin(theta))
    wa = np.where(small, 1.0 - t, np.sin((1.0 - t) * theta) / s)
    wb = np.where(small, t, np.sin(t * theta) / s)
    return quat.normalize(wa[:, None] * a + wb[:, None] * b)


class DLORod(PolylineRod):
    """Force-based DLO from a polyline (see :mod:`solver.models.rod_interface` for the shared parameters).

    Extra: ``integrator`` (a name of :data:`solver.models.integrators.INTEGRATORS`, default
    "symplectic_euler"); ``spring_damping`` β [s]. ``iterations`` is unused (no solver iterations).
    """

    name = "dlo"

    def __init__(
        self,
        *args,
        integrator: str = "symplectic_euler",
        spring_damping: float = 0.0,
        **kw,
    ):
        super().__init__(*args, **kw)  # the interface's parameters (rod_interface.PolylineRod)
        self.integrator_name = integrator
        self.integrator = get_integrator(integrator)
        if not (np.isfinite(spring_damping) and spring_damping >= 0):
            raise ValueError(f"spring_damping must be finite and ≥ 0 (s), got {spring_damping!r}")
        self.spring_damping = float(spring_damping)
        k, n = self.n_points, self.n_edges
        node_frame = np.concatenate((self.frames, self.frames[-1:]))
        a = self.point_radius
        d1 = quat.rotate(node_frame, np.array([1.0, 0.0, 0.0]))
        d2 = quat.rotate(node_frame, np.array([0.0, 1.0, 0.0]))
        self.x = np.concatenate(
            (self.rest_points, self.rest_points + a[:, None] * d1, self.rest_points + a[:, None] * d2)
        )  # R, Q, P
        self.v = np.zeros_like(self.x)
        self.rest_x = self.x.copy()
        R, Q, P = np.arange(k), k + np.arange(k), 2 * k + np.arange(k)
        e = np.arange(n)
        self.tets = np.concatenate(
            (
                np.stack((R[e + 1], P[e], Q[e], R[e]), 1),
                np.stack((R[e + 1], Q[e + 1], Q[e], P[e]), 1),
                np.stack((R[e + 1], P[e], P[e + 1], Q[e + 1]), 1),
            )
        )
        pairs = self.tets[:, [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]].reshape(-1, 2)
        self.springs = np.unique(np.sort(pairs, axis=1), axis=0)
        self.rest_spring = np.linalg.norm(self.x[self.springs[:, 1]] - self.x[self.springs[:, 0]], axis=1)
        area = np.pi * self.edge_radius.mean() ** 2
        self.k_spring = self.youngs_modulus * area / (3.0 * self.rest_spring)
        self.rest_volume = self._volumes(self.x)
        self.k_volume = self.youngs_modulus * np.abs(self.rest_volume)
        j = np.arange(1, k - 1)
        self._tor = (j - 1, j, j + 1)
        self._u0 = self._link_angles(self.x)
        lam = self.lengths[:-1] / (self.lengths[:-1] + self.lengths[1:])
        self._slerp_t = lam
        jpol = np.pi * a[j] ** 4 / 2.0
        self.k_torsion = 2.0 * self.torsion_modulus * jpol / (self.joint_lengths * a[j] ** 2)
        node_mass = np.zeros(k)
        node_mass[:-1] += 0.5 * self.edge_mass
        node_mass[1:] += 0.5 * self.edge_mass
        self.mass = np.tile(node_mass / 3.0, 3)
        pin = np.zeros(3 * k, bool)
        self._pin = {}
        for end, nodes in (("start", [0, 1]), ("end", [k - 2, k - 1])):
            idx = np.concatenate([np.asarray(nodes) + o for o in (0, k, 2 * k)])
            self._pin[end] = idx if end in self.pinned_ends else idx[:0]
            pin[self._pin[end]] = True
        self.free = ~pin
        self.memory: dict = {}

    # ------------------------------------------------------------------ forces
    def _volumes(self, x):
        p = x[self.tets]
        return np.einsum("ij,ij->i", p[:, 1] - p[:, 0], np.cross(p[:, 2] - p[:, 0], p[:, 3] - p[:, 0])) / 6.0

    def volume_gradients(self, x):
        """Signed volume V (T,) [m³] of every tetrahedron and its gradient ∂V/∂x (T, 4, 3) per corner."""
        p = x[self.tets]
        g1 = np.cross(p[:, 2] - p[:, 0], p[:, 3] - p[:, 0]) / 6.0
        g2 = np.cross(p[:, 3] - p[:, 0], p[:, 1] - p[:, 0]) / 6.0
        g3 = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]) / 6.0
        vol = np.einsum("ij,ij->i", p[:, 1] - p[:, 0], g1)
        return vol, np.stack((-(g1 + g2 + g3), g1, g2, g3), axis=1)

    def _link_angles(self, x):
        """u_ab for every link (a, b): twist angle of R_bQ_b relative to R_aQ_a about R_aR_b."""
        k = self.n_points
        r, q = x[:k], x[k : 2 * k]
        t = r[1:] - r[:-1]
        t = t / np.linalg.norm(t, axis=1, keepdims=True)
        return _signed_angle(q[:-1] - r[:-1], q[1:] - r[1:], t)

    def forces(self, x, v):
        """Total force (3K, 3) [N] on every particle."""
        f = self.mass[:, None] * (self.gravity - self.damping * v)
        i, j = self.springs[:, 0], self.springs[:, 1]
        d = x[j] - x[i]
        length = np.linalg.norm(d, axis=1)
        u = d / length[:, None]
        mag = self.k_spring * (length - self.rest_spring)  # Eq. 9
        if self.spring_damping:
            mag = mag + self.spring_damping * self.k_spring * np.einsum("ij,ij->i", v[j] - v[i], u)
        fs = mag[:, None] * u
        np.add.at(f, i, fs)
        np.subtract.at(f, j, fs)
        vol, grads = self.volume_gradients(x)  # Eqs. 10–13
        coef = -self.k_volume * (vol - self.rest_volume) / self.rest_volume**2
        np.add.at(f, self.tets, coef[:, None, None] * grads)
        ft, qi, rj = self._torsion(x)  # Eq. 15
        np.add.at(f, qi, ft)
        np.subtract.at(f, rj, ft)
        return f

    def _torsion(self, x):
        """Torsion-spring forces on Q_j (and −F on R_j) of the interior nodes."""
        k = self.n_points
        i, j, _ = self._tor
        r, q = x[:k], x[k : 2 * k]
        u = self._link_angles(x)
        t = r[1:] - r[:-1]
        t = t / np.linalg.norm(t, axis=1, keepdims=True)
        q_ij = _axis_angle(t[i], 0.5 * (self._u0[i] - u[i]))
        q_jk = quat.conjugate(_axis_angle(t[j], 0.5 * (self._u0[j] - u[j])))
        q_t = slerp(q_ij, q_jk, self._slerp_t)
        arm = q[j] - r[j]
        target = quat.rotate(q_t, arm)
        return self.k_torsion[:, None] * (target - arm), k + j, j

    def acceleration(self, x, v):
        return np.where(self.free[:, None], self.forces(x, v) / self.mass[:, None], 0.0)

    def energy(self) -> float:
        """Kinetic + spring + volume + torsion-spring + gravitational energy [J] (gravity from z = 0)."""
        x, v = self.x, self.v
        d = np.linalg.norm(x[self.springs[:, 1]] - x[self.springs[:, 0]], axis=1) - self.rest_spring
        cv = (self._volumes(x) - self.rest_volume) / self.rest_volume
        ft, _, _ = self._torsion(x)
        free = self.free
        return float(
            0.5 * np.sum(self.mass[free] * np.sum(v[free] ** 2, axis=1))
            + 0.5 * np.sum(self.k_spring * d * d)
            + 0.5 * np.sum(self.k_volume * cv * cv)
            + 0.5 * np.sum(np.sum(ft * ft, axis=1) / self.k_torsion)
            - np.sum(self.mass[free] * (x[free] @ self.gravity))
        )

    # ------------------------------------------------------------------ interface
    def step(self, dt: float) -> None:
        dt = self._check_dt(dt)
        x0 = self.x
        x, v = self.integrator.step(self.x, self.v, dt, self.acceleration, self.memory)
        for end in ENDS:
            idx = self._pin[end]
            if idx.size:
                target = self.clamp_transform(end, self.rest_x[idx])
                v[idx] = (target - x0[idx]) / dt
                x[idx] = target
        bad = np.flatnonzero(~(np.all(np.isfinite(x), axis=1) & np.all(np.isfinite(v), axis=1)))
        if bad.size:
            raise NonFiniteStateError(
                f"dlo ({self.integrator_name}): the step at t = {self.time:.6g} s made "
                f"particle {int(bad[0])} non-finite (dt too large for this integrator)"
            )
        self.x, self.v = x, v
        self.time += dt

    def centerline(self) -> np.ndarray:
        return self.x[: self.n_points].copy()

    def residual(self) -> float:
        f = self.forces(self.x, np.zeros_like(self.v))
        return float(np.max(np.linalg.norm(f[self.free], axis=1))) if np.any(self.free) else 0.0
