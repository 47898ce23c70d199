"""Every rod model of the seeds behind one interface (see :mod:`solver.models.rod_interface`), by name.

    from solver.models.rod_models import make_rod
    rod = make_rod("paobcr", points, radius=0.01, youngs_modulus=1e9, density=1000.0)
    rod.step(1 / 60); rod.centerline(); rod.residual()

Names (``ROD_MODELS``): "stiff_kkt" (Deul et al.'s direct solver, this project's default),
"stiff_gs" (the same segments and joints, XPBD Gauss–Seidel), "paobcr" (Kugelstadt & Schömer),
"pber" (Umetani et al.), "dlo" (Cioacă & Cărămizaru's force-based object with an explicit integrator).
"""

from __future__ import annotations

import numpy as np

from ..core import quaternion as quat
from ..core.model import DEFAULT_STRETCH_COMPLIANCE, rod_from_polyline
from ..core.timestep import Simulator
from .dlo import DLORod
from .paobcr import PaOBCRRod
from .pber import PBERRod
from .rod_interface import ENDS, PolylineRod


class StiffRod(PolylineRod):
    """Deul et al.'s rigid segments + combined zero-stretch/bend/twist joints (``solver.Simulator``).

    Extra: ``solver`` "kkt" (direct, default) or "gs"; ``tolerance`` η (0: always ``iterations``
    iterations); ``stretch_compliance`` [m/N]. ``residual()`` is the simulator's ‖C + α̃λ‖∞.
    """

    name = "stiff"

    def __init__(
        self,
        *args,
        solver: str = "kkt",
        tolerance: float = 0.0,
        stretch_compliance: float = DEFAULT_STRETCH_COMPLIANCE,
        **kw,
    ):
        super().__init__(*args, **kw)  # the interface's parameters (rod_interface.PolylineRod)
        base = rod_from_polyline(
            self.rest_points,
            self.point_radius,
            self.youngs_modulus,
            self.torsion_modulus,
            self.density,
            pinned=sorted(self.pinned_ends),
            stretch_compliance=stretch_compliance,
        )
        # rest Darboux vectors with the intrinsic twist; the interface's Darboux lengths (clamp joints)
        self.model = base.copy_with(orientations=self.frames, joint_lengths=self.joint_lengths)
        self._pinned_segments = [(end, self.end_edge(end)) for end in ENDS if end in self.pinned_ends]
        self.sim = Simulator(
            self.model,
            solver=solver,
            max_iterations=self.iterations,
            tolerance=tolerance,
            gravity=self.gravity,
            damping=self.damping,
            kinematic=self._clamps if self._pinned_segments else None,
        )
        self.name = f"stiff_{solver}"

    def _clamps(self, t):
        pos = np.array([self.clamp_transform(end, self.model.positions[s]) for end, s in self._pinned_segments])
        ori = np.array(
            [quat.multiply(self.clamp_rotation(end), self.model.orientations[s]) for end, s in self._pinned_segments]
        )
        return pos, ori

    def step(self, dt: float) -> None:
        self.sim.dt = self._check_dt(dt)
        self.sim.step()
        self.time = self.sim.time

    def centerline(self) -> np.ndarray:
        sim, lengths = self.sim, self.model.lengths
        half = np.zeros((lengths.size, 3))
        half[:, 2] = 0.5 * lengths
        start = sim.positions - quat.rotate(sim.orientations, half)
        end = sim.positions + quat.rotate(sim.orientations, half)
        inner = 0.5 * (end[:-1] + start[1:])  # the two attachment points of a joint (equal up to σ⁻¹)
        return np.concatenate((start[:1], inner, end[-1:]))

    def residual(self) -> float:
        return self.sim.residual()

    def kinetic_energy(self) -> float:
        return self.sim.kinetic_energy()


def _stiff(solver):
    def build(*args, **kw):
        return StiffRod(*args, solver=solver, **kw)

    return build


ROD_MODELS = {
    "stiff_kkt": _stiff("kkt"),
    "stiff_gs": _stiff("gs"),
    "paobcr": PaOBCRRod,
    "pber": PBERRod,
    "dlo": DLORod,
}


def make_rod(kind: str, points, radius, youngs_modulus, torsion_modulus=None, density=1000.0, **kw) -> PolylineRod:
    """Build the rod model ``kind`` (a key of ``ROD_MODELS``) from a polyline; see each class for extras."""
    if kind not in ROD_MODELS:
        raise ValueError(f"rod model must be one of {sorted(ROD_MODELS)}, got {kind!r}")
    return ROD_MODELS[kind](points, radius, youngs_modulus, torsion_modulus, density, **kw)
