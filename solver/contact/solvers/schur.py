"""The schur strategy (``Schur``): one Newton step of joints and contacts together per iteration, exact for the
current linearisation, by block elimination over the joints' tree factorisation.

The joints' Newton step alone is H Δz_J = (−g, −(C + α̃λ)_J) (Deul Eq. 22 with the momentum residual g; factored as
a tree by the Simulator's iteration, ``JointSystem.iterate``). The contact rows G (normals and two friction rows per
contact with μ > 0) join it: their impulses y move the pose by Δz_J + H⁻¹ Gᵀ (y − λ) (one tree solve per row), so
the rows see the dense contact Schur complement S = G H⁻¹ Gᵀ + α̃ and the linearised contact conditions are the KKT
conditions of the convex QP

    min ½ yᵀ S y + (C̃ − S λ)ᵀ y,   y_n ≥ 0,   |y_t| ≤ μ λ̄_n   (a disk per contact with friction)

(C̃ = C + α̃λ). The compliances α̃ > 0 of every row make S positive definite. Without friction the QP is solved by
the primal active-set method of :mod:`solver.contact.box_qp` (Nocedal & Wright 2006, §16.5: finite termination, no
cycling); with it by :mod:`solver.contact.disk_qp`, and Coulomb's bound λ̄_n = y_n by Newton's method on the bound,
(I − μ ∂y_n/∂b) Δb = μ y_n − b (:meth:`Schur._coulomb_bound`). At the fixed point a sliding row's friction is
−μλ_n s/|s| (s its slip): Coulomb's law with maximal dissipation.

``geometric_stiffness`` (the default) factors H with M + K̃ in its mass block, K̃ the joints' geometric stiffness
lumped to a positive diagonal (:func:`~solver.contact.solvers.schur_newton.lumped_geometric_stiffness`; Andrews,
Teichmann & Kry 2017; Tournier et al. 2015): a taut link leaving a collider no longer overshoots. What a step then
solves:

- contact with colliders only: XPBD's fixed point, the Simulator's own (Deul Eq. 22, the momentum residual g taken
  as 0, the iteration started at the prediction, full steps). These steps then converge as the joints do without
  contact: 3–4 iterations on a loaded tree, where Newton's method on the implicit step converged linearly;
- steps with rod–rod rows, impacts on a collider (:meth:`Schur._impact`: the prediction carries a row's point into
  the collider deeper than the row's rest distance and half its segment's length, or an edge row), and
  every step with ``implicit=True``: Newton's method on the implicit step itself. The iteration starts from the
  step's start pose (where the rows were found) where the prediction moves a segment by more than its radius, the
  right-hand side carries g, the rod–rod rows' own lateral curvature joins the matrix by the Woodbury identity
  (:func:`~solver.contact.solvers.schur_newton.lateral_woodbury`), and Newton steps are kept by a line search on
  the residual and the incremental potential (:meth:`Schur._backtrack`). Where the matrix is indefinite (a stack
  unstable within the step), and where half the Simulator's ``max_iterations`` pass without convergence, the step
  restarts as Deul's step (:meth:`Schur._restart_as_xpbd`, reported as ``ContactReport.xpbd``). XPBD's full steps
  cycle there (a rod tied in a knot, the rope pile).

Rows: one per joint point against a collider. Why each part is there, with the runs that showed it, is in
docs/notes/contacts.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core import quaternion as quat
from ..box_qp import solve_box_qp
from ..disk_qp import radius_sensitivity, solve_disk_qp
from ..geometry import RowGeometry
from ..rows import EDGE, StepRows
from .base import SolveLog
from .common import DirectStrategy, NewtonOptions, friction_rows, joint_merit, move, row_geometry, take
from .schur_newton import (
    incremental_potential,
    inertia_potential,
    lateral_woodbury,
    lumped_geometric_stiffness,
    momentum_residual,
    unit_responses,
)
from .warm import WarmStart


@dataclass(frozen=True, kw_only=True)
class SchurOptions(NewtonOptions):
    """The rows' compliances and the Newton step's (:class:`~solver.contact.solvers.common.NewtonOptions`):
    ``line_search`` halvings at most, ``friction_rounds``: disk QPs per Newton step at most in Newton's method on
    Coulomb's bound; ``geometric_stiffness``: K̃ in the joints' matrix, and Newton's method on the implicit step
    with rod–rod rows and in impacts on colliders (with the XPBD fallback); False: Deul's joint step (Eq. 22)
    always, whose taut rope overshoots at the links where it leaves a collider. ``implicit``: Newton's method on the
    implicit step (momentum residual, the rod–rod rows' lateral curvature, the line search) in every step, also
    with colliders alone."""

    geometric_stiffness: bool = True
    implicit: bool = False


class Schur(DirectStrategy):
    """Joints and contacts in one Newton step per iteration by block elimination (:class:`SchurOptions`). It solves
    the joints with its rows (it takes the joints' own step itself and undoes it, for the factorisation and Δz_J)."""

    joint_point_rows = True

    def __init__(self, options: SchurOptions, geometry: RowGeometry, log: SolveLog):
        super().__init__(options, geometry, log)
        self.warm = WarmStart()
        self._iterations = 0  # project calls in this step
        self._implicit = True  # this step solves the implicit step itself (:meth:`_joint_step`)
        self._last: tuple | None = None  # the line search's record of the last Newton step (:meth:`_backtrack`)
        self._last_joint_lam = np.zeros((0, 6))  # the joints' λ at the end of the last step (K̃ of a first iteration)
        self._last_tangent: dict = {}  # each row's friction impulse [N·s²] at the end of the last step, by row key
        self._last_h = 0.0  # the last step's stage h [s]
        self._tangent_scale = 0.0  # (h / the last step's h)²

    def begin_step(self, sim, rows: StepRows) -> None:
        self.warm.begin_step(sim, rows)
        super().begin_step(sim, rows)
        self._iterations = 0
        h = sim.step_context.stage_dt
        self._tangent_scale = (h / self._last_h) ** 2 if self._last_h > 0.0 else 0.0  # impulses λ = F h²

    def end_step(self, sim, rows: StepRows) -> None:
        self._last_joint_lam = sim.lam.copy()
        moving = np.flatnonzero(np.any(rows.tangent_impulse != 0.0, axis=1))
        keys = rows.keys() if moving.size else []
        self._last_tangent = {keys[i]: rows.tangent_impulse[i].copy() for i in moving}
        self._last_h = sim.step_context.stage_dt

    def project(self, sim, rows: StepRows) -> float:
        """One Newton step; returns the residual of the iterate it started from [m]: the largest natural map
        |y − proj(y − (S y + q))| per row, scaled by S_ii (metres: a normal row's |min(C̃, λ S_ii)|, a friction row's
        slip beyond the Coulomb disk), and the momentum residual |(M + K̃)⁻¹ g|, 0 exactly where the contact
        conditions hold with Coulomb's bound at the current iterate."""
        self._iterations += 1
        return self._newton(sim, rows)

    def _newton(self, sim, rows: StepRows) -> float:
        if rows.n_contacts == 0 or sim.solver != "kkt" or sim.model.n_joints == 0:
            return 0.0
        first = self._first_solve
        newton = self.options.geometric_stiffness and not rows.xpbd
        if newton and self._implicit and self._iterations > sim.max_iterations // 2:
            # half the step's iterations spent without converging: the matrix misses some curvature of the step that
            # the lateral test does not see, and XPBD's iteration takes the other half
            return self._restart_as_xpbd(sim, rows)
        start, joint_rhs, momentum, stiffness = self._joint_step(sim, rows, first, newton)
        self._first_solve = False
        lin = self._linearise(sim, rows)
        momentum_size = self._momentum_size(sim, lin, momentum, stiffness)
        joints = sim.step_context.joints
        dz_joint, dl_joint = joints.solve(None if momentum is None else -momentum, joint_rhs)
        lateral = None
        if momentum is not None:
            # the rod–rod rows' lateral curvature from the iterate's normal impulses (at a step's first iteration,
            # λ = 0, the last step's, as K̃), tested before the rows' own tree solves
            lam_w = rows.warm_normal if first else lin["lam_n"]
            geometry = (self.geometry, sim, joints, self.all_rows, lin["geometry"], lam_w, lin["rows"], dz_joint)
            lateral = lateral_woodbury(*geometry)
            if lateral == "unstable":
                return self._restart_as_xpbd(sim, rows)
        s, q, responses = self._schur_complement(sim, joints, lin, dz_joint, lateral)
        residual, lo, hi = self._natural_map(rows, lin, s)
        merit = max(residual, momentum_size, joint_merit(sim))
        potential = self._potential(sim, rows, lin, momentum, joint_rhs, start)
        if first:
            self._last = None
        elif (self._implicit or not newton) and self._backtrack(sim, rows, merit, potential):
            return merit
        y, bound_t = self._solve_qp(rows, lin, s, q, (lo, hi), first)
        dx, dl, undo = self._take_step(sim, rows, lin, (dz_joint, dl_joint), y, responses, lateral)
        phi = None if potential is None else potential(bound_t)
        after = (rows.normal_impulse.copy(), rows.tangent_impulse.copy())
        self._last = (merit, phi, bound_t, undo, after, dx, dl, 1.0)
        residual = max(residual, momentum_size)
        if first:
            # the first iterate is the prediction or the step's start, no Newton iterate: at least one more iteration
            return max(residual, 2.0 * float(getattr(sim, "tolerance", 0.0)) + 1e-12)
        return residual

    def _joint_step(self, sim, rows: StepRows, first: bool, newton: bool):
        """The joint-only Newton iteration at this iterate, taken for its factorisation of H (with M + K̃) and undone,
        so that the contact rows are linearised at this iterate. The first iteration decides how the step is solved:
        Newton's method on the implicit step (g on the right-hand side) with rod–rod rows, in an impact on a collider
        (a segment moving by more than its radius and :meth:`_impact`) and with ``implicit``; XPBD's fixed point from
        the prediction otherwise. A step solving the implicit step that moves a segment by more than its radius
        starts from the step's start pose, outside every collider, where its rows were found, not from the
        free-flight prediction (a prediction through a collider's middle finds the far side as the nearest
        surface). Returns the iterate (x, q, λ), the joints' C + α̃λ, g (None where the step is XPBD's) and K̃."""
        ctx = sim.step_context
        f = sim.free_index
        if first:
            fast = newton and bool(rows.fast[f].any())
            rod_rod = bool(np.any(rows.sb >= 0))
            self._implicit = newton and (self.options.implicit or rod_rod or (fast and self._impact(rows)))
            if fast and self._implicit:
                sim.positions[f] = ctx.start_positions[f]
                sim.orientations[f] = ctx.start_orientations[f]
        start = (sim.positions.copy(), sim.orientations.copy(), sim.lam.copy())
        joint_rhs = ctx.joints.rhs().copy()
        momentum = momentum_residual(sim, rows.predicted) if newton and self._implicit else None
        stiffness = None
        if newton:
            lam_k = self._last_joint_lam if first and self._last_joint_lam.shape == sim.lam.shape else sim.lam
            stiffness = lumped_geometric_stiffness(sim, lam_k)
        ctx.joints.iterate(stiffness)
        sim.positions[...], sim.orientations[...], sim.lam[...] = start
        return start, joint_rhs, momentum, stiffness

    def _impact(self, rows: StepRows) -> bool:
        """An impact on a collider: the prediction carries a row's axis point into the collider deeper than the
        row's rest distance and half its segment's length (the prediction may lie beyond the collider's middle, and
        the segment turns by more than the linearisation at the prediction holds), or a row is an edge row (whose
        closest points, found again at every iterate, are not the surface's inside the box)."""
        x1, q1 = rows.predicted
        if rows.sa.size == 0 or x1.shape[0] == 0:
            return False
        if np.any(rows.mode == EDGE):
            return True
        seg = rows.sa
        point = x1[seg] + rows.za[:, None] * quat.rotate(q1[seg], np.tile([0.0, 0.0, 1.0], (seg.size, 1)))
        depth = rows.rest - np.einsum("ij,ij->i", rows.normal, point - rows.point_b)
        return bool(np.any(depth > np.maximum(rows.rest, 0.5 * self.geometry.model.lengths[seg])))

    def _linearise(self, sim, rows: StepRows) -> dict:
        """The contact rows at the iterate, normals first, then the friction rows' t₁ and t₂ of the contacts with
        μ > 0 (``fric``): free indices and gradients (``rows``), C̃ (``rhs``), α̃ (``alpha``), λ (``lam``)."""
        geo, b = self.geometry, self.all_rows
        rot_a, rot_b, za, zb, pa, pb, n, c, at, alpha_n = row_geometry(geo, rows, sim, b, self.options)
        lam_n = rows.normal_impulse
        na_body, nb_body = np.einsum("kji,kj->ki", rot_a, n), np.einsum("kji,kj->ki", rot_b, n)
        fa, fb, ga, gb = geo.free_gradients(sim, b, n, za, zb, na_body, nb_body)
        fric = np.flatnonzero(rows.mu > 0.0)
        seg_a, seg_b, grad_a, grad_b = [fa], [fb], [ga], [gb]
        rhs, alpha, lam = [c + alpha_n * lam_n], [alpha_n], [lam_n]
        basis = None
        geometry = (rot_a, rot_b, za, zb, pa, pb, n)
        if fric.size:
            friction, basis = friction_rows(
                geo, rows, sim, b, geometry, at, self.options.friction_compliance, along_axis=True
            )
            for t in range(2):
                seg_a.append(fa[fric])
                seg_b.append(fb[fric])
                grad_a.append(friction.grad_a[fric, t])
                grad_b.append(friction.grad_b[fric, t])
                rhs.append(friction.rhs[fric, t])
                alpha.append(friction.alpha[fric, t])
                lam.append(friction.lam[fric, t])
        return dict(
            k=c.size,
            fric=fric,
            basis=basis,
            lam_n=lam_n,
            geometry=geometry,
            rows=(np.concatenate(seg_a), np.concatenate(seg_b), np.concatenate(grad_a), np.concatenate(grad_b)),
            rhs=np.concatenate(rhs),
            alpha=np.concatenate(alpha),
            lam=np.concatenate(lam),
        )

    def _momentum_size(self, sim, lin: dict, momentum, stiffness) -> float:
        """Adds the contact rows' −Gᵀλ_c to g and returns |(M + K̃)⁻¹ g| in metres (rotations times half the
        segment's length plus its radius); 0 without geometric stiffness."""
        if momentum is None:
            return 0.0
        sa_r, sb_r, ga_r, gb_r = lin["rows"]
        for segs, grads in ((sa_r, ga_r), (sb_r, gb_r)):
            ok = segs >= 0
            np.add.at(momentum, segs[ok], -grads[ok] * lin["lam"][ok, None])
        geo = self.geometry
        reach = 0.5 * geo.model.lengths[sim.free_index] + geo.radius[sim.free_index]
        mk = sim.step_context.mass_diag + stiffness
        return float(
            max(
                np.max(np.abs(momentum[:, :3] / mk[:, :3]), initial=0.0),
                np.max(np.abs(momentum[:, 3:] / mk[:, 3:]) * reach[:, None], initial=0.0),
            )
        )

    @staticmethod
    def _schur_complement(sim, joints, lin: dict, dz_joint, lateral):
        """S = G H⁻¹ Gᵀ + α̃ (with the lateral curvature's correction), q = C̃ + G Δz_J − S λ, and the rows'
        responses H⁻¹ Gᵀ e_r (pose, joints)."""
        sa_r, sb_r, ga_r, gb_r = lin["rows"]
        nr = lin["rhs"].size
        # H⁻¹ Gᵀ e_r: the pose's and the joints' response to a unit impulse on each row
        resp_x, resp_l = unit_responses(sim, joints, sa_r, sb_r, ga_r, gb_r)
        w = np.zeros((nr, nr))
        for segs, grads in ((sa_r, ga_r), (sb_r, gb_r)):
            ok = segs >= 0
            w[ok] += np.einsum("jik,ik->ij", resp_x[:, segs[ok]], grads[ok])
        # the rows' linearised values after the joint-only step: C̃ + G Δz_J
        moved = lin["rhs"].copy()
        for segs, grads in ((sa_r, ga_r), (sb_r, gb_r)):
            ok = segs >= 0
            moved[ok] += np.einsum("ij,ij->i", grads[ok], dz_joint[segs[ok]])
        if lateral is not None:
            w -= lateral["s_gw"] @ lateral["coupling"]
            moved -= lateral["s_gw"] @ lateral["joint"]
        s = 0.5 * (w + w.T) + np.diag(lin["alpha"])
        q = moved - s @ lin["lam"]
        return s, q, (resp_x, resp_l)

    @staticmethod
    def _natural_map(rows: StepRows, lin: dict, s):
        """The residual [m] of the iterate (the natural map of every row, a friction row's of its disk) and the
        rows' box (lo, hi) of the QP without friction."""
        k, fric, lam_n, lam_r, rhs_r = lin["k"], lin["fric"], lin["lam_n"], lin["lam"], lin["rhs"]
        nr = rhs_r.size
        diag = np.diag(s)
        mu = rows.mu[fric]
        lo = np.concatenate((np.zeros(k), np.full(2 * fric.size, -np.inf)))
        hi = np.full(nr, np.inf)
        nf = fric.size
        bound = np.tile(mu * np.maximum(lam_n[fric], 0.0), 2)  # the residual's friction box (its disk below)
        lo[k:], hi[k:] = -bound, bound
        natural = np.abs(lam_r - np.clip(lam_r - rhs_r / diag, lo, hi)) * diag
        if nf:
            # friction rows: the natural map of the disk |λ_t| ≤ μλ_n (one scale per row), not of the box
            yt = np.stack((lam_r[k : k + nf], lam_r[k + nf :]), axis=1)
            scale = np.minimum(diag[k : k + nf], diag[k + nf :])
            trial = yt - np.stack((rhs_r[k : k + nf], rhs_r[k + nf :]), axis=1) / scale[:, None]
            length = np.linalg.norm(trial, axis=1)
            radius = mu * np.maximum(lam_n[fric], 0.0)
            proj = trial * np.minimum(1.0, radius / np.maximum(length, 1e-300))[:, None]
            natural = np.concatenate((natural[:k], np.linalg.norm(yt - proj, axis=1) * scale))
        return float(np.max(natural, initial=0.0)), lo, hi

    @staticmethod
    def _potential(sim, rows: StepRows, lin: dict, momentum, joint_rhs, start):
        """Φ at this iterate as a function of the friction bound (:func:`incremental_potential`), or None where Φ is
        no merit (no momentum residual, or a row of zero compliance)."""
        alpha_r = lin["alpha"]
        if momentum is None or not bool(np.all(sim.alpha_tilde > 0.0)) or not bool(np.all(alpha_r > 0.0)):
            return None
        joint_c = joint_rhs - sim.alpha_tilde * start[2]
        inertia = inertia_potential(sim, rows.predicted)
        c_rows = lin["rhs"] - alpha_r * lin["lam"]
        k = lin["k"]

        def potential(bound_t):
            return incremental_potential(inertia, joint_c, sim.alpha_tilde, c_rows, alpha_r, k, bound_t)

        return potential

    def _solve_qp(self, rows: StepRows, lin: dict, s, q, box, first: bool):
        """The contact impulses y of the QP (with friction: Tresca's disk per contact and Coulomb's bound by Newton,
        :meth:`_coulomb_bound`; without: the box QP), logged; returns y and the friction bound the QP used."""
        k, fric, lam_r = lin["k"], lin["fric"], lin["lam"]
        nf = fric.size
        if nf:
            bound_n = rows.warm_normal if first else lin["lam_n"]
            start = self._warm_qp_start(rows, lin) if first else lam_r
            y, solves, settled, used = self._coulomb_bound(s, q, k, fric, rows.mu[fric], bound_n, start)
        else:
            box_res = solve_box_qp(s, q, box[0], box[1], x0=lam_r)
            y, solves, settled = box_res.x, box_res.iterations, box_res.converged
        self.log.solve_log.append((solves, settled))
        return y, (used if nf else np.zeros(0))

    def _warm_qp_start(self, rows: StepRows, lin: dict):
        """The start of a step's first QP (its solution does not depend on it; the iterate's own λ stays 0): the rows'
        impulses at the end of the last step at the same material point (``StepRows.keys``; the normals'
        ``warm_normal``, the friction impulses in this step's basis), scaled to this step's stage h. From λ = 0 the
        capstan's first QPs took ~35 face steps each, one per normal released and per friction row put on its disk."""
        k, fric, basis = lin["k"], lin["fric"], lin["basis"]
        start = lin["lam"].copy()
        start[:k] = rows.warm_normal
        if basis is not None and self._last_tangent:
            keys, none = rows.keys(), np.zeros(3)
            warm = self._tangent_scale * np.array([self._last_tangent.get(keys[i], none) for i in fric])
            nf = fric.size
            start[k : k + nf] = np.einsum("ij,ij->i", warm, basis[0][fric])
            start[k + nf :] = np.einsum("ij,ij->i", warm, basis[1][fric])
        return start

    def _coulomb_bound(self, s, q, k, fric, mu, bound_n, y):
        """The QP with Tresca's disk |y_t| ≤ b per contact (:func:`~solver.contact.disk_qp.solve_disk_qp`) and
        Coulomb's bound b = μ y_n(b) by Newton's method on the bound: (I − μ ∂y_n/∂b) Δb = μ y_n − b, with ∂y_n/∂b
        from the QP's active set (``radius_sensitivity``), halved while |μ y_n − b| does not fall (after three
        halvings the last trial is kept: the Newton iteration's own line search judges the step), up to
        ``friction_rounds`` times, until |μ y_n − b| ≤ 1e-6 of the largest b. The method of successive
        approximations (b ← μ y_n) diverged on two rods crossing with μ 0.3 (docs/notes/contacts.md).
        Returns y, the solves, whether the last QP converged and the bound per friction row."""
        nf = fric.size
        rows_t1, rows_t2 = k + np.arange(nf), k + nf + np.arange(nf)
        radius = mu * np.maximum(bound_n[fric], 0.0)
        res = solve_disk_qp(s, q, k, rows_t1, rows_t2, radius, x0=y)
        y, solves, settled = res.x, res.newton + res.box_solves, res.converged
        for _ in range(self.options.friction_rounds):
            gap = mu * np.maximum(y[:k][fric], 0.0) - radius
            size = float(np.max(np.abs(gap), initial=0.0))
            if size <= 1e-6 * float(np.max(radius, initial=0.0)) + 1e-300:
                break
            dyn_db = radius_sensitivity(s, q, rows_t1, rows_t2, radius, res)[fric]
            try:
                delta = np.linalg.solve(np.eye(nf) - mu[:, None] * dyn_db, gap)
            except np.linalg.LinAlgError:
                delta = gap
            for _half in range(4):
                trial_r = np.maximum(radius + delta, 0.0)
                trial = solve_disk_qp(s, q, k, rows_t1, rows_t2, trial_r, x0=y)
                solves += trial.newton + trial.box_solves
                if float(np.max(np.abs(mu * np.maximum(trial.x[:k][fric], 0.0) - trial_r), initial=0.0)) < size:
                    break
                delta = 0.5 * delta
            radius, res, y = trial_r, trial, trial.x
            settled = res.converged
        return y, solves, settled, np.concatenate((res.hi[rows_t1], res.hi[rows_t2]))

    def _take_step(self, sim, rows: StepRows, lin: dict, joint_step, y, responses, lateral):
        """Move the iterate by the Newton step of the impulses y: Δz = Δz_J + H⁻¹Gᵀ(y − λ) (plus the curvature rows'
        part), the impulses to y, the friction rows' states from the cone. Returns Δz, Δλ_joints and the iterate
        before the step (pose, λ, impulses)."""
        (dz_joint, dl_joint), (resp_x, resp_l) = joint_step, responses
        k, fric, basis = lin["k"], lin["fric"], lin["basis"]
        d = y - lin["lam"]
        dx = dz_joint + np.tensordot(d, resp_x, axes=1)
        dl = dl_joint + np.tensordot(d, resp_l, axes=1)
        if lateral is not None:
            # the curvature rows' multipliers ν = −A⁻¹ (W Δz_J + W H⁻¹ Gᵀ (y − λ)) move the pose by H⁻¹ Wᵀ ν
            nu = -(lateral["joint"] + lateral["coupling"] @ d)
            dx += np.tensordot(nu, lateral["resp_x"], axes=1)
            dl += np.tensordot(nu, lateral["resp_l"], axes=1)
        undo = (
            sim.positions.copy(),
            sim.orientations.copy(),
            sim.lam.copy(),
            rows.normal_impulse.copy(),
            rows.tangent_impulse.copy(),
        )
        move(sim, dx, dl)
        rows.normal_impulse = y[:k].copy()
        if basis is not None:
            lt = np.zeros((k, 2))
            lt[fric, 0], lt[fric, 1] = y[k : k + fric.size], y[k + fric.size :]
            rows.tangent_impulse = lt[:, 0, None] * basis[0] + lt[:, 1, None] * basis[1]
            on_box = np.zeros((k, 2), np.int8)
            bound = (rows.mu[fric] * y[:k][fric])[:, None]
            held = np.linalg.norm(lt[fric], axis=1)[:, None] >= bound * (1.0 - 1e-6)  # on the cone: sliding
            on_box[fric] = np.where(held & (bound > 0.0), np.sign(lt[fric]), 0)
            rows.sliding = on_box
        return dx, dl, undo

    def _restart_as_xpbd(self, sim, rows: StepRows) -> float:
        """Solve the rest of this step with XPBD's iteration (Deul Eq. 22: no momentum residual, no geometric
        stiffness), from the prediction with every impulse 0, where the Newton matrix is indefinite
        (:func:`~solver.contact.solvers.schur_newton.lateral_woodbury`) or its iterations took half the step's budget
        without converging. Its fixed point meets the joints and the contact conditions exactly and the momentum
        balance to first order in the step (a rod resting on a rod at Δt = 40 ms rolls off as the explicit
        recurrence, tests/solver/contact/test_contact_curvature.py). Returns that method's first residual; the step is
        reported (``StepRows.xpbd``)."""
        rows.xpbd = True
        f = sim.free_index
        sim.positions[f] = rows.predicted[0][f]
        sim.orientations[f] = rows.predicted[1][f]
        sim.lam[...] = 0.0
        rows.normal_impulse = np.zeros_like(rows.normal_impulse)
        rows.tangent_impulse = np.zeros_like(rows.tangent_impulse)
        rows.sliding = np.zeros_like(rows.sliding)
        self._first_solve = True
        self._last = None
        return self._newton(sim, rows)

    def _backtrack(self, sim, rows: StepRows, merit: float, potential) -> bool:
        """The line search, one trial per Newton iteration: an iterate is kept when it lowers either of two measures
        against the iterate the last step s started from: the largest residual ``merit`` (metres) by 10⁻⁴ s of itself,
        or the incremental potential Φ (:func:`incremental_potential`, with the friction bound of the QP that made the
        step): a filter of two entries (Fletcher & Leyffer 2002). Otherwise the iterate goes back and takes half that
        step (at most ``line_search`` halvings; then the last half stands). Returns whether it went back (the
        caller's iteration is then that trial). Why both measures: docs/notes/contacts.md."""
        last = self._last
        if last is None:
            return False
        merit0, phi0, bound_t, undo, after, dx, dl, step = last
        tolerance = float(getattr(sim, "tolerance", 0.0))
        if step <= 0.5**self.options.line_search or merit <= tolerance:
            return False
        if merit <= (1.0 - 1e-4 * step) * merit0:
            return False
        # rounding: Φ is a sum of terms up to |Φ| whose differences are compared
        if potential is not None and phi0 is not None and potential(bound_t) <= phi0 + 1e-12 * abs(phi0):
            return False
        step *= 0.5
        x0, q0, lam0, normal0, tangent0 = undo
        new_normal, new_tangent = after
        take(sim, rows, (x0, q0, lam0), step, (dx, dl, normal0, new_normal - normal0, None))
        rows.tangent_impulse = tangent0 + step * (new_tangent - tangent0)
        self._last = (merit0, phi0, bound_t, undo, after, dx, dl, step)
        return True
