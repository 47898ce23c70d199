"""What one step's contact solve did (:class:`ContactReport`), made by ``Contacts.end_step``."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

log = logging.getLogger("solver.contact")


@dataclass
class ContactReport:
    """What one step's contact solve did (``Contacts.last_report``, ``Contacts.reports``).

    ``rows``: contacts generated for the step; ``active``: of them pushing (λ_n > 0) at its end;
    ``iterations``: solver iterations (``project`` calls) in the step; ``hit_cap``: they reached the
    Simulator's ``max_iterations``; ``residual``: the largest of the joints' ``‖C + α̃λ‖∞`` and the contact
    residual of the last iteration [m]; ``solves``/``rounds``: direct solves and their active-set rounds in
    total (0 for Gauss–Seidel); ``settled``: every direct solve's active set settled (the last
    round changed no row's state); ``max_penetration`` [m]: deepest ``−C`` at the end of the step;
    ``sticking``/``sliding``: pushing contacts with friction whose tangential impulse is inside the Coulomb
    cone / on it; ``converged``: the step met the Simulator's tolerance (or stopped before the cap) with every
    active set settled; ``xpbd``: the schur method found its Newton matrix indefinite in the step (a stack unstable
    within it) or had not converged in half the iterations, and solved the step with XPBD's iteration instead.
    A step that did not converge is also logged (logger ``solver.contact``, warning)."""

    rows: int
    active: int
    iterations: int
    hit_cap: bool
    residual: float
    solves: int
    rounds: int
    settled: bool
    max_penetration: float
    sticking: int
    sliding: int
    converged: bool
    xpbd: bool = False


def step_report(sim, rows, solves, iterations: int, residual: float, max_penetration: float, direct: bool):
    """The :class:`ContactReport` of a step with ``rows`` (:class:`~solver.contact.rows.StepRows`), its direct
    ``solves`` ((rounds, converged) each), ``iterations`` and ``residual``; ``direct``: the friction states are the
    rows' ``sliding`` (else the tangential impulse on the cone). Logged when the step did not converge."""
    settled = all(conv for _, conv in solves)
    hit_cap = iterations >= sim.max_iterations
    pushing = (rows.normal_impulse > 0.0) & (rows.mu > 0.0)
    if direct:
        on_cone = np.any(rows.sliding != 0, axis=1)
    else:
        lt = np.linalg.norm(rows.tangent_impulse, axis=1) if rows.n_contacts else np.zeros(0)
        on_cone = lt >= (1.0 - 1e-6) * rows.mu * rows.normal_impulse
    report = ContactReport(
        rows=rows.n_contacts,
        active=rows.n_active,
        iterations=iterations,
        hit_cap=hit_cap,
        residual=float(residual),
        solves=len(solves),
        rounds=int(sum(r for r, _ in solves)),
        settled=settled,
        max_penetration=max_penetration,
        sticking=int(np.count_nonzero(pushing & ~on_cone)),
        sliding=int(np.count_nonzero(pushing & on_cone)),
        converged=settled and (not hit_cap or residual <= sim.tolerance),
        xpbd=rows.xpbd,
    )
    if not report.converged:
        log.warning(
            "contact step at t = %.6g s did not converge: %d iterations (cap %d), residual %.3g "
            "(tolerance %.3g), active sets settled: %s, %d rows, deepest penetration %.3g m",
            sim.time,
            report.iterations,
            sim.max_iterations,
            report.residual,
            sim.tolerance,
            settled,
            report.rows,
            report.max_penetration,
        )
    return report
