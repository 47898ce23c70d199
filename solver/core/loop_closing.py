"""Loop-closing constraints: joints that would close a cycle, solved by Gauss–Seidel between the direct
solves (Deul §4.2, Algorithm 1 lines 10–14).

The direct KKT solver needs an acyclic constraint graph, so :meth:`RodModel.from_arrays` keeps the
joints that close a cycle (a ring, a segment welded to two parents of one tree) in ``model.loops``.
This set projects them with the same 6-D joint constraint (Eq. 23) by the XPBD update of Eq. 21/20,
on the positions and orientations the KKT step just produced; their λ accumulate over the step's
iterations. :class:`~solver.core.timestep.Simulator` adds it to ``gs_constraints`` by itself.

Two ways to weigh a correction (``response``):

* ``"local"``: Eq. 21 as written, ``Δλ = −(J M⁻¹ Jᵀ + α̃)⁻¹ (C + α̃λ)`` with the two joined segments'
  masses only. The next KKT solve then pulls the tree back toward where it was, so the alternation is
  a block Gauss–Seidel whose rate is the ratio of the loop's local to its effective compliance (docs/notes/core.md).
* ``"tree"`` (after a KKT iteration): the same Eq. 21 with the tree's response in place of
  ``M⁻¹``: the correction ``Jᵀ Δλ`` is applied to the whole tree through the KKT factorisation of
  this iteration, ``H (Δx, Δλ_tree) = (Jᵀ Δλ, 0)`` (Eq. 22), so the tree joints stay satisfied to
  first order and share the λ update (Baraff 1996's auxiliary constraints, one loop joint at a time).
  Six extra solves per loop joint per iteration; a single loop then converges like the direct solver.

The default ``"auto"`` takes ``"tree"`` for up to ``TREE_RESPONSE_MAX_LOOPS`` loop joints, else ``"local"``.
"""

from __future__ import annotations

import numpy as np

from . import joint_constraint
from . import quaternion as quat
from .gauss_seidel import colour_joints, gauss_seidel_iteration

TREE_RESPONSE_MAX_LOOPS = 16


class LoopClosingConstraints:
    """Gauss–Seidel constraint set (``Simulator.gs_constraints`` protocol) for ``model.loops``."""

    def __init__(self, model, response: str = "auto"):
        if response not in ("auto", "tree", "local"):
            raise ValueError(f"response must be 'auto', 'tree' or 'local', got {response!r}")
        self.joints = model.loops
        if response == "auto":
            response = "tree" if self.joints.n_joints <= TREE_RESPONSE_MAX_LOOPS else "local"
        self.response = response
        free = ~model.pinned
        seg_to_free = np.where(free, np.arange(model.n_segments), -1)
        self._free_a = seg_to_free[self.joints.joint_parent]  # −1: pinned, not an unknown
        self._free_b = seg_to_free[self.joints.joint_child]
        self._colours = colour_joints(self._free_a, self._free_b)
        self.lam = np.zeros((self.joints.n_joints, 6))
        self._dt: float | None = None
        self._alpha_tilde: np.ndarray  # α̃ for self._dt, set by begin_step

    def begin_step(self, sim) -> None:
        """λ ← 0 (Algorithm 1, line 4); α̃ = α/Δt² (Eq. 24) for the simulator's current Δt."""
        if self._dt != sim.step_context.stage_dt:
            self._dt = sim.step_context.stage_dt
            self._alpha_tilde = joint_constraint.compliance(self.joints, sim.step_context.stage_dt)
        self.lam[:] = 0.0

    def project(self, sim) -> float:
        """One Eq. 21 sweep over the loop-closing joints; returns ``‖C + α̃λ‖∞`` measured before it."""
        if self.joints.n_joints == 0:
            return 0.0
        c = joint_constraint.evaluate(self.joints, sim.positions, sim.orientations, with_jacobians=False)
        residual = float(np.max(np.abs(c + self._alpha_tilde * self.lam)))
        joints = sim.step_context.joints
        if self.response == "tree" and sim.solver == "kkt" and joints.factored:
            for j in range(self.joints.n_joints):  # few loops: Gauss–Seidel over them, each exact
                self._project_through_tree(sim, joints, j)
        else:  # inverse masses as the simulator uses them this step (pinned: 0)
            gauss_seidel_iteration(
                self.joints,
                sim.positions,
                sim.orientations,
                self.lam,
                self._alpha_tilde,
                sim.step_context.inverse_mass_diag,
                self._colours,
            )
        return residual

    def _project_through_tree(self, sim, joints, j: int) -> None:
        """Eq. 21 for loop joint ``j`` with the tree's compliance ``J H⁻¹ Jᵀ`` (6 solves of Eq. 22)."""
        c, j_a, j_b = joint_constraint.evaluate(self.joints, sim.positions, sim.orientations, np.array([j]))
        a, b = int(self._free_a[j]), int(self._free_b[j])
        n_free = sim.free_index.size
        zero_joint = np.zeros_like(sim.lam)
        dx, dlam, w = [], [], np.zeros((6, 6))
        for i in range(6):  # response of the tree to the generalised force of row i: Jᵀ e_i
            f = np.zeros((n_free, 6))
            if a >= 0:
                f[a] += j_a[0, i]
            if b >= 0:
                f[b] += j_b[0, i]
            x_i, l_i = joints.solve(f, zero_joint)
            dx.append(x_i)
            dlam.append(l_i)
            w[:, i] = (j_a[0] @ x_i[a] if a >= 0 else 0.0) + (j_b[0] @ x_i[b] if b >= 0 else 0.0)
        at = self._alpha_tilde[j]
        step = np.linalg.solve(w + np.diag(at), -(c[0] + at * self.lam[j]))
        move = np.tensordot(step, np.asarray(dx), axes=1)
        self.lam[j] += step
        sim.lam += np.tensordot(step, np.asarray(dlam), axes=1)
        f = sim.free_index
        sim.positions[f] += move[:, :3]
        sim.orientations[f] = quat.integrate_body(sim.orientations[f], move[:, 3:])

    def end_step(self, sim) -> None:
        """Loop closing needs no velocity correction: velocities come from the positions (line 17)."""
