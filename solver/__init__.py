"""Stiff Rods solver: Deul et al., "Direct Position-Based Solver for Stiff Rods" (numpy + scipy only).

Public API::

    from solver import rod_from_polyline, RodModel, Simulator
    model = rod_from_polyline(points, radius=0.01, youngs_modulus=1e9, density=1000, pinned=["start"])
    sim = Simulator(model, dt=1/60)
    report = sim.step()          # StepReport(iterations, residual)
    sim.positions, sim.orientations
"""
from .model import RodModel, rod_from_polyline, cross_section_moments, DEFAULT_STRETCH_COMPLIANCE
from .timestep import Simulator, StepReport, NonFiniteStateError
from .kkt_tree import TreeKKT

__all__ = ["RodModel", "rod_from_polyline", "cross_section_moments", "DEFAULT_STRETCH_COMPLIANCE",
           "Simulator", "StepReport", "NonFiniteStateError", "TreeKKT"]
