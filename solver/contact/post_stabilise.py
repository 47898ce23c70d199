"""Post-stabilisation (Cline & Pai 2003): overlaps left at the end of a step are removed from the
positions only, after the step has taken its velocities, by one joint-and-contact direct solve; with
``post_velocity`` the closed rows also lose their relative velocity into each other.
"""

from __future__ import annotations

import numpy as np

from ..core import quaternion as quat
from .response import ContactResponse
from .rows import _rows_times
from .state import step_length


class PostStabilisation(ContactResponse):
    """The ``post_stabilise`` option of :class:`~solver.contact.contacts.Contacts` (run by its ``end_step``)."""

    def _overlap_rows(self, sim, margin):
        """Rows of every capsule overlap (and gap below ``margin`` (n,) [m]) at the current pose, found exactly
        as ``surface_gaps`` does: segment a, its axis coordinate, segment b (−1: a collider), b's, normal
        from b to a, gap C [m]."""
        x, q = sim.positions, sim.orientations
        t1 = sim.time + step_length(sim)  # the step's end: end_step runs before the Simulator advances time
        parts = []
        for _, seg, z, _, phi, nrm in self._collider_points(x, q, margin, t1):
            parts.append((seg, z, np.full(seg.size, -1), np.zeros(seg.size), nrm, phi - self.radius[seg]))
        edges = self._edge_candidates(x, q, margin, t1, t1, with_gap=True)
        if edges is not None:
            seg, z, nrm, gap = edges[0], edges[1], edges[3], edges[-1]
            parts.append((seg, z, np.full(seg.size, -1), np.zeros(seg.size), nrm, gap))
        found = self._self_candidates(x, q, margin, with_gap=True)
        if found is not None:
            i, j, zi, zj, nrm, _, gap = found
            parts.append((i, zi, j, zj, nrm, gap))
        if not parts:
            return None
        return [np.concatenate(p) for p in zip(*parts, strict=True)]

    def _post_stabilise(self, sim) -> None:
        """Position-only removal of the overlaps left at the end of a step (post-stabilisation, Cline & Pai
        2003): every capsule overlap at the end pose (found exactly, as ``surface_gaps`` does) and every
        gap below a quarter radius is a row of one joint-and-contact direct solve (joints held, overlapping
        rows closed, the others entering only if pushed in), applied to the positions after the step took
        its velocities from them: it removes what the step's three solves left without moving energy into
        the motion (a correction that fed the velocities, as the solve's own does, would throw the
        contact apart at the overlap's depth per step). A compliant row's own sink is left: each row is
        allowed α F, with α its compliance and F the largest normal force [N] this step's solves put on either
        of its segments, and is closed to that depth (closing it to zero, the next step sinks it again, a
        velocity of α F / Δt at rest). Skipped while no overlap is deeper than that plus ``post_tolerance``
        radii; ``post_overlap`` [m] records the deepest overlap found."""
        if sim.solver != "kkt" or sim.model.n_joints == 0:
            return
        load = np.zeros(self.model.n_segments)  # [N] per segment, this step's contacts
        if self.n_contacts:
            force = self.normal_impulse / (sim.step_context.stage_dt * sim.step_context.stage_dt)
            np.maximum.at(load, self.sa, force)
            body = self.sb >= 0
            np.maximum.at(load, self.sb[body], force[body])
        for first in (True, False, False):
            # a correction may push a part of the rod that was not near anything into something: look again
            rows = self._overlap_rows(sim, 0.25 * self.radius)
            if rows is None or rows[0].size == 0:
                return
            sa, za, sb, zb, n, c = rows
            if first:
                self.post_overlap = float(max(0.0, -c.min()))
            env, other = sb < 0, np.maximum(sb, 0)
            compliance = (
                np.where(env, self.collider_compliance, self.direct_compliance)
                if self.response == "direct"
                else np.full(c.size, self.compliance)
            )
            scale = np.where(env, self.radius[sa], 0.5 * (self.radius[sa] + self.radius[other]))
            sink = np.minimum(
                compliance * np.maximum(load[sa], np.where(env, 0.0, load[other])), self.post_tolerance * scale
            )
            if np.all(c + sink >= -self.post_tolerance * scale):
                return
            self._post_solve(sim, sa, za, sb, zb, n, c + sink)

    def _post_solve(self, sim, sa, za, sb, zb, n, c) -> None:
        """One post-stabilisation solve of the rows (segment a, its axis coordinate, segment b or −1 for a
        collider, b's, normal from b to a, the gap to close [m]): positions and orientations only."""
        env = sb < 0
        sbs = np.where(env, sa, sb)
        rot_a, rot_b = quat.to_matrix(sim.orientations[sa]), quat.to_matrix(sim.orientations[sbs])
        na_body, nb_body = np.einsum("kji,kj->ki", rot_a, n), np.einsum("kji,kj->ki", rot_b, n)
        fa, fb, ga, gb = self._free_gradients(sim, dict(sa=sa, sb=sbs, env=env), n, za, zb, na_body, nb_body)
        sim._joint_values()
        jp, jc, _, _ = sim._joint_eval.jacobians()
        alpha = np.full(c.size, self.direct_compliance / (sim.step_context.stage_dt * sim.step_context.stage_dt))
        dx, _, _, _ = self._solve_rows(
            sim,
            (jp, jc),
            np.zeros((sim.model.n_joints, 6)),
            sim.alpha_tilde,
            (fa, fb, ga, gb),
            c,
            alpha,
            np.zeros(c.size),
        )
        f = sim.free_index
        sim.positions[f] += dx[:, :3]
        sim.orientations[f] = quat.integrate_body(sim.orientations[f], dx[:, 3:])
        if self.post_velocity:
            self._post_velocity(sim, jp, jc, fa, fb, ga, gb, c < 0.0)

    def _post_velocity(self, sim, jp, jc, fa, fb, ga, gb, closing) -> None:
        """The closed rows' relative normal velocity into each other removed (J v ≥ 0 for them, an
        inelastic impulse through one joint-and-contact direct solve in which the joints' velocities do not
        change; rows that would pull leave): a projection onto non-approaching rows, so it takes kinetic
        energy out. Against a collider the collider is taken at rest (an animated one's own speed is not
        added). ``jp``, ``jc``: the joints' Jacobians of the position solve just done."""
        if not np.any(closing):
            return
        f = sim.free_index
        vel = np.concatenate((sim.velocities[f], sim.angular_velocities[f]), axis=1)  # [m/s, rad/s body]
        fa, fb, ga, gb = fa[closing], fb[closing], ga[closing], gb[closing]
        jv = _rows_times(fa, fb, ga, gb, vel)  # [m/s] relative normal velocity, + apart
        if not np.any(jv < 0.0):
            return
        # velocity-level rows: compliance α/Δt (impulses in N·s), the joints' relative velocity held
        dv, _, _, _ = self._solve_rows(
            sim,
            (jp, jc),
            np.zeros((sim.model.n_joints, 6)),
            sim.alpha_tilde * sim.step_context.stage_dt,
            (fa, fb, ga, gb),
            jv,
            np.full(fa.size, self.direct_compliance / sim.step_context.stage_dt),
            np.zeros(fa.size),
        )
        sim.velocities[f] += dv[:, :3]
        sim.angular_velocities[f] += dv[:, 3:]
