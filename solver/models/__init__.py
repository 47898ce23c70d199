"""The other rod models: the seeds' alternatives to Deul's solver behind one interface (``rod_interface``):
position and orientation based Cosserat rods (``paobcr``) and position-based elastic rods (``pber``),
both on ``position_based_rod``, a force-based deformable linear object (``dlo``) with the explicit
integrators of ``integrators``, all by name in ``rod_models``; ``rod_set`` runs one such rod per branch
behind the Simulator-like face the add-on uses. ``modes``: natural frequencies and modal damping of a
RodModel linearised about its pose, per branch (:func:`branch_modes`) and for the whole forest.
"""

from .dlo import DLORod
from .integrators import INTEGRATORS, get_integrator
from .modes import BranchModes, TreeModes, branch_modes, tree_modes
from .paobcr import PaOBCRRod
from .pber import PBERRod
from .rod_interface import PolylineRod, RodSettings
from .rod_models import ROD_MODELS, StiffRod, make_rod
from .rod_set import RodSet, RodSetOptions

__all__ = [
    "PolylineRod",
    "RodSettings",
    "PaOBCRRod",
    "PBERRod",
    "DLORod",
    "StiffRod",
    "ROD_MODELS",
    "make_rod",
    "INTEGRATORS",
    "get_integrator",
    "RodSet",
    "RodSetOptions",
    "branch_modes",
    "tree_modes",
    "BranchModes",
    "TreeModes",
]
