"""Post-stabilisation (Cline & Pai 2003): overlaps left at the end of a step are removed from the positions only,
after the step has taken its velocities, by one joint-and-contact direct solve; with ``velocity`` the closed rows
also lose their relative velocity into each other (:class:`PostStabiliser`, composed into ``Contacts``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core import quaternion as quat
from .contact_kkt import NormalRows
from .rows import StepRows, rows_times
from .solvers.base import check_compliance, check_count
from .solvers.common import DirectSolve


@dataclass(frozen=True, kw_only=True)
class PostOptions:
    """``tolerance``: overlaps deeper than this fraction of the radius (plus the compliant sink of the row's load)
    are removed; ``velocity``: the rows it closes also lose their relative velocity into each other (an inelastic
    velocity solve through the joints; without it a segment the step's solves left sinking keeps sinking at that
    speed in the next step, and post-stabilisation lifts it out again in every step). ``compliance`` [m/N] of its
    rows, ``rounds`` and ``grow_rounds`` of its active set (None: the contact method's, ``ContactSolver.post_defaults``:
    a direct method's contact compliance and rounds, else 1e-7 m/N, 8 and 0). Needs the ``"kkt"`` solver."""

    tolerance: float = 0.02
    velocity: bool = False
    compliance: float | None = None
    rounds: int | None = None
    grow_rounds: int | None = None

    def __post_init__(self):
        check_compliance("PostOptions", "compliance", self.compliance)
        if self.rounds is not None:
            check_count("PostOptions", "rounds", self.rounds, 1)
        if self.grow_rounds is not None:
            check_count("PostOptions", "grow_rounds", self.grow_rounds, 0)


class PostStabiliser:
    """Removes the overlaps a step's solves left (:meth:`apply`, run by ``Contacts.end_step``). ``sink_compliance``:
    a function of the collider mask (k,) giving each row's compliance during the step [m/N] (a compliant row's own
    sink is left); ``defaults``: the solver's (compliance, rounds, grow rounds) where ``options`` leaves them None.
    ``overlap`` [m] is the deepest overlap it found in the last step."""

    def __init__(self, options: PostOptions, detector, geometry, sink_compliance, defaults: tuple[float, int, int]):
        self.options = options
        self.detector = detector
        self.geometry = geometry
        self.sink_compliance = sink_compliance
        compliance, rounds, grow = defaults
        self.compliance = compliance if options.compliance is None else float(options.compliance)
        self.solver = DirectSolve(
            rounds if options.rounds is None else options.rounds,
            grow if options.grow_rounds is None else options.grow_rounds,
        )
        self.overlap = 0.0

    def apply(self, sim, rows: StepRows) -> None:
        """Position-only removal of the overlaps left at the end of a step: every capsule overlap at the end pose
        (found exactly, as ``surface_gaps`` does) and every gap below a quarter radius is a row of one
        joint-and-contact direct solve (joints held, overlapping rows closed, the others entering only if pushed in),
        applied to the positions after the step took its velocities from them: it removes what the step's solves
        left without moving energy into the motion. A compliant row's own sink is left: each row is allowed α F, with
        α its compliance and F the largest normal force [N] this step's solves put on either of its segments, and is
        closed to that depth. Skipped while no overlap is deeper than that plus ``tolerance`` radii."""
        if sim.solver != "kkt" or sim.model.n_joints == 0:
            return
        radius, tol = self.detector.radius, self.options.tolerance
        load = np.zeros(self.geometry.model.n_segments)  # [N] per segment, this step's contacts
        if rows.n_contacts:
            force = rows.normal_impulse / (sim.step_context.stage_dt * sim.step_context.stage_dt)
            np.maximum.at(load, rows.sa, force)
            body = rows.sb >= 0
            np.maximum.at(load, rows.sb[body], force[body])
        t1 = sim.time + sim.step_context.step_dt  # the step's end: end_step runs before the Simulator advances time
        for first in (True, False, False):
            # a correction may push a part of the rod that was not near anything into something: look again
            found = self.detector.overlap_rows(sim.positions, sim.orientations, 0.25 * radius, t1)
            if found is None or found[0].size == 0:
                return
            sa, za, sb, zb, n, c = found
            if first:
                self.overlap = float(max(0.0, -c.min()))
            env, other = sb < 0, np.maximum(sb, 0)
            scale = np.where(env, radius[sa], 0.5 * (radius[sa] + radius[other]))
            sink = np.minimum(
                self.sink_compliance(env) * np.maximum(load[sa], np.where(env, 0.0, load[other])), tol * scale
            )
            if np.all(c + sink >= -tol * scale):
                return
            self._solve(sim, sa, za, sb, zb, n, c + sink)

    def _solve(self, sim, sa, za, sb, zb, n, c) -> None:
        """One post-stabilisation solve of the rows (segment a, its axis coordinate, segment b or −1 for a
        collider, b's, normal from b to a, the gap to close [m]): positions and orientations only."""
        env = sb < 0
        sbs = np.where(env, sa, sb)
        rot_a, rot_b = quat.to_matrix(sim.orientations[sa]), quat.to_matrix(sim.orientations[sbs])
        na_body, nb_body = np.einsum("kji,kj->ki", rot_a, n), np.einsum("kji,kj->ki", rot_b, n)
        fa, fb, ga, gb = self.geometry.free_gradients(sim, dict(sa=sa, sb=sbs, env=env), n, za, zb, na_body, nb_body)
        jp, jc, _, _ = sim.step_context.joints.jacobians()
        alpha = np.full(c.size, self.compliance / (sim.step_context.stage_dt * sim.step_context.stage_dt))
        joints = self.solver.joints(sim, (jp, jc), np.zeros((sim.model.n_joints, 6)), sim.alpha_tilde)
        dx, _, _, _ = self.solver.solve(sim, joints, NormalRows(fa, fb, ga, gb, c, alpha, np.zeros(c.size)))
        f = sim.free_index
        sim.positions[f] += dx[:, :3]
        sim.orientations[f] = quat.integrate_body(sim.orientations[f], dx[:, 3:])
        if self.options.velocity:
            self._velocity(sim, jp, jc, fa, fb, ga, gb, c < 0.0)

    def _velocity(self, sim, jp, jc, fa, fb, ga, gb, closing) -> None:
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
        jv = rows_times(fa, fb, ga, gb, vel)  # [m/s] relative normal velocity, + apart
        if not np.any(jv < 0.0):
            return
        # velocity-level rows: compliance α/Δt (impulses in N·s), the joints' relative velocity held
        h = sim.step_context.stage_dt
        joints = self.solver.joints(sim, (jp, jc), np.zeros((sim.model.n_joints, 6)), sim.alpha_tilde * h)
        normals = NormalRows(fa, fb, ga, gb, jv, np.full(fa.size, self.compliance / h), np.zeros(fa.size))
        dv, _, _, _ = self.solver.solve(sim, joints, normals)
        sim.velocities[f] += dv[:, :3]
        sim.angular_velocities[f] += dv[:, 3:]
