"""The Simulator's hook contracts: what force fields, constraint sets and post-step hooks are given and may use.

A :class:`~solver.core.timestep.Simulator` runs three kinds of hooks (Deul Algorithm 1):

* ``sim.force_fields``: :class:`ForceField`, called in the prediction (line 2) for external loads (wind, drag).
* ``sim.gs_constraints``: :class:`ConstraintSet`, swept after each joint solve (lines 10–14: loops, contacts).
* ``sim.post_step``: :class:`PostStepHook`, called between steps; it may change the topology (fracture).

Each is called with the Simulator. It reads and writes the public state (``positions``, ``orientations``,
``velocities``, ``angular_velocities``, ``lam``, ``time``) and reads the step through :attr:`Simulator.step_context`
(a :class:`StepContext`): the step Δt and the implicit stage h as two named values, the step's start and stage-start
poses, the mass diagonal, and the joints' system (:class:`JointSystem`: values, Jacobians, one Newton iteration with
extra mass, solves with its factorisation). No hook reads a private attribute of the Simulator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from .state import State

if TYPE_CHECKING:
    from .timestep import Simulator


@runtime_checkable
class ForceField(Protocol):
    """``f(sim) -> (forces (n, 3) [N], torques (n, 3) [N·m])``, world frame, at the pose it is called at. A field may
    also have ``implicit_damping``: an (n, 6) array bounding −∂f/∂v after its call [kg/s; kg·m²/s body axes], which
    the step adds, times the stage h, to the mass (linearly implicit drag)."""

    def __call__(self, sim: Simulator) -> tuple[np.ndarray, np.ndarray]: ...


@runtime_checkable
class ConstraintSet(Protocol):
    """Rows solved by Gauss–Seidel beside the joints: ``begin_step`` after the prediction, ``project`` once per
    solver iteration (returns its residual [m]), ``end_step`` after the velocities are taken (velocity corrections).
    A set whose ``solves_joints`` attribute is true in an iteration solves the joints together with its rows; the
    Simulator then skips its own joint iteration."""

    def begin_step(self, sim: Simulator) -> None: ...

    def project(self, sim: Simulator) -> float: ...

    def end_step(self, sim: Simulator) -> None: ...


@runtime_checkable
class PostStepHook(Protocol):
    """``f(sim)``, run after every step, between steps: it may change the topology (``sim.remove_joints``)."""

    def __call__(self, sim: Simulator) -> None: ...


class JointSystem:
    """The joints' Eq. 22 system of a Simulator at its current pose, for hooks that solve with it.

    ``values()`` is C(x) (m, 6); ``rhs()`` is C + α̃λ (−b of Eq. 22); ``jacobians()`` is (∂C/∂z of the parent
    side, of the child side, and their transposes) per joint; ``segment_sides`` gives each joint's parent and child
    as free-segment indices (−1: pinned). ``iterate(extra_mass)`` runs one Newton iteration of the joints with the
    mass diagonal M + ``extra_mass`` (n_free, 6) and leaves its factorisation, which ``solve`` then applies."""

    __slots__ = ("_sim",)

    def __init__(self, sim: Simulator):
        self._sim = sim

    @property
    def segment_sides(self) -> tuple[np.ndarray, np.ndarray]:
        return self._sim._seg_a, self._sim._seg_b

    def values(self) -> np.ndarray:
        return self._sim._joint_values()

    def rhs(self) -> np.ndarray:
        return self._sim.constraint_residual()

    def jacobians(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        sim = self._sim
        sim._joint_values()  # the evaluator at this pose
        assert sim._joint_eval is not None  # made by _joint_values
        return sim._joint_eval.jacobians()

    def iterate(self, extra_mass: np.ndarray | None = None) -> float | None:
        """One joint Newton iteration (Eq. 22) from the current pose, moving it and λ; with ``extra_mass`` added to
        the free segments' mass diagonal for this iteration only. Returns ‖C + α̃λ‖∞ (compiled path) or None."""
        sim = self._sim
        if extra_mass is None:
            return sim._kkt_iteration()
        masses = sim._mass_diag_free
        sim._mass_diag_free = masses + extra_mass
        try:
            return sim._kkt_iteration()
        finally:
            sim._mass_diag_free = masses

    @property
    def factored(self) -> bool:
        """A factorisation of this step's joint system exists (made by the last Newton iteration)."""
        kkt = self._sim._kkt
        return kkt is not None and kkt.factored

    @property
    def elimination_rounds(self) -> int | None:
        """Rounds of the direct solver's elimination (tree contraction; 1 for chains and the compiled solver), or
        None before its first Newton iteration."""
        kkt = self._sim._kkt
        return None if kkt is None else kkt.n_rounds

    def solve(self, rhs_segments: np.ndarray | None, rhs_joints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(Δz (n_free, 6), Δλ (m, 6)) from the last factorisation: H (Δz, Δλ) = (rhs_segments, rhs_joints)."""
        kkt = self._sim._kkt
        if kkt is None or not kkt.factored:
            raise RuntimeError("JointSystem.solve: no factorisation yet (run a Newton iteration first)")
        return kkt.solve(rhs_segments, rhs_joints)


class StepContext:
    """The step a hook runs in. While a step is open (from the prediction to the velocities): ``step_dt`` is Δt [s],
    ``stage_dt`` the implicit stage h the constraints solve over (α̃ = α/h²: Δt for Euler, 2Δt/3 for BDF2),
    ``time`` the step's start [s], ``start`` the step's start :class:`~solver.core.state.State` and ``start_*`` its
    pose, ``stage_start_*`` the stage's start
    (x̂, q̂: the start pose for Euler, (4x_n − x_{n−1})/3 for BDF2; velocities are (x − x̂)/h). Between steps the
    same names describe the next step, its start being the current pose.

    ``mass_diag`` is the free segments' mass diagonal (n_free, 6) [kg; kg·m² body axes] with this step's implicit
    drag; ``inverse_mass_diag`` the inverse for every segment (n, 6), 0 for pinned ones; ``free_index`` the free
    segments; ``joints`` the :class:`JointSystem`."""

    __slots__ = ("_sim", "joints")

    def __init__(self, sim: Simulator):
        self._sim = sim
        self.joints = JointSystem(sim)

    @property
    def is_open(self) -> bool:
        return self._sim._step_open

    @property
    def step_dt(self) -> float:
        return self._sim.dt

    @property
    def stage_dt(self) -> float:
        return self._sim.stage_dt

    @property
    def time(self) -> float:
        return self._sim.time

    @property
    def start(self) -> State:
        """The step's start as a :class:`~solver.core.state.State` (its arrays, not copies: read only); between
        steps the current state."""
        sim = self._sim
        if sim._step_open and sim._start is not None:
            return sim._start
        return State(sim.positions, sim.orientations, sim.velocities, sim.angular_velocities, sim.lam, sim.time)

    @property
    def start_positions(self) -> np.ndarray:
        return self.start.positions

    @property
    def start_orientations(self) -> np.ndarray:
        return self.start.orientations

    @property
    def stage_start_positions(self) -> np.ndarray:
        return self._sim._stage_start[0] if self._sim._step_open else self.start_positions

    @property
    def stage_start_orientations(self) -> np.ndarray:
        return self._sim._stage_start[1] if self._sim._step_open else self.start_orientations

    @property
    def free_index(self) -> np.ndarray:
        return self._sim.free_index

    @property
    def mass_diag(self) -> np.ndarray:
        return self._sim._mass_diag_free

    @property
    def inverse_mass_diag(self) -> np.ndarray:
        return self._sim._inv_mass_diag
