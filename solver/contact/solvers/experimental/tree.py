"""Experimental: Gauss–Seidel with the normal rows applied through the joints' tree factorisation first
(``TreeResponse``). Kept for comparison; the add-on and the benchmarks use the other strategies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ....core import quaternion as quat
from ...rows import StepRows, rows_times
from ..gauss_seidel import GaussSeidel, GaussSeidelOptions


@dataclass(frozen=True, kw_only=True)
class TreeResponseOptions(GaussSeidelOptions):
    """As :class:`~solver.contact.solvers.gauss_seidel.GaussSeidelOptions`; each sweep first applies every normal
    row through the tree's factorisation (:meth:`TreeResponse.before_sweep`)."""


class TreeResponse(GaussSeidel):
    """Experimental: Gauss–Seidel sweeps, each after one Jacobi step of the normal rows through the tree's KKT
    factorisation of the iteration (``method="tree"``)."""

    def begin_step(self, sim, rows: StepRows) -> None:
        super().begin_step(sim, rows)
        self.all_rows = self.geometry.batch(np.arange(rows.n_contacts), np.ones(rows.n_contacts))

    def before_sweep(self, sim, rows: StepRows) -> None:
        """All normal contact rows at once, applied through the tree's KKT factorisation of this
        iteration (Eq. 22 with the contact forces as right-hand side, as ``loop_closing`` does for
        loops), so the joints stay satisfied to first order instead of pulling the contacts back in the
        next direct solve. Each contact's Δλ from its local inverse mass is rescaled by the ratio of
        the gap change it asked for to the one the tree predicts (a Jacobi step on J H⁻¹ Jᵀ with a
        secant diagonal), then applied by a second solve."""
        joints = sim.step_context.joints
        if rows.n_contacts == 0 or sim.solver != "kkt" or not joints.factored:
            return
        geo, b = self.geometry, self.all_rows
        rot_a, rot_b, za, zb, pa, pb = geo.points(sim, b)
        n = geo.normals(sim, b, za, zb, pa, pb)
        at = self.alpha_tilde
        lam = rows.normal_impulse
        c = np.einsum("ij,ij->i", n, pa - pb) - rows.rest
        na_body, nb_body = np.einsum("kji,kj->ki", rot_a, n), np.einsum("kji,kj->ki", rot_b, n)
        w = geo.inverse_mass(b["inv_m_a"], b["inv_i_a"], za, na_body) + geo.inverse_mass(
            b["inv_m_b"], b["inv_i_b"], zb, nb_body
        )
        dlam = np.maximum(lam - (c + at * lam) / np.maximum(w + at, 1e-300), 0.0) - lam
        fa, fb, ga, gb = geo.free_gradients(sim, b, n, za, zb, na_body, nb_body)
        zero_joint = np.zeros_like(sim.lam)

        def respond(d):
            f = np.zeros((sim.free_index.size, 6))
            for g, fs in ((ga, fa), (gb, fb)):
                ok = fs >= 0
                np.add.at(f, fs[ok], g[ok] * d[ok, None])
            x, l_joint = joints.solve(f, zero_joint)
            return x, l_joint, rows_times(fa, fb, ga, gb, x)

        _, _, dc = respond(dlam)
        wanted = w * dlam  # the gap change the local step asked for
        scale = np.where(
            np.abs(dc) > 1e-12 * np.maximum(np.abs(wanted), 1e-300),
            np.clip(wanted / np.where(dc == 0.0, 1.0, dc), 0.0, 1e3),
            1.0,
        )
        dlam = np.maximum(dlam * scale, -lam)
        x, l_joint, _ = respond(dlam)
        rows.normal_impulse = lam + dlam
        sim.lam += l_joint
        f = sim.free_index
        sim.positions[f] += x[:, :3]
        sim.orientations[f] = quat.integrate_body(sim.orientations[f], x[:, 3:])
