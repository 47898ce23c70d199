"""The active-set direct strategy (``ActiveSet``): per iteration, the joints, every contact normal row and two
friction rows per contact in one sparse direct solve (:mod:`solver.contact.contact_kkt`), with a primal–dual active
set over a few rounds: a contact held by a stack of others is met in one solve, not one coil per sweep, and friction
moves the whole rod, not one segment (no Gauss–Seidel pass that the next joint solve undoes). The Simulator's own
joint step runs before it in every iteration (without it a frictionless drape gained energy and slid,
docs/notes/contacts.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..contact_kkt import NormalRows
from ..geometry import RowGeometry
from ..rows import StepRows
from .base import SolveLog, check_count
from .common import (
    DIRECT_ENTER,
    DIRECT_TOUCH,
    DirectSolve,
    DirectStrategy,
    RowCompliances,
    check_max_move,
    damp,
    friction_rows,
    move,
)


@dataclass(frozen=True, kw_only=True)
class ActiveSetOptions(RowCompliances):
    """The rows' compliances (:class:`~solver.contact.solvers.common.RowCompliances`); ``rounds``: active-set solves
    per call at most, then up to ``grow_rounds`` more in which rows only enter
    (:func:`solver.contact.contact_kkt.solve_joints_and_contacts`); ``max_move`` [m] (optional): a solve whose
    Newton step would move some segment's surface farther is scaled down to that distance (damped Newton, counted in
    ``damped_solves``): far outside the linear regime a full step overshoots and feeds energy into the motion
    (docs/notes/contacts.md)."""

    rounds: int = 8
    grow_rounds: int = 0
    max_move: float | None = None

    def __post_init__(self):
        super().__post_init__()
        check_count(type(self).__name__, "rounds", self.rounds, 1)
        check_count(type(self).__name__, "grow_rounds", self.grow_rounds, 0)
        check_max_move(type(self).__name__, self.max_move)


class ActiveSet(DirectStrategy):
    """Joints, contact normals and friction in one sparse direct solve per iteration (:class:`ActiveSetOptions`)."""

    follow_colliders = True

    def __init__(self, options: ActiveSetOptions, geometry: RowGeometry, log: SolveLog):
        super().__init__(options, geometry, log)
        self.solver = DirectSolve(options.rounds, options.grow_rounds)

    @property
    def post_defaults(self) -> tuple[float, int, int]:
        return self.options.compliance, self.options.rounds, self.options.grow_rounds

    def project(self, sim, rows: StepRows) -> float:
        """One joint-and-contact direct solve; returns the deepest penetration after it [m]."""
        self.solve(sim, rows)
        g = self.geometry.gaps(sim, self.gap_batches(rows))
        return max(0.0, float(np.max(-g, initial=0.0)))

    def solve(self, sim, rows: StepRows) -> None:
        """Joints, all contact normal rows and their friction rows in one sparse direct solve."""
        if rows.n_contacts == 0 or sim.solver != "kkt" or sim.model.n_joints == 0:
            return
        geo, b, opts = self.geometry, self.all_rows, self.options
        rot_a, rot_b, za, zb, pa, pb = geo.points(sim, b)
        n = geo.normals(sim, b, za, zb, pa, pb)
        lam = rows.normal_impulse
        h = sim.step_context.stage_dt
        at = opts.compliance / (h * h)
        alpha = np.where(b["env"], opts.collider / (h * h), at)
        c = np.einsum("ij,ij->i", n, pa - pb) - rows.rest
        na_body, nb_body = np.einsum("kji,kj->ki", rot_a, n), np.einsum("kji,kj->ki", rot_b, n)
        fa, fb, ga, gb = geo.free_gradients(sim, b, n, za, zb, na_body, nb_body)
        friction, basis = None, None
        if np.any(rows.mu > 0.0):
            geometry = (rot_a, rot_b, za, zb, pa, pb, n)
            friction, basis = friction_rows(geo, rows, sim, b, geometry, at, opts.friction_compliance)
        joints = sim.step_context.joints
        joint_rhs = joints.rhs()
        jp, jc, _, _ = joints.jacobians()
        # the step's first solve starts with every touching row active; later ones with the last active set
        touch = (DIRECT_TOUCH if self._first_solve else -DIRECT_ENTER) * rows.rest
        self._first_solve = False
        stats: dict = {}
        joint_block = self.solver.joints(sim, (jp, jc), joint_rhs, sim.alpha_tilde)
        normals = NormalRows(fa, fb, ga, gb, c + alpha * lam, alpha, lam)
        dx, dl_joint, dl_c, dl_t = self.solver.solve(
            sim, joint_block, normals, friction, stats, touch=touch, enter_depth=DIRECT_ENTER * rows.rest
        )
        dx, dl_joint, dl_c, dl_t = damp(geo, sim, opts.max_move, self.log, dx, dl_joint, dl_c, dl_t)
        self.log.solve_log.append((stats["rounds"], stats["converged"]))
        if stats["friction_checked"] is not None:
            self.log.friction_log.append(stats["friction_checked"])
        rows.normal_impulse = np.maximum(lam + dl_c, 0.0)
        if friction is not None:
            # the last round's impulses, kept inside the box μ λ_n (rows that still violate it are clamped)
            bound = (rows.mu * rows.normal_impulse)[:, None]
            lt = np.clip(friction.lam + dl_t, -bound, bound)
            assert basis is not None  # made with the friction rows
            rows.tangent_impulse = lt[:, 0, None] * basis[0] + lt[:, 1, None] * basis[1]
            rows.sliding = friction.sliding
        move(sim, dx, dl_joint)
