"""Unilateral contacts with Coulomb friction: rod segments against colliders and against each other.

A :class:`Contacts` object is a Gauss–Seidel constraint set for ``Simulator.gs_constraints``
(Deul Algorithm 1, lines 10–14): ``begin_step`` generates the contacts once per step (line 13 of
seed 002's Algorithm 1), ``project`` runs one non-linear Gauss–Seidel sweep (Eqs. 21/20) and
``end_step`` records statistics (and, with ``post_stabilise``, removes the overlaps left from the
positions only).

Every segment is a capsule: its axis (local z over ±l/2) swept by the radius ``max(radii)`` (a leaf
plate by its half thickness). A contact joins an axis point of segment ``a`` to an axis point of
segment ``b`` (the two closest points, found again in every sweep; in the direct solve a joint point's
row follows its closest point over a joint of b's rod onto the next segment), to a fixed world point on
a collider (a material point of ``a``), or to a collider's sharp edge (``Collider.edges``: the closest
points of a's axis and the edge, found again in every solve), with a normal n from b to a (a collider's
frozen for the step; a segment pair's along the closest points unless that flipped, and at a joint point
within the chain's normal cone there; an edge's that of the wedge its two faces make, while the rod is
clear of it) and a rest distance R:

    C = n·(p_a − p_b) − R ≥ 0,   λ_n ≥ 0                                    (unilateral)

Friction is Coulomb at the position level (seed 002 §7 uses Macklin et al. 2014; here in XPBD form):
the relative tangential motion of the two material points over the step is a second constraint whose
accumulated multiplier is clamped to the cone ``|λ_t| ≤ μ λ_n``: inside the cone the points stick
(static friction), on it they slide against a friction impulse μ λ_n (kinetic). In the direct solve
(``response="direct"``) the two material points of a segment pair are its touching surface points, so
segments turning together do not slip; the Gauss–Seidel sweeps (and every collider contact) use the
axis points, which resist a common turn of two touching segments, and rolling on a collider.

Contacts are coloured once per step so that no two contacts of a colour share a free segment; a sweep
solves each colour at once (vectorised), which is Gauss–Seidel in a multicolour order.

This module holds the parameters and the step hooks (``begin_step``, ``project``, ``end_step``) and
the colouring; :class:`Contacts` takes detection, row geometry, the responses and post-stabilisation
from its bases in ``candidates``, ``rows``, ``response`` and ``post_stabilise`` (post-stabilisation builds on
the responses, the responses on the rows), which share the state declared in ``state``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core import quaternion as quat
from .candidates import EDGE, FIXED, SLIDE_B, SLIDE_BOTH, ContactCandidates
from .colliders import Collider
from .post_stabilise import PostStabilisation
from .state import step_length

log = logging.getLogger("solver.contact")


def _empty(n: int, *tail) -> np.ndarray:
    return np.zeros((n,) + tail)


@dataclass
class ContactReport:
    """What one step's contact solve did (``Contacts.last_report``, ``Contacts.reports``).

    ``rows``: contacts generated for the step; ``active``: of them pushing (λ_n > 0) at its end;
    ``iterations``: solver iterations (``project`` calls) in the step; ``hit_cap``: they reached the
    Simulator's ``max_iterations``; ``residual``: the largest of the joints' ``‖C + α̃λ‖∞`` and the contact
    residual of the last iteration [m]; ``solves``/``rounds``: direct solves and their active-set rounds in
    total (0 for the Gauss–Seidel responses); ``settled``: every direct solve's active set settled (the last
    round changed no row's state); ``max_penetration`` [m]: deepest ``−C`` at the end of the step;
    ``sticking``/``sliding``: pushing contacts with friction whose tangential impulse is inside the Coulomb
    cone / on it; ``converged``: the step met the Simulator's tolerance (or stopped before the cap) with every
    active set settled; ``xpbd``: the schur method found its Newton matrix indefinite in the step (a stack unstable
    within it) or had not converged in half the iterations, and solved the step with XPBD's iteration instead
    (``ContactResponse._restart_as_xpbd``). A step
    that did not converge is also logged (logger ``solver.contact``, warning)."""

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


class Contacts(ContactCandidates, PostStabilisation):
    """Contact and friction constraints of one model (a ``Simulator.gs_constraints`` element).

    Parameters: ``colliders`` (sequence of :class:`~solver.contact.colliders.Collider`); ``friction`` μ for
    contacts with colliders whose own ``friction`` is None; ``self_collision`` (bool, or an (n,) mask
    of the segments that take part); ``self_friction`` μ between segments (default ``friction``);
    ``margin`` [m]: contacts are generated for gaps below this (default: per segment, its radius plus
    its predicted displacement in the step); ``exclude_hops``: segment pairs joined by at most this
    many joints never self-collide (default ``1 + ceil(2 max r / min l)``, so neighbours whose capsules
    overlap at rest are skipped); ``compliance`` [m/N] of the normal constraint (0: rigid); ``sweeps``
    Gauss–Seidel sweeps over the contacts per ``project`` call; ``max_colours``: colours per sweep at
    most (each costs a few dozen numpy calls); contacts beyond them are averaged (Jacobi) in the last.
    ``self_contacts``: ``"pairs"`` (one contact per pair of capsules whose gap is below the margin) or
    ``"points"`` (one contact per physical contact point: every joint point against the closest point of
    the other rod's axis, a local minimum along it; two joint points closer than a tenth of a radius
    along the axis are one vertex–vertex contact; two segments crossing with both closest points
    interior; margin: ``margin`` (default a quarter of the two radii) plus the two points' predicted
    relative motion, so coils stacked two apart make no contacts). ``response``: ``"local"`` (Eq. 21 with
    the two segments' masses), ``"tree"`` (normal rows applied through the tree's KKT factorisation),
    ``"direct"`` (joints, contact normal rows and two friction rows per contact in one sparse direct
    solve per sweep, :mod:`solver.contact.contact_kkt`; no Gauss–Seidel pass); ``direct_compliance`` [m/N]
    of the contact rows in that solve (keeps nearly coincident rows from a singular system),
    ``collider_compliance`` [m/N] of its rows against colliders (default ``direct_compliance``),
    ``friction_compliance`` [m/N] of its friction rows (a stack of coils stuck to each other is nearly
    redundant with the joints; 1e-4 keeps its LU accurate, see benchmarks/slinky.py); ``direct_rounds``:
    active-set solves per call at most, then up to ``direct_grow_rounds`` more in which rows only enter
    (:func:`solver.contact.contact_kkt.solve_joints_and_contacts`). ``solve_log`` lists (rounds, converged) of
    every direct solve; ``friction_log`` the rounds of each that checked sticking rows against the Coulomb
    box (0: the normal active set never settled, so no friction row started sliding).
    ``direct_method``: ``"active_set"`` (the above) or ``"semismooth"``: one semismooth Newton step on the
    Alart–Curnier conditions per iteration instead (``ContactResponse._project_semismooth``), with one row per
    joint point against a collider; ``line_search``: halvings of its Newton step at most (0: full steps);
    ``friction_rounds``: solves per Newton step at most in which its friction rows settle their states with the
    normal states held (stick → slide over the Coulomb bound, slide → stick where friction would push along the
    slip, each row once); with ``"schur"``, disk QPs per Newton step at most in Newton's method on Coulomb's bound.
    ``direct_method="schur"``: per Newton iteration the joints' step and the contact rows (normals, friction)
    exactly for the linearisation, by block elimination over the joints' tree factorisation: the dense contact
    Schur complement S = G H⁻¹ Gᵀ + α̃ (one tree solve per row) and the contact impulses from the convex QP
    min ½ yᵀ S y + bᵀ y, y_n ≥ 0, |y_t| ≤ μ λ̄_n (a disk per contact; without friction a primal active-set method
    that terminates and cannot cycle, :mod:`solver.contact.box_qp`; with it :mod:`solver.contact.disk_qp`, exact
    to rounding) and Coulomb's bound λ̄_n = y_n by Newton's method on it (``ContactResponse._project_schur``), rows
    as the semismooth method's.
    ``geometric_stiffness`` (``"schur"`` only, default True): its Newton step solves the implicit step's momentum
    balance with the joints' geometric stiffness lumped into H's mass block and the rod–rod rows' lateral curvature
    by the Woodbury identity (``ContactResponse._project_schur``, ``_lateral_woodbury``); a step whose Newton
    matrix is indefinite (a stack unstable within the step) or that has not converged in half the Simulator's
    ``max_iterations`` is solved with Deul's step instead and reported (``ContactReport.xpbd``); False: Deul's
    joint step (Eq. 22) always, whose taut rope overshoots at the links where it leaves a collider.
    Measured (benchmarks/contact_closed_forms.py, Δt = 1/200 s): it meets the capstan's 12 hold and slide targets
    (creep ≤ 52 µm in 0.5 s; slides within 1.5 % of the capstan equation), where the other methods cycle, with none
    of 1609 steps at the cap over all the benchmark's runs (median 2 iterations, at most 5); the friction of a
    sliding row is on the Coulomb cone along its slip (docs/notes/contacts.md gives each run; with
    ``geometric_stiffness=False`` and the per-tangent friction box 8 of 12, 6 % of the steps at the cap). Its Newton
    steps are kept by a line search on two measures, the residual and the incremental potential
    (``ContactResponse._backtrack``, ``line_search`` halvings at most), and a step that moves a segment by more
    than its radius starts from the step's start pose.
    A rope dropped at 10 m/s onto a cylinder or a box edge (benchmarks/contact_drop.py ``--method schur``, Δt 1/60
    and 1/200 s): no pass-through, at most 0.046 r deep, 1 of 156 steps at the cap; two rods crossing at 10 m/s
    with ``self_contacts="pairs"``: 5e-5 r deep, no step at the cap, frictionless or with μ 0.3.
    Measured (docs/notes/contacts.md): it converges where the active set needs its iteration cap on a
    frictionless rope over a cylinder, meets the inclined plane's closed forms and holds the capstan's rope at
    μ 0.5 over half a turn (37 µm in 2 s); the capstan's other runs fail (two more hold for 0.5 s only), it does
    not converge on a sliding rope, and edge rows (``Collider.edges``) under it threw a rod off a box.
    ``direct_max_move`` [m] (optional): a direct solve whose Newton step would move some segment's surface
    farther is scaled down to that distance (damped Newton; ``damped_solves`` counts them): far outside
    the linear regime a full step overshoots and feeds energy into the motion (docs/notes/contacts.md).
    ``post_stabilise``: after each step, overlaps the step's solves left deeper than ``post_tolerance``
    (0.02) radii plus the compliant sink of the row's load are removed from the positions only, once the
    step has taken its velocities (``end_step``; one joint-and-contact direct solve, needs the ``"kkt"``
    solver); ``post_overlap`` [m] is the deepest overlap it found in the last step. ``post_velocity``:
    the rows it closes also lose their relative velocity into each other (an inelastic velocity solve
    through the joints; without it a segment the step's solves left sinking keeps sinking at that speed
    in the next step, and post-stabilisation lifts it out again in every step).
    ``self_pairs`` ((k, 2) segment indices, ``self_contacts="points"`` only): candidate pairs present in
    every step whatever their distance (each joint point of one against the other's axis, where that is
    the closest point along the rod), e.g. a helix's neighbouring coils, which may close several radii
    within one step; their rows are refreshed from the iterate at every solve and cost nothing but size
    while apart (inactive).

    After a step: ``n_contacts``, ``n_active`` (λ_n > 0), ``max_penetration`` [m] (deepest
    ``−C`` over this step's contacts at the end of the step), ``normal_impulse`` λ_n [N·s²] per contact,
    ``last_report`` (:class:`ContactReport`: rows, iterations, penetration, sticking and sliding counts,
    convergence) and ``reports``, one per step since the set was made (``keep_reports``: at most that many,
    the latest; 0 keeps none).
    """

    def __init__(
        self,
        model,
        colliders: Sequence[Collider] = (),
        *,
        friction: float = 0.0,
        self_collision=False,
        self_friction: float | None = None,
        margin: float | None = None,
        exclude_hops: int | None = None,
        compliance: float = 0.0,
        sweeps: int = 1,
        max_colours: int = 32,
        pre_sweeps: int = 0,
        response: str = "local",
        self_contacts: str = "pairs",
        direct_compliance: float = 1e-7,
        friction_compliance: float = 1e-7,
        direct_rounds: int = 8,
        self_pairs=None,
        direct_grow_rounds: int = 0,
        collider_compliance: float | None = None,
        post_stabilise: bool = False,
        direct_max_move: float | None = None,
        post_velocity: bool = False,
        keep_reports: int = 100000,
        direct_method: str = "active_set",
        line_search: int = 6,
        friction_rounds: int = 8,
        geometric_stiffness: bool = True,
    ):
        self.model = model
        self.colliders = list(colliders)
        for i, c in enumerate(self.colliders):
            if not isinstance(c, Collider):
                raise ValueError(f"colliders[{i}] is not a Collider (got {type(c).__name__})")
        for name, mu in (("friction", friction), ("self_friction", self_friction)):
            if mu is not None and not (np.isfinite(mu) and mu >= 0.0):
                raise ValueError(f"{name} must be finite and ≥ 0, got {mu}")
        if margin is not None and not (np.isfinite(margin) and margin >= 0.0):
            raise ValueError(f"margin must be finite and ≥ 0 m, got {margin}")
        if not (np.isfinite(compliance) and compliance >= 0.0):
            raise ValueError(f"compliance must be finite and ≥ 0 m/N, got {compliance}")
        for name, count, low in (
            ("sweeps", sweeps, 1),
            ("max_colours", max_colours, 1),
            ("pre_sweeps", pre_sweeps, 0),
            ("direct_rounds", direct_rounds, 1),
            ("direct_grow_rounds", direct_grow_rounds, 0),
        ):
            if int(count) != count or count < low:
                raise ValueError(f"{name} must be an integer ≥ {low}, got {count}")
        self.max_colours = int(max_colours)
        self.pre_sweeps = int(pre_sweeps)
        if response not in ("local", "tree", "direct"):
            raise ValueError(f"response must be 'local', 'tree' or 'direct', got {response!r}")
        if self_contacts not in ("pairs", "points"):
            raise ValueError(f"self_contacts must be 'pairs' or 'points', got {self_contacts!r}")
        if collider_compliance is None:
            collider_compliance = direct_compliance
        for name, value in (
            ("direct_compliance", direct_compliance),
            ("friction_compliance", friction_compliance),
            ("collider_compliance", collider_compliance),
        ):
            if not (np.isfinite(value) and value > 0.0):
                raise ValueError(f"{name} must be finite and > 0 m/N, got {value}")
        self.response = response
        if direct_method not in ("active_set", "semismooth", "schur"):
            raise ValueError(f"direct_method must be 'active_set', 'semismooth' or 'schur', got {direct_method!r}")
        self.direct_method = direct_method
        if int(line_search) != line_search or line_search < 0:
            raise ValueError(f"line_search must be an integer >= 0 (halvings of the Newton step), got {line_search!r}")
        self.line_search = int(line_search)
        if int(friction_rounds) != friction_rounds or friction_rounds < 1:
            raise ValueError(f"friction_rounds must be an integer >= 1, got {friction_rounds!r}")
        self.friction_rounds = int(friction_rounds)
        self.geometric_stiffness = bool(geometric_stiffness)
        self._last_joint_lam = np.zeros((0, 6))
        self._xpbd_step = False
        self.self_contacts = self_contacts
        self.direct_compliance = float(direct_compliance)
        self.collider_compliance = float(collider_compliance)
        self.friction_compliance = float(friction_compliance)
        self.direct_touch = 0.05  # rows closer than this fraction of R start active in the direct solve
        self.direct_enter = 0.005  # ... and enter it when the step takes them deeper than this fraction
        self.direct_rounds = int(direct_rounds)
        self.post_stabilise = bool(post_stabilise)
        self.post_velocity = bool(post_velocity)
        if direct_max_move is not None and not (np.isfinite(direct_max_move) and direct_max_move > 0.0):
            raise ValueError(f"direct_max_move must be finite and > 0 m, got {direct_max_move}")
        self.direct_max_move = None if direct_max_move is None else float(direct_max_move)
        self.damped_solves = 0  # direct solves scaled down to direct_max_move
        self.post_tolerance = 0.02  # overlaps deeper than this fraction of the radius are post-stabilised
        self.post_overlap = 0.0  # [m] the deepest overlap before post-stabilisation, last step
        self.direct_grow_rounds = int(direct_grow_rounds)
        self.solve_log: list[tuple[int, bool]] = []  # (active-set rounds, converged) per direct solve
        self.friction_log: list[int] = []  # per direct solve with friction rows: rounds that checked the box
        self._joint_rows = None
        self._joint_rows_model = None
        self.friction = float(friction)
        self.self_friction = self.friction if self_friction is None else float(self_friction)
        self.margin = margin
        self.compliance = float(compliance)
        self.sweeps = int(sweeps)
        n = model.n_segments
        leaf = getattr(model, "leaf", None)
        r = model.radii.max(axis=1)
        self.radius = np.where(leaf, model.radii[:, 1], r) if leaf is not None else r
        free = ~model.pinned
        self._inv_mass = np.where(free, 1.0 / model.masses, 0.0)
        self._inv_inertia = np.where(free[:, None], 1.0 / model.inertia, 0.0)
        mask = np.broadcast_to(np.asarray(self_collision, dtype=bool), (n,))
        self._self_segments = np.flatnonzero(mask)
        if exclude_hops is None:
            exclude_hops = 1 + int(np.ceil(2.0 * self.radius.max() / model.lengths.min()))
        self.exclude_hops = int(exclude_hops)
        self._excluded = self._near_pairs(self.exclude_hops) if self._self_segments.size > 1 else np.zeros(0, np.int64)
        self._vertex_table()
        self._permanent_candidates(self_pairs)
        self._rng_seed = 0
        self.sa = self.sb = np.zeros(0, np.int64)
        self.normal_impulse = np.zeros(0)
        self._batches: list[dict] = []
        self.max_penetration = 0.0
        if int(keep_reports) != keep_reports or keep_reports < 0:
            raise ValueError(f"keep_reports must be an integer ≥ 0, got {keep_reports}")
        self.keep_reports = int(keep_reports)
        self.reports: list[ContactReport] = []
        self.last_report: ContactReport | None = None
        self._step_iterations = 0
        self._step_residual = 0.0
        self._step_solves = 0

    def surface_gaps(self, sim) -> tuple[float, float]:
        """Exact smallest surface gaps [m] at the current pose, independent of this step's contacts:
        (between non-neighbouring segments, between segments and colliders at ``sim.time``); +inf
        where nothing is within a radius. Negative values are penetrations."""
        x, q = sim.positions, sim.orientations
        margin = np.full(x.shape[0], self.radius.max())
        found = self._self_pairs(x, q, margin)
        self_gap = float(np.min(found[5] - found[6])) if found is not None and found[0].size else np.inf
        col_gap = np.inf
        for _, seg, _, _, phi, _ in self._collider_points(x, q, margin, sim.time):
            if seg.size:
                col_gap = min(col_gap, float(np.min(phi - self.radius[seg])))
        return self_gap, col_gap

    def begin_step(self, sim) -> None:
        """Generate this step's contacts and reset λ.

        Contact points and normals come from the pose at the start of the step, where the capsules do
        not overlap, so a fast segment cannot tunnel to the wrong side of a thin collider or another
        rod; the margin covers each segment's predicted motion (``sim.positions`` after the prediction).
        Colliders are placed at their pose at the end of the step (t + Δt).
        """
        x_pred, q_pred = sim.positions, sim.orientations
        self._predicted = (x_pred.copy(), q_pred.copy())
        ctx = sim.step_context
        x, q = ctx.start_positions, ctx.start_orientations
        # Friction holds the material points at the implicit stage's start: the step's start pose for Euler, BDF2's
        # (4x_n − x_{n−1})/3, from which the Simulator takes the velocities (x − x̂)/h, so a sticking contact
        # leaves with no relative velocity. Detection stays on the step's start pose, where nothing overlaps.
        x_ref, q_ref = ctx.stage_start_positions, ctx.stage_start_orientations
        self._start = (x_ref, q_ref)
        # compliances scale with the implicit stage h (2Δt/3 for BDF2), but the step ends at t + Δt, where the
        # colliders are placed
        t0, t1 = sim.time, sim.time + step_length(sim)
        self._t1 = t1
        turn = np.linalg.norm(quat.body_rotation_vector(q, q_pred), axis=1)
        move = np.linalg.norm(x_pred - x, axis=1) + 0.5 * self.model.lengths * turn
        margin = (self.radius + move) if self.margin is None else self.margin + move
        self._fast = move > self.radius  # segments whose collider rows follow the iterate (``_batch``)
        sa, sb, za, zb = np.zeros(0, np.int64), np.zeros(0, np.int64), _empty(0), _empty(0)
        point_b, normal, anchor_b, rest, mu = _empty(0, 3), _empty(0, 3), _empty(0, 3), _empty(0), _empty(0)
        env = self._collider_candidates(x, q, margin, t0, t1, (x_pred, q_pred))
        which, fall = np.zeros(0, np.int64), _empty(0, 3)
        if env is not None:
            rows = env
            if self._newton_rows:
                # one row per joint point and none between two (``_project_semismooth``, ``_between_joint_rows``)
                seg, z, which = rows[0], rows[1], rows[6]
                rows = [v[~self._between_joint_rows(seg, z, which, 0.5 * self.model.lengths[seg])] for v in rows]
                rows = [v[~self._near_joint_rows(rows[0], rows[1], rows[6])] for v in rows]
                rows = [v[~self._joint_twins(rows[0], rows[1], rows[6])] for v in rows]
            seg, z, surface, nrm, shift, m, which, fall = rows
            sa, sb, za, zb = seg, np.full(seg.size, -1, np.int64), z, np.zeros(seg.size)
            point_b, normal, anchor_b = surface, nrm, surface - shift
            rest, mu = self.radius[seg], m
        mode = np.full(sa.size, FIXED)
        ends1, ends0, faces = _empty(sa.size, 2, 3), _empty(sa.size, 2, 3), _empty(sa.size, 2, 3)
        landing = _empty(sa.size, 3)
        edges = self._edge_candidates(x, q, margin, t0, t1, with_gap=True)
        if edges is not None:
            seg, z, pe, nrm, e1, e0, fn, m, gap = edges
            landing = np.vstack((landing, self._edge_landing(seg, z, pe, nrm, gap, e1, e0, x, q, (x_pred, q_pred))))
            sa, sb = np.concatenate((sa, seg)), np.concatenate((sb, np.full(seg.size, -1, np.int64)))
            za, zb = np.concatenate((za, z)), np.concatenate((zb, np.zeros(seg.size)))
            point_b, normal, anchor_b = np.vstack((point_b, pe)), np.vstack((normal, nrm)), np.vstack((anchor_b, pe))
            rest, mu = np.concatenate((rest, self.radius[seg])), np.concatenate((mu, m))
            mode = np.concatenate((mode, np.full(seg.size, EDGE)))
            ends1, ends0, faces = np.concatenate((ends1, e1)), np.concatenate((ends0, e0)), np.concatenate((faces, fn))
        if self.self_contacts == "points":
            selfc = self._point_contacts(x, q, x_pred, q_pred)
        else:
            selfc = self._self_candidates(x, q, margin, predicted=(x_pred, q_pred))
            if selfc is not None:
                selfc = selfc + (np.full(selfc[0].size, SLIDE_BOTH),)
        if selfc is not None:
            i, j, zi, zj, nrm, rr, md = selfc
            landing = np.vstack((landing, self._self_landing(i, j, zi, zj, nrm, rr, x, q, (x_pred, q_pred))))
            mode = np.concatenate((mode, md))
            sa, sb = np.concatenate((sa, i)), np.concatenate((sb, j))
            za, zb = np.concatenate((za, zi)), np.concatenate((zb, zj))
            point_b = np.vstack((point_b, np.zeros((i.size, 3))))
            anchor_b = np.vstack((anchor_b, np.zeros((i.size, 3))))
            ends1, ends0, faces = (np.concatenate((e, _empty(i.size, 2, 3))) for e in (ends1, ends0, faces))
            normal = np.vstack((normal, nrm))
            rest, mu = np.concatenate((rest, rr)), np.concatenate((mu, np.full(i.size, self.self_friction)))
        warm = self._warm_impulses(sim) if self._newton_rows else None
        self.sa, self.sb, self.za, self.zb = sa, sb, za, zb
        self._collider_of = np.concatenate((which, np.full(sa.size - which.size, -1, np.int64)))  # −1: edge or self
        self._fall = np.vstack((fall, _empty(sa.size - which.size, 3)))
        self._landing = landing
        self.point_b, self.normal, self.rest, self.mu, self.mode = point_b, normal, rest, mu, mode
        self._edge_ends = (ends1, ends0, faces)
        self.normal_impulse = np.zeros(sa.size)
        self.tangent_impulse = np.zeros((sa.size, 3))
        # The last step's normal impulse of each row at the same material point (semismooth): the friction bound
        # μλ_n of the step's first Newton iterate, whose own λ is 0 (the iterate starts at the prediction, and
        # x − x̂ = M⁻¹Jᵀλ holds only with λ from 0: impulses carried over without their motion let the rope sink
        # into the cylinder by its compliance every step)
        self._warm_normal = np.zeros(sa.size)
        if warm:
            for i, key in enumerate(self._row_keys()):
                self._warm_normal[i] = warm.get(key, 0.0)
        self._sliding = np.zeros((sa.size, 2), np.int8)
        self._first_solve = True
        self._xpbd_step = False
        self._step_iterations, self._step_residual, self._step_solves = 0, 0.0, len(self.solve_log)
        self._alpha_tilde = self.compliance / (sim.step_context.stage_dt * sim.step_context.stage_dt)
        self._batches = [self._batch(idx, x_ref, q_ref, anchor_b) for idx in self._colour(sa, sb)]
        self._all = self._batch(np.arange(sa.size), x_ref, q_ref, anchor_b, direct=self.response == "direct")
        # Project the prediction out of the contacts before the first joint solve (extra Gauss–Seidel
        # sweeps of Eqs. 20/21): otherwise every step starts g Δt² deep in a floor, and the first
        # KKT solve, which does not see the contacts, spreads that error along the rods.
        for _ in range(self.pre_sweeps):
            for batch in self._batches:
                self._project_batch(sim, batch)
        self._ss_states = None

    def _row_keys(self) -> list[tuple]:
        """One key per row that a row of the next step at the same material point shares: the segments, the
        collider (−1: edge or self) and the axis coordinates (a joint point's row is at ±half the length)."""
        return list(
            zip(
                self.sa.tolist(),
                self.sb.tolist(),
                self._collider_of.tolist(),
                np.round(self.za, 9).tolist(),
                np.round(self.zb, 9).tolist(),
                strict=True,
            )
        )

    def _warm_impulses(self, sim) -> dict:
        """λ_n of the pushing rows of the last step by :meth:`_row_keys`, scaled to this step's h (λ = F h²)."""
        h = sim.step_context.stage_dt
        last = getattr(self, "_warm_h", None)
        self._warm_h = h
        if last is None or not hasattr(self, "_collider_of") or self.normal_impulse.size != self.sa.size:
            return {}
        scale = (h / last) ** 2
        push = self.normal_impulse > 0.0
        keys = self._row_keys()
        return {keys[i]: scale * float(self.normal_impulse[i]) for i in np.flatnonzero(push)}

    def _batch(self, idx, x, q, anchor_b, direct=False) -> dict:
        """Everything about the contacts of one colour that stays fixed during the step. ``direct``: the
        direct solve's batch, where a row of two joint points slides along b's rod like a joint point
        against an axis, so two coils shearing past each other within a step stay apart (a row holding
        the two points leaves them overlapping, docs/notes/contacts.md)."""
        m = self.model
        sa, sb = self.sa[idx], self.sb[idx]
        env = sb < 0
        sbs = np.where(env, sa, sb)  # a collider contact's b side: a massless stand-in
        body_b = (~env).astype(float)
        edge = np.flatnonzero(self.mode[idx] == EDGE)
        b = dict(
            idx=idx,
            sa=sa,
            sb=sbs,
            env=env,
            all_env=bool(np.all(env)),
            share=self._share[idx],
            slide_b=(self.mode[idx] == SLIDE_B) | (direct & (self.mode[idx] == FIXED) & ~env),
            slide_both=self.mode[idx] == SLIDE_BOTH,
            edge=edge,
            ends1=self._edge_ends[0][idx[edge]],
            ends0=self._edge_ends[1][idx[edge]],
            faces=self._edge_ends[2][idx[edge]],
            inv_m_a=self._inv_mass[sa],
            inv_i_a=self._inv_inertia[sa],
            inv_m_b=self._inv_mass[sbs] * body_b,
            inv_i_b=self._inv_inertia[sbs] * body_b[:, None],
            half_a=0.5 * m.lengths[sa],
            half_b=0.5 * m.lengths[sbs],
            x0_a=x[sa],
            r0_a=quat.to_matrix(q[sa]),
            x0_b=x[sbs] - self._landing[idx],  # a segment pair's friction from where its points meet
            r0_b=quat.to_matrix(q[sbs]),
            anchor_b=anchor_b[idx],
            landing=self._landing[idx],
        )
        # The active-set direct solve's plain collider rows of segments that move more than their radius in the step
        # follow the iterate (``ContactRows._follow_collider``); those inside a segment slide to its closest point.
        # Slower ones keep the step's start linearisation, which the draped rods of tests/test_collision.py are
        # measured with (following, a drape sank 0.14 r where it sank 0.30 r). Not on a segment with an edge row:
        # near the edge the collider's distance is the edge's, which that row follows already, and a plain row there
        # with its own normal fought it (the rope dropped on a box edge at Δt = 1/60 s: 6 kN on the two rows, 0.12 r).
        follow = env & (self.mode[idx] != EDGE) & (self._collider_of[idx] >= 0)
        follow &= direct and self.direct_method == "active_set"
        follow &= ~np.isin(sa, sa[self.mode[idx] == EDGE]) & self._fast[sa]
        z = self.za[idx]
        b["follow"] = np.flatnonzero(follow)
        b["follow_slide"] = np.abs(np.abs(z[follow]) - b["half_a"][follow]) > 1e-9 * b["half_a"][follow]
        b["follow_on"] = False  # set by ``_follow_collider`` once the iterate meets the step's start rows
        # a follow row's collider point moves with the collider and the landing motion (``_collider_candidates``)
        b["shift"] = self.point_b[idx] - b["anchor_b"] + self._fall[idx]
        for side, seg in (("a", sa), ("b", sbs[~env])):
            useg, inv = np.unique(seg, return_inverse=True)
            b["merge_" + side] = (useg, inv) if useg.size != seg.size else None
        return b

    @property
    def _colours(self) -> list[np.ndarray]:
        return [b["idx"] for b in getattr(self, "_batches", [])]

    @property
    def solves_joints(self) -> bool:
        """True while the semismooth or schur direct response has rows this step: its Newton step solves the joints
        with the contacts, so the Simulator skips its joint-only step (which does not see the contacts and pulled a
        loaded rope 0.2–2 r into a cylinder between two Newton steps; the schur method takes that step itself and
        undoes it, for the factorisation and Δz_J). The active set keeps the joint-only step: without
        it the frictionless drape gained up to 1.1e-2 J in a step and slid 1.2 mm in 0.5 s (with it 9e-5 J,
        0.07 mm; docs/notes/contacts.md)."""
        return self._newton_rows and self.n_contacts > 0

    @property
    def _newton_rows(self) -> bool:
        """Whether the direct response is a Newton method on joints and contacts together (semismooth, schur):
        one row per joint point against a collider, impulses carried from the last step, joints solved with them."""
        return self.response == "direct" and self.direct_method in ("semismooth", "schur")

    @property
    def n_active(self) -> int:
        return int(np.count_nonzero(self.normal_impulse > 0.0))

    def _colour(self, sa, sb) -> list[np.ndarray]:
        """Split contacts into colours of contacts with no free segment in common: rounds of a
        randomised maximal matching (a contact joins the colour when it has the lowest random
        priority at every free segment it touches), vectorised over contacts. The last of at most
        ``max_colours`` colours takes all remaining contacts, solved Jacobi-style with averaging."""
        k = sa.size
        self._share = np.ones(k)
        if k == 0:
            return []
        n = self.model.n_segments
        free = ~self.model.pinned
        a = np.where(free[sa], sa, n)  # pinned sides and colliders never conflict
        b = np.where((sb >= 0) & free[np.maximum(sb, 0)], sb, n)
        prio = np.random.default_rng(self._rng_seed).permutation(k)
        left = np.arange(k)
        colours: list[np.ndarray] = []
        while left.size:
            if len(colours) == self.max_colours - 1:
                count = np.bincount(a[left], minlength=n + 1) + np.bincount(b[left], minlength=n + 1)
                count[n] = 1
                self._share[left] = 1.0 / np.maximum(count[a[left]], count[b[left]])
                colours.append(left)
                break
            best = np.full(n + 1, k, np.int64)
            np.minimum.at(best, a[left], prio[left])
            np.minimum.at(best, b[left], prio[left])
            win = ((best[a[left]] == prio[left]) | (a[left] == n)) & ((best[b[left]] == prio[left]) | (b[left] == n))
            colours.append(left[win])
            left = left[~win]
        return colours

    def project(self, sim) -> float:
        """Gauss–Seidel sweep(s) over the contacts; returns the largest ``|C + α̃λ|`` met (0 if none)."""
        residual = 0.0
        self._step_iterations += 1
        for _ in range(self.sweeps):
            if self.response == "tree":
                self._project_through_tree(sim)
            if self.response != "direct":
                for batch in self._batches:
                    residual = max(residual, self._project_batch(sim, batch))
            elif self.direct_method == "semismooth":
                residual = max(residual, self._project_semismooth(sim))
            elif self.direct_method == "schur":
                residual = max(residual, self._project_schur(sim))
            else:
                self._project_direct(sim)
                residual = max(residual, float(np.max(-self.gaps(sim), initial=0.0)))
        self._step_residual = residual
        return residual

    def gaps(self, sim) -> np.ndarray:
        """Current ``C`` [m] of this step's contacts (negative: penetration)."""
        out = np.zeros(self.n_contacts)
        # the direct solve moves rows over joints in its own batch (``_follow_over_joints``)
        for b in [self._all] if self.response == "direct" and self.n_contacts else self._batches:
            _, _, za, zb, pa, pb = self._points(sim, b)
            out[b["idx"]] = np.einsum("ij,ij->i", self._normals(sim, b, za, zb, pa, pb), pa - pb) - self.rest[b["idx"]]
        return out

    def end_step(self, sim) -> None:
        """Record the deepest remaining penetration of this step's contacts [m] and the step's
        :class:`ContactReport` (logged when the step did not converge)."""
        residual = max(sim.residual(), self._step_residual)
        self._last_joint_lam = sim.lam.copy()
        self.post_overlap = 0.0
        if self.post_stabilise:
            self._post_stabilise(sim)
        g = self.gaps(sim)
        self.max_penetration = float(max(0.0, -g.min())) if g.size else 0.0
        self._report(sim, residual)

    def _report(self, sim, residual: float) -> None:
        solves = self.solve_log[self._step_solves :]
        settled = all(conv for _, conv in solves)
        hit_cap = self._step_iterations >= sim.max_iterations
        pushing = (self.normal_impulse > 0.0) & (self.mu > 0.0)
        if self.response == "direct":
            on_cone = np.any(self._sliding != 0, axis=1)
        else:
            lt = np.linalg.norm(self.tangent_impulse, axis=1) if self.n_contacts else np.zeros(0)
            on_cone = lt >= (1.0 - 1e-6) * self.mu * self.normal_impulse
        report = ContactReport(
            rows=self.n_contacts,
            active=self.n_active,
            iterations=self._step_iterations,
            hit_cap=hit_cap,
            residual=float(residual),
            solves=len(solves),
            rounds=int(sum(r for r, _ in solves)),
            settled=settled,
            max_penetration=self.max_penetration,
            sticking=int(np.count_nonzero(pushing & ~on_cone)),
            sliding=int(np.count_nonzero(pushing & on_cone)),
            converged=settled and (not hit_cap or residual <= sim.tolerance),
            xpbd=self._xpbd_step,
        )
        self.last_report = report
        if self.keep_reports:
            self.reports.append(report)
            del self.reports[: max(0, len(self.reports) - self.keep_reports)]
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
