"""What the direct strategies (active set, semismooth, schur) share: their rows' compliances
(:class:`RowCompliances`), the joints' sparse pattern and one joint-and-contact direct solve
(:class:`DirectSolve`), the rows' geometry at the iterate with their compliances (:func:`row_geometry`), two
friction rows per contact (:func:`friction_rows`), the damped step (:func:`damp`) and the joints' merit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core import quaternion as quat
from ..contact_kkt import ActiveSetRules, FrictionRows, JointBlock, JointRows, NormalRows, solve_joints_and_contacts
from .base import check_compliance, check_count

# rows closer than this fraction of R start active in the direct solve ...
DIRECT_TOUCH = 0.05
# ... and enter it when the step takes them deeper than this fraction
DIRECT_ENTER = 0.005


@dataclass(frozen=True, kw_only=True)
class RowCompliances:
    """The direct strategies' row compliances [m/N]: ``compliance`` of the contact rows (keeps nearly coincident
    rows from a singular system), ``collider_compliance`` of the rows against colliders (None: ``compliance``),
    ``friction_compliance`` of the friction rows (a stack of coils stuck to each other is nearly redundant with the
    joints; 1e-4 keeps its LU accurate, see benchmarks/slinky.py)."""

    compliance: float = 1e-7
    collider_compliance: float | None = None
    friction_compliance: float = 1e-7

    def __post_init__(self):
        name = type(self).__name__
        for field_name in ("compliance", "collider_compliance", "friction_compliance"):
            check_compliance(name, field_name, getattr(self, field_name))

    @property
    def collider(self) -> float:
        """The collider rows' compliance [m/N]."""
        return self.compliance if self.collider_compliance is None else float(self.collider_compliance)


class DirectStrategy:
    """What the direct strategies share: their options (:class:`RowCompliances` and more), the rows' geometry, the
    solve log and the batch of every row (``all_rows``, made in :meth:`begin_step`; ``follow_colliders``: the active
    set's plain collider rows of fast segments follow the iterate). The Newton methods (``joint_point_rows``) solve
    the joints with their rows while there are any."""

    joint_point_rows = False
    direct = True
    follow_colliders = False

    def __init__(self, options, geometry, log):
        self.options = options
        self.geometry = geometry
        self.log = log
        self.all_rows: dict = {}
        self._first_solve = True

    @property
    def post_defaults(self) -> tuple[float, int, int]:
        return self.options.compliance, 8, 0

    def solves_joints(self, rows) -> bool:
        return self.joint_point_rows and rows.n_contacts > 0

    def gap_batches(self, rows) -> list[dict]:
        return [self.all_rows] if rows.n_contacts else []

    def row_compliance(self, env: np.ndarray) -> np.ndarray:
        return row_compliance(self.options, env)

    def begin_step(self, sim, rows) -> None:
        k = rows.n_contacts
        self.all_rows = self.geometry.batch(
            np.arange(k), np.ones(k), direct=True, follow_colliders=self.follow_colliders
        )
        self._first_solve = True

    def end_step(self, sim, rows) -> None:
        """Nothing to record."""


@dataclass(frozen=True, kw_only=True)
class NewtonOptions(RowCompliances):
    """The Newton methods' options: the rows' compliances, ``line_search``: halvings of a Newton step at most (0:
    full steps), ``friction_rounds``: solves per Newton step at most in which the friction rows settle."""

    line_search: int = 6
    friction_rounds: int = 8

    def __post_init__(self):
        super().__post_init__()
        check_count(type(self).__name__, "line_search", self.line_search, 0)
        check_count(type(self).__name__, "friction_rounds", self.friction_rounds, 1)


def check_max_move(owner: str, max_move) -> None:
    if max_move is not None and not (np.isfinite(max_move) and max_move > 0.0):
        raise ValueError(f"{owner}.max_move must be finite and > 0 m, got {max_move}")


class DirectSolve:
    """Joint-and-contact direct solves (:func:`solver.contact.contact_kkt.solve_joints_and_contacts`) for a
    Simulator's joints: their sparse pattern is built anew when its model changed (remove_joints: a fracture, a
    hand letting go)."""

    def __init__(self, rounds: int = 8, grow_rounds: int = 0):
        self.rounds, self.grow_rounds = int(rounds), int(grow_rounds)
        self._joint_rows: JointRows | None = None
        self._joint_rows_model = None

    def joint_rows(self, sim) -> JointRows:
        if self._joint_rows is None or self._joint_rows_model is not sim.model:
            self._joint_rows = JointRows(sim.free_index.size, *sim.step_context.joints.segment_sides)
            self._joint_rows_model = sim.model
        return self._joint_rows

    def joints(self, sim, jac, rhs, alpha) -> JointBlock:
        """The Simulator's joints with their Jacobians ``jac`` = (jp, jc), C + α̃λ ``rhs`` and α̃ ``alpha``."""
        return JointBlock(self.joint_rows(sim), jac[0], jac[1], rhs, alpha)

    def solve(self, sim, joints: JointBlock, normals: NormalRows, friction=None, stats=None, **rules):
        """The solve for ``joints`` and the contact rows, with the free segments' M⁻¹, these rounds and the other
        :class:`~solver.contact.contact_kkt.ActiveSetRules` ``rules``."""
        with_rounds = ActiveSetRules(rounds=self.rounds, grow_rounds=self.grow_rounds, **rules)
        return solve_joints_and_contacts(
            joints, 1.0 / sim.step_context.mass_diag, normals, friction, with_rounds, stats
        )


def row_compliance(options: RowCompliances, env: np.ndarray) -> np.ndarray:
    """Each row's compliance [m/N] by the collider mask ``env``."""
    return np.where(env, options.collider, options.compliance)


def damp(geo, sim, limit, log, dx, dl_joint, dl_c, dl_t):
    """Damped Newton: a solve whose linearisation moves some segment's surface farther than ``limit`` [m] (None:
    no limit) is scaled down to that (positions, λ and the contact impulses alike; counted in ``log``)."""
    if limit is None:
        return dx, dl_joint, dl_c, dl_t
    reach = np.linalg.norm(dx[:, :3], axis=1) + (
        0.5 * geo.model.lengths[sim.free_index] + geo.radius[sim.free_index]
    ) * np.linalg.norm(dx[:, 3:], axis=1)
    far = float(reach.max(initial=0.0))
    if far > limit:
        scale = limit / far
        dx, dl_joint, dl_c, dl_t = dx * scale, dl_joint * scale, dl_c * scale, dl_t * scale
        log.damped_solves += 1
    return dx, dl_joint, dl_c, dl_t


def move(sim, dx, dl_joint) -> None:
    """Apply a joint-and-contact step: λ += Δλ, the free segments' poses by Δz."""
    sim.lam += dl_joint
    f = sim.free_index
    sim.positions[f] += dx[:, :3]
    sim.orientations[f] = quat.integrate_body(sim.orientations[f], dx[:, 3:])


def joint_merit(sim) -> float:
    """The joints' translational residual ‖C + α̃λ‖∞ [m] (the line search's share of the joints: the rotational
    rows' α̃λ of a soft rope reach 1e3 at rest and would hide the contacts' part)."""
    return float(np.max(np.abs(sim.constraint_residual()[:, :3]), initial=0.0))


def take(sim, rows, start, step, newton) -> None:
    """Set the iterate to ``start`` plus ``step`` times the Newton step ``newton`` = (Δz, Δλ_joints, λ_n, Δλ_n,
    (λ_t, Δλ_t, basis) or None): pose, joint and contact impulses."""
    dx, dl_joint, lam, dl_c, lam_t = newton
    f = sim.free_index
    sim.positions[...], sim.orientations[...], sim.lam[...] = start
    sim.lam += step * dl_joint
    sim.positions[f] += step * dx[:, :3]
    sim.orientations[f] = quat.integrate_body(sim.orientations[f], step * dx[:, 3:])
    rows.normal_impulse = lam + step * dl_c  # unclamped: the pose moved by all of Δλ
    if lam_t is not None:
        lt0, dlt, basis = lam_t
        lt = lt0 + step * dlt
        rows.tangent_impulse = lt[:, 0, None] * basis[0] + lt[:, 1, None] * basis[1]


def row_alphas(sim, b, options: RowCompliances):
    """The rod–rod rows' α̃ and every normal row's α̃ (colliders: ``collider_compliance``) [m/(N·s²)]."""
    h = sim.step_context.stage_dt
    at = options.compliance / (h * h)
    return at, np.where(b["env"], options.collider / (h * h), at)


def row_geometry(geo, rows, sim, b, options: RowCompliances):
    """The rows of ``b`` at the current pose, for the semismooth and schur methods: both sides' body rotations,
    body-frame and world points, the normals, the gaps C [m] (collider rows by the collider's signed distance),
    the rod–rod rows' compliance α̃ and every normal row's α̃ (colliders: ``collider_compliance``) [m/(N·s²)]."""
    rot_a, rot_b, za, zb, pa, pb = geo.points(sim, b)
    n = geo.normals(sim, b, za, zb, pa, pb)
    c = np.einsum("ij,ij->i", n, pa - pb) - rows.rest
    sel, c_col, n = geo.collider_geometry(b, pa, n)
    c[sel] = c_col
    at, alpha_n = row_alphas(sim, b, options)
    return rot_a, rot_b, za, zb, pa, pb, n, c, at, alpha_n


def friction_rows(geo, rows, sim, b, geometry, at, friction_compliance, along_axis=False):
    """Two tangential rows per contact for the direct solve: C_t, the relative displacement of the two
    material points since the start of the step along t₁ (the slip direction, so the box is the cone
    for a sliding contact) and t₂ = n × t₁. Returns the rows and the basis (t₁, t₂).

    Between two segments the material points are where the surfaces touch, r_a and r_b off the axes
    along ∓n: two coils turning together (a stack of coils tipping over) do not slip there, while
    their axis points do (ω × (r_a + r_b) n), so friction at the axes would lock a stack against
    tipping. Against a collider the axis point is kept: at the surface point the friction torque
    about the axis (μ λ_n r) makes the active set of a rod sliding down a slope cycle and the rod
    stop (docs/notes/contacts.md); the price is that a rod cannot roll on a collider without slipping. ``geometry``:
    (rot_a, rot_b, za, zb, pa, pb, n) of the rows at the iterate (``RowGeometry.points``, ``normals``)."""
    rot_a, rot_b, za, zb, pa, pb, n = geometry
    env = b["env"]
    rad_a = np.where(env, 0.0, geo.radius[b["sa"]])
    rad_b = np.where(env, 0.0, geo.radius[b["sb"]])
    off_a = geo.surface_offsets(za, -rad_a, np.einsum("kji,kj->ki", rot_a, n))  # body frames (k, 3)
    off_b = geo.surface_offsets(zb, rad_b, np.einsum("kji,kj->ki", rot_b, n))
    start_a = b["x0_a"] + np.einsum("kij,kj->ki", b["r0_a"], off_a)
    start_b = np.where(env[:, None], geo.anchors(b, pb), b["x0_b"] + np.einsum("kij,kj->ki", b["r0_b"], off_b))
    rel = (pa - rad_a[:, None] * n - start_a) - (pb + rad_b[:, None] * n - start_b)
    tang = rel - n * np.einsum("ij,ij->i", rel, n)[:, None]
    slip = np.sqrt(np.einsum("ij,ij->i", tang, tang))
    # no slip yet: any tangent (the axis least along n crossed with n)
    helper = np.eye(3)[np.argmin(np.abs(n), axis=1)]
    perp = np.cross(n, helper)
    perp /= np.linalg.norm(perp, axis=1)[:, None]
    moving = slip > 1e-12 * rows.rest
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
        lam_t.append(np.einsum("ij,ij->i", t, rows.tangent_impulse))
    c_t, lam_t = np.stack(c_t, axis=1), np.stack(lam_t, axis=1)
    # a sliding row keeps sliding against its slip (t₁ turns with it; t₂ along the old impulse)
    sliding = np.where(
        rows.sliding != 0, np.where(moving[:, None] & (np.arange(2) == 0), -1, np.sign(lam_t)), 0
    ).astype(np.int8)
    alpha = np.full(c_t.shape, max(at, friction_compliance / (sim.step_context.stage_dt * sim.step_context.stage_dt)))
    rows = FrictionRows(np.stack(ga, axis=1), np.stack(gb, axis=1), c_t + alpha * lam_t, alpha, lam_t, rows.mu, sliding)
    return rows, (t1, t2)
