"""XPBD time stepping of a rod forest: Deul Algorithm 1 with the direct KKT solver or Gauss–Seidel."""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

from . import bdf2, joint_constraint
from . import compiled as compiled_kkt
from . import quaternion as quat
from .bdf2 import exp_body as _exp_body
from .bdf2 import log_body as _log_body
from .gauss_seidel import colour_joints, gauss_seidel_iteration
from .hooks import ConstraintSet, ForceField, PostStepHook, StepContext
from .integrator import check_integrator, mass_damping_for_ratio
from .kkt_chain import ChainKKT, chain_order
from .kkt_tree import TreeKKT
from .loads import PointLoads
from .loop_closing import LoopClosingConstraints
from .model import RodModel
from .parameters import Setting, acceleration, count, finite_non_negative, solver_name, time_step
from .state import NonFiniteStateError, State, StepReport, first_non_finite, kinetic_energy, momentum

log = logging.getLogger("solver.timestep")

KinematicDriver = Callable[[float], tuple]


# A simplified Newton iteration (Simulator.factor_reuse) must shrink the residual at least this much, or the
# factorisation is renewed (exact Newton shrinks it by orders of magnitude; one that gains less is stale).
REUSE_CONTRACTION = 0.1


class Simulator:
    """The stepper of one :class:`RodModel` (constant per topology), advancing its :class:`State`.

    Parameters: ``dt`` [s]; ``solver`` ``"kkt"`` (direct, Deul §4.2) or ``"gs"`` (XPBD Gauss–Seidel,
    Eq. 21); ``max_iterations`` per step; ``tolerance`` η on ``‖C + α̃λ‖∞`` (Algorithm 1, line 5);
    ``gravity`` [m/s²]; ``damping`` [1/s]: mass-proportional (Rayleigh α) damping of linear and
    angular velocity, 0 for none; ``kinematic``: optional ``f(t) -> (positions (k, 3), orientations
    (k, 4))`` for the k pinned segments in index order, to drive them; ``compiled``: run the KKT Newton
    iterations with the compiled kernels (:mod:`solver.core.compiled`; None: whenever numba works, else the
    numpy solvers; False: the numpy solvers), every joint kind included. ``integrator``: ``"euler"`` (XPBD's
    implicit Euler step, Macklin et al. 2016; first order, it damps a mode of frequency ω by ζ ≈ ωΔt/2) or
    ``"bdf2"`` (the two-step backward differentiation formula, second order, A- and L-stable: numerical
    damping ζ ≈ (ωΔt)³/4; see :meth:`begin_step`, measured in docs/notes/integrator.md). Both solve one implicit
    stage per step with the same Newton iterations and KKT factorisation; the static equilibrium is the same for
    every Δt and iteration count. :meth:`set_damping_ratio` sets ``damping`` from a damping ratio at a mode's
    frequency.

    State arrays (world frame unless noted; :attr:`state` gets or sets them together as a :class:`State`):
    ``positions`` (n, 3) [m], ``orientations`` (n, 4), ``velocities`` (n, 3) [m/s], ``angular_velocities`` (n, 3)
    [rad/s, body frame], ``lam`` (m, 6), ``time`` [s]. External loads: ``forces``/``torques`` (n, 3) [N, N·m,
    world frame] persist between steps; :meth:`add_point_load` applies a force at a point of a segment.
    Hooks (:mod:`solver.core.hooks`): ``force_fields`` (:class:`~solver.core.hooks.ForceField`),
    ``gs_constraints`` (:class:`~solver.core.hooks.ConstraintSet`), ``post_step``
    (:class:`~solver.core.hooks.PostStepHook`); they read the step through :attr:`step_context`.
    """

    def __init__(  # noqa: PLR0913 (the public keyword options, each validated by its setter)
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
        self._start: State | None = None  # the open step's start (set by begin_step)
        self._stage_start: tuple[np.ndarray, np.ndarray] = (model.positions, model.orientations)  # x̂, q̂ of it
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
        rest = State.at_rest(model)
        self.positions, self.orientations, self.velocities = rest.positions, rest.orientations, rest.velocities
        self.angular_velocities, self.lam, self.time = rest.angular_velocities, rest.lam, rest.time
        self.forces = np.zeros((n, 3))
        self.torques = np.zeros((n, 3))
        self._point_loads = PointLoads(n)
        self.force_fields: list[ForceField] = []
        # Gauss–Seidel constraint sets alternated with the joint solve (Deul Algorithm 1, lines 10–14)
        self.gs_constraints: list[ConstraintSet] = [LoopClosingConstraints(model)] if model.loops.n_joints else []
        self.post_step: list[PostStepHook] = []  # run between steps: may change the topology (fracture)

        free = ~model.pinned
        self.free_index = np.flatnonzero(free)
        self._joint_structure()
        self._mass_diag = np.concatenate((np.repeat(model.masses[:, None], 3, axis=1), model.inertia), axis=1)
        self._use_mass(self._mass_diag)  # (M without the implicit drag term: see _implicit_force_damping)
        self._mass_augmented = False
        self.factor_reuse = 0
        self.last_report: StepReport | None = None

    def _joint_structure(self) -> None:
        """Each joint's two segments as free-segment indices (−1: pinned), and the caches that depend on the joints
        emptied (built again on first use): at the start and after every topology change (:meth:`remove_joints`)."""
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

    @property
    def state(self) -> State:
        """A copy of the current :class:`State` (pose, velocities, λ, time). Setting it (between steps) copies the
        given state in: shapes must match the model ((n, 3), (n, 4), (n, 3), (n, 3), (m, 6))."""
        now = State(self.positions, self.orientations, self.velocities, self.angular_velocities, self.lam, self.time)
        return now.copy()

    @state.setter
    def state(self, value: State) -> None:
        if self._step_open:
            raise RuntimeError("state: only between steps")
        for name, array in value.checked_arrays(self.model.n_segments, self.model.n_joints).items():
            setattr(self, name, array)
        self.time = float(value.time)

    # ------------------------------------------------------------------ parameters (validated)
    solver = Setting(solver_name)  # "kkt" (direct) or "gs" (Gauss–Seidel)
    max_iterations = Setting(lambda name, value: count(name, value, 1))
    tolerance = Setting(finite_non_negative)  # η on ‖C + α̃λ‖∞
    gravity = Setting(acceleration)  # m/s²

    @property
    def damping(self) -> float:
        """Mass-proportional (Rayleigh α) damping c [1/s] of linear and angular velocity, 0 for none; set by
        :meth:`set_damping_ratio` from a damping ratio, or directly (which drops a ratio set before)."""
        return self._damping

    @damping.setter
    def damping(self, value: float) -> None:
        self._damping = finite_non_negative("damping", value, " (1/s)")
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
        value = time_step("dt", value)
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
        return self._dt * 2.0 / 3.0 if self._bdf2_previous() is not None else self._dt

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
        equilibria are the same; in motion the path differs by the Jacobian change times the constraint impulse
        (measured in docs/notes/core.md). Meant for the live preview, where one iteration per frame is all the
        time there is and the factorisation is its largest part."""
        return self._factor_reuse

    @factor_reuse.setter
    def factor_reuse(self, value: int) -> None:
        self._factor_reuse = count("factor_reuse", value, 0)
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
    def add_point_load(self, segment: int, local_point, force) -> None:
        """Apply ``force`` [N, world frame] at ``local_point`` [m, segment frame] of ``segment`` every step."""
        self._point_loads.add(segment, local_point, force)

    def clear_point_loads(self) -> None:
        self._point_loads.clear()

    def external_loads(self):
        """Total external force [N] and torque [N·m] per segment, world frame, at the current pose."""
        f = self.forces + self.model.masses[:, None] * self.gravity
        t = self.torques.copy()
        self._point_loads.add_to(self.orientations, f, t)
        for field in self.force_fields:
            ff, tt = field(self)
            f = f + ff
            t = t + tt
        return f, t

    # ------------------------------------------------------------------ Algorithm 1
    def _implicit_force_damping(self) -> None:
        """Linearly implicit drag (:class:`~solver.core.hooks.ForceField`'s ``implicit_damping`` D): this step's mass
        in the prediction and the KKT solve is M + h D, (M + h D)(v' − v) = h f(v) + constraint impulses."""
        d = [dmp for fld in self.force_fields if (dmp := getattr(fld, "implicit_damping", None)) is not None]
        if not d and not self._mass_augmented:
            return
        self._use_mass(self._mass_diag + self.stage_dt * np.sum(d, axis=0) if d else self._mass_diag)
        self._mass_augmented = bool(d)

    def _use_mass(self, mass_diag: np.ndarray) -> None:
        """Solve with the mass diagonal ``mass_diag`` (n, 6): its free rows and every segment's inverse (0: pinned)."""
        free = ~self.model.pinned
        self._mass_diag_free = mass_diag[free]
        self._inv_mass_diag = np.where(free[:, None], 1.0 / mass_diag, 0.0)

    def _bdf2_previous(self) -> State | None:
        """BDF2's state before the last step if ``integrator`` is ``"bdf2"`` and it still applies: same Δt, and the
        state is the one that step left (not set by the caller between steps, e.g. velocities zeroed)."""
        if self._integrator != "bdf2":
            return None
        now = (self.positions, self.orientations, self.velocities, self.angular_velocities)
        return bdf2.history_applies(self._history, now, self._dt)

    def begin_step(self) -> None:
        """Lines 1–4: predict positions and orientations (with the gyroscopic term), λ ← 0.

        ``"euler"``: from (x_n, v_n) over the stage h = Δt (XPBD, Macklin et al. 2016). ``"bdf2"``: the same implicit
        stage over h = 2Δt/3, started from (x̂, v̂) instead of (x_n, v_n) (:mod:`solver.core.bdf2`): the prediction,
        the Newton iterations on Eq. 22 with α̃ = α/h² and the velocities (x_{n+1} − x̂)/h are unchanged. The first
        step, and a step after Δt or the state was changed by the caller, is an Euler step."""
        x, q, v, w = (a.copy() for a in (self.positions, self.orientations, self.velocities, self.angular_velocities))
        self._start = State(x, q, v, w, self.lam, self.time)  # (λ is replaced, not changed: λ ← 0)
        previous = self._bdf2_previous()
        if previous is None:
            x0, q0, v0, w0 = self.positions, self.orientations, self.velocities, self.angular_velocities
            self._stage = self._dt
        else:
            x0, q0, v0, w0 = bdf2.stage_start(
                self.positions, self.orientations, self.velocities, self.angular_velocities, previous
            )
            self._stage = self._dt * 2.0 / 3.0
        self._step_open = True  # from here on step_context describes this step (force fields are evaluated next)
        try:
            f, t = self.external_loads()
        except BaseException:
            self._step_open = False
            raise
        self._implicit_force_damping()
        self._predict(x0, q0, v0, w0, f, t)
        self.lam = np.zeros((self.model.n_joints, 6))
        for constraint_set in self.gs_constraints:
            constraint_set.begin_step(self)

    def _predict(self, x0, q0, v0, w0, f, t) -> None:
        """Line 2: x = x̂ + h v, q turned by h ω, with v = v̂ + h M⁻¹ f and ω = ω̂ + h I⁻¹ (τ − ω × Iω) (body frame);
        the driven pinned segments placed where ``kinematic`` says at the step's end."""
        dt = self._stage
        assert dt is not None  # (set by begin_step)
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
        self._stage_start = (np.array(x0, dtype=float), np.array(q0, dtype=float))
        x, q = self._stage_start[0].copy(), self._stage_start[1].copy()
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
        Gauss–Seidel sweep of every set in ``gs_constraints`` (lines 10–14). Returns the max of the joints'
        ``‖C + α̃λ‖∞`` after the iteration and of the residuals the sets report."""
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
            state = (self.positions, self.orientations, self.lam)
            gauss_seidel_iteration(self.model, *state, self.alpha_tilde, self._inv_mass_diag, self._colours)
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
        x_hat, q_hat = self._stage_start
        v = (self.positions - x_hat) / dt
        w = (_log_body if self._integrator == "bdf2" else quat.body_rotation_vector)(q_hat, self.orientations) / dt
        if self.damping > 0.0:
            # BDF2: v_{n+1} = e^(−c h)(4v_n − v_{n−1})/3 decays as e^(−c·3h/2) = e^(−cΔt) per step, as Euler's
            decay = np.exp(-self.damping * dt)
            v *= decay
            w *= decay
        bad = first_non_finite((self.positions, self.orientations, v, w))
        if bad is not None:
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
            self._history = (self._start, self._dt, tuple(a.copy() for a in left))

    def _restore(self) -> None:
        """The state at the open step's start again (λ = 0, as before a step's first iteration)."""
        start = self._start
        assert start is not None  # (a step is open)
        self.positions, self.orientations = start.positions, start.orientations
        self.velocities, self.angular_velocities, self.time = start.velocities, start.angular_velocities, start.time
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
        return kinetic_energy(self.model, self.velocities, self.angular_velocities, segments)

    def momentum(self) -> tuple[np.ndarray, np.ndarray]:
        """Total linear [kg·m/s] and angular momentum about the origin [kg·m²/s] of the free segments."""
        now = State(self.positions, self.orientations, self.velocities, self.angular_velocities, self.lam, self.time)
        return momentum(self.model, now)
