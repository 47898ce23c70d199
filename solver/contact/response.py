"""Contact responses: one Gauss–Seidel pass over a colour of contacts (Deul Eqs. 20, 21 with Coulomb
friction), all normal rows through the tree's KKT factorisation, or joints, contact normals and friction
rows in one sparse direct solve (:mod:`solver.contact.contact_kkt`).
"""

from __future__ import annotations

import numpy as np

from ..core import quaternion as quat
from .box_qp import solve_box_qp
from .contact_kkt import FrictionRows, JointRows, solve_joints_and_contacts
from .disk_qp import radius_sensitivity, solve_disk_qp
from .rows import ContactRows, _rows_times

# The largest eigenvalue σ of K^½ W H⁻¹ Wᵀ K^½ (``ContactResponse._lateral_woodbury``) from which the schur method's
# Newton matrix with the contact rows' lateral curvature counts as indefinite (σ ≥ 1) or within 10 % of it
UNSTABLE_FROM = 0.9


def incremental_potential(inertia, joint_c, joint_alpha, c_rows, alpha_rows, k, bound_t) -> float:
    """Φ(z) [kg·m²], the implicit step's incremental potential whose stationary points are the step's solutions with
    compliant rows: ``inertia`` ½|z − ẑ|²_M, each joint row's ½ C²/α̃ (``joint_c``, ``joint_alpha`` (m, 6)), each
    normal row's penalty ½ min(C, 0)²/α̃ (the first ``k`` of ``c_rows``/``alpha_rows``: its impulse max(0, −C/α̃)),
    and each friction row's Huber function of its slip C_t with the bound b of its box (``bound_t``, the rows after
    the normals): C_t²/(2α̃) up to |C_t| = α̃b, then b|C_t| − α̃b²/2 (the compliant row's impulse is C_t/α̃ clamped to
    ±b, Tresca's law with b = μλ̄_n)."""
    joints = 0.5 * float(np.sum(joint_c * joint_c / joint_alpha))
    c_n, a_n = c_rows[:k], alpha_rows[:k]
    pen = np.minimum(c_n, 0.0)
    normals = 0.5 * float(np.sum(pen * pen / a_n))
    c_t, a_t = np.abs(c_rows[k:]), alpha_rows[k:]
    b = np.asarray(bound_t, float)
    quadratic = c_t <= a_t * b
    friction = float(np.sum(np.where(quadratic, 0.5 * c_t * c_t / a_t, b * c_t - 0.5 * a_t * b * b)))
    return inertia + joints + normals + friction


class ContactResponse(ContactRows):
    """The solves of :class:`~solver.contact.contacts.Contacts` (``response`` ``"local"``, ``"tree"`` or
    ``"direct"``); they move ``sim.positions``/``sim.orientations`` and accumulate the contact impulses."""

    def _project_batch(self, sim, b) -> float:
        idx = b["idx"]
        rot_a, rot_b, za, zb, pa, pb = self._points(sim, b)
        n = self._normals(sim, b, za, zb, pa, pb)
        at = self._alpha_tilde
        lam = self.normal_impulse[idx]
        c = np.einsum("ij,ij->i", n, pa - pb) - self.rest[idx]
        na_body, nb_body = np.einsum("kji,kj->ki", rot_a, n), np.einsum("kji,kj->ki", rot_b, n)
        w_n = self._inverse_mass(b["inv_m_a"], b["inv_i_a"], za, na_body) + self._inverse_mass(
            b["inv_m_b"], b["inv_i_b"], zb, nb_body
        )
        # Eq. 21 for one scalar row, then the unilateral projection λ ≥ 0.
        dlam = -(c + at * lam) / np.maximum(w_n + at, 1e-300)
        lam_new = np.maximum(lam + dlam, 0.0)
        dlam = lam_new - lam
        res = np.where(lam_new > 0.0, np.abs(c + at * lam), np.maximum(-c, 0.0))
        # Coulomb friction: undo the relative tangential motion of the two material points since the
        # start of the step, with the accumulated tangential impulse kept inside the cone μ λ_n.
        start_a = b["x0_a"] + za[:, None] * b["r0_a"][:, :, 2]
        start_b = np.where(b["env"][:, None], self._anchors(b, pb), b["x0_b"] + zb[:, None] * b["r0_b"][:, :, 2])
        rel = (pa - start_a) - (pb - start_b)
        tang = rel - n * np.einsum("ij,ij->i", rel, n)[:, None]
        t_dir = tang / np.maximum(np.sqrt(np.einsum("ij,ij->i", tang, tang)), 1e-300)[:, None]
        w_t = self._inverse_mass(
            b["inv_m_a"], b["inv_i_a"], za, np.einsum("kji,kj->ki", rot_a, t_dir)
        ) + self._inverse_mass(b["inv_m_b"], b["inv_i_b"], zb, np.einsum("kji,kj->ki", rot_b, t_dir))
        lt_old = self.tangent_impulse[idx]
        lt = lt_old - tang / np.maximum(w_t, 1e-300)[:, None]
        lt_len = np.sqrt(np.einsum("ij,ij->i", lt, lt))
        lt = lt * np.minimum(1.0, self.mu[idx] * lam_new / np.maximum(lt_len, 1e-300))[:, None]
        # Jacobi with averaging where a colour holds several contacts of one segment (share < 1): each
        # moves it by its share of the correction, and its λ grows by the same share.
        share = b["share"]
        self.normal_impulse[idx] = lam + share * dlam
        self.tangent_impulse[idx] = lt_old + share[:, None] * (lt - lt_old)
        impulse = share[:, None] * (n * dlam[:, None] + (lt - lt_old))
        self._apply(sim, b["sa"], rot_a, b["inv_m_a"], b["inv_i_a"], za, impulse, b["merge_a"])
        if not b["all_env"]:
            body = ~b["env"]
            self._apply(
                sim,
                b["sb"][body],
                rot_b[body],
                b["inv_m_b"][body],
                b["inv_i_b"][body],
                zb[body],
                -impulse[body],
                b["merge_b"],
            )
        return float(res.max()) if res.size else 0.0

    def _project_through_tree(self, sim) -> None:
        """All normal contact rows at once, applied through the tree's KKT factorisation of this
        iteration (Eq. 22 with the contact forces as right-hand side, as ``loop_closing`` does for
        loops), so the joints stay satisfied to first order instead of pulling the contacts back in the
        next direct solve. Each contact's Δλ from its local inverse mass is rescaled by the ratio of
        the gap change it asked for to the one the tree predicts (a Jacobi step on J H⁻¹ Jᵀ with a
        secant diagonal), then applied by a second solve."""
        kkt = getattr(sim, "_kkt", None)
        if self.n_contacts == 0 or sim.solver != "kkt" or not getattr(kkt, "factored", False):
            return
        b = self._all
        rot_a, rot_b, za, zb, pa, pb = self._points(sim, b)
        n = self._normals(sim, b, za, zb, pa, pb)
        at = self._alpha_tilde
        lam = self.normal_impulse
        c = np.einsum("ij,ij->i", n, pa - pb) - self.rest
        na_body, nb_body = np.einsum("kji,kj->ki", rot_a, n), np.einsum("kji,kj->ki", rot_b, n)
        w = self._inverse_mass(b["inv_m_a"], b["inv_i_a"], za, na_body) + self._inverse_mass(
            b["inv_m_b"], b["inv_i_b"], zb, nb_body
        )
        dlam = np.maximum(lam - (c + at * lam) / np.maximum(w + at, 1e-300), 0.0) - lam
        fa, fb, ga, gb = self._free_gradients(sim, b, n, za, zb, na_body, nb_body)
        zero_joint = np.zeros_like(sim.lam)

        def respond(d):
            f = np.zeros((sim.free_index.size, 6))
            for g, fs in ((ga, fa), (gb, fb)):
                ok = fs >= 0
                np.add.at(f, fs[ok], g[ok] * d[ok, None])
            x, l_joint = kkt.solve(f, zero_joint)
            return x, l_joint, _rows_times(fa, fb, ga, gb, x)

        _, _, dc = respond(dlam)
        wanted = w * dlam  # the gap change the local step asked for
        scale = np.where(
            np.abs(dc) > 1e-12 * np.maximum(np.abs(wanted), 1e-300),
            np.clip(wanted / np.where(dc == 0.0, 1.0, dc), 0.0, 1e3),
            1.0,
        )
        dlam = np.maximum(dlam * scale, -lam)
        x, l_joint, _ = respond(dlam)
        self.normal_impulse = lam + dlam
        sim.lam += l_joint
        f = sim.free_index
        sim.positions[f] += x[:, :3]
        sim.orientations[f] = quat.integrate_body(sim.orientations[f], x[:, 3:])

    def _joint_rows_of(self, sim) -> JointRows:
        """The sparse pattern of the Simulator's joint rows, built anew when its model changed
        (remove_joints: a fracture, a hand letting go). Reads the Simulator's private joint sides, masses
        and evaluator."""
        if self._joint_rows is None or self._joint_rows_model is not sim.model:
            self._joint_rows = JointRows(sim.free_index.size, sim._seg_a, sim._seg_b)
            self._joint_rows_model = sim.model
        return self._joint_rows

    def _solve_rows(self, sim, jac, joint_rhs, joint_alpha, grads, contact_rhs, contact_alpha, lam, **options):
        """:func:`solve_joints_and_contacts` for the tree's joints (``jac`` = their Jacobians (jp, jc)) and contact
        rows (``grads`` = (fa, fb, ga, gb)), with the free segments' M⁻¹ and this set's direct-solve rounds."""
        return solve_joints_and_contacts(
            self._joint_rows_of(sim),
            *jac,
            joint_rhs,
            joint_alpha,
            1.0 / sim._mass_diag_free,
            *grads,
            contact_rhs,
            contact_alpha,
            lam,
            rounds=self.direct_rounds,
            grow_rounds=self.direct_grow_rounds,
            **options,
        )

    def _project_direct(self, sim) -> None:
        """Joints, all contact normal rows and their friction rows in one sparse direct solve
        (:mod:`solver.contact.contact_kkt`): a contact held by a stack of others is met in one solve, not one coil
        per sweep, and friction moves the whole rod, not one segment (no Gauss–Seidel pass that the next
        joint solve undoes)."""
        if self.n_contacts == 0 or sim.solver != "kkt" or sim.model.n_joints == 0:
            return
        b = self._all
        rot_a, rot_b, za, zb, pa, pb = self._points(sim, b)
        n = self._normals(sim, b, za, zb, pa, pb)
        lam = self.normal_impulse
        at = max(self._alpha_tilde, self.direct_compliance / (sim.step_context.stage_dt * sim.step_context.stage_dt))
        alpha = np.where(
            b["env"],
            max(self._alpha_tilde, self.collider_compliance / (sim.step_context.stage_dt * sim.step_context.stage_dt)),
            at,
        )
        c = np.einsum("ij,ij->i", n, pa - pb) - self.rest
        na_body, nb_body = np.einsum("kji,kj->ki", rot_a, n), np.einsum("kji,kj->ki", rot_b, n)
        fa, fb, ga, gb = self._free_gradients(sim, b, n, za, zb, na_body, nb_body)
        friction, basis = None, None
        if np.any(self.mu > 0.0):
            friction, basis = self._friction_rows(sim, b, rot_a, rot_b, za, zb, pa, pb, n, at)
        joint_rhs = sim._joint_values() + sim.alpha_tilde * sim.lam
        jp, jc, _, _ = sim._joint_eval.jacobians()
        # the step's first solve starts with every touching row active; later ones with the last active set
        touch = (self.direct_touch if self._first_solve else -self.direct_enter) * self.rest
        self._first_solve = False
        stats: dict = {}
        dx, dl_joint, dl_c, dl_t = self._solve_rows(
            sim,
            (jp, jc),
            joint_rhs,
            sim.alpha_tilde,
            (fa, fb, ga, gb),
            c + alpha * lam,
            alpha,
            lam,
            touch=touch,
            friction=friction,
            enter_depth=self.direct_enter * self.rest,
            stats=stats,
        )
        if self.direct_max_move is not None:
            # Damped Newton: a solve whose linearisation moves some segment's surface farther than
            # ``direct_max_move`` is scaled down to that (positions, λ and the contact impulses alike)
            reach = np.linalg.norm(dx[:, :3], axis=1) + (
                0.5 * self.model.lengths[sim.free_index] + self.radius[sim.free_index]
            ) * np.linalg.norm(dx[:, 3:], axis=1)
            far = float(reach.max(initial=0.0))
            if far > self.direct_max_move:
                scale = self.direct_max_move / far
                dx, dl_joint, dl_c, dl_t = dx * scale, dl_joint * scale, dl_c * scale, dl_t * scale
                self.damped_solves += 1
        self.solve_log.append((stats["rounds"], stats["converged"]))
        if stats["friction_checked"] is not None:
            self.friction_log.append(stats["friction_checked"])
        self.normal_impulse = np.maximum(lam + dl_c, 0.0)
        if friction is not None:
            # the last round's impulses, kept inside the box μ λ_n (rows that still violate it are clamped)
            bound = (self.mu * self.normal_impulse)[:, None]
            lt = np.clip(friction.lam + dl_t, -bound, bound)
            assert basis is not None  # made with the friction rows
            self.tangent_impulse = lt[:, 0, None] * basis[0] + lt[:, 1, None] * basis[1]
            self._sliding = friction.sliding
        sim.lam += dl_joint
        f = sim.free_index
        sim.positions[f] += dx[:, :3]
        sim.orientations[f] = quat.integrate_body(sim.orientations[f], dx[:, 3:])

    def _collider_geometry(self, sim, b, pa, n):
        """Gap C [m] and normal of every plain collider row (not an edge) at its axis point's current place: the
        collider's signed distance and its gradient, evaluated again at every Newton iteration, so a rod
        sliding round a curved collider meets the surface, not the tangent plane frozen at the step's start.
        Returns (rows, C, n) with n updated; rows: the rows re-evaluated."""
        which = self._collider_of[b["idx"]]
        rows = np.flatnonzero(which >= 0)
        if rows.size == 0:
            return rows, np.zeros(0), n
        n = n.copy()
        c = np.zeros(rows.size)
        for i in np.unique(which[rows]):
            sel = which[rows] == i
            phi, nrm = self.colliders[i].distance(pa[rows[sel]], self._t1)
            n[rows[sel]] = nrm
            c[sel] = phi - self.rest[b["idx"][rows[sel]]]
        return rows, c, n

    def _project_semismooth(self, sim) -> float:
        """One semismooth Newton iteration on the Alart–Curnier conditions of every contact (Alart & Curnier
        1991, "A mixed formulation for frictional contact problems prone to Newton like solution methods",
        CMAME 92: 353–375), joints and contacts in one sparse direct solve (:mod:`solver.contact.contact_kkt`).

        With C̃ = C + α̃λ of each row (compliant, as the joints), ρ = 1/(w + α̃) a normal row's local stiffness (w:
        the generalised inverse mass along the row) and ρ_t = 1/α̃_t a friction row's, the contact holds where

            λ_n = max(0, λ_n − ρ C̃_n)                   (normal: λ_n ≥ 0, C̃_n ≥ 0, λ_n C̃_n = 0)
            λ_t = proj_[−μλ_n, μλ_n](λ_t − ρ_t C̃_t)      (friction, per tangent: stick inside, slide on the bound)

        (any ρ > 0 gives the same solutions; with ρ_t = 1/α̃_t the projection reads λ_t = proj(−C_t/α̃_t), the
        compliant Coulomb law itself, so a friction row's state follows its slip on the scale of its compliance.
        With the normal rows' ρ, whose w is a rope segment's own (6000 /kg) where the rope's tangential motion
        moves the whole rope and its end blocks, the friction rows' states followed λ_t alone and cycled.)

        Both sides are piecewise smooth, so Newton's method with an element of the generalised Jacobian
        converges locally superlinearly (Qi & Sun 1993; for contact, Alart & Curnier 1991 and the
        primal–dual active-set reading of Hintermüller, Ito & Kunisch 2002): at each iteration every row's
        state is read off the projection at the current iterate (normal active where λ_n − ρ C̃_n > 0;
        friction sticking where |λ_t − ρ_t C̃_t| ≤ μ max(λ_n − ρC̃_n, 0), else sliding towards the sign of
        λ_t − ρ_t C̃_t) and one linear solve in those states is the Newton step: active normal and sticking rows
        take Eq. 22's rows, inactive ones release their impulse, sliding ones hold λ_t = s μ λ_n (t₁ along a's
        axis in the tangent plane, t₂ = n × t₁: a basis that does not turn with a near-zero slip). The normal
        states are the Newton method's; the friction states are settled within the step's solve by up to
        ``Contacts(friction_rounds=)`` solves with the normal states held (stick → slide where λ_t leaves the
        bound, slide → stick where friction would push along the slip, each row once: the rope's friction rows are
        one statically indeterminate set, where one state change per Newton step cycled). The Simulator's
        iterations are the Newton iterations, and the geometry (points, normals, plain collider gaps by their signed
        distance) is evaluated again at each. The iterations stop when the residual below (and the joints') meets
        the Simulator's tolerance.

        What keeps it a Newton method (each measured on a frictionless rope over a cylinder, tests/
        test_contact_closed_forms.py, where without it the iterations diverged within 3–20 steps):
        - The iterate is the pose and the impulses together: λ + Δλ is kept as it comes, also negative (a row that
          pulls is released by the next iteration's Δλ = −λ, which moves the pose back); clamped to λ ≥ 0 while
          the pose kept the pull, hidden adhesion built up, 400 times the rope's load on its rows.
        - The Newton step solves the joints with the contacts, and the Simulator skips its joint-only solve while
          this set has rows (``Contacts.solves_joints``): that solve does not see the contacts, and with a rope's
          tension it pulled the rope 0.2–2 r into the cylinder between two Newton steps.
        - The first iterate (the prediction, λ = 0) has no active row by the rule above: rows that touch there
          (C < ``direct_touch`` radii) start active and hold their gap for that solve; the residual it returns
          asks for at least one more iteration.
        - Rows (``Contacts.begin_step``): one per joint point against a collider (the two segment ends meeting at
          a joint are one material point), none at a segment's interior closest point where both its ends
          have rows (``_between_joint_rows``), and none within the segment's radius of a joint point with a row
          (``_near_joint_rows``: where a straight rope end leaves a cylinder, two nearly coincident rows made the
          solve ill-conditioned and the capstan's rope diverged within a step).
        - Friction rows change state only in iterations whose normal states held (staged, as in the active set).
          Between iterations a sliding row keeps its direction while its slip opposes its friction and sticks
          where friction would push along the slip; it never flips straight to the other bound (with the slip
          test alone a rod on a slope jumped between ±μλ_n).
        - The step's first solve takes each friction row's bound from its λ_n at the end of the last step
          (``Contacts._warm_normal``; the iterate's own λ is 0 at the prediction, where every bound is 0); a row new
          this step sticks in it.
        - Line search (Macklin et al. 2019, "Non-smooth Newton methods for deformable multi-body dynamics", ACM TOG
          38(5)): the step is halved, up to ``Contacts(line_search=)`` times, until the merit max(natural map,
          joints' translational ‖C + α̃λ‖∞) at the trial iterate (geometry evaluated again) falls by the factor
          1 − 10⁻⁴·step; else the last half is taken. Any accepted step lowers the merit; near a solution whose
          generalised Jacobian is nonsingular the full step lowers it superlinearly (Qi & Sun 1993), so the
          search costs nothing there and the local rate stays. It gives no global guarantee for the min-map merit.
        ``direct_max_move`` scales a step down as in the active-set solve.

        Returns the residual of the iterate the solve started from [m], the natural map of the conditions
        above: the largest of |min(C̃_n, λ_n/ρ)| per normal row and |λ_t − proj(λ_t − ρ_t C̃_t)|/ρ_t per tangent
        row of a pushing contact (0 exactly where they hold)."""
        if self.n_contacts == 0 or sim.solver != "kkt" or sim.model.n_joints == 0:
            return 0.0
        first = self._first_solve
        self._first_solve = False
        st = self._semismooth_state(sim, first)
        active, friction, basis = st["active"], st["friction"], st["basis"]
        sliding = None
        if friction is not None:
            states = np.where(active[:, None] & (np.abs(st["aug_t"]) > st["bound"]), np.sign(st["aug_t"]), 0)
            if first:
                # λ = 0 at the prediction, where every bound μ max(λ_n − ρC̃_n, 0) is 0 and the prediction's slip
                # would set each row sliding in whatever direction it drifted: the first solve takes the bound from
                # the row's λ_n at the end of the last step (Contacts._warm_normal), and a row new this step sticks
                warm = self._warm_normal
                bound = (self.mu * warm)[:, None]
                states = np.where(active[:, None] & (np.abs(st["aug_t"]) > bound), np.sign(st["aug_t"]), 0)
                states[warm <= 0.0] = 0
            held = self._ss_states
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
            friction.sliding[:] = states
            self._ss_states = (active.copy(), states.astype(np.int8))
            sliding = friction.sliding.copy()  # the solve's own round logic may edit it after the solve
        joint_rhs = sim._joint_values() + sim.alpha_tilde * sim.lam
        jp, jc, _, _ = sim._joint_eval.jacobians()
        stats: dict = {}
        fa, fb, ga, gb = st["gradients"]
        dx, dl_joint, dl_c, dl_t = solve_joints_and_contacts(
            self._joint_rows_of(sim),
            jp,
            jc,
            joint_rhs,
            sim.alpha_tilde,
            1.0 / sim._mass_diag_free,
            fa,
            fb,
            ga,
            gb,
            st["c_tilde"],
            st["alpha"],
            st["lam"],
            rounds=self.friction_rounds if friction is not None else 1,
            friction=friction,
            stats=stats,
            active=active,
            exact=not first,
            fixed_normals=True,
        )
        if friction is not None:
            # the friction states the solve's rounds settled on (stick → slide over the bound, slide → stick where
            # friction would push along the slip, each row once): the next iteration starts from them
            self._ss_states = (active.copy(), friction.sliding.astype(np.int8))
            sliding = friction.sliding.copy()
        limit = self.direct_max_move
        if limit is not None:
            reach = np.linalg.norm(dx[:, :3], axis=1) + (
                0.5 * self.model.lengths[sim.free_index] + self.radius[sim.free_index]
            ) * np.linalg.norm(dx[:, 3:], axis=1)
            far = float(reach.max(initial=0.0))
            if far > limit:
                scale = limit / far
                dx, dl_joint, dl_c, dl_t = dx * scale, dl_joint * scale, dl_c * scale, dl_t * scale
                self.damped_solves += 1
        self.solve_log.append((1, True))
        lam, lam_t = st["lam"], None
        if friction is not None:
            assert basis is not None  # made with the friction rows
            lam_t = (friction.lam, dl_t, basis)
            self._sliding = sliding
        start = (sim.positions.copy(), sim.orientations.copy(), sim.lam.copy())
        merit = max(st["residual"], self._joint_merit(sim))
        step = 1.0
        for _ in range(self.line_search if not first else 0):
            self._take(sim, start, step, dx, dl_joint, lam, dl_c, lam_t)
            trial = self._semismooth_state(sim, False, residual_only=True)
            if max(trial, self._joint_merit(sim)) <= (1.0 - 1e-4 * step) * merit:
                break
            step *= 0.5
        else:
            self._take(sim, start, step, dx, dl_joint, lam, dl_c, lam_t)
        if step < 1.0:
            self.damped_solves += 1
        # the first solve's start is no Newton iterate (its states were picked): at least one more iteration
        return max(st["residual"], 2.0 * float(getattr(sim, "tolerance", 0.0)) + 1e-12) if first else st["residual"]

    def _project_schur(self, sim) -> float:
        """One Newton step of joints and contacts together, exact for the current linearisation, by block elimination
        over the joints' tree factorisation (``direct_method="schur"``).

        The joints' Newton step alone is H Δz_J = (0, −(C + α̃λ)_J) (Deul Eq. 22, factored as a tree by the
        Simulator; ``Contacts.solves_joints`` makes the Simulator leave it to this method). The contact rows G
        (normals and two friction rows per contact with μ > 0) join it: their impulses y move the pose by
        Δz_J + H⁻¹ Gᵀ (y − λ), which keeps the joints' linearised rows (H's joint part of the right-hand side is 0)
        (one tree solve per row, as ``loop_closing`` applies loop joints through the tree), so the rows see the
        dense contact Schur complement S = G H⁻¹ Gᵀ + α̃, and the linearised contact conditions are the KKT
        conditions of the convex QP

            min ½ yᵀ S y + (C̃ − S λ)ᵀ y,   y_n ≥ 0,   |y_t| ≤ μ λ̄_n   (a disk per contact with friction)

        (C̃ = C + α̃λ: normal rows C̃_n + ΔC_n ≥ 0 ⟂ y_n ≥ 0; friction rows stick with C̃_t + ΔC_t = 0 inside the
        disk and slide on its circle against their slip). The compliances α̃ > 0 of every row (``direct_compliance``,
        ``collider_compliance``, ``friction_compliance``) make S positive definite, so y is unique also where the
        rows are redundant (an inextensible rope's friction rows are statically indeterminate: G H⁻¹ Gᵀ alone is
        singular there). Without friction the QP is solved by the primal active-set method of
        :mod:`solver.contact.box_qp` (Nocedal & Wright 2006, §16.5): finite termination, the objective falls at every
        step, so it cannot cycle, unlike a primal–dual active set or semismooth Newton on a matrix that is not an
        M-matrix (Hintermüller, Ito & Kunisch 2002, SIAM J. Optim. 13: 865–888, prove global convergence for
        M-matrices only). The friction bound is Tresca's disk |y_t| ≤ b = μ λ̄_n: the QP with disks is solved by
        :mod:`solver.contact.disk_qp` (an interior-point method, then the active-set method on the boxes inscribed in
        the sliding disks along their directions, then Newton's method on those directions: exact to rounding), and
        Coulomb's bound b = μ y_n(b) by Newton's method on b, (I − μ ∂y_n/∂b) Δb = μ y_n − b (∂y_n/∂b from the QP's
        active set, ``radius_sensitivity``), halved (three times at most) while |μ y_n − b| does not fall, up to
        ``friction_rounds`` times, until |μ y_n − b| ≤ 1e-6 of the largest b. The method of successive approximations
        (b ← μ y_n, a contraction for small μ only: Nečas, Jarušek & Haslinger 1980, Boll. Unione Mat. Ital. 17-B:
        796–811) diverged on two rods crossing with μ 0.3, their redundant segment-pair rows trading the normal
        impulse (|μ y_n − b| grew 2.7× per round). The step's first iteration starts b at the last step's normal
        impulse at the same material point (``Contacts._warm_normal``), later ones at the current λ_n. At the fixed
        point a sliding row's friction is −μλ_n s/|s| (s its slip): Coulomb's law with maximal dissipation.

        ``Contacts(geometric_stiffness=True)`` (the default) makes the joints' part a Newton step on the implicit
        step itself rather than Deul's Eq. 22, which drops the momentum residual g = M (z − ẑ) − Jᵀλ − Gᵀλ_c and has
        no second derivatives of the constraints in H: the joints' H is factored with M + K̃ in its mass block, K̃
        the joints' geometric stiffness lumped to a positive diagonal (:meth:`_lumped_geometric_stiffness`; Andrews,
        Teichmann & Kry 2017; the geometric term of Tournier et al. 2015, "Stable Constrained Dynamics", ACM TOG
        34(4): 132), and the right-hand side carries g, H Δz_J = (−g, −(C + α̃λ)_J). With g on the right-hand side
        the iterations' fixed point is the implicit step whatever the matrix (a Newton method with a modified,
        positive definite Hessian: Nocedal & Wright 2006, §3.4), and the matrix is the Lagrangian's Hessian where
        K̃ = K: a straight link pulled along its axis, K = (u·p)(I − ẑẑᵀ) in its body frame, is diagonal, so on a
        taut rope the iterations converge as Newton's, quadratically. Without K̃ a taut rope's Newton step turns its
        links by the tension's torque over their own inertia (T l/2 against m l²/12 h²: 2000 N/m against 26 N/m
        where the capstan's rope leaves the cylinder) and overshoots; with g but without K̃ every step hit the cap.
        K̃ is built from the joints' impulses of the iterate, at a step's first iteration (λ = 0) from the last
        step's. The residual then also holds the momentum balance: |(M + K̃)⁻¹ g| in metres (rotations times half
        the segment's length plus its radius). The rod–rod rows' own curvature joins the matrix: their normals turn
        with the points' lateral offset, a negative stiffness −λ_n/d across the wire that K̃ lacks, added by the
        Woodbury identity (:meth:`_lateral_woodbury`). Where it makes the matrix indefinite (σ ≥ ``UNSTABLE_FROM``:
        a stack unstable within the step, whose implicit step is a saddle of Φ that this Newton method cannot reach),
        and where half the Simulator's ``max_iterations`` pass without convergence, the step restarts as Deul's step
        (:meth:`_restart_as_xpbd`, reported as ``ContactReport.xpbd``).
        ``geometric_stiffness=False``: Deul's step always (docs/notes/contacts.md compares them).

        Rows: as the semismooth method's (one per joint point against a collider). The geometry (points, normals,
        plain collider gaps by their signed distance) is evaluated again at each iteration. Returns the residual of
        the iterate the solve started from [m]: the largest natural map |y − proj(y − (S y + q))| per row, scaled by
        S_ii (metres: a normal row's |min(C̃, λ S_ii)|, a friction row's slip beyond the Coulomb box), 0 exactly where
        the contact conditions hold with Coulomb's bound at the current iterate."""
        if self.n_contacts == 0 or sim.solver != "kkt" or sim.model.n_joints == 0:
            return 0.0
        # The joint-only Newton step at this iterate, H Δz_J = (−g, −(C + α̃λ)_J) (g = 0 without geometric stiffness),
        # with H factored by the Simulator's own iteration (its step undone), so that the contact rows are linearised
        # at this iterate, not at the pose the joint-only step reaches (from the prediction, where λ = 0, the rope's
        # tension alone pulls it into the cylinder): the Newton step is Δz_J + H⁻¹Gᵀ(y − λ), one block elimination of
        # the whole linearised system
        first = self._first_solve
        f = sim.free_index
        newton = self.geometric_stiffness and not self._xpbd_step
        if newton and self._step_iterations > sim.max_iterations // 2:
            # half the step's iterations spent without converging: the matrix misses some curvature of the step that
            # the lateral test below does not see (on the Slinky, 8 steps in a row passed that test and ended at the
            # 15-iteration cap with residuals up to 0.2 m), and XPBD's iteration takes the other half
            return self._restart_as_xpbd(sim)
        if first and newton and self._fast[f].any():
            # a step that moves a segment by more than its radius starts its Newton iteration from the step's start
            # pose, outside every collider, where its rows were found, not from the free-flight prediction: with g
            # on the right-hand side the fixed point is the implicit step from either iterate, but a prediction
            # through a collider's middle finds the far side as the nearest surface (a rope falling at 10 m/s onto
            # a 5 cm cylinder at Δt = 1/60 s passed through it). Slower steps start at the prediction, nearer the
            # fixed point (from the start pose a rope sliding round a cylinder at 1.25 e^{μθ}, 2 mm per step, held
            # at the iteration cap, its momentum residual 4e-4 m, the line search halving every step). Without g
            # (Deul's Eq. 22) the iterate must start at the prediction, where λ = 0 matches it
            sim.positions[f] = sim._saved[0][f]
            sim.orientations[f] = sim._saved[1][f]
        start = (sim.positions.copy(), sim.orientations.copy(), sim.lam.copy())
        joint_rhs = sim.constraint_residual().copy()
        momentum = self._momentum_residual(sim) if newton else None
        masses = sim._mass_diag_free
        if newton:
            lam_k = self._last_joint_lam if first and self._last_joint_lam.shape == sim.lam.shape else sim.lam
            stiffness = self._lumped_geometric_stiffness(sim, lam_k)
            sim._mass_diag_free = masses + stiffness
        try:
            sim._kkt_iteration()
        finally:
            sim._mass_diag_free = masses
        kkt = sim._kkt
        sim.positions[...], sim.orientations[...], sim.lam[...] = start
        self._first_solve = False
        b = self._all
        rot_a, rot_b, za, zb, pa, pb, n, c, at, alpha_n = self._row_geometry(sim, b)
        k = c.size
        lam_n = self.normal_impulse
        na_body, nb_body = np.einsum("kji,kj->ki", rot_a, n), np.einsum("kji,kj->ki", rot_b, n)
        fa, fb, ga, gb = self._free_gradients(sim, b, n, za, zb, na_body, nb_body)
        fric = np.flatnonzero(self.mu > 0.0)
        seg_a, seg_b, grad_a, grad_b = [fa], [fb], [ga], [gb]
        rhs, alpha, lam = [c + alpha_n * lam_n], [alpha_n], [lam_n]
        basis = None
        if fric.size:
            friction, basis = self._friction_rows(sim, b, rot_a, rot_b, za, zb, pa, pb, n, at, along_axis=True)
            for t in range(2):
                seg_a.append(fa[fric])
                seg_b.append(fb[fric])
                grad_a.append(friction.grad_a[fric, t])
                grad_b.append(friction.grad_b[fric, t])
                rhs.append(friction.rhs[fric, t])
                alpha.append(friction.alpha[fric, t])
                lam.append(friction.lam[fric, t])
        sa_r, sb_r = np.concatenate(seg_a), np.concatenate(seg_b)
        ga_r, gb_r = np.concatenate(grad_a), np.concatenate(grad_b)
        rhs_r, alpha_r, lam_r = np.concatenate(rhs), np.concatenate(alpha), np.concatenate(lam)
        nr = rhs_r.size
        momentum_residual = 0.0
        if momentum is not None:
            for segs, grads in ((sa_r, ga_r), (sb_r, gb_r)):
                ok = segs >= 0
                np.add.at(momentum, segs[ok], -grads[ok] * lam_r[ok, None])
            reach = 0.5 * self.model.lengths[sim.free_index] + self.radius[sim.free_index]
            mk = sim._mass_diag_free + stiffness
            momentum_residual = float(
                max(
                    np.max(np.abs(momentum[:, :3] / mk[:, :3]), initial=0.0),
                    np.max(np.abs(momentum[:, 3:] / mk[:, 3:]) * reach[:, None], initial=0.0),
                )
            )
        dz_joint, dl_joint = kkt.solve(None if momentum is None else -momentum, joint_rhs)
        lateral = None
        if newton:
            # the rod–rod rows' lateral curvature from the iterate's normal impulses (at a step's first iteration,
            # λ = 0, the last step's, as K̃ above), tested before the rows' own tree solves
            lam_w = self._warm_normal if first else lam_n
            lateral = self._lateral_woodbury(
                sim, kkt, b, (rot_a, rot_b, za, zb, pa, pb, n), lam_w, (sa_r, sb_r, ga_r, gb_r), dz_joint
            )
            if lateral == "unstable":
                return self._restart_as_xpbd(sim)
        # H⁻¹ Gᵀ e_r: the pose's and the joints' response to a unit impulse on each row
        resp_x, resp_l = self._unit_responses(sim, kkt, sa_r, sb_r, ga_r, gb_r)
        w = np.zeros((nr, nr))
        for segs, grads in ((sa_r, ga_r), (sb_r, gb_r)):
            ok = segs >= 0
            w[ok] += np.einsum("jik,ik->ij", resp_x[:, segs[ok]], grads[ok])
        # the rows' linearised values after the joint-only step: C̃ + G Δz_J
        moved = rhs_r.copy()
        for segs, grads in ((sa_r, ga_r), (sb_r, gb_r)):
            ok = segs >= 0
            moved[ok] += np.einsum("ij,ij->i", grads[ok], dz_joint[segs[ok]])
        if lateral is not None:
            w -= lateral["s_gw"] @ lateral["coupling"]
            moved -= lateral["s_gw"] @ lateral["joint"]
        s = 0.5 * (w + w.T) + np.diag(alpha_r)
        q = moved - s @ lam_r
        diag = np.diag(s)
        mu = self.mu[fric]
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
        residual = float(np.max(natural, initial=0.0))
        merit = max(residual, momentum_residual, self._joint_merit(sim))
        # the incremental potential Φ at this iterate for a given friction bound (None: Φ is no merit here, below)
        potential = None
        if momentum is not None and bool(np.all(sim.alpha_tilde > 0.0)) and bool(np.all(alpha_r > 0.0)):
            joint_c = joint_rhs - sim.alpha_tilde * start[2]
            inertia = self._inertia_potential(sim)
            c_rows = rhs_r - alpha_r * lam_r

            def potential(bound_t):
                return incremental_potential(inertia, joint_c, sim.alpha_tilde, c_rows, alpha_r, k, bound_t)

        if first:
            self._schur_last = None
        elif self._backtrack(sim, merit, potential):
            return merit
        # the QP with Tresca's disk |y_t| ≤ μ λ̄_n per contact (solver.contact.disk_qp: interior point, then the box
        # QP inscribed along the sliding directions, then Newton on their angles), and Coulomb's bound by Newton
        rows_t1, rows_t2 = k + np.arange(nf), k + nf + np.arange(nf)
        bound_n = self._warm_normal if first else lam_n
        y, solves, settled = lam_r, 0, True
        used = np.zeros(2 * nf)
        if nf:
            # Coulomb's bound b = μ y_n(b) by Newton's method on the bound: (I − μ ∂y_n/∂b) Δb = μ y_n − b, with
            # ∂y_n/∂b from the QP's active set (radius_sensitivity), halved while |μ y_n − b| does not fall (after
            # three halvings the last trial is kept: the Newton iteration's own line search judges the step)
            radius = mu * np.maximum(bound_n[fric], 0.0)
            res = solve_disk_qp(s, q, k, rows_t1, rows_t2, radius, x0=y)
            y, solves, settled = res.x, res.newton + res.box_solves, res.converged
            for _ in range(self.friction_rounds):
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
            used = np.concatenate((res.hi[rows_t1], res.hi[rows_t2]))
        else:
            box_res = solve_box_qp(s, q, lo, hi, x0=y)
            y, solves, settled = box_res.x, box_res.iterations, box_res.converged
        self.solve_log.append((solves, settled))
        d = y - lam_r
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
            self.normal_impulse.copy(),
            self.tangent_impulse.copy(),
        )
        sim.lam += dl
        f = sim.free_index
        sim.positions[f] += dx[:, :3]
        sim.orientations[f] = quat.integrate_body(sim.orientations[f], dx[:, 3:])
        self.normal_impulse = y[:k].copy()
        if basis is not None:
            lt = np.zeros((k, 2))
            lt[fric, 0], lt[fric, 1] = y[k : k + fric.size], y[k + fric.size :]
            self.tangent_impulse = lt[:, 0, None] * basis[0] + lt[:, 1, None] * basis[1]
            on_box = np.zeros((k, 2), np.int8)
            bound = (mu * y[:k][fric])[:, None]
            held = np.linalg.norm(lt[fric], axis=1)[:, None] >= bound * (1.0 - 1e-6)  # on the cone: sliding
            on_box[fric] = np.where(held & (bound > 0.0), np.sign(lt[fric]), 0)
            self._sliding = on_box
        bound_t = used if nf else np.zeros(0)
        phi = None if potential is None else potential(bound_t)
        after = (self.normal_impulse.copy(), self.tangent_impulse.copy())
        self._schur_last = (merit, phi, bound_t, undo, after, dx, dl, 1.0)
        residual = max(residual, momentum_residual)
        if first:
            # the first iterate is the prediction or the step's start, no Newton iterate: at least one more iteration
            return max(residual, 2.0 * float(getattr(sim, "tolerance", 0.0)) + 1e-12)
        return residual

    def _lateral_woodbury(self, sim, kkt, b, geometry, lam_n, contact_rows, dz_joint):
        """The rod–rod rows' lateral curvature (:meth:`ContactRows._lateral_curvature`: unit rows W along the
        directions e, weights κ = λ_n/(n·d)) in the schur method's Newton matrix: H + Wᵀ D W with D = −diag(κ), the
        exact Jacobian of the rows' forces λ_n n (their normals turn with the points), through the joints' tree
        factorisation of H by the Woodbury identity, (H + WᵀDW)⁻¹ = H⁻¹ − H⁻¹Wᵀ A⁻¹ W H⁻¹ with
        A = W H⁻¹ Wᵀ + D⁻¹ = K^-½ (K^½ W H⁻¹ Wᵀ K^½ − I) K^-½ (K = diag(κ); one tree solve per direction).

        H is positive definite (the masses, K̃ ≥ 0, the joints' compliances), so H + WᵀDW is positive definite
        exactly where every eigenvalue σ of K^½ W H⁻¹ Wᵀ K^½ is below 1 (Haynsworth's inertia additivity): the
        curvature then stays below the step's inertia and joints along every direction, the incremental potential
        Φ has a local minimiser near the iterate and the contact QP's matrix S − (W H⁻¹ Gᵀ)ᵀ A⁻¹ W H⁻¹ Gᵀ is
        positive definite. At σ ≥ 1 the stack is unstable within the step (two wires stacked under load: σ grows
        with λ_n/(n·d), as Δt² for a given force): Φ is not convex there and the implicit step is a saddle, which
        the Newton method descending Φ cannot converge to (a Slinky's stacked coils cycled at the iteration cap; a
        rod across a rod at Δt = 40 ms was thrown off in one step). Returns ``"unstable"`` where the largest σ
        reaches ``UNSTABLE_FROM``, None without curvature rows, else A⁻¹ W H⁻¹ Gᵀ (``coupling``), A⁻¹ W Δz_J
        (``joint``), G H⁻¹ Wᵀ (``s_gw``) and the directions' responses H⁻¹ Wᵀ (``resp_x``, ``resp_l``)."""
        wa, wb, wga, wgb, kappa = self._lateral_curvature(sim, b, *geometry, lam_n)
        if kappa.size == 0:
            return None
        resp_x, resp_l = self._unit_responses(sim, kkt, wa, wb, wga, wgb)
        sa_r, sb_r, ga_r, gb_r = contact_rows
        s_gw = np.zeros((sa_r.size, kappa.size))
        for segs, grads in ((sa_r, ga_r), (sb_r, gb_r)):
            ok = segs >= 0
            s_gw[ok] += np.einsum("jik,ik->ij", resp_x[:, segs[ok]], grads[ok])
        s_ww = np.zeros((kappa.size, kappa.size))
        for segs, grads in ((wa, wga), (wb, wgb)):
            ok = segs >= 0
            s_ww[ok] += np.einsum("jik,ik->ij", resp_x[:, segs[ok]], grads[ok])
        w_dz = _rows_times(wa, wb, wga, wgb, dz_joint)
        root = np.sqrt(kappa)
        sigma, vec = np.linalg.eigh(root[:, None] * (0.5 * (s_ww + s_ww.T)) * root[None, :])
        if sigma[-1] >= UNSTABLE_FROM:
            return "unstable"
        kv = root[:, None] * vec
        a_inv = (kv / (sigma - 1.0)[None, :]) @ kv.T  # A⁻¹ = K^½ V diag(1/(σ − 1)) Vᵀ K^½
        return dict(coupling=a_inv @ s_gw.T, joint=a_inv @ w_dz, s_gw=s_gw, resp_x=resp_x, resp_l=resp_l)

    @staticmethod
    def _unit_responses(sim, kkt, fa, fb, ga, gb):
        """H⁻¹ Jᵀ e_r for rows r with free indices ``fa``/``fb`` (−1: none) and gradients ``ga``/``gb`` (k, 6): the
        pose's (k, n_free, 6) and the joints' (k, n_joints, 6) response to a unit impulse on each row, one tree
        solve of the factorised ``kkt`` per row (as ``loop_closing`` applies loop joints through the tree)."""
        n_free = sim.free_index.size
        resp_x = np.zeros((fa.size, n_free, 6))
        resp_l = np.zeros((fa.size,) + sim.lam.shape)
        zero_joint = np.zeros_like(sim.lam)
        for r in range(fa.size):
            force = np.zeros((n_free, 6))
            if fa[r] >= 0:
                force[fa[r]] += ga[r]
            if fb[r] >= 0:
                force[fb[r]] += gb[r]
            resp_x[r], resp_l[r] = kkt.solve(force, zero_joint)
        return resp_x, resp_l

    def _restart_as_xpbd(self, sim) -> float:
        """Solve the rest of this step with XPBD's iteration (Deul Eq. 22: no momentum residual, no geometric
        stiffness), from the prediction with every impulse 0, where the schur method's Newton matrix is indefinite
        (:meth:`_lateral_woodbury`) or its iterations took half the step's budget without converging. Its fixed
        point meets the joints and the contact conditions exactly and the momentum balance to first order in the
        step: each iteration moves the pose along the rows' normals at its iterate, so a stack's lateral force is
        that of the normals it passes through, not the end pose's. A rod resting on a rod at Δt = 40 ms
        (Δt² g/d = 1.57, where backward Euler has no solution near the iterate): its prediction falls through the
        lower rod's axis, the rows keep the normal of the step's start, and it rolls off by
        y_{n+1} = 2 y_n − y_{n−1} + Δt² (g/d) y_n (tests/test_contact_curvature.py). Returns that method's first
        residual; the step is reported (``ContactReport.xpbd``)."""
        self._xpbd_step = True
        f = sim.free_index
        sim.positions[f] = self._predicted[0][f]
        sim.orientations[f] = self._predicted[1][f]
        sim.lam[...] = 0.0
        self.normal_impulse = np.zeros_like(self.normal_impulse)
        self.tangent_impulse = np.zeros_like(self.tangent_impulse)
        self._sliding = np.zeros_like(self._sliding)
        self._first_solve = True
        self._schur_last = None
        return self._project_schur(sim)

    def _backtrack(self, sim, merit: float, potential) -> bool:
        """The schur method's line search, one trial per Newton iteration: an iterate is kept when it lowers either
        of two measures against the iterate the last step s started from: the largest residual ``merit`` (the
        contact rows' natural map, the momentum residual and the joints' translational residual, metres) by 10⁻⁴ s
        of itself, or the incremental potential Φ (:func:`incremental_potential`, with the friction bound of the QP
        that made the step). Otherwise the iterate goes back and takes half that step (at most ``line_search``
        halvings; then the last half stands). Returns whether it went back (the caller's iteration is then that
        trial).

        Φ: with geometric stiffness the joints' Newton step has the momentum residual on its right-hand side and
        every row a compliance α̃ > 0, and then λ drops out of the pose's step: (M + K̃ + Gᵀα̃⁻¹G) Δz = −∇Φ for the
        smooth rows, whatever the iterate's λ, and the contact QP is the convex model of Φ's penalty (normal) and
        Huber (friction, Tresca's bound) terms on the rows linearised. The matrix is positive definite (K̃ lumped
        positive), so Δz is a descent direction of Φ: the Gauss–Newton method for a convex composite function
        (Burke 1985, Math. Programming 33: 260–279; Nocedal & Wright 2006, §3.4). The residual alone is no such
        merit: the modified Newton step need not lower it (a rope sliding round a cylinder from the step's start
        pose halved every step and ended at the cap, its momentum residual held at 4e-4 m). Φ alone rejects full
        steps near the solution (the Maratos effect, Nocedal & Wright §15.4): a joint's point rows are linear in the
        step only to first order, and their second-order stretch counts 1/α̃ (3e6 for a rope's stretch rows at
        1/200 s): the rope falling onto a cylinder had Φ = 3.5e-5 where the step started and 4.6 after the full step,
        which cut the step to 1/64 at every iteration. Taking an iterate that lowers either is a filter of two
        entries (Fletcher & Leyffer 2002, Math. Programming 91: 239–269) kept against the step's start only.
        Without geometric stiffness (Deul's Eq. 22, no momentum residual) or with a row of zero compliance, Φ is not
        defined by the step and the residual is the only test: a full Newton step on the nonsmooth contact
        conditions can cycle (a rope over a box's ridge handed its load between the rows of the two faces and the
        edge with a period of two or three iterations)."""
        last = self._schur_last
        if last is None:
            return False
        merit0, phi0, bound_t, undo, after, dx, dl, step = last
        tolerance = float(getattr(sim, "tolerance", 0.0))
        if step <= 0.5**self.line_search or merit <= tolerance:
            return False
        if merit <= (1.0 - 1e-4 * step) * merit0:
            return False
        # rounding: Φ is a sum of terms up to |Φ| whose differences are compared
        if potential is not None and phi0 is not None and potential(bound_t) <= phi0 + 1e-12 * abs(phi0):
            return False
        step *= 0.5
        x0, q0, lam0, normal0, tangent0 = undo
        new_normal, new_tangent = after
        self._take(sim, (x0, q0, lam0), step, dx, dl, normal0, new_normal - normal0, None)
        self.tangent_impulse = tangent0 + step * (new_tangent - tangent0)
        self._schur_last = (merit0, phi0, bound_t, undo, after, dx, dl, step)
        return True

    def _inertia_potential(self, sim) -> float:
        """½ (z − ẑ)ᵀ M (z − ẑ) of the free segments [kg·m²]: positions from the prediction ẑ (``Contacts.begin_step``),
        rotations as body rotation vectors (the momentum residual's g is its gradient)."""
        f = sim.free_index
        x_pred, q_pred = self._predicted
        mass = sim._mass_diag_free
        dx = sim.positions[f] - x_pred[f]
        dphi = quat.body_rotation_vector(q_pred[f], sim.orientations[f])
        return 0.5 * float(np.sum(mass[:, :3] * dx * dx) + np.sum(mass[:, 3:] * dphi * dphi))

    def _momentum_residual(self, sim) -> np.ndarray:
        """g = M (z − ẑ) − Jᵀλ of the free segments (n_free, 6) [kg·m; body-frame rotations kg·m²]: the implicit
        step's momentum balance with the joints' impulses, ẑ the prediction (``Contacts.begin_step``), rotations as
        the Simulator reads them back (``body_rotation_vector``). The contact rows' −Gᵀλ_c is added by the caller."""
        f = sim.free_index
        x_pred, q_pred = self._predicted
        mass = sim._mass_diag_free
        g = np.empty((f.size, 6))
        g[:, :3] = mass[:, :3] * (sim.positions[f] - x_pred[f])
        g[:, 3:] = mass[:, 3:] * quat.body_rotation_vector(q_pred[f], sim.orientations[f])
        if sim.model.n_joints:
            sim._joint_values()  # the evaluator at this pose
            _, _, jpt, jct = sim._joint_eval.jacobians()
            for segs, jac_t in ((sim._seg_a, jpt), (sim._seg_b, jct)):
                ok = segs >= 0
                np.add.at(g, segs[ok], -np.einsum("kij,kj->ki", jac_t[ok], sim.lam[ok]))
        return g

    @staticmethod
    def _lumped_geometric_stiffness(sim, lam: np.ndarray) -> np.ndarray:
        """The joints' geometric stiffness K = Σ_j ∂²(λ_jᵀ C_j)/∂z², lumped to a diagonal (n_free, 6) that is
        positive by construction: the Euclidean norm of each column of K (Andrews, Teichmann & Kry 2017,
        "Geometric Stiffness for Real-time Constrained Multibody Dynamics", Comput. Graph. Forum 36(2): 235–246).

        The point rows C = x_p + R_p p_p − x_c − R_c p_c are linear in the positions; their curvature is in the
        body rotations: with u = Rᵀ f the row's force on a side in its body frame and p its joint point,
        ∂²(−f·R exp([φ]×) p)/∂φ² = (u·p) I − ½(u pᵀ + p uᵀ) [kg·m² with λ in N·s²]: a link pulled outwards at its
        joint point (tension, u·p > 0) is stiff against turning. The bend/twist rows' curvature (bending moment
        over length) is left out: for a rope it is orders of magnitude below the tension's."""
        model = sim.model
        out = np.zeros((sim.free_index.size, 6))
        if model.n_joints == 0 or not np.any(lam[:, :3]):
            return out
        sim._joint_values()
        _, _, jpt, jct = sim._joint_eval.jacobians()
        for segs, seg_all, jac_t, point in (
            (sim._seg_a, model.joint_parent, jpt, model.joint_point_parent),
            (sim._seg_b, model.joint_child, jct, model.joint_point_child),
        ):
            force = np.einsum("kij,kj->ki", jac_t[:, :3, :3], lam[:, :3])  # the point rows' force, world frame
            u = quat.rotate_inverse(sim.orientations[seg_all], force)
            k = np.einsum("ki,ki->k", u, point)[:, None, None] * np.eye(3) - 0.5 * (
                u[:, :, None] * point[:, None, :] + point[:, :, None] * u[:, None, :]
            )
            ok = segs >= 0
            np.add.at(out[:, 3:6], segs[ok], np.linalg.norm(k[ok], axis=1))  # a view: adds into out
        return out

    @staticmethod
    def _joint_merit(sim) -> float:
        """The joints' translational residual ‖C + α̃λ‖∞ [m] (the line search's share of the joints: the rotational
        rows' α̃λ of a soft rope reach 1e3 at rest and would hide the contacts' part)."""
        return float(np.max(np.abs(sim.constraint_residual()[:, :3]), initial=0.0))

    def _take(self, sim, start, step, dx, dl_joint, lam, dl_c, lam_t) -> None:
        """Set the iterate to ``start`` plus ``step`` times the Newton step (pose, joint and contact impulses)."""
        f = sim.free_index
        sim.positions[...], sim.orientations[...], sim.lam[...] = start
        sim.lam += step * dl_joint
        sim.positions[f] += step * dx[:, :3]
        sim.orientations[f] = quat.integrate_body(sim.orientations[f], step * dx[:, 3:])
        self.normal_impulse = lam + step * dl_c  # unclamped: the pose moved by all of Δλ
        if lam_t is not None:
            lt0, dlt, basis = lam_t
            lt = lt0 + step * dlt
            self.tangent_impulse = lt[:, 0, None] * basis[0] + lt[:, 1, None] * basis[1]

    def _row_geometry(self, sim, b):
        """The rows of ``b`` at the current pose, for the semismooth and schur methods: both sides' body rotations,
        body-frame and world points, the normals, the gaps C [m] (collider rows by the collider's signed distance),
        the rod–rod rows' compliance α̃ and every normal row's α̃ (colliders: ``collider_compliance``) [m/(N·s²)]."""
        rot_a, rot_b, za, zb, pa, pb = self._points(sim, b)
        n = self._normals(sim, b, za, zb, pa, pb)
        c = np.einsum("ij,ij->i", n, pa - pb) - self.rest
        rows, c_col, n = self._collider_geometry(sim, b, pa, n)
        c[rows] = c_col
        at = max(self._alpha_tilde, self.direct_compliance / (sim.step_context.stage_dt * sim.step_context.stage_dt))
        alpha_n = np.where(
            b["env"],
            max(self._alpha_tilde, self.collider_compliance / (sim.step_context.stage_dt * sim.step_context.stage_dt)),
            at,
        )
        return rot_a, rot_b, za, zb, pa, pb, n, c, at, alpha_n

    def _semismooth_state(self, sim, first: bool, residual_only: bool = False):
        """Rows, states and natural-map residual of the current iterate for :meth:`_project_semismooth` (a dict),
        or with ``residual_only`` the residual [m] alone."""
        b = self._all
        rot_a, rot_b, za, zb, pa, pb, n, c, at, alpha = self._row_geometry(sim, b)
        lam = self.normal_impulse
        na_body, nb_body = np.einsum("kji,kj->ki", rot_a, n), np.einsum("kji,kj->ki", rot_b, n)
        w = self._inverse_mass(b["inv_m_a"], b["inv_i_a"], za, na_body) + self._inverse_mass(
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
            aug_n = np.where(c < self.direct_touch * self.rest, np.maximum(aug_n, 1e-300), aug_n)
        active = aug_n > 0.0
        residual = float(np.max(np.abs(np.minimum(c_tilde, lam / rho)), initial=0.0))
        friction, basis, aug_t, bound, slip = None, None, None, None, None
        if np.any(self.mu > 0.0):
            friction, basis = self._friction_rows(sim, b, rot_a, rot_b, za, zb, pa, pb, n, at, along_axis=True)
            rho_t = 1.0 / friction.alpha
            aug_t = friction.lam - rho_t * friction.rhs
            slip = friction.rhs - friction.alpha * friction.lam  # C_t [m]
            bound = (self.mu * np.maximum(aug_n, 0.0))[:, None]
            proj = np.clip(aug_t, -bound, bound)
            on = active & (self.mu > 0.0)
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
            gradients=self._free_gradients(sim, b, n, za, zb, na_body, nb_body),
            c_tilde=c_tilde,
            alpha=alpha,
            lam=lam,
        )

    def _friction_rows(self, sim, b, rot_a, rot_b, za, zb, pa, pb, n, at, along_axis=False):
        """Two tangential rows per contact for the direct solve: C_t, the relative displacement of the two
        material points since the start of the step along t₁ (the slip direction, so the box is the cone
        for a sliding contact) and t₂ = n × t₁. Returns the rows and the basis (t₁, t₂).

        Between two segments the material points are where the surfaces touch, r_a and r_b off the axes
        along ∓n: two coils turning together (a stack of coils tipping over) do not slip there, while
        their axis points do (ω × (r_a + r_b) n), so friction at the axes would lock a stack against
        tipping. Against a collider the axis point is kept: at the surface point the friction torque
        about the axis (μ λ_n r) makes the active set of a rod sliding down a slope cycle and the rod
        stop (docs/notes/contacts.md); the price is that a rod cannot roll on a collider without slipping."""
        env = b["env"]
        rad_a = np.where(env, 0.0, self.radius[b["sa"]])
        rad_b = np.where(env, 0.0, self.radius[b["sb"]])
        off_a = self._surface_offsets(za, -rad_a, np.einsum("kji,kj->ki", rot_a, n))  # body frames (k, 3)
        off_b = self._surface_offsets(zb, rad_b, np.einsum("kji,kj->ki", rot_b, n))
        start_a = b["x0_a"] + np.einsum("kij,kj->ki", b["r0_a"], off_a)
        start_b = np.where(env[:, None], self._anchors(b, pb), b["x0_b"] + np.einsum("kij,kj->ki", b["r0_b"], off_b))
        rel = (pa - rad_a[:, None] * n - start_a) - (pb + rad_b[:, None] * n - start_b)
        tang = rel - n * np.einsum("ij,ij->i", rel, n)[:, None]
        slip = np.sqrt(np.einsum("ij,ij->i", tang, tang))
        # no slip yet: any tangent (the axis least along n crossed with n)
        helper = np.eye(3)[np.argmin(np.abs(n), axis=1)]
        perp = np.cross(n, helper)
        perp /= np.linalg.norm(perp, axis=1)[:, None]
        moving = slip > 1e-12 * self.rest
        if along_axis:
            # t₁ along a's axis in the tangent plane: a smooth function of the pose, where the slip's direction
            # turns by up to π between Newton iterations while the slip is near zero
            axis = rot_a[:, :, 2] - n * np.einsum("ij,ij->i", rot_a[:, :, 2], n)[:, None]
            length = np.linalg.norm(axis, axis=1)
            t1 = np.where((length > 1e-6)[:, None], axis / np.maximum(length, 1e-300)[:, None], perp)
        else:
            t1 = np.where(moving[:, None], tang / np.maximum(slip, 1e-300)[:, None], perp)
        t2 = np.cross(n, t1)
        ga, gb, c_t, lam_t = [], [], [], []
        for t in (t1, t2):
            ta_body, tb_body = np.einsum("kji,kj->ki", rot_a, t), np.einsum("kji,kj->ki", rot_b, t)
            ga.append(np.concatenate((t, np.cross(off_a, ta_body)), axis=1))  # ∂C_t/∂(x, δφ_body)
            gb.append(-np.concatenate((t, np.cross(off_b, tb_body)), axis=1))
            c_t.append(np.einsum("ij,ij->i", t, rel))
            lam_t.append(np.einsum("ij,ij->i", t, self.tangent_impulse))
        c_t, lam_t = np.stack(c_t, axis=1), np.stack(lam_t, axis=1)
        # a sliding row keeps sliding against its slip (t₁ turns with it; t₂ along the old impulse)
        sliding = np.where(
            self._sliding != 0, np.where(moving[:, None] & (np.arange(2) == 0), -1, np.sign(lam_t)), 0
        ).astype(np.int8)
        alpha = np.full(
            c_t.shape, max(at, self.friction_compliance / (sim.step_context.stage_dt * sim.step_context.stage_dt))
        )
        rows = FrictionRows(
            np.stack(ga, axis=1), np.stack(gb, axis=1), c_t + alpha * lam_t, alpha, lam_t, self.mu, sliding
        )
        return rows, (t1, t2)
