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

import types

# The public API: each name is imported as itself from its layer (an explicit re-export).
from .air import AerodynamicDrag as AerodynamicDrag
from .air import WindField as WindField
from .air import WindSum as WindSum
from .air import storm as storm
from .build import PRESETS as PRESETS
from .build import Material as Material
from .build import attach_leaves as attach_leaves
from .build import bezier_polyline as bezier_polyline
from .build import bind_points as bind_points
from .build import carried_points as carried_points
from .build import gravity_prestress as gravity_prestress
from .build import leaf_frames as leaf_frames
from .build import material as material
from .build import nearest_segments as nearest_segments
from .build import resample_polyline as resample_polyline
from .build import tree_from_branches as tree_from_branches
from .contact import ActiveSetOptions as ActiveSetOptions
from .contact import Box as Box
from .contact import Capsule as Capsule
from .contact import Collider as Collider
from .contact import ContactReport as ContactReport
from .contact import Contacts as Contacts
from .contact import DetectionOptions as DetectionOptions
from .contact import GaussSeidelOptions as GaussSeidelOptions
from .contact import Mesh as Mesh
from .contact import Plane as Plane
from .contact import PostOptions as PostOptions
from .contact import SchurOptions as SchurOptions
from .contact import Sphere as Sphere
from .core import COMPILED_LOGGER as COMPILED_LOGGER
from .core import DEFAULT_SHEAR_COEFFICIENT as DEFAULT_SHEAR_COEFFICIENT
from .core import DEFAULT_STRETCH_COMPLIANCE as DEFAULT_STRETCH_COMPLIANCE
from .core import JOINT_KINDS as JOINT_KINDS
from .core import STRETCH_MODES as STRETCH_MODES
from .core import ConstraintSet as ConstraintSet
from .core import ForceField as ForceField
from .core import Fracture as Fracture
from .core import JointSystem as JointSystem
from .core import NonFiniteStateError as NonFiniteStateError
from .core import PostStepHook as PostStepHook
from .core import RodModel as RodModel
from .core import Simulator as Simulator
from .core import State as State
from .core import StepContext as StepContext
from .core import StepReport as StepReport
from .core import TreeKKT as TreeKKT
from .core import compiled_status as compiled_status
from .core import cross_section_moments as cross_section_moments
from .core import known_compiled_status as known_compiled_status
from .core import prepare_compiled as prepare_compiled
from .core import quaternion as quaternion  # unit quaternions (w, x, y, z) as arrays: the add-on's rotations
from .core import rod_from_polyline as rod_from_polyline
from .core import set_compiled_cache as set_compiled_cache
from .models import ROD_MODELS as ROD_MODELS
from .models import BranchModes as BranchModes
from .models import RodSet as RodSet
from .models import TreeModes as TreeModes
from .models import branch_modes as branch_modes
from .models import make_rod as make_rod
from .models import tree_modes as tree_modes

__all__ = sorted(
    name for name, value in globals().items() if not name.startswith("_") and not isinstance(value, types.ModuleType)
)
