"""Experimental: one semismooth Newton step on the Alart–Curnier conditions of every contact per iteration
(``Semismooth``; Alart & Curnier 1991, "A mixed formulation for frictional contact problems prone to Newton like
solution methods", CMAME 92: 353–375), joints and contacts in one sparse direct solve
(:mod:`solver.contact.contact_kkt`). It does not converge on a sliding rope and most of the capstan's runs fail
(docs/notes/contacts.md); the schur method (:mod:`solver.contact.solvers.schur`) replaces it.

With C̃ = C + α̃λ of each row (compliant, as the joints), ρ = 1/(w + α̃) a normal row's local stiffness (w: the
generalised inverse mass along the row) and ρ_t = 1/α̃_t a friction row's, the contact holds where

    λ_n = max(0, λ_n − ρ C̃_n)                   (normal: λ_n ≥ 0, C̃_n ≥ 0, λ_n C̃_n = 0)
    λ_t = proj_[−μλ_n, μλ_n](λ_t − ρ_t C̃_t)      (friction, per tangent: stick inside, slide on the bound)

Both sides are piecewise smooth, so Newton's method with an element of the generalised Jacobian converges locally
superlinearly (Qi & Sun 1993; Hintermüller, Ito & Kunisch 2002): at each iteration every row's state is read off
the projection at the current iterate and one linear solve in those states is the Newton step: active normal and
sticking rows take Eq. 22's rows, inactive ones release their impulse, sliding ones hold λ_t = s μ λ_n (t₁ along a's
axis in the tangent plane, t₂ = n × t₁). The friction states are settled within the step's solve by up to
``friction_rounds`` solves with the normal states held. What keeps it a Newton method (the iterate is pose and
impulses together, the joints solved with the contacts, the first iterate's rows, the staged friction states, the
warm friction bound, the line search of Macklin et al. 2019) is in docs/notes/contacts.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...contact_kkt import ActiveSetRules, NormalRows, solve_joints_and_contacts
from ...geometry import RowGeometry
from ...rows import StepRows
from ..base import SolveLog
from ..common import (
    DIRECT_TOUCH,
    DirectSolve,
    DirectStrategy,
    NewtonOptions,
    check_max_move,
    damp,
    friction_rows,
    joint_merit,
    row_geometry,
    take,
)
from ..warm import WarmStart


@dataclass(frozen=True, kw_only=True)
class SemismoothOptions(NewtonOptions):
    """The rows' compliances and the Newton step's (:class:`~solver.contact.solvers.common.NewtonOptions`):
    ``line_search`` halvings at most, ``friction_rounds``: solves per Newton step at most in which the friction rows
    settle their states with the normal states held (stick → slide over the Coulomb bound, slide → stick where
    friction would push along the slip, each row once); ``max_move`` [m] (optional): a step that would move some
    segment's surface farther is scaled down to that distance."""

    max_move: float | None = None

    def __post_init__(self):
        super().__post_init__()
        check_max_move(type(self).__name__, self.max_move)


class Semismooth(DirectStrategy):
    """Experimental: semismooth Newton on the Alart–Curnier conditions (:class:`SemismoothOptions`). It solves the
    joints with its rows (the Simulator's joint-only step, which does not see the contacts, pulled a loaded rope
    0.2–2 r into a cylinder)."""

    joint_point_rows = True

    def __init__(self, options: SemismoothOptions, geometry: RowGeometry, log: SolveLog):
        super().__init__(options, geometry, log)
        self.warm = WarmStart()
        self.solver = DirectSolve()
        self._states: tuple[np.ndarray, np.ndarray] | None = None

    def begin_step(self, sim, rows: StepRows) -> None:
        self.warm.begin_step(sim, rows)
        super().begin_step(sim, rows)
        self._states = None

    def project(self, sim, rows: StepRows) -> float:
        """One semismooth Newton iteration; returns the residual of the iterate it started from [m]: the natural map
        of the conditions, the largest of |min(C̃_n, λ_n/ρ)| per normal row and |λ_t − proj(λ_t − ρ_t C̃_t)|/ρ_t per
        tangent row of a pushing contact (0 exactly where they hold)."""
        if rows.n_contacts == 0 or sim.solver != "kkt" or sim.model.n_joints == 0:
            return 0.0
        first = self._first_solve
        self._first_solve = False
        st = self.state(sim, rows, first)
        friction = st["friction"]
        if friction is not None:
            friction.sliding[:] = self._friction_states(st, rows, first)
            self._states = (st["active"].copy(), friction.sliding.astype(np.int8))
            sliding = friction.sliding.copy()  # the solve's own round logic may edit it after the solve
        dx, dl_joint, dl_c, dl_t = self._newton_step(sim, st, first)
        if friction is not None:
            # the friction states the solve's rounds settled on (stick → slide over the bound, slide → stick where
            # friction would push along the slip, each row once): the next iteration starts from them
            self._states = (st["active"].copy(), friction.sliding.astype(np.int8))
            sliding = friction.sliding.copy()
        dx, dl_joint, dl_c, dl_t = damp(self.geometry, sim, self.options.max_move, self.log, dx, dl_joint, dl_c, dl_t)
        self.log.solve_log.append((1, True))
        lam, lam_t = st["lam"], None
        if friction is not None:
            assert st["basis"] is not None  # made with the friction rows
            lam_t = (friction.lam, dl_t, st["basis"])
            rows.sliding = sliding
        self._line_search(sim, rows, st, first, (dx, dl_joint, lam, dl_c, lam_t))
        # the first solve's start is no Newton iterate (its states were picked): at least one more iteration
        return max(st["residual"], 2.0 * float(getattr(sim, "tolerance", 0.0)) + 1e-12) if first else st["residual"]

    def _friction_states(self, st, rows: StepRows, first: bool) -> np.ndarray:
        """The friction rows' states for this Newton step (0 sticking, ±1 sliding)."""
        active = st["active"]
        states = np.where(active[:, None] & (np.abs(st["aug_t"]) > st["bound"]), np.sign(st["aug_t"]), 0)
        if first:
            # λ = 0 at the prediction, where every bound μ max(λ_n − ρC̃_n, 0) is 0 and the prediction's slip
            # would set each row sliding in whatever direction it drifted: the first solve takes the bound from
            # the row's λ_n at the end of the last step (StepRows.warm_normal), and a row new this step sticks
            warm = rows.warm_normal
            bound = (rows.mu * warm)[:, None]
            states = np.where(active[:, None] & (np.abs(st["aug_t"]) > bound), np.sign(st["aug_t"]), 0)
            states[warm <= 0.0] = 0
        held = self._states
        if held is not None:
            # A sliding row keeps its direction while its slip opposes its friction; one whose friction would
            # push along its slip sticks (as in the active set), never flips straight to the other bound: with
            # the slip test alone the rows of a rod on a slope jumped between ±μλ_n, with the λ test alone the
            # rows of a rope on a cylinder cycled with period 4 (docs/notes/contacts.md)
            prev = held[1]
            reverse = prev * st["slip"] > 0.0
            states = np.where((prev != 0) & active[:, None], np.where(reverse, 0, prev), states)
        if held is not None and not np.array_equal(held[0], active):
            # the normal states changed: friction keeps its states from the last iteration (staged)
            states = np.where(active[:, None], held[1], 0)
        return states

    def _newton_step(self, sim, st, first: bool):
        """The joint-and-contact solve in the rows' states: (Δz, Δλ_joints, Δλ_n, Δλ_t)."""
        friction = st["friction"]
        joints = sim.step_context.joints
        joint_rhs = joints.rhs()
        jp, jc, _, _ = joints.jacobians()
        fa, fb, ga, gb = st["gradients"]
        rules = ActiveSetRules(
            rounds=self.options.friction_rounds if friction is not None else 1,
            active=st["active"],
            exact=not first,
            fixed_normals=True,
        )
        return solve_joints_and_contacts(
            self.solver.joints(sim, (jp, jc), joint_rhs, sim.alpha_tilde),
            1.0 / sim.step_context.mass_diag,
            NormalRows(fa, fb, ga, gb, st["c_tilde"], st["alpha"], st["lam"]),
            friction,
            rules,
            {},
        )

    def _line_search(self, sim, rows: StepRows, st, first: bool, newton) -> None:
        """Halve the step, up to ``line_search`` times, until the merit max(natural map, joints' translational
        ‖C + α̃λ‖∞) at the trial iterate (geometry evaluated again) falls by the factor 1 − 10⁻⁴·step; else the last
        half is taken (Macklin et al. 2019, "Non-smooth Newton methods for deformable multi-body dynamics")."""
        start = (sim.positions.copy(), sim.orientations.copy(), sim.lam.copy())
        merit = max(st["residual"], joint_merit(sim))
        step = 1.0
        for _ in range(self.options.line_search if not first else 0):
            take(sim, rows, start, step, newton)
            trial = self.state(sim, rows, False, residual_only=True)
            if max(trial, joint_merit(sim)) <= (1.0 - 1e-4 * step) * merit:
                break
            step *= 0.5
        else:
            take(sim, rows, start, step, newton)
        if step < 1.0:
            self.log.damped_solves += 1

    def state(self, sim, rows: StepRows, first: bool, residual_only: bool = False):
        """Rows, states and natural-map residual of the current iterate for :meth:`project` (a dict),
        or with ``residual_only`` the residual [m] alone."""
        geo, b = self.geometry, self.all_rows
        rot_a, rot_b, za, zb, pa, pb, n, c, at, alpha = row_geometry(geo, rows, sim, b, self.options)
        lam = rows.normal_impulse
        na_body, nb_body = np.einsum("kji,kj->ki", rot_a, n), np.einsum("kji,kj->ki", rot_b, n)
        w = geo.inverse_mass(b["inv_m_a"], b["inv_i_a"], za, na_body) + geo.inverse_mass(
            b["inv_m_b"], b["inv_i_b"], zb, nb_body
        )
        rho = 1.0 / np.maximum(w + alpha, 1e-300)
        c_tilde = c + alpha * lam
        aug_n = lam - rho * c_tilde
        if first:
            # The step's first iterate is the prediction with λ = 0, where no row is active by the rule below: rows
            # that touch there start active and hold their gap in the first solve (closing it would pull a rope
            # lying 0.02 r off a cylinder onto it with its end blocks), so the first step does not let a loaded
            # rope run through the collider. This only picks the Newton method's starting point.
            aug_n = np.where(c < DIRECT_TOUCH * rows.rest, np.maximum(aug_n, 1e-300), aug_n)
        active = aug_n > 0.0
        residual = float(np.max(np.abs(np.minimum(c_tilde, lam / rho)), initial=0.0))
        friction, basis, aug_t, bound, slip = None, None, None, None, None
        if np.any(rows.mu > 0.0):
            geometry = (rot_a, rot_b, za, zb, pa, pb, n)
            friction, basis = friction_rows(
                geo, rows, sim, b, geometry, at, self.options.friction_compliance, along_axis=True
            )
            rho_t = 1.0 / friction.alpha
            aug_t = friction.lam - rho_t * friction.rhs
            slip = friction.rhs - friction.alpha * friction.lam  # C_t [m]
            bound = (rows.mu * np.maximum(aug_n, 0.0))[:, None]
            proj = np.clip(aug_t, -bound, bound)
            on = active & (rows.mu > 0.0)
            if on.any():
                residual = max(residual, float(np.max((np.abs(friction.lam - proj) / rho_t)[on])))
        if residual_only:
            return residual
        return dict(
            active=active,
            friction=friction,
            basis=basis,
            aug_t=aug_t,
            bound=bound,
            slip=slip,
            residual=residual,
            gradients=geo.free_gradients(sim, b, n, za, zb, na_body, nb_body),
            c_tilde=c_tilde,
            alpha=alpha,
            lam=lam,
        )
