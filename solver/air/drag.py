"""Aerodynamic drag of the wind on rod segments and leaf plates, as a ``Simulator.force_fields`` entry.

Branch segments (cylinders, local +z = axis): the cross-flow drag per unit length at a point is
``½ ρ_air C_d (2r) |w⊥| w⊥``, w = u(x) − v(x) the air velocity relative to that point of the segment and
w⊥ its part normal to the axis (axial skin friction is neglected). For an elliptic section with
semi-axes (a, b) along the local (x, y) axes the width across the flow, 2√(a² ŵ_y² + b² ŵ_x²), replaces
2r. The load is integrated along the segment with the 2-point Gauss rule (points at ±l/(2√3), weight
l/2 each), at the points' own velocities v + ω × s d3, so a rotating segment feels a drag torque (the
wind itself is sampled at the segment centre: it varies over metres, the turbulence length and the
height profile). In still air (u = 0) the same formula damps every motion: the aerodynamic damping.

Leaf segments (``model.leaf``, interface 1: a thin plate, width along local x, normal along local y,
leaf length along local z, ``model.plate_area`` = width × length): per unit length
``½ ρ_air (A/l) (C_n |w_n| w_n + C_t |w_t| w_t)`` with w_n the part of w along the normal and w_t the part
in the plate, integrated by the same Gauss rule, plus the drag torque of the plate rolling about its
midrib (−ρ C_n l a⁴ |ω_z| ω_z / 4, exact for a flat plate of half-width a). The plate's normal force
turns it edge-on to the flow on its soft stem; the small in-plane part keeps it streaming behind its
stem, and with turbulence the two make leaves flutter.

Leaf reconfiguration (Vogel 1989, *J. Exp. Bot.* 40:941: broad leaves roll into cones and clusters in
high winds, so their drag grows like U^(2+B) instead of U², with Vogel exponents B from about −0.3 to
−1.2 between 10 and 20 m/s): a rigid plate turns edge-on on its petiole (that part is simulated) but
cannot curl, so above ``leaf_reconfiguration_speed`` U_R = 10 m/s of relative air speed its normal
coefficient is scaled by ``(|w| / U_R)^B`` with ``leaf_vogel_exponent`` B = −0.7, a middle value of
Vogel's range (at 30 m/s: × 0.46). B = 0 turns this off.

Drag coefficients (documented defaults): ``cd_branch`` = 1.2, a circular cylinder in subcritical
cross-flow (10³ < Re < 2·10⁵: twigs and branches up to ~0.3 m in wind below ~10 m/s; Hoerner,
*Fluid-Dynamic Drag*, 1965, ch. 3); ``cd_leaf_normal`` = 1.17, a flat plate normal to the flow
(Hoerner 1965, ch. 3); ``cd_leaf_tangential`` = 0.05: laminar skin friction on both faces
(2 × 1.328/√Re ≈ 0.015 at Re ≈ 3·10⁴ for a 10 cm leaf at 5 m/s) plus the form drag of the leaf's curl
and serration, taken as a few times the flat-plate friction.

Stiff drag and large steps: the drag of a light leaf in strong wind relaxes its relative velocity in
much less than one 40 ms step, which an explicit force cannot follow (it overshoots and blows up).
After every call :attr:`AerodynamicDrag.implicit_damping` holds (n, 6) bounds of the drag's velocity
derivative −∂f/∂v [kg/s, world axes] and −∂τ/∂ω [kg·m²/s, body axes]; the Simulator adds Δt times it
to this step's mass matrix, (M + Δt D)(v' − v) = Δt f(v) + constraint impulses: linearly implicit
(backward Euler) drag. The static equilibrium does not depend on D, so steady loads stay exact.
Leaves need one more guard: face-on in a storm, even the implicit step would throw a leaf metres from its
stem, beyond what three Newton iterations (which linearise rotations) pull back; so a leaf's drag is
scaled down where its predicted shift would exceed half its length or its turn 1 rad in one step. This
only acts where the leaf's drag time scale m / (ρ C_n A |w|) is shorter than about Δt (a 17 cm birch leaf,
0.5 mm thick, face-on above ~9 m/s at Δt = 40 ms); there the leaf's load is underestimated while it turns.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from ..core import compiled
from ..core import quaternion as quat
from ..core.model import RodModel, rod_from_polyline

RHO_AIR = 1.225  # kg/m³, sea level, 15 °C
CD_BRANCH = 1.2  # circular cylinder, subcritical Reynolds number
CD_LEAF_NORMAL = 1.17  # flat plate normal to the flow
CD_LEAF_TANGENTIAL = 0.05  # skin friction + form drag of a real leaf, along its plane
LEAF_RECONFIGURATION_SPEED = 10.0  # m/s: above it a leaf's normal drag grows like U^(2+B) (Vogel 1989)
LEAF_VOGEL_EXPONENT = -0.7
GAUSS = 0.5 / math.sqrt(3.0)  # 2-point Gauss abscissae ±l/(2√3) along the segment, weights l/2
MAX_PLATE_SHIFT = 0.5  # a leaf's drag moves it at most this × its length per step (prediction) …
MAX_PLATE_TURN = 1.0  # … and turns it at most this many rad


def _c(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=float)


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise dot products of (k, 3) arrays."""
    return np.einsum("ij,ij->i", a, b)


def _coefficient(name: str, value) -> float:
    value = float(value)
    if not (np.isfinite(value) and value >= 0.0):
        raise ValueError(f"{name} must be finite and ≥ 0, got {value}")
    return value


class AerodynamicDrag:
    """Drag of ``wind`` (anything with ``velocity(points, t)``) on every free segment of ``model``.

    Call it with a :class:`~solver.core.timestep.Simulator` to get ``(forces (n, 3) [N], torques (n, 3)
    [N·m])`` in world axes at the simulator's current state and time; append it to
    ``sim.force_fields``. ``rho_air`` [kg/m³]; drag coefficients as documented in the module.
    """

    def __init__(
        self,
        model: RodModel,
        wind,
        *,
        rho_air: float = RHO_AIR,
        cd_branch: float = CD_BRANCH,
        cd_leaf_normal: float = CD_LEAF_NORMAL,
        cd_leaf_tangential: float = CD_LEAF_TANGENTIAL,
        leaf_reconfiguration_speed: float = LEAF_RECONFIGURATION_SPEED,
        leaf_vogel_exponent: float = LEAF_VOGEL_EXPONENT,
    ):
        if not isinstance(model, RodModel):
            raise TypeError("model must be a RodModel")
        if not callable(getattr(wind, "velocity", None)):
            raise ValueError("wind must have a velocity(points (k, 3), t) -> (k, 3) method")
        rho_air = float(rho_air)
        if not (np.isfinite(rho_air) and rho_air > 0.0):
            raise ValueError(f"rho_air must be a finite density > 0 kg/m³, got {rho_air}")
        self.model = model
        self.wind = wind
        self.rho_air = rho_air
        self.cd_branch = _coefficient("cd_branch", cd_branch)
        self.cd_leaf_normal = _coefficient("cd_leaf_normal", cd_leaf_normal)
        self.cd_leaf_tangential = _coefficient("cd_leaf_tangential", cd_leaf_tangential)
        self.leaf_reconfiguration_speed = float(leaf_reconfiguration_speed)
        if not (np.isfinite(self.leaf_reconfiguration_speed) and self.leaf_reconfiguration_speed > 0.0):
            raise ValueError(f"leaf_reconfiguration_speed must be finite and > 0 m/s, got {leaf_reconfiguration_speed}")
        self.leaf_vogel_exponent = float(leaf_vogel_exponent)
        if not (np.isfinite(self.leaf_vogel_exponent) and -2.0 < self.leaf_vogel_exponent <= 0.0):
            raise ValueError(f"leaf_vogel_exponent must be in (−2, 0], got {leaf_vogel_exponent}")
        n = model.n_segments
        leaf = getattr(model, "leaf", None)
        leaf = np.zeros(n, bool) if leaf is None else np.asarray(leaf, bool).reshape(n)
        free = ~model.pinned
        self.rods = np.flatnonzero(free & ~leaf)
        self.plates = np.flatnonzero(free & leaf)
        self.segments = np.concatenate((self.rods, self.plates))
        # Gauss points at ±a along local z, a = l/(2√3) [m]; ½ ρ × the Gauss weight l/2 [kg/m²]
        self._gauss_arm = GAUSS * model.lengths[self.segments]
        self._half_weight = 0.25 * self.rho_air * model.lengths[self.segments]
        self._plate_width, self._roll = np.zeros(0), np.zeros(0)
        if self.plates.size:
            area = getattr(model, "plate_area", None)
            if area is None:
                raise ValueError("model.leaf marks leaf segments but the model has no plate_area")
            area = np.asarray(area, float).reshape(n)[self.plates]
            bad = np.flatnonzero(~(area > 0.0))
            if bad.size:
                raise ValueError(f"plate_area[{int(self.plates[bad[0]])}] must be > 0 for a leaf segment")
            self._plate_width = area / model.lengths[self.plates]  # m (area per length)
            a = 0.5 * self._plate_width
            # rolling about the midrib: τ_z = −k |ω_z| ω_z, k = ρ C_n l a⁴ / 4
            self._roll = 0.25 * rho_air * self.cd_leaf_normal * model.lengths[self.plates] * a**4
        self.implicit_damping = np.zeros((n, 6))

    def __call__(self, sim):
        """Forces and torques at the state of ``sim``; sets :attr:`implicit_damping`.

        Both Gauss points share the segment's centre velocity v and the air velocity u; they differ by
        ±e with e = ω × (a d3), which is normal to the axis d3. So with w0 = u − v the point values are
        w± = w0 ∓ e, their axial parts are equal and every sum over the two points is written out, on
        (k,) and (k, 3) arrays only (a quarter of the work of (k, 2, 3) arrays and their contractions)."""
        segs = self.segments
        kernel = compiled.kernel("drag") if segs.size and getattr(sim, "compiled", False) else None
        if kernel is not None:
            return self.compiled_loads(sim, kernel)
        m = self.model
        n = m.n_segments
        forces = np.zeros((n, 3))
        torques = np.zeros((n, 3))
        damping = np.zeros((n, 6))
        if segs.size == 0:
            self.implicit_damping = damping
            return forces, torques
        rot = quat.to_matrix(sim.orientations[segs])  # columns: local x, y, z in world
        d1, d2, d3 = rot[:, :, 0], rot[:, :, 1], rot[:, :, 2]
        a = self._gauss_arm
        omega = np.einsum("kij,kj->ki", rot, sim.angular_velocities[segs])
        e = a[:, None] * np.cross(omega, d3)  # point velocity − centre velocity at +a
        # the air velocity is sampled at the segment centre: it varies over the turbulence length and the
        # height profile, both ≫ a segment, while the segment's own velocity varies along it (rotation)
        u = np.asarray(self.wind.velocity(sim.positions[segs], sim.time), dtype=float)
        w0 = u - sim.velocities[segs]  # air relative to the centre
        w0x, w0y, w0z = _dot(w0, d1), _dot(w0, d2), _dot(w0, d3)
        ex, ey = _dot(e, d1), _dot(e, d2)
        k_rod = self.rods.size
        f = np.empty((segs.size, 3))
        fd = np.empty((segs.size, 3))  # f₊ − f₋: the torque is a d3 × (f₊ − f₋)
        gain = np.empty(segs.size)  # Σ over both points of the drag gain [N per m/s]
        if k_rod:
            self._cylinder_drag(w0[:k_rod], e[:k_rod], d3[:k_rod], (w0x, w0y, w0z), ex, ey, (f, fd, gain))
        if self.plates.size:
            self._plate_drag(w0[k_rod:], e[k_rod:], d2[k_rod:], w0y, ey, (f, fd, gain))
        forces[segs] = f
        torques[segs] = a[:, None] * np.cross(d3, fd)

        # −∂f/∂v ≤ 2 × gain per Gauss point (the quadratic law doubles the secant gain); the rotation
        # about local x/y moves a Gauss point at distance a with speed ω a: −∂τ/∂ω ≤ 2 gain a².
        lin = 2.0 * gain
        ang = lin * a * a
        damping[segs, 0:3] = lin[:, None]
        damping[segs, 3] = ang
        damping[segs, 4] = ang
        if self.plates.size:
            wz_body = sim.angular_velocities[self.plates, 2]
            tz = -self._roll * np.abs(wz_body) * wz_body
            torques[self.plates] += tz[:, None] * d3[k_rod:]
            damping[self.plates, 5] = 2.0 * self._roll * np.abs(wz_body)
            self._limit_plate_step(sim, forces, torques, damping, rot[k_rod:])
        self.implicit_damping = damping
        return forces, torques

    def _cylinder_drag(self, w0, e, d3, w0_local, ex, ey, out) -> None:
        """Branch cylinders (the first rows of ``out`` = (f, f₊ − f₋, gain)): f = ½ ρ C_d · width·|w⊥| · w⊥ with
        width·|w⊥| = 2 √(a² w_y² + b² w_x²), w⊥± = p0 ∓ e with p0 = w0 − (w0·d3) d3."""
        f, fd, gain = out
        k_rod = self.rods.size
        w0x, w0y, w0z = (c[:k_rod] for c in w0_local)
        r = self.model.radii[self.rods]
        c = self._half_weight[:k_rod] * self.cd_branch * 2.0
        r0, r1 = r[:, 0], r[:, 1]
        gp = c * np.hypot(r0 * (w0y - ey[:k_rod]), r1 * (w0x - ex[:k_rod]))
        gm = c * np.hypot(r0 * (w0y + ey[:k_rod]), r1 * (w0x + ex[:k_rod]))
        p0 = w0 - w0z[:, None] * d3
        sp, sm = gp + gm, gp - gm
        f[:k_rod] = sp[:, None] * p0 - sm[:, None] * e
        fd[:k_rod] = sm[:, None] * p0 - sp[:, None] * e
        gain[:k_rod] = sp

    def _plate_drag(self, wl, el, y, w0y, ey, out) -> None:
        """Leaf plates (the last rows of ``out`` = (f, f₊ − f₋, gain)): normal (local y) and in-plane parts,
        f = h (C_n |w_n| w_n + C_t |w_t| w_t)."""
        f, fd, gain = out
        k_rod = self.rods.size
        h = self._half_weight[k_rod:] * self._plate_width
        w2 = _dot(wl, wl) + _dot(el, el)
        we = 2.0 * _dot(wl, el)
        ends = []
        for sign in (1.0, -1.0):  # the point at +a, then at −a
            wy_p = w0y[k_rod:] - sign * ey[k_rod:]
            speed2 = np.maximum(w2 - sign * we, 0.0)  # |w±|²
            g_n = h * self.cd_leaf_normal * np.abs(wy_p)
            if self.leaf_vogel_exponent:  # blade curling above U_R: C_n (|w|/U_R)^B (module docstring)
                rel = np.sqrt(speed2) / self.leaf_reconfiguration_speed
                g_n *= np.where(rel > 1.0, np.maximum(rel, 1.0) ** self.leaf_vogel_exponent, 1.0)
            g_t = h * self.cd_leaf_tangential * np.sqrt(np.maximum(speed2 - wy_p**2, 0.0))
            ends.append(((g_n - g_t) * wy_p, g_t, np.maximum(g_n, g_t)))
        (ap, tp, mp), (am, tm, mm) = ends
        # f± = (g_n − g_t) w_y± d2 + g_t (w0 ∓ e)
        f[k_rod:] = (ap + am)[:, None] * y + (tp + tm)[:, None] * wl - (tp - tm)[:, None] * el
        fd[k_rod:] = (ap - am)[:, None] * y + (tp - tm)[:, None] * wl - (tp + tm)[:, None] * el
        gain[k_rod:] = mp + mm

    def compiled_loads(self, sim, kernel):
        """:meth:`__call__` by ``kernel`` (the module :mod:`solver.air._drag_kernel`): the same loads and
        :attr:`implicit_damping`, in one compiled pass over the segments."""
        m, segs = self.model, self.segments
        forces, torques, damping = np.zeros((m.n_segments, 3)), np.zeros((m.n_segments, 3)), np.zeros((m.n_segments, 6))
        u = np.ascontiguousarray(self.wind.velocity(sim.positions[segs], sim.time), dtype=float)
        kernel.drag_loads(
            segs, self.rods.size, _c(sim.orientations), _c(sim.angular_velocities), _c(sim.velocities), u,
            self._gauss_arm, self._half_weight, _c(m.radii), self._plate_width, self._roll, self.cd_branch,
            self.cd_leaf_normal, self.cd_leaf_tangential, self.leaf_vogel_exponent,
            self.leaf_reconfiguration_speed, _c(m.masses), _c(m.inertia), _c(m.lengths),
            float(sim.step_context.stage_dt),
            MAX_PLATE_SHIFT, MAX_PLATE_TURN, forces, torques, damping,
        )  # fmt: skip
        self.implicit_damping = damping
        return forces, torques

    def _limit_plate_step(self, sim, forces, torques, damping, rot) -> None:
        """Scale each leaf's drag so that, with the implicit mass, it moves the leaf by at most
        ``MAX_PLATE_SHIFT`` × its length and turns it by at most ``MAX_PLATE_TURN`` rad within one step.

        A leaf's drag time scale m / (ρ C A |w|) is ~10 ms in a 30 m/s wind: face-on, the step's prediction
        would throw it metres from its stem, further than the Newton iterations can pull it back (they
        linearise the rotations). The real leaf turns edge-on within that time; limited, it does so over
        a few steps."""
        p = self.plates
        dt2 = sim.step_context.stage_dt**2
        mass = self.model.masses[p] + sim.step_context.stage_dt * damping[p, 0]
        inertia = self.model.inertia[p] + sim.step_context.stage_dt * damping[p, 3:]
        shift = dt2 * np.linalg.norm(forces[p], axis=1) / mass
        turn = dt2 * np.linalg.norm(np.einsum("kji,kj->ki", rot, torques[p]) / inertia, axis=1)
        limit = np.minimum(
            MAX_PLATE_SHIFT * self.model.lengths[p] / np.maximum(shift, 1e-300),
            MAX_PLATE_TURN / np.maximum(turn, 1e-300),
        )
        scale = np.minimum(1.0, limit)
        forces[p] *= scale[:, None]
        torques[p] *= scale[:, None]


def _warm_up_drag(drag_kernel) -> None:
    """Compile (or load) the drag kernel and compare it with the numpy drag on a branch and a leaf plate in a
    wind above the leaves' reconfiguration speed, turning: loads and damping bounds to rounding."""
    rod = rod_from_polyline([[0, 0, 0], [0, 0, 0.5], [0.1, 0, 1], [0.2, 0.1, 1.1]], 0.02, 1e9, pinned=["start"])
    model = rod.copy_with(leaf=[False, False, True])  # the last segment a leaf plate
    wind = SimpleNamespace(velocity=lambda x, t: np.tile([14.0, 3.0, -1.0], (len(x), 1)))
    drag = AerodynamicDrag(model, wind)
    n = model.n_segments
    rng = np.random.default_rng(0)
    sim = SimpleNamespace(
        positions=model.positions, orientations=model.orientations + 0.1 * rng.standard_normal((n, 4)),
        angular_velocities=rng.standard_normal((n, 3)), velocities=rng.standard_normal((n, 3)), time=0.0,
        dt=1 / 60, compiled=False, step_context=SimpleNamespace(stage_dt=1 / 60, step_dt=1 / 60),
    )  # fmt: skip
    reference = drag(sim) + (drag.implicit_damping,)
    loads = drag.compiled_loads(sim, drag_kernel) + (drag.implicit_damping,)
    error = max(float(np.max(np.abs(a - b))) for a, b in zip(loads, reference, strict=True))
    scale = max(float(np.max(np.abs(a))) for a in reference)
    if not (scale > 0.0 and error <= 1e-12 * scale):
        raise RuntimeError(f"the compiled drag disagrees with the numpy drag (difference {error:.3g})")


# the compiled drag joins the compiled path (its cache key, its warm-up, compiled.kernel("drag"))
compiled.register_kernel(
    "drag", f"{__package__}._drag_kernel", Path(__file__).with_name("_drag_kernel.py"), _warm_up_drag
)
