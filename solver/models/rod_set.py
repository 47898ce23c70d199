"""Independent rods of one of the seeds' models, seen as the segments of a :class:`~solver.core.model.RodModel`.

The Blender add-on binds curve control points to the segments of a model built by
``tree_from_branches`` (one branch per spline, one segment per span) and reads ``positions`` and
``orientations`` from a :class:`~solver.core.timestep.Simulator`. :class:`RodSet` offers the same for the other
rod models (PaOBCR, PBER, the force-based DLO; ``solver.models.rod_models``): one rod per branch, stepped
independently, whose edges are mapped back onto the branch's segments. A segment's centre is its edge's
midpoint; its orientation is the edge's current parallel-transported frame (``rod_interface.edge_frames``
of the centreline, which carries no twist: curve points do not need it) times the constant offset that
maps the rest frame onto the model segment's rest orientation, so at rest both agree exactly.

Explicit integrators (``"dlo"``) are only stable for steps below ~2/ω_max (seed 004: symplectic Euler,
Verlet), and the DLO's stiffest modes are its short tetrahedron edges (a radius long), not the rod's
bending: each step is split into ``ceil(dt / h)`` equal substeps with ``h = courant · 2 / ω_max`` and ω_max²
bounded by Gershgorin's theorem on the mass-scaled stiffness of springs and volume terms at rest
(``courant`` = 0.5). A material that would need more than ``max_substeps`` per step is refused: explicit
integration of stiff rods is what the seed shows to be impractical.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import quaternion as quat
from ..core.timestep import NonFiniteStateError, StepReport
from .rod_interface import PolylineRod, edge_frames
from .rod_models import ROD_MODELS, make_rod

EXPLICIT = ("dlo",)


@dataclass(frozen=True)
class RodSetOptions:
    """How :class:`RodSet` makes and steps its rods: materials ``youngs_modulus``, ``torsion_modulus`` [Pa] and
    ``density`` [kg/m³]; ``pin_start``: clamp each rod's first edge; ``iterations`` per step for the
    position-based models; step ``dt`` [s]; ``gravity`` [m/s²]; ``damping`` [1/s]; for explicit models the
    substep's fraction ``courant`` of the stable step 2/ω_max and the most substeps ``max_substeps`` allowed."""

    youngs_modulus: float
    torsion_modulus: float
    density: float
    pin_start: bool = True
    iterations: int = 5
    dt: float = 1.0 / 48.0
    gravity: Any = (0.0, 0.0, -9.81)
    damping: float = 0.0
    courant: float = 0.5
    max_substeps: int = 2000


class RodSet:
    """Rods of model ``kind`` for the branches of ``model`` (``branches``: list of (points (K, 3) [m], radii
    (K,) [m]); ``span_segment``: per branch the model's segment index of each span, as in
    ``tree_builder.BranchMap``). ``options``: the fields of :class:`RodSetOptions` as keywords (materials
    required).

    Simulator-like: ``dt`` [s], ``positions`` (n, 3), ``orientations`` (n, 4), ``time`` [s], ``step()``
    → :class:`~solver.core.timestep.StepReport` (iterations per step; residual: the largest of the rods' own
    convergence measures), ``max_iterations``.
    """

    def __init__(self, kind: str, model, branches, span_segment, **options: Any):
        opts = RodSetOptions(**options)
        if kind not in ROD_MODELS:
            raise ValueError(f"rod model must be one of {sorted(ROD_MODELS)}, got {kind!r}")
        if len(branches) != len(span_segment):
            raise ValueError(f"{len(branches)} branches but {len(span_segment)} span lists")
        self.kind = kind
        self.max_iterations = int(opts.iterations)
        self.dt = float(opts.dt)
        self.time = 0.0
        self.positions = np.array(model.positions, dtype=float)
        self.orientations = np.array(model.orientations, dtype=float)
        self.rods: list[PolylineRod] = []
        self._segments: list[np.ndarray] = []
        self._offset: list[np.ndarray] = []  # per rod: its rest frames → the model segments' rest orientations
        for b, ((points, radii), segs) in enumerate(zip(branches, span_segment, strict=True)):
            self._add_rod(b, np.asarray(points, dtype=float), radii, np.asarray(segs, dtype=np.int64), opts)
        self._substep_limit = math.inf
        if kind in EXPLICIT and self.rods:
            omega = max(math.sqrt(_max_eigenvalue_bound(r)) for r in self.rods)
            self._substep_limit = opts.courant * 2.0 / omega
            if self.substeps > opts.max_substeps:
                raise ValueError(
                    f"the {kind} model would need {self.substeps} explicit substeps per {self.dt:.4g} s "
                    f"step for this material (stable step {self._substep_limit:.3g} s; more than "
                    f"{opts.max_substeps}): use a softer material, thicker or longer segments, or a "
                    "position-based model"
                )

    def _add_rod(self, b: int, points: np.ndarray, radii, segs: np.ndarray, opts: RodSetOptions) -> None:
        """The rod of branch ``b`` (polyline ``points``, ``radii``) carried by the model segments ``segs``."""
        kind = self.kind
        if points.shape[0] - 1 != segs.size:
            raise ValueError(f"branch {b}: {points.shape[0] - 1} spans but {segs.size} segments")
        if points.shape[0] < 3:
            raise ValueError(
                f"branch {b}: the {kind} model needs at least 3 points (2 edges), got "
                f"{points.shape[0]}; lower the Segment Length"
            )
        rod = make_rod(
            kind,
            points,
            np.asarray(radii, dtype=float),
            opts.youngs_modulus,
            opts.torsion_modulus,
            opts.density,
            pinned=("start",) if opts.pin_start else (),
            iterations=self.max_iterations,
            gravity=opts.gravity,
            damping=opts.damping,
        )
        self.rods.append(rod)
        self._segments.append(segs)
        # rest frame → the model segment's rest orientation
        self._offset.append(quat.multiply(quat.conjugate(edge_frames(points)), self.orientations[segs]))

    @property
    def substeps(self) -> int:
        """Substeps per :meth:`step` (1 except for explicit integrators)."""
        return max(1, math.ceil(self.dt / self._substep_limit - 1e-9)) if math.isfinite(self._substep_limit) else 1

    def step(self) -> StepReport:
        k = self.substeps
        h = self.dt / k
        residual = 0.0
        for rod, segs, offset in zip(self.rods, self._segments, self._offset, strict=True):
            for _ in range(k):
                rod.step(h)
            pts = rod.centerline()
            if not np.all(np.isfinite(pts)):
                raise NonFiniteStateError(f"{self.kind}: a rod became non-finite at t = {self.time + self.dt:.4g} s")
            self.positions[segs] = 0.5 * (pts[1:] + pts[:-1])
            self.orientations[segs] = quat.multiply(edge_frames(pts), offset)
            residual = max(residual, float(rod.residual()))
        self.time += self.dt
        iterations = 1 if self.kind in EXPLICIT else self.max_iterations
        return StepReport(iterations=iterations * k, residual=residual)


def _max_eigenvalue_bound(rod) -> float:
    """Gershgorin bound [1/s²] on the largest eigenvalue of M⁻¹K of a :class:`~solver.models.dlo.DLORod` at rest:
    springs (k on the diagonal and off it, per end), volume terms (K_V/V₀²)∇V∇Vᵀ and torsion springs."""
    row = np.zeros(rod.mass.size)
    i, j = rod.springs[:, 0], rod.springs[:, 1]
    np.add.at(row, i, 2.0 * rod.k_spring)
    np.add.at(row, j, 2.0 * rod.k_spring)
    g = np.linalg.norm(rod.volume_gradients(rod.x)[1], axis=2)  # |∂V/∂x_p| per corner
    np.add.at(row, rod.tets, (rod.k_volume / rod.rest_volume**2)[:, None] * g * g.sum(axis=1)[:, None])
    k = rod.n_points
    t = np.arange(1, k - 1)
    np.add.at(row, t + k, 2.0 * rod.k_torsion)  # Q_j and R_j (particles R: 0..k-1, Q: k..2k-1, P: 2k..)
    np.add.at(row, t, 2.0 * rod.k_torsion)
    return float(np.max(row[rod.free] / rod.mass[rod.free]))
