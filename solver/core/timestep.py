"""XPBD time stepping of a rod forest: Deul Algorithm 1 with the direct KKT solver or Gauss–Seidel."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import compiled as compiled_kkt
from . import joint_constraint
from . import quaternion as quat
from .gauss_seidel import colour_joints, gauss_seidel_iteration
from .hooks import StepContext
from .integrator import check_integrator, mass_damping_for_ratio
from .kkt_chain import ChainKKT, chain_order
from .kkt_tree import TreeKKT
from .loop_closing import LoopClosingConstraints
from .model import RodModel

log = logging.getLogger("solver.timestep")

ForceField = Callable[["Simulator"], tuple]
KinematicDriver = Callable[[float], tuple]


# A simplified Newton iteration (Simulator.factor_reuse) must shrink the residual at least this much, or the
# factorisation is renewed (exact Newton shrinks it by orders of magnitude; one that gains less is stale).
REUSE_CONTRACTION = 0.1


def _count(name: str, value, low: int) -> int:
    """``value`` as an int, or ValueError naming ``name`` unless it is an integer ≥ ``low``."""
    if int(value) != value or value < low:
        raise ValueError(f"{name} must be an integer ≥ {low}, got {value}")
    return int(value)


def _finite_non_negative(name: str, value, unit: str = "") -> float:
    """``value`` as a float, or ValueError naming ``name`` (in ``unit``) unless it is finite and ≥ 0."""
    if not (np.isfinite(value) and value >= 0.0):
        raise ValueError(f"{name} must be finite and ≥ 0{unit}, got {value}")
    return float(value)


def _solver_name(name: str, value) -> str:
    if value not in ("kkt", "gs"):
        raise ValueError(f"{name} must be 'kkt' or 'gs', got {value!r}")
    return value


def _acceleration(name: str, value) -> np.ndarray:
    g = np.asarray(value, dtype=float)
    if g.shape != (3,) or not np.all(np.isfinite(g)):
        raise ValueError(f"{name} must be a finite 3-vector in m/s², got {value!r}")
    return g


def _exp_body(q: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """``q·exp(φ)``: ``q`` turned by the body-frame rotation vector ``φ`` exactly (angle |φ|)."""
    angle = np.linalg.norm(phi, axis=-1, keepdims=True)
    half = 0.5 * angle
    sinc = np.where(angle > 1e-12, np.sin(half) / np.where(angle > 1e-12, angle, 1.0), 0.5)
    return quat.normalize(quat.multiply(q, np.concatenate((np.cos(half), sinc * phi), axis=-1)))


def _log_body(q_old: np.ndarray, q_new: np.ndarray) -> np.ndarray:
    """Body-frame rotation vector φ with ``q_new = q_old·exp(φ)`` on the short arc: the inverse of :func:`_exp_body`
    (:func:`quaternion.body_rotation_vector` is 2 sin(|φ|/2) long, its inverse to first order only)."""
    d = quat.multiply_conjugate(q_old, q_new)
    d = np.where(d[..., :1] < 0.0, -d, d)
    s = np.linalg.norm(d[..., 1:], axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, d[..., :1])
    return d[..., 1:] * np.where(s > 1e-12, angle / np.where(s > 1e-12, s, 1.0), 2.0)


class _Setting:
    """A validated :class:`Simulator` parameter: kept as ``_<name>``, every assignment goes through
    ``check(name, value)`` (a ValueError naming the parameter, or the value to keep)."""

    def __init__(self, check: Callable[[str, Any], Any]):
        self.check = check

    def __set_name__(self, owner, name: str) -> None:
        self.name, self.attr = name, "_" + name

    def __get__(self, obj, owner=None) -> Any:
        return self if obj is None else getattr(obj, self.attr)

    def __set__(self, obj, value) -> None:
        setattr(obj, self.attr, self.check(self.name, value))


class NonFiniteStateError(FloatingPointError):
    """A step produced NaN or inf; the simulator state was left as it was before the step."""


@dataclass
class StepReport:
    iterations: int  # Newton (KKT) or Gauss–Seidel iterations taken
    residual: float  # ‖C + α̃λ‖∞ at the end of the step (Chebyshev norm of b, Eq. 22)


class Simulator:
    """State and time stepping for one :class:`RodModel`.

    Parameters: ``dt`` [s]; ``solver`` ``"kkt"`` (direct, Deul §4.2) or ``"gs"`` (XPBD Gauss–Seidel,
    Eq. 21); ``max_iterations`` per step; ``tolerance`` η on ``‖C + α̃λ‖∞`` (Algorithm 1, line 5);
    ``gravity`` [m/s²]; ``damping`` [1/s]: mass-proportional (Rayleigh α) damping of linear and
    angular velocity, 0 for none; ``kinematic``: optional ``f(t) -> (positions (k, 3), orientations
    (k, 4))`` for the k pinned segments in index order, to drive them; ``compiled``: run the KKT Newton
    iterations with the compiled kernels (:mod:`solver.core.compiled`; None: whenever numba works, else the
    numpy solvers; False: the numpy solvers), every joint kind included. ``integrator``: ``"euler"`` (XPBD's
    implicit Euler step, Macklin et al. 2016; first order, it damps a mode of frequency ω by ζ ≈ ωΔt/2) or
    ``"bdf2"`` (the two-step backward differentiation formula, second order, A- and L-stable: numerical
    damping ζ ≈ (ωΔt)³/4, so a pendulum at Δt = 1/240 s keeps 99.4 % of its swing over 100 periods where
    Euler keeps 0.4 %; see
    :meth:`begin_step`). Both solve one implicit stage per step with the same Newton iterations and KKT
    factorisation; the static equilibrium is the same for every Δt and iteration count. :meth:`set_damping_ratio`
    sets ``damping`` from a damping ratio at a mode's frequency.

    State arrays (world frame unless noted): ``positions`` (n, 3) [m], ``orientations`` (n, 4),
    ``velocities`` (n, 3) [m/s], ``angular_velocities`` (n, 3) [rad/s, body frame], ``time`` [s].
    External loads: ``forces``/``torques`` (n, 3) [N, N·m, world frame] persist between steps;
    :meth:`add_point_load` applies a force at a point of a segment; ``force_fields`` are callables
    ``f(sim) -> (forces (n, 3), torques (n, 3))`` evaluated every step (wind, later).
    """

    def __init__(
        self,
        model: RodModel,
        dt: float = 1.0 / 60.0,
        *,
        solver: str = "kkt",
        max_iterations: int = 10,
        tolerance: float = 1e-6,
        gravity=(0.0, 0.0, -9.81),
        damping: float = 0.0,
        kinematic: KinematicDriver | None = None,
        compiled: bool | None = None,
        integrator: str = "euler",
    ):
        if not isinstance(model, RodModel):
            raise TypeError("model must be a RodModel")
        self.model = model
        self._step_open = False
        self.step_context = StepContext(self)  # what hooks read (solver/core/hooks.py)
        self._integrator = check_integrator("integrator", integrator)
        self._stage: float | None = None  # stage length of the open step (set by begin_step)
        self._history: tuple | None = None  # BDF2: the step before, and the state it left (see begin_step)
        self.dt = dt
        self.solver = solver
        self.max_iterations = max_iterations
        self.tolerance = tolerance
        self.gravity = gravity
        self.damping = damping
        self.kinematic = kinematic
        self.compiled = compiled
        n = model.n_segments
        self.positions = model.positions.copy()
        self.orientations = model.orientations.copy()
        self.velocities = np.zeros((n, 3))
        self.angular_velocities = np.zeros((n, 3))
        self.time = 0.0
        self.forces = np.zeros((n, 3))
        self.torques = np.zeros((n, 3))
        self._point_seg = np.zeros(0, np.int64)
        self._point_local = np.zeros((0, 3))
        self._point_force = np.zeros((0, 3))
        self.force_fields: list[ForceField] = []
        # Gauss–Seidel constraint sets alternated with the joint solve (Deul Algorithm 1, lines 10–14):
        # objects with begin_step(sim), project(sim) -> residual, end_step(sim) (loop closing, contacts).
        self.gs_constraints: list = [LoopClosingConstraints(model)] if model.loops.n_joints else []
        # callables f(sim) run after every step, between steps: they may change the topology
        # (remove_joints; solver/core/fracture.py)
        self.post_step: list = []

        free = ~model.pinned
        self.free_index = np.flatnonzero(free)
        self._joint_structure()
        mass_diag = np.concatenate((np.repeat(model.masses[:, None], 3, axis=1), model.inertia), axis=1)
        self._mass_diag_free = mass_diag[free]
        self._inv_mass_diag = np.where(free[:, None], 1.0 / mass_diag, 0.0)
        self._mass_diag = mass_diag  # M without the implicit drag term (see _implicit_force_damping)
        self._mass_augmented = False
        self.factor_reuse = 0
        self.lam = np.zeros((model.n_joints, 6))
        self.last_report: StepReport | None = None

    def _joint_structure(self) -> None:
        """Each joint's two segments as free-segment indices (−1: pinned), for the solvers, and the caches
        that depend on the joints emptied (built again on first use): one place for the start and for
        every topology change (:meth:`remove_joints`)."""
        seg_to_free = np.full(self.model.n_segments, -1, dtype=np.int64)
        seg_to_free[self.free_index] = np.arange(self.free_index.size)
        self._seg_a = seg_to_free[self.model.joint_parent]
        self._seg_b = seg_to_free[self.model.joint_child]
        self._kkt: TreeKKT | ChainKKT | compiled_kkt.CompiledKKT | None = None
        self._joint_eval: joint_constraint.JointEvaluator | None = None
        self._evaluated_pose: tuple[bytes, bytes] | None = None
        self._colours: list[np.ndarray] | None = None
        self._alpha_tilde: np.ndarray | None = None  # α̃ = α/h² per joint, h = stage_dt
        self._alpha_stage = 0.0  # the h of _alpha_tilde
        self._factor_age: int | None = None  # no factorisation to reuse

    def remove_joints(self, joints) -> None:
        """Break the tree joints ``joints`` (indices into ``model``'s tree joints) between steps: the model
        loses them (rest Darboux vectors of the others kept), the structure is computed anew for the new
        topology, and the segments beyond a broken joint move on freely."""
        if self._step_open:
            raise RuntimeError("remove_joints: only between steps")
        joints = np.unique(np.asarray(joints, dtype=np.int64).reshape(-1))
        if joints.size == 0:
            return
        m = self.model.n_joints
        if joints[0] < 0 or joints[-1] >= m:
            raise ValueError(f"remove_joints: joint indices must be in 0…{m - 1}, got {joints.tolist()}")
        keep = np.ones(m, bool)
        keep[joints] = False
        self.model = self.model.without_joints(joints)
        self.lam = self.lam[keep]
        self._joint_structure()

    # ------------------------------------------------------------------ parameters (validated)
    solver = _Setting(_solver_name)  # "kkt" (direct) or "gs" (Gauss–Seidel)
    max_iterations = _Setting(lambda name, value: _count(name, value, 1))
    tolerance = _Setting(_finite_non_negative)  # η on ‖C + α̃λ‖∞
    gravity = _Setting(_acceleration)  # m/s²

    @property
    def damping(self) -> float:
        """Mass-proportional (Rayleigh α) damping c [1/s] of linear and angular velocity, 0 for none; set by
        :meth:`set_damping_ratio` from a damping ratio, or directly (which drops a ratio set before)."""
        return self._damping

    @damping.setter
    def damping(self, value: float) -> None:
        self._damping = _finite_non_negative("damping", value, " (1/s)")
        self._damping_ratio: tuple[float, float] | None = None

    def set_damping_ratio(self, zeta: float, frequency_hz: float) -> None:
        """Damp the mode of ``frequency_hz`` [Hz] (e.g. a tree's first sway mode) with the damping ratio ``zeta``:
        the mass-proportional :attr:`damping` c is chosen so that this mode, stepped with this integrator at
        this Δt, decays with ratio ζ, the integrator's own damping included
        (:func:`solver.core.integrator.mass_damping_for_ratio`); chosen again when ``dt`` or ``integrator``
        change. Other modes of frequency f get ζ·f₁/f from c plus the integrator's own. ValueError if the
        integrator alone damps that mode more than ζ (Euler at large Δt)."""
        c = mass_damping_for_ratio(float(zeta), float(frequency_hz), self._dt, self._integrator)
        self._damping = c
        self._damping_ratio = (float(zeta), float(frequency_hz))

    def _damping_for_step(self) -> None:
        """A damping ratio set by :meth:`set_damping_ratio` turned into c for the current Δt and integrator."""
        ratio: tuple[float, float] | None = getattr(self, "_damping_ratio", None)
        if ratio is not None:
            zeta, f = ratio
            self._damping = mass_damping_for_ratio(zeta, f, self._dt, self._integrator)

    @property
    def dt(self) -> float:
        """The time step Δt [s]. Hooks that scale a compliance or an implicit mass by the implicit stage read
        ``step_context.stage_dt`` (:attr:`stage_dt`; 2Δt/3 for ``"bdf2"``)."""
        return self._dt

    @dt.setter
    def dt(self, value: float) -> None:
        value = float(value)
        if not (np.isfinite(value) and value > 0.0):
            raise ValueError(f"dt must be a finite time step > 0 s, got {value}")
        if self._step_open:
            raise RuntimeError("dt: only between steps")
        self._dt = value
        self._alpha_tilde = None
        self._factor_age = None  # α̃ = α/Δt² is in the factored matrix
        self._damping_for_step()

    @property
    def integrator(self) -> str:
        """``"euler"``: XPBD's implicit (backward) Euler step, first order; ``"bdf2"``: the two-step backward
        differentiation formula, second order (see :meth:`begin_step`)."""
        return self._integrator

    @integrator.setter
    def integrator(self, value: str) -> None:
        value = check_integrator("integrator", value)
        if self._step_open:
            raise RuntimeError("integrator: only between steps")
        self._integrator = value
        self._history = None
        self._damping_for_step()

    @property
    def stage_dt(self) -> float:
        """Length h [s] of the implicit stage the Newton iterations solve, α̃ = α/h²: Δt for ``"euler"``, 2Δt/3
        for ``"bdf2"`` (Δt for its first step, and after a change of Δt or of the state between steps)."""
        if self._step_open and self._stage is not None:
            return self._stage
        return self._dt * 2.0 / 3.0 if self._bdf2_history() is not None else self._dt

    @property
    def compiled(self) -> bool:
        """Whether the KKT iterations run compiled (:mod:`solver.core.compiled`); setting True without a
        working numba keeps the numpy solvers (``compiled_status()`` says why)."""
        return self._compiled

    @compiled.setter
    def compiled(self, value: bool | None) -> None:
        want = value is None or bool(value)
        self._compiled = want and compiled_kkt.kernels() is not None
        if getattr(self, "_kkt", None) is not None:
            self._kkt = None  # the other solver is built on the next iteration
            self._evaluated_pose = None
            self._factor_age = None

    @property
    def factor_reuse(self) -> int:
        """How many further KKT iterations may reuse a factorisation (0: factor every iteration, exact Newton).

        With k > 0 the iterations are *simplified* Newton iterations (Hairer & Wanner, Solving ODEs II, §IV.8):
        the matrix H of Eq. 22 is the one factored at an earlier iterate, possibly an earlier step (its
        Jacobians and drag-augmented masses), refactored after k reuses, or at once after a reusing iteration
        contracted the residual by less than ``REUSE_CONTRACTION`` (see :meth:`step`). The right-hand side is
        always the current ``C + α̃λ``, so the constraints converge to the same tolerance and static
        equilibria are the same. In motion the position update follows the Jacobians the iterations used
        (Eq. 22 drops XPBD's momentum residual g, as exact Newton does too), so the path differs by the
        Jacobian change times the constraint impulse: 0.05 % of the Deul cantilever's fall; on the white birch
        in a 10 m/s wind ≤ 16 mm while the gust first bends it, 1.5 mm after 2 s (tests/test_factor_reuse.py,
        benchmarks/live_fps.py). Meant for the live preview, where one iteration per frame is all the time
        there is and the factorisation is its largest part."""
        return self._factor_reuse

    @factor_reuse.setter
    def factor_reuse(self, value: int) -> None:
        self._factor_reuse = _count("factor_reuse", value, 0)
        self._factor_age = None

    @property
    def alpha_tilde(self) -> np.ndarray:
        h = self.stage_dt
        if self._alpha_tilde is None or self._alpha_stage != h:
            if self._alpha_tilde is not None:
                self._factor_age = None  # α̃ is in the factored matrix
            self._alpha_tilde = joint_constraint.compliance(self.model, h)
            self._alpha_stage = h
        return self._alpha_tilde

    # ------------------------------------------------------------------ loads
    def _check_segment(self, segment) -> int:
        if isinstance(segment, (bool, np.bool_)) or int(segment) != segment or not 0 <= segment < self.model.n_segments:
            raise ValueError(f"segment {segment!r} is not a segment index (0…{self.model.n_segments - 1})")
        return int(segment)

    def add_point_load(self, segment: int, local_point, force) -> None:
        """Apply ``force`` [N, world frame] at ``local_point`` [m, segment frame] of ``segment`` every step."""
        s = self._check_segment(segment)
        p = np.asarray(local_point, dtype=float).reshape(3)
        f = np.asarray(force, dtype=float).reshape(3)
        if not (np.all(np.isfinite(p)) and np.all(np.isfinite(f))):
            raise ValueError(f"point load on segment {s}: point and force must be finite")
        self._point_seg = np.append(self._point_seg, s)
        self._point_local = np.vstack((self._point_local, p))
        self._point_force = np.vstack((self._point_force, f))

    def clear_point_loads(self) -> None:
        self._point_seg = np.zeros(0, np.int64)
        self._point_local = np.zeros((0, 3))
        self._point_force = np.zeros((0, 3))

    def external_loads(self):
        """Total external force [N] and torque [N·m] per segment, world frame, at the current pose."""
        f = self.forces + self.model.masses[:, None] * self.gravity
        t = self.torques.copy()
        if self._point_seg.size:
            arm = quat.rotate(self.orientations[self._point_seg], self._point_local)
            np.add.at(f, self._point_seg, self._point_force)
            np.add.at(t, self._point_seg, np.cross(arm, self._point_force))
        for field in self.force_fields:
            ff, tt = field(self)
            f = f + ff
            t = t + tt
        return f, t

    # ------------------------------------------------------------------ Algorithm 1
    def _implicit_force_damping(self) -> None:
        """Linearly implicit velocity-dependent forces (aerodynamic drag, solver/air/drag.py): a force field with an
        ``implicit_damping`` array (n, 6) [kg/s world; kg·m²/s body axes], bounding −∂f/∂v after its call, adds
        Δt times it to this step's mass in the prediction and the KKT solve: (M + Δt D)(v' − v) = Δt f(v) +
        constraint impulses. Stable for light leaves in strong wind; the static equilibrium is unchanged."""
        d = [dmp for fld in self.force_fields if (dmp := getattr(fld, "implicit_damping", None)) is not None]
        if not d and not self._mass_augmented:
            return
        md = self._mass_diag + self.stage_dt * np.sum(d, axis=0) if d else self._mass_diag
        free = ~self.model.pinned
        self._mass_diag_free = md[free]
        self._inv_mass_diag = np.where(free[:, None], 1.0 / md, 0.0)
        self._mass_augmented = bool(d)

    def _bdf2_history(self) -> tuple | None:
        """BDF2's previous step (x, q, v, ω at t − Δt) if ``integrator`` is ``"bdf2"`` and it still applies: same
        Δt, and the state is the one that step left (not set by the caller between steps, e.g. velocities zeroed)."""
        if self._integrator != "bdf2" or self._history is None:
            return None
        previous, dt, left = self._history
        now = (self.positions, self.orientations, self.velocities, self.angular_velocities)
        if dt != self._dt or not all(a is b or np.array_equal(a, b) for a, b in zip(now, left, strict=True)):
            return None
        return previous

    def begin_step(self) -> None:
        """Lines 1–4: predict positions and orientations (with the gyroscopic term), λ ← 0.

        ``"euler"``: from (x_n, v_n) over the stage h = Δt (XPBD, Macklin et al. 2016). ``"bdf2"``: the two-step
        backward differentiation formula x_{n+1} − x̂ = h v_{n+1}, v_{n+1} − v̂ = h a(x_{n+1}) with h = 2Δt/3,
        x̂ = (4x_n − x_{n−1})/3, v̂ = (4v_n − v_{n−1})/3 (Hairer & Wanner, *Solving ODEs II*, §V.1) is the same
        implicit stage as XPBD's step, started from (x̂, v̂) instead of (x_n, v_n): the prediction, the Newton
        iterations on Eq. 22 with α̃ = α/h² and the velocities (x_{n+1} − x̂)/h are unchanged. Orientations on the
        group: q̂ = q_n·exp(φ/3), φ the body rotation from q_{n−1} to q_n; ω̂ = (4ω_n − ω_{n−1})/3 (body frame).
        The first step, and a step after Δt or the state was changed by the caller, is an Euler step."""
        self._saved = (
            self.positions.copy(),
            self.orientations.copy(),
            self.velocities.copy(),
            self.angular_velocities.copy(),
            self.time,
        )
        previous = self._bdf2_history()
        if previous is None:
            x0, q0, v0, w0 = self.positions, self.orientations, self.velocities, self.angular_velocities
            self._stage = self._dt
        else:
            xp, qp, vp, wp = previous
            x0 = (4.0 * self.positions - xp) / 3.0
            q0 = _exp_body(self.orientations, _log_body(qp, self.orientations) / 3.0)
            v0 = (4.0 * self.velocities - vp) / 3.0
            w0 = (4.0 * self.angular_velocities - wp) / 3.0
            self._stage = self._dt * 2.0 / 3.0
        dt = self._stage
        self._step_open = True  # from here on step_context describes this step (force fields are evaluated next)
        try:
            f, t = self.external_loads()
        except BaseException:
            self._step_open = False
            raise
        self._implicit_force_damping()
        free = ~self.model.pinned
        inv_m = self._inv_mass_diag
        v = v0 + dt * f * inv_m[:, :3]
        w = w0
        inertia = self.model.inertia
        gyro = quat.cross(w, inertia * w)
        if t.any():  # (gravity alone: no torque to turn into the body frame)
            gyro = quat.rotate_inverse(q0, t) - gyro
        else:
            np.negative(gyro, out=gyro)
        w = w + dt * inv_m[:, 3:] * gyro
        self._x_prev = np.array(x0, dtype=float)
        self._q_prev = np.array(q0, dtype=float)
        x, q = self._x_prev.copy(), self._q_prev.copy()
        fr = self._free_rows()
        x[fr] += dt * v[fr]
        # BDF2 turns by exp and reads the rotation back by its inverse: integrate_body and body_rotation_vector
        # are each other's inverse to first order only, and the difference (ω²Δt²/8 per step) damps as Euler does
        q[fr] = (_exp_body if self._integrator == "bdf2" else quat.integrate_body)(q0[fr], dt * w[fr])
        if self.kinematic is not None and np.any(~free):
            kp, kq = self.kinematic(self.time + self._dt)
            x[~free] = np.asarray(kp, dtype=float).reshape(-1, 3)
            q[~free] = quat.normalize(np.asarray(kq, dtype=float).reshape(-1, 4))
        self.positions, self.orientations = x, q
        self.lam = np.zeros((self.model.n_joints, 6))
        for constraint_set in self.gs_constraints:
            constraint_set.begin_step(self)

    def constraint_residual(self) -> np.ndarray:
        """``C(x) + α̃λ`` per joint (m, 6): −b of Eq. 22."""
        return self._joint_values() + self.alpha_tilde * self.lam

    def _joint_values(self) -> np.ndarray:
        """``C(x)`` (m, 6) from the evaluator kept for the KKT iterations: the residual measured after an
        iteration is the next iteration's right-hand side, so each pose is evaluated once (a pose changed
        in place since, e.g. by a Gauss–Seidel set, is detected by comparison and evaluated again)."""
        if self._joint_eval is None:
            self._joint_eval = joint_constraint.JointEvaluator(self.model)
        if self._compiled:
            self._ensure_layout()
            c = self._compiled_kkt().values(self.positions, self.orientations)
            self._joint_eval.defer(self.positions, self.orientations)  # its Jacobians, if asked for, at this pose
            return c
        pose = (
            np.ascontiguousarray(self.positions, dtype=float).tobytes(),
            np.ascontiguousarray(self.orientations, dtype=float).tobytes(),
        )
        if pose != self._evaluated_pose:
            self._joint_eval.values(self.positions, self.orientations)
            self._evaluated_pose = pose
        return self._joint_eval._c

    def residual(self) -> float:
        """Chebyshev norm ``‖C + α̃λ‖∞`` (0 for a model without joints)."""
        if self.model.n_joints == 0:
            return 0.0
        if self._compiled:  # (the numpy evaluator's Jacobians, if asked for, at this pose)
            self._ensure_layout()
            kkt = self._compiled_kkt()
            assert self._joint_eval is not None  # made with the solver
            self._joint_eval.defer(self.positions, self.orientations)
            return kkt.residual(self.positions, self.orientations, self.lam, self.alpha_tilde)
        return float(np.max(np.abs(self.constraint_residual())))

    def iterate(self, solver: str | None = None) -> float:
        """One solver iteration: the tree joints (lines 6–9 for ``"kkt"``, an Eq. 21 sweep for ``"gs"``), then one
        Gauss–Seidel sweep of every set in ``gs_constraints`` (lines 10–14). With ``"kkt"``, a set whose
        ``solves_joints`` is true this iteration solves the joints together with its rows, and the joint-only step
        is skipped. Returns the iteration's residual:
        the max of the joints' ``‖C + α̃λ‖∞`` after the iteration and of the residuals the sets report."""
        solver = self.solver if solver is None else solver
        if solver not in ("kkt", "gs"):
            raise ValueError(f"solver must be 'kkt' or 'gs', got {solver!r}")
        # a set that solves the joints together with its own rows (``solves_joints``, e.g. direct contacts) makes
        # the joint-only step redundant: it would move the joints without seeing that set's rows
        joints_elsewhere = solver == "kkt" and any(getattr(c, "solves_joints", False) for c in self.gs_constraints)
        kkt_residual = None
        if self.model.n_joints and solver == "kkt":
            if not joints_elsewhere:
                kkt_residual = self._kkt_iteration()
        elif self.model.n_joints:
            if self._colours is None:
                self._colours = colour_joints(self._seg_a, self._seg_b)
            gauss_seidel_iteration(
                self.model,
                self.positions,
                self.orientations,
                self.lam,
                self.alpha_tilde,
                self._inv_mass_diag,
                self._colours,
            )
        if kkt_residual is not None and not self.gs_constraints:
            # the compiled iteration's residual is at the pose and λ it left, which nothing has moved since (the
            # residual() call would hash them again to find that out: 0.7 ms of 40 on 100k segments)
            return kkt_residual
        set_residual = 0.0
        for constraint_set in self.gs_constraints:
            set_residual = max(set_residual, float(constraint_set.project(self)))
        return max(self.residual(), set_residual)

    def _compiled_kkt(self) -> compiled_kkt.CompiledKKT:
        kkt = self._kkt
        if not isinstance(kkt, compiled_kkt.CompiledKKT):
            if self._joint_eval is None:
                self._joint_eval = joint_constraint.JointEvaluator(self.model)
            kkt = compiled_kkt.CompiledKKT(
                self.free_index.size, self._seg_a, self._seg_b, self.free_index, self._joint_eval
            )
            self._kkt = kkt
            self._factor_age = None
        return kkt

    def _kkt_iteration(self) -> float | None:
        """One joint Newton iteration (Eq. 22); returns ``‖C + α̃λ‖∞`` at the new pose (compiled), else None."""
        if self._compiled:  # one fused call: values, Jacobians, factor, solve and update
            kkt = self._compiled_kkt()
            if self._factor_age is None or self._factor_age >= self._factor_reuse or not kkt.factored:
                kkt.factor(self._mass_diag_free, self.alpha_tilde)
                self._factor_age = 0
            else:
                self._factor_age += 1
            self._ensure_layout()
            residual = kkt.iterate(self.positions, self.orientations, self.lam, self.alpha_tilde)
            assert self._joint_eval is not None  # made with the solver
            self._joint_eval.defer(self.positions, self.orientations)
            return residual
        if self._kkt is None:  # rods and ropes: banded joint-space Cholesky; any other forest: tree contraction
            n_free = self.free_index.size
            chains = chain_order(n_free, self._seg_a, self._seg_b) is not None
            self._kkt = (ChainKKT if chains else TreeKKT)(n_free, self._seg_a, self._seg_b)
        rhs = self._joint_values() + self.alpha_tilde * self.lam
        ev = self._joint_eval
        assert ev is not None  # made by _joint_values
        if self._factor_age is None or self._factor_age >= self._factor_reuse or not self._kkt.factored:
            if isinstance(self._kkt, TreeKKT) and ev.constant_translation:
                self._kkt.factor_blocks(self._mass_diag_free, self.alpha_tilde, *ev.rotation_columns())
            else:
                self._kkt.factor(self._mass_diag_free, self.alpha_tilde, *ev.jacobians())
            self._factor_age = 0
        else:  # simplified Newton (factor_reuse): H of an earlier iterate
            self._factor_age += 1
        dx, dlam = self._kkt.solve(None, rhs)  # Eq. 22: H (Δx, Δλ) = (0, −b)
        f = self._free_rows()
        self.positions[f] += dx[:, :3]
        self.orientations[f] = quat.integrate_body(self.orientations[f], dx[:, 3:])
        self.lam += dlam
        return None

    def _ensure_layout(self) -> None:
        """The state arrays as the kernels take them: float64, C-contiguous (a user may have assigned others)."""
        for name in ("positions", "orientations", "lam"):
            arr = getattr(self, name)
            if arr.dtype != np.float64 or not arr.flags.c_contiguous:
                setattr(self, name, np.ascontiguousarray(arr, dtype=np.float64))

    def _free_rows(self):
        """The free segments as a slice if they are contiguous (e.g. one anchor first or last): updated in
        place instead of gathered and scattered; else their indices."""
        f = self.free_index
        if f.size and f[-1] - f[0] + 1 == f.size:
            return slice(int(f[0]), int(f[-1]) + 1)
        return f

    def end_step(self) -> None:
        """Lines 16–17: velocities from the position change over the stage; damping; finiteness check."""
        dt = self._stage if self._stage is not None else self._dt
        v = (self.positions - self._x_prev) / dt
        w = (_log_body if self._integrator == "bdf2" else quat.body_rotation_vector)(
            self._q_prev, self.orientations
        ) / dt
        if self.damping > 0.0:
            # BDF2: v_{n+1} = e^(−c h)(4v_n − v_{n−1})/3 decays as e^(−c·3h/2) = e^(−cΔt) per step, as Euler's
            decay = np.exp(-self.damping * dt)
            v *= decay
            w *= decay
        state = (self.positions, self.orientations, v, w)
        # one sum per array is a cheap test (NaN and inf propagate); only a failed test looks for the segment
        if not np.isfinite(sum(float(np.sum(arr)) for arr in state)):
            finite = np.ones(self.model.n_segments, bool)
            for arr in state:
                finite &= np.all(np.isfinite(arr), axis=1)
            if not np.all(finite):
                bad = int(np.flatnonzero(~finite)[0])
                self._restore()
                raise NonFiniteStateError(
                    f"the step at t = {self.time:.6g} s produced a non-finite pose or velocity for segment {bad}; "
                    "state restored to before the step (reduce dt, raise stiffness compliance, or check loads)"
                )
        self.velocities, self.angular_velocities = v, w
        for constraint_set in self.gs_constraints:  # velocity corrections (friction, restitution); time = step start
            constraint_set.end_step(self)
        self.time = self.time + self._dt
        self._step_open = False
        self._stage = None
        if self._integrator == "bdf2":
            left = (self.positions, self.orientations, self.velocities, self.angular_velocities)
            self._history = (self._saved[:4], self._dt, tuple(a.copy() for a in left))

    def _restore(self) -> None:
        (self.positions, self.orientations, self.velocities, self.angular_velocities, self.time) = self._saved
        self.lam = np.zeros((self.model.n_joints, 6))
        self._step_open = False
        self._stage = None

    def step(self) -> StepReport:
        """Advance one time step ``dt``: Algorithm 1. Raises :class:`NonFiniteStateError` on NaN/inf."""
        self.begin_step()
        try:
            iterations = 0
            res = self.residual()
            # a Gauss–Seidel set's residual is only known from its sweep: then iterate at least once
            while (
                np.isfinite(res) and res > self.tolerance or (iterations == 0 and self.gs_constraints)
            ) and iterations < self.max_iterations:
                before = res
                res = self.iterate()
                iterations += 1
                if self._factor_age and res > REUSE_CONTRACTION * before:
                    self._factor_age = None  # the reused factorisation has gone stale: refactor next time
        except (np.linalg.LinAlgError, FloatingPointError) as exc:
            self._restore()
            raise NonFiniteStateError(f"the solver failed at t = {self.time:.6g} s ({exc}); state restored") from exc
        self.end_step()
        self.last_report = StepReport(iterations, res)
        for hook in self.post_step:
            hook(self)
        return self.last_report

    def run(self, steps: int) -> StepReport:
        report = StepReport(0, 0.0)
        for _ in range(int(steps)):
            report = self.step()
        return report

    # ------------------------------------------------------------------ read-back
    def segment_points(self, segment_local_points: np.ndarray, segments: np.ndarray) -> np.ndarray:
        """World positions of points given in segments' local frames (e.g. the tips ``(0, 0, l/2)``)."""
        segments = np.asarray(segments, dtype=np.int64)
        return self.positions[segments] + quat.rotate(self.orientations[segments], segment_local_points)

    def tip(self, segment: int = -1) -> np.ndarray:
        """World position of the +z end of a segment (the free tip of a rod built from a polyline)."""
        s = segment % self.model.n_segments
        return self.segment_points(np.array([[0.0, 0.0, 0.5 * self.model.lengths[s]]]), np.array([s]))[0]

    def kinetic_energy(self, segments=None) -> float:
        """Kinetic energy [J] of the free segments, or of the free ones among ``segments`` ((n,) bool mask)."""
        m = self.model
        free = ~m.pinned if segments is None else ~m.pinned & np.asarray(segments, bool)
        lin = 0.5 * np.sum(m.masses[free] * np.sum(self.velocities[free] ** 2, axis=1))
        ang = 0.5 * np.sum(m.inertia[free] * self.angular_velocities[free] ** 2)
        return float(lin + ang)

    def momentum(self):
        """Total linear [kg·m/s] and angular momentum about the origin [kg·m²/s] of the free segments."""
        m = self.model
        free = ~m.pinned
        p = m.masses[free, None] * self.velocities[free]
        l_spin = quat.rotate(self.orientations[free], m.inertia[free] * self.angular_velocities[free])
        return p.sum(axis=0), (np.cross(self.positions[free], p) + l_spin).sum(axis=0)
