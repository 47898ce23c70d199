"""The build layer: turning drawn geometry into a model. Branch polylines become a jointed tree
(``tree_builder``, after ``resample`` of Bézier curves), leaves become plate segments (``leaves``,
``tree_builder.attach_leaves``), mesh vertices are bound to the segments that carry them (``binding``),
wood and leaf materials come from presets (``materials``), ``prestress`` makes the modelled pose a static
equilibrium under gravity, ``scenes`` builds the test and benchmark scenes and ``curve_measures``
measures centrelines (writhe).
"""

from .binding import bind_points, carried_points, nearest_segments
from .curve_measures import writhe
from .leaves import leaf_frames
from .materials import PRESETS, Material, material
from .prestress import gravity_prestress
from .resample import bezier_polyline, resample_polyline
from .tree_builder import BranchMap, LeafMaterial, TreeOptions, attach_leaves, find_parent_spans, tree_from_branches

__all__ = [
    "tree_from_branches",
    "TreeOptions",
    "attach_leaves",
    "LeafMaterial",
    "BranchMap",
    "find_parent_spans",
    "leaf_frames",
    "bind_points",
    "carried_points",
    "nearest_segments",
    "bezier_polyline",
    "resample_polyline",
    "Material",
    "PRESETS",
    "material",
    "gravity_prestress",
    "writhe",
]
