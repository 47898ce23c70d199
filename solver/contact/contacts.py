"""Unilateral contacts with Coulomb friction: rod segments against colliders and against each other.

A :class:`Contacts` object is a constraint set for ``Simulator.gs_constraints`` (Deul Algorithm 1, lines 10–14):
``begin_step`` generates the step's rows once (line 13 of seed 002's Algorithm 1), ``project`` runs one iteration of
its solver strategy and ``end_step`` records the step (and, with post-stabilisation, removes the overlaps left from
the positions only).

Every segment is a capsule: its axis (local z over ±l/2) swept by the radius ``max(radii)`` (a leaf plate by its
half thickness). A row joins an axis point of segment ``a`` to an axis point of segment ``b`` (the two closest
points, found again in every solve), to a fixed world point on a collider (a material point of ``a``), or to a
collider's sharp edge (``Collider.edges``), with a normal n from b to a and a rest distance R:

    C = n·(p_a − p_b) − R ≥ 0,   λ_n ≥ 0                                    (unilateral)

Friction is Coulomb at the position level (seed 002 §7): the relative tangential motion of the two material points
over the step is a second constraint whose accumulated impulse stays in the cone ``|λ_t| ≤ μ λ_n``.

``Contacts`` is composed of its parts: detection (:class:`~solver.contact.detection.ContactDetector`), the step's
rows (:class:`~solver.contact.rows.StepRows`, plain data), their geometry
(:class:`~solver.contact.geometry.RowGeometry`), one solver strategy (:mod:`solver.contact.solvers`) and optional
post-stabilisation (:class:`~solver.contact.post_stabilise.PostStabiliser`). Measurements of the strategies:
docs/notes/contacts.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .colliders import Collider
from .detection import ContactDetector, DetectionOptions
from .geometry import RowGeometry
from .post_stabilise import PostOptions, PostStabiliser
from .report import ContactReport, step_report
from .solvers import FALLBACK_METHOD, SolveLog, make_solver, method_options


class Contacts:
    """Contact and friction constraints of one model (a ``Simulator.gs_constraints`` element).

    ``colliders``: a sequence of :class:`~solver.contact.colliders.Collider`; ``friction`` μ for contacts with
    colliders whose own ``friction`` is None; ``self_collision``: bool, or an (n,) mask of the segments that take
    part. ``method``: the solver strategy, as its frozen options (:mod:`solver.contact.solvers`: ``SchurOptions``,
    ``GaussSeidelOptions``, ``ActiveSetOptions``; experimental ``TreeResponseOptions``, ``SemismoothOptions``) or a
    name of ``solvers.METHODS`` with its defaults. None (the default): the schur method, the joints and contacts
    solved together (:mod:`solver.contact.solvers.schur`; its convergence in docs/notes/contacts.md); with a
    Simulator that has no tree factorisation to eliminate over (``solver="gs"``, or a model without joints) the set
    uses Gauss–Seidel instead. A Newton method named explicitly there raises ``ValueError``. ``detection``:
    :class:`~solver.contact.detection.DetectionOptions` (self friction, margin, excluded neighbours, self-contact
    rows, permanent pairs). ``post``: :class:`~solver.contact.post_stabilise.PostOptions` to post-stabilise after
    each step (None: off). ``keep_reports``: the step reports kept (the latest; 0 keeps none).

    After a step: ``n_contacts``, ``n_active`` (λ_n > 0), ``max_penetration`` [m] (deepest ``−C`` over this step's
    rows at the end of the step), ``normal_impulse`` λ_n [N·s²] per row, ``rows`` (:class:`StepRows`),
    ``last_report`` (:class:`~solver.contact.report.ContactReport`) and ``reports``, one per step since the set was
    made; ``solve_log``, ``friction_log`` and ``damped_solves`` record the direct solves
    (:class:`~solver.contact.solvers.base.SolveLog`), ``post_overlap`` [m] the deepest overlap post-stabilisation
    found in the last step.
    """

    def __init__(
        self,
        model,
        colliders: Sequence[Collider] = (),
        *,
        friction: float = 0.0,
        self_collision=False,
        method=None,
        detection: DetectionOptions | None = None,
        post: PostOptions | None = None,
        keep_reports: int = 100000,
    ):
        for i, c in enumerate(colliders):
            if not isinstance(c, Collider):
                raise ValueError(f"colliders[{i}] is not a Collider (got {type(c).__name__})")
        if not (np.isfinite(friction) and friction >= 0.0):
            raise ValueError(f"friction must be finite and ≥ 0, got {friction}")
        if int(keep_reports) != keep_reports or keep_reports < 0:
            raise ValueError(f"keep_reports must be an integer ≥ 0, got {keep_reports}")
        self.model = model
        self.detector = ContactDetector(model, colliders, friction, self_collision, detection or DetectionOptions())
        d = self.detector
        self.geometry = RowGeometry(model, d.colliders, d.radius, d.topology, joint_point_rows=False)
        self.log = SolveLog()
        self._default_method = method is None
        self._post_options = post
        self._use_strategy(method_options(method))
        self.rows = self.geometry.rows
        self.max_penetration = 0.0
        self.keep_reports = int(keep_reports)
        self.reports: list[ContactReport] = []
        self.last_report: ContactReport | None = None
        self._iterations = 0  # project calls in this step
        self._residual = 0.0  # the last one's residual [m]
        self._solves_before = 0  # len(solve_log) at the step's start

    def _use_strategy(self, options) -> None:
        self.solver = make_solver(options, self.geometry, self.log)
        self.geometry.joint_point_rows = self.solver.joint_point_rows
        self.post = None
        if self._post_options is not None:
            s, d = self.solver, self.detector
            self.post = PostStabiliser(self._post_options, d, self.geometry, s.row_compliance, s.post_defaults)

    def _fit_strategy(self, sim) -> None:
        """The Newton methods (``joint_point_rows``) eliminate the contacts over the Simulator's tree factorisation of
        the joints: without one the default falls back to :data:`~solver.contact.solvers.FALLBACK_METHOD`."""
        if not self.solver.joint_point_rows or (sim.solver == "kkt" and sim.model.n_joints > 0):
            return
        if not self._default_method:
            name = type(self.solver.options).__name__
            raise ValueError(
                f"Contacts(method={name}) solves the contacts with the joints' direct (KKT) solve: it needs "
                f"Simulator(solver='kkt') and a model with joints (this one: solver={sim.solver!r}, "
                f"{sim.model.n_joints} joints); use method={FALLBACK_METHOD!r}"
            )
        self._use_strategy(method_options(FALLBACK_METHOD))

    # ------------------------------------------------------------------ what a step left
    @property
    def n_contacts(self) -> int:
        return self.rows.n_contacts

    @property
    def n_active(self) -> int:
        return self.rows.n_active

    @property
    def normal_impulse(self) -> np.ndarray:
        return self.rows.normal_impulse

    @property
    def solve_log(self) -> list[tuple[int, bool]]:
        return self.log.solve_log

    @property
    def friction_log(self) -> list[int]:
        return self.log.friction_log

    @property
    def damped_solves(self) -> int:
        return self.log.damped_solves

    @property
    def post_overlap(self) -> float:
        return 0.0 if self.post is None else self.post.overlap

    @property
    def solves_joints(self) -> bool:
        """True while the strategy solves the joints with this step's rows (the semismooth and schur methods): the
        Simulator then skips its joint-only step."""
        return self.solver.solves_joints(self.rows)

    # ------------------------------------------------------------------ the step hooks
    def surface_gaps(self, sim) -> tuple[float, float]:
        """Exact smallest surface gaps [m] at the current pose, independent of this step's contacts:
        (between non-neighbouring segments, between segments and colliders at ``sim.time``); +inf
        where nothing is within a radius. Negative values are penetrations."""
        return self.detector.surface_gaps(sim.positions, sim.orientations, sim.time)

    def begin_step(self, sim) -> None:
        """Generate this step's rows (:meth:`ContactDetector.generate
        <solver.contact.detection.ContactDetector.generate>`) from the step's start pose, with the colliders at the
        step's end (t + Δt), and start the strategy's step. Friction holds the material points at the implicit
        stage's start (the step's start pose for Euler, BDF2's (4x_n − x_{n−1})/3), from which the Simulator takes
        the velocities (x − x̂)/h, so a sticking contact leaves with no relative velocity."""
        self._fit_strategy(sim)
        ctx = sim.step_context
        x_pred, q_pred = sim.positions, sim.orientations
        predicted = (x_pred.copy(), q_pred.copy())
        t1 = sim.time + float(ctx.step_dt)
        start = (ctx.start_positions, ctx.start_orientations)
        rows = self.detector.generate(start, (x_pred, q_pred), sim.time, t1, self.solver.joint_point_rows)
        rows.start = (ctx.stage_start_positions, ctx.stage_start_orientations)
        rows.predicted, rows.t1 = predicted, t1
        self.rows = self.geometry.rows = rows
        self._iterations, self._residual, self._solves_before = 0, 0.0, len(self.log.solve_log)
        self.solver.begin_step(sim, rows)

    def project(self, sim) -> float:
        """One iteration of the strategy; returns its residual [m] (0 if there are no rows)."""
        self._iterations += 1
        self._residual = max(0.0, self.solver.project(sim, self.rows))
        return self._residual

    def gaps(self, sim) -> np.ndarray:
        """Current ``C`` [m] of this step's contacts (negative: penetration)."""
        return self.geometry.gaps(sim, self.solver.gap_batches(self.rows))

    def end_step(self, sim) -> None:
        """Post-stabilise (if on), record the deepest remaining penetration of this step's contacts [m] and the
        step's :class:`ContactReport` (logged when the step did not converge)."""
        residual = max(sim.residual(), self._residual)
        self.solver.end_step(sim, self.rows)
        if self.post is not None:
            self.post.overlap = 0.0
            self.post.apply(sim, self.rows)
        g = self.gaps(sim)
        self.max_penetration = float(max(0.0, -g.min())) if g.size else 0.0
        solves = self.log.solve_log[self._solves_before :]
        report = step_report(
            sim, self.rows, solves, self._iterations, residual, self.max_penetration, self.solver.direct
        )
        self.last_report = report
        if self.keep_reports:
            self.reports.append(report)
            del self.reports[: max(0, len(self.reports) - self.keep_reports)]
