"""Gauss–Seidel on the contacts (``method="gauss_seidel"``, the default): one non-linear Gauss–Seidel pass over the
rows per sweep (Deul Eqs. 20, 21 with the two segments' masses), Coulomb friction at the position level (seed
002 §7, Macklin et al. 2014, here in XPBD form): the relative tangential motion of the two material points over
the step is a second constraint whose accumulated impulse is clamped to the cone ``|λ_t| ≤ μ λ_n`` (inside it the
points stick, on it they slide). Rows are coloured once per step so that no two rows of a colour share a free
segment; a sweep solves each colour at once (vectorised), Gauss–Seidel in a multicolour order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..geometry import RowGeometry
from ..rows import StepRows
from .base import SolveLog, check_compliance, check_count


@dataclass(frozen=True, kw_only=True)
class GaussSeidelOptions:
    """``compliance`` [m/N] of the normal rows (0: rigid); ``sweeps``: Gauss–Seidel sweeps over the rows per
    ``project`` call; ``max_colours``: colours per sweep at most (each costs a few dozen numpy calls), rows beyond
    them are averaged (Jacobi) in the last; ``pre_sweeps``: sweeps in ``begin_step``, which project the prediction
    out of the contacts before the first joint solve (otherwise every step starts g Δt² deep in a floor, and the
    first KKT solve, which does not see the contacts, spreads that error along the rods)."""

    compliance: float = 0.0
    sweeps: int = 1
    max_colours: int = 32
    pre_sweeps: int = 0

    def __post_init__(self):
        check_compliance(type(self).__name__, "compliance", self.compliance, positive=False)
        name = type(self).__name__
        check_count(name, "sweeps", self.sweeps, 1)
        check_count(name, "max_colours", self.max_colours, 1)
        check_count(name, "pre_sweeps", self.pre_sweeps, 0)


class GaussSeidel:
    """Gauss–Seidel sweeps over coloured batches of rows (:class:`GaussSeidelOptions`)."""

    joint_point_rows = False
    direct = False

    def __init__(self, options: GaussSeidelOptions, geometry: RowGeometry, log: SolveLog):
        self.options = options
        self.geometry = geometry
        self.log = log
        self.batches: list[dict] = []
        self.alpha_tilde = 0.0

    @property
    def post_defaults(self) -> tuple[float, int, int]:
        return 1e-7, 8, 0

    def solves_joints(self, rows: StepRows) -> bool:
        return False

    def gap_batches(self, rows: StepRows) -> list[dict]:
        return self.batches

    def row_compliance(self, env: np.ndarray) -> np.ndarray:
        return np.full(env.size, self.options.compliance)

    @property
    def colours(self) -> list[np.ndarray]:
        return [b["idx"] for b in self.batches]

    def begin_step(self, sim, rows: StepRows) -> None:
        h = sim.step_context.stage_dt
        self.alpha_tilde = self.options.compliance / (h * h)
        colours, share = self.colour(rows.sa, rows.sb)
        self.batches = [self.geometry.batch(idx, share[idx]) for idx in colours]
        for _ in range(self.options.pre_sweeps):
            for batch in self.batches:
                self.project_batch(sim, rows, batch)

    def project(self, sim, rows: StepRows) -> float:
        """Gauss–Seidel sweep(s) over the rows; returns the largest ``|C + α̃λ|`` met (0 if none)."""
        residual = 0.0
        for _ in range(self.options.sweeps):
            self.before_sweep(sim, rows)
            for batch in self.batches:
                residual = max(residual, self.project_batch(sim, rows, batch))
        return residual

    def before_sweep(self, sim, rows: StepRows) -> None:
        """Nothing here (the tree response applies the normal rows through the joints' factorisation first)."""

    def end_step(self, sim, rows: StepRows) -> None:
        """Nothing to record."""

    def colour(self, sa, sb) -> tuple[list[np.ndarray], np.ndarray]:
        """Split contacts into colours of contacts with no free segment in common: rounds of a
        randomised maximal matching (a contact joins the colour when it has the lowest random
        priority at every free segment it touches), vectorised over contacts. The last of at most
        ``max_colours`` colours takes all remaining contacts, solved Jacobi-style with averaging."""
        k = sa.size
        share = np.ones(k)
        if k == 0:
            return [], share
        n = self.geometry.model.n_segments
        free = ~self.geometry.model.pinned
        a = np.where(free[sa], sa, n)  # pinned sides and colliders never conflict
        b = np.where((sb >= 0) & free[np.maximum(sb, 0)], sb, n)
        prio = np.random.default_rng(0).permutation(k)
        left = np.arange(k)
        colours: list[np.ndarray] = []
        while left.size:
            if len(colours) == self.options.max_colours - 1:
                count = np.bincount(a[left], minlength=n + 1) + np.bincount(b[left], minlength=n + 1)
                count[n] = 1
                share[left] = 1.0 / np.maximum(count[a[left]], count[b[left]])
                colours.append(left)
                break
            best = np.full(n + 1, k, np.int64)
            np.minimum.at(best, a[left], prio[left])
            np.minimum.at(best, b[left], prio[left])
            win = ((best[a[left]] == prio[left]) | (a[left] == n)) & ((best[b[left]] == prio[left]) | (b[left] == n))
            colours.append(left[win])
            left = left[~win]
        return colours, share

    def project_batch(self, sim, rows: StepRows, b) -> float:
        """One Gauss–Seidel pass over the rows of batch ``b`` (Eqs. 20, 21 with Coulomb friction); returns the
        largest ``|C + α̃λ|`` of its rows [m]."""
        geo = self.geometry
        idx = b["idx"]
        rot_a, rot_b, za, zb, pa, pb = geo.points(sim, b)
        n = geo.normals(sim, b, za, zb, pa, pb)
        at = self.alpha_tilde
        lam = rows.normal_impulse[idx]
        c = np.einsum("ij,ij->i", n, pa - pb) - rows.rest[idx]
        na_body, nb_body = np.einsum("kji,kj->ki", rot_a, n), np.einsum("kji,kj->ki", rot_b, n)
        w_n = geo.inverse_mass(b["inv_m_a"], b["inv_i_a"], za, na_body) + geo.inverse_mass(
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
        start_b = np.where(b["env"][:, None], geo.anchors(b, pb), b["x0_b"] + zb[:, None] * b["r0_b"][:, :, 2])
        rel = (pa - start_a) - (pb - start_b)
        tang = rel - n * np.einsum("ij,ij->i", rel, n)[:, None]
        t_dir = tang / np.maximum(np.sqrt(np.einsum("ij,ij->i", tang, tang)), 1e-300)[:, None]
        w_t = geo.inverse_mass(
            b["inv_m_a"], b["inv_i_a"], za, np.einsum("kji,kj->ki", rot_a, t_dir)
        ) + geo.inverse_mass(b["inv_m_b"], b["inv_i_b"], zb, np.einsum("kji,kj->ki", rot_b, t_dir))
        lt_old = rows.tangent_impulse[idx]
        lt = lt_old - tang / np.maximum(w_t, 1e-300)[:, None]
        lt_len = np.sqrt(np.einsum("ij,ij->i", lt, lt))
        lt = lt * np.minimum(1.0, rows.mu[idx] * lam_new / np.maximum(lt_len, 1e-300))[:, None]
        # Jacobi with averaging where a colour holds several contacts of one segment (share < 1): each
        # moves it by its share of the correction, and its λ grows by the same share.
        share = b["share"]
        rows.normal_impulse[idx] = lam + share * dlam
        rows.tangent_impulse[idx] = lt_old + share[:, None] * (lt - lt_old)
        impulse = share[:, None] * (n * dlam[:, None] + (lt - lt_old))
        geo.apply(sim, b["sa"], rot_a, b["inv_m_a"], b["inv_i_a"], za, impulse, b["merge_a"])
        if not b["all_env"]:
            body = ~b["env"]
            geo.apply(
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
