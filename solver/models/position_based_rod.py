"""XPBD time stepping shared by the particle-based rod models (PaOBCR, PBER).

State: particles ``x`` (P, 3) [m] with velocities ``v`` and inverse masses ``w`` [1/kg], and
orientations ``q`` (Q, 4) (unit quaternions) with body angular velocities ``omega`` [rad/s] and
scalar quaternion weights ``wq`` (Kugelstadt & Schömer §6 use scalar weights instead of inertia
matrices). A step is Kugelstadt & Schömer Algorithm 1 with XPBD compliance (Macklin et al. 2016):
predict (gravity, Eqs. 12 and 19 for quaternions), reset λ, sweep the constraints ``iterations``
times in the model's Gauss–Seidel order, update velocities from the position change. Pinned
particles/orientations (weight 0) follow their end's clamp.

Each constraint kind is an object with ``lam`` (m, d), ``alpha`` (m, d) compliance in the units of
its C, ``project(rod, idx, inv_dt2)`` (Eq. 17 with compliance: Δλ = −(J W Jᵀ + α̃)⁻¹ (C + α̃λ),
Δx = W Jᵀ Δλ, in place) and ``value(rod)`` → C (m, d). ``residual()`` is max |C + α̃λ| over every
constraint (the Chebyshev norm Deul et al. plot in Fig. 10).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ..core import quaternion as quat
from ..core.gs_ordering import build_sweep
from ..core.timestep import NonFiniteStateError
from .rod_interface import ENDS, PolylineRod


class ConstraintKind(Protocol):
    """One kind of constraint of a model (the interface in the module docstring)."""

    lam: np.ndarray
    alpha: np.ndarray

    def project(self, rod, idx: np.ndarray, inv_dt2: float) -> None: ...

    def value(self, rod) -> np.ndarray: ...


class PositionBasedRod(PolylineRod):
    """Base class: subclasses fill the state arrays, ``kinds``, the sweep and the clamp indices."""

    kinds: dict[str, ConstraintKind]

    def _init_state(self, x, w, q, wq, pinned_particles: dict, pinned_quats: dict) -> None:
        self.x = np.array(x, dtype=float)
        self.v = np.zeros_like(self.x)
        self.w = np.array(w, dtype=float)
        self.q = np.array(q, dtype=float)
        self.omega = np.zeros((self.q.shape[0], 3))
        self.wq = np.array(wq, dtype=float)
        self.rest_x = self.x.copy()
        self.rest_q = self.q.copy()
        # clamp indices per end (empty for an end that is not pinned)
        self._pin_x = {
            e: np.asarray(pinned_particles[e] if e in self.pinned_ends else (), dtype=np.int64) for e in ENDS
        }
        self._pin_q = {e: np.asarray(pinned_quats[e] if e in self.pinned_ends else (), dtype=np.int64) for e in ENDS}
        for e in ENDS:
            self.w[self._pin_x[e]] = 0.0
            self.wq[self._pin_q[e]] = 0.0
        self._free_x = self.w > 0.0
        self._free_q = self.wq > 0.0

    def _build_sweep(self, ordering: str, natural_order, kind_order, variables, active) -> None:
        self.ordering = ordering
        self.sweep = build_sweep(ordering, natural_order, kind_order, variables, active)

    # ------------------------------------------------------------------ step
    def particle_acceleration(self) -> np.ndarray:
        """External acceleration of every particle [m/s²] (gravity on free particles)."""
        return np.where(self._free_x[:, None], self.gravity, 0.0)

    def begin_step(self, dt: float) -> None:
        dt = self._check_dt(dt)
        self._inv_dt2 = 1.0 / (dt * dt)
        self._x_old, self._q_old = self.x.copy(), self.q.copy()
        self.v = self.v + dt * self.particle_acceleration()
        self.x = self.x + dt * np.where(self._free_x[:, None], self.v, 0.0)
        # isotropic scalar inertia: no gyroscopic term in ω̇ (Algorithm 1, line 9)
        self.q = np.where(self._free_q[:, None], quat.integrate_body(self.q, dt * self.omega), self.q)
        for end in self.pinned_ends:
            px, pq = self._pin_x[end], self._pin_q[end]
            self.x[px] = self.clamp_transform(end, self.rest_x[px])
            self.q[pq] = quat.normalize(quat.multiply(self.clamp_rotation(end), self.rest_q[pq]))
        for kind in self.kinds.values():
            kind.lam[:] = 0.0

    def iterate(self) -> None:
        """One Gauss–Seidel sweep over all constraints in the model's order."""
        inv_dt2 = self._inv_dt2
        kinds = self.kinds
        for batch in self.sweep:
            for name, idx in batch:
                kinds[name].project(self, idx, inv_dt2)

    def end_step(self) -> None:
        dt = self.last_dt
        assert dt is not None  # set by begin_step
        v = (self.x - self._x_old) / dt
        omega = quat.body_rotation_vector(self._q_old, self.q) / dt  # Eq. 19
        if self.damping > 0.0:
            decay = np.exp(-self.damping * dt)
            v *= decay
            omega *= decay
        bad = np.flatnonzero(~(np.all(np.isfinite(self.x), axis=1) & np.all(np.isfinite(v), axis=1)))
        bad_q = np.flatnonzero(~np.all(np.isfinite(self.q), axis=1))
        if bad.size or bad_q.size:
            self.x, self.q = self._x_old, self._q_old
            what = f"particle {int(bad[0])}" if bad.size else f"orientation {int(bad_q[0])}"
            raise NonFiniteStateError(
                f"{self.name}: the step at t = {self.time:.6g} s produced a non-finite "
                f"{what}; state restored (reduce dt or raise the compliance)"
            )
        self.v, self.omega = v, omega
        self.time += dt

    def step(self, dt: float) -> None:
        self.begin_step(dt)
        for _ in range(self.iterations):
            self.iterate()
        self.end_step()

    # ------------------------------------------------------------------ read-back
    def residual(self) -> float:
        """max |C + α̃λ| over all constraints (Deul units: m for positional, 1/m for Darboux rows)."""
        if self.last_dt is None:
            return max(float(np.max(np.abs(k.value(self)))) for k in self.kinds.values())
        inv_dt2 = 1.0 / (self.last_dt * self.last_dt)
        return max(float(np.max(np.abs(k.value(self) + k.alpha * inv_dt2 * k.lam))) for k in self.kinds.values())

    def centerline(self) -> np.ndarray:
        return self.x[: self.n_points].copy()

    def kinetic_energy(self) -> float:
        m = np.where(self.w > 0, 1.0 / np.where(self.w > 0, self.w, 1.0), 0.0)
        return float(0.5 * np.sum(m * np.sum(self.v**2, axis=1)))


def project_scalar(
    rod: PositionBasedRod, kind, idx: np.ndarray, c: np.ndarray, points: list, grads: list, inv_dt2: float
) -> None:
    """XPBD projection of scalar constraints (Eq. 17 with compliance) on particles only, in place.

    ``points``: index arrays (m,) of the particles; ``grads``: their gradients (m, 3)."""
    at = kind.alpha[idx, 0] * inv_dt2
    s = at.copy()
    ws = [rod.w[p] for p in points]
    for wp, g in zip(ws, grads, strict=True):
        s += wp * np.einsum("ij,ij->i", g, g)
    dlam = -(c + at * kind.lam[idx, 0]) / s
    kind.lam[idx, 0] += dlam
    for p, wp, g in zip(points, ws, grads, strict=True):
        rod.x[p] += (wp * dlam)[:, None] * g
