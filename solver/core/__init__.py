"""The core layer: Deul et al., "Direct Position-Based Solver for Stiff Rods". A rod or tree is a forest of
rigid segments (``model``, with unit quaternions in ``quaternion``) joined by the combined zero-stretch,
bending and twisting constraint of Eq. 23 (``joint_constraint``); a joint's kind (clamp, ball, hinge, rail)
drops some of its rows inside the direct solve. The model is constant per topology; a ``state`` (pose, velocities,
λ, time) is what a step advances. Each XPBD step (``timestep``; ``bdf2`` for the second-order stage) solves the
joints' KKT system directly, in linear time: banded for chains (``kkt_chain``), by tree contraction for
trees (``kkt_tree``, with the 6×6 pivots of ``definite_blocks``). ``gauss_seidel`` is the iterative XPBD
baseline the paper compares against (``gs_ordering``: the sweep orders of the position-based rod models),
``loop_closing`` solves the joints that close loops, and ``fracture`` breaks joints whose bending strain
passes the rupture strain. ``compiled`` runs the direct solver's Newton iterations as numba kernels when numba
works (``compiled_status``), with the numpy solvers as the reference and fallback; layers above register their own
kernels with it (``register_kernel``). ``hooks`` states what force fields, constraint sets and post-step hooks
may read (``StepContext``, ``JointSystem``).
"""

from .compiled import LOGGER_NAME as COMPILED_LOGGER
from .compiled import compiled_status, register_kernel
from .compiled import known_status as known_compiled_status
from .compiled import prepare as prepare_compiled
from .compiled import set_cache_dir as set_compiled_cache
from .fracture import RUPTURE_STRAIN, Fracture
from .hooks import ConstraintSet, ForceField, JointSystem, PostStepHook, StepContext
from .kkt_chain import ChainKKT
from .kkt_tree import TreeKKT
from .loop_closing import LoopClosingConstraints
from .model import (
    DEFAULT_SHEAR_COEFFICIENT,
    DEFAULT_STRETCH_COMPLIANCE,
    JOINT_KINDS,
    STRETCH_MODES,
    JointSet,
    RodModel,
    cross_section_moments,
    rod_from_polyline,
)
from .state import State
from .timestep import NonFiniteStateError, Simulator, StepReport

__all__ = [
    "RodModel",
    "JointSet",
    "rod_from_polyline",
    "cross_section_moments",
    "DEFAULT_STRETCH_COMPLIANCE",
    "DEFAULT_SHEAR_COEFFICIENT",
    "JOINT_KINDS",
    "STRETCH_MODES",
    "Simulator",
    "State",
    "StepReport",
    "StepContext",
    "JointSystem",
    "ForceField",
    "ConstraintSet",
    "PostStepHook",
    "NonFiniteStateError",
    "TreeKKT",
    "ChainKKT",
    "LoopClosingConstraints",
    "Fracture",
    "RUPTURE_STRAIN",
    "COMPILED_LOGGER",
    "register_kernel",
    "compiled_status",
    "known_compiled_status",
    "prepare_compiled",
    "set_compiled_cache",
]
