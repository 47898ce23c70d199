"""Stiff Rods solver: Deul et al., "Direct Position-Based Solver for Stiff Rods" (numpy + scipy only).

Layers, top-down (each subpackage's docstring says more):

* ``solver.core``: the paper: rigid segments, the Eq. 23 joint, the direct KKT solvers, the XPBD step
  (:class:`Simulator`), loop closing and fracture.
* ``solver.contact``: contacts with Coulomb friction against colliders and between segments (:class:`Contacts`).
* ``solver.air``: wind fields and aerodynamic drag (:class:`WindField`, :class:`AerodynamicDrag`).
* ``solver.models``: the seeds' other rod models and explicit integrators (:func:`make_rod`, :class:`RodSet`).
* ``solver.build``: trees from branch polylines, leaves, point binding, resampling, materials, pre-stress
  and reference scenes (:func:`tree_from_branches`, :func:`attach_leaves`).

Public API::

    from solver import rod_from_polyline, RodModel, Simulator
    model = rod_from_polyline(points, radius=0.01, youngs_modulus=1e9, density=1000, pinned=["start"])
    sim = Simulator(model, dt=1/60)
    report = sim.step()          # StepReport(iterations, residual)
    sim.positions, sim.orientations
"""

from .air import AerodynamicDrag, WindField, WindSum, storm
from .build import (
    PRESETS,
    Material,
    attach_leaves,
    bind_points,
    carried_points,
    gravity_prestress,
    leaf_frames,
    material,
    resample_polyline,
    tree_from_branches,
)
from .contact import Box, Capsule, Collider, Contacts, Mesh, Plane, Sphere
from .core import (
    DEFAULT_STRETCH_COMPLIANCE,
    Fracture,
    NonFiniteStateError,
    RodModel,
    Simulator,
    StepReport,
    TreeKKT,
    cross_section_moments,
    rod_from_polyline,
)
from .models import ROD_MODELS, RodSet, make_rod

__all__ = [
    "RodModel",
    "rod_from_polyline",
    "cross_section_moments",
    "DEFAULT_STRETCH_COMPLIANCE",
    "Simulator",
    "StepReport",
    "NonFiniteStateError",
    "TreeKKT",
    "Fracture",
    "Contacts",
    "Collider",
    "Plane",
    "Sphere",
    "Capsule",
    "Box",
    "Mesh",
    "WindField",
    "WindSum",
    "storm",
    "AerodynamicDrag",
    "make_rod",
    "ROD_MODELS",
    "RodSet",
    "tree_from_branches",
    "attach_leaves",
    "leaf_frames",
    "bind_points",
    "carried_points",
    "resample_polyline",
    "material",
    "Material",
    "PRESETS",
    "gravity_prestress",
]
