"""Shader-wind data of a simulated tree in Unreal's Pivot Painter 2 (PP2) format, plus each branch's first
natural frequency and damping from the rod model (numpy only; the files by :mod:`addon.texture_files`).

Elements. One element per branch of the tree model (:func:`solver.tree_from_branches`: ``BranchMap``), in the
branch order, so element e is branch e:

* pivot: the branch's base joint point (the joint whose child is the branch's first segment: its point on that
  segment, the first polyline point as built), [m] in the model frame;
* X axis: the unit direction of the branch's first segment (its material d3), PP2's X vector;
* parent: the element of the branch it grows from (``BranchMap.branch_parent``); a root points to itself, as in
  PP2 ("Is Child?" is parent ≠ self);
* depth: steps from the root (PP2's "Number of Steps From Root");
* extent: the branch's reach along its X axis from the pivot, max over its segment ends of (p − pivot)·X, [m]
  (PP2's "X extent": the object's length along its local X; a straight branch's length);
* beyond PP2, ``frequency_hz`` and ``damping_ratio``: the branch's first bending mode with its parent held
  still, carrying its sub-branches and leaves (:func:`solver.branch_modes`; ζ = c / (2ω) under the Simulator's
  mass-proportional damping c [1/s]).

Unreal space. PP2 stores positions in the mesh's local space in Unreal units (cm) and Unreal's left-handed axes:
(x, y, z) [m] → 100 (x, −y, z) [cm] (an FBX export in metres imported into Unreal; ``units_per_metre``), the same
flip for the X axis. ``world_to_object`` (4×4, metres) takes the model's world frame to the exported object's.

Texel of an element. W × H texels hold n elements (:func:`texture_size`: an exact W·H = n when a factor pair
within 4:1 exists, else H = ⌊√n⌋, W = ⌈n/H⌉); element i is at column i mod W, row ⌊i/W⌋, row 0 the image's top
row. Its UV (the mesh's PP2 UV channel, TexCoord[1] by default) is the texel centre; Unreal's
``ms_PivotPainter2_CalculateMeshElementIndex`` reads it back as ⌊u W⌋ + ⌊v H⌋ W with v down from the top, and
Blender's UV, v up, is exported flipped to that (FBX and glTF both), so :func:`element_uv` returns
u = (i mod W + ½)/W, v_Blender = 1 − (⌊i/W⌋ + ½)/H. Texels past the last element are zero, their parent self.

The textures (names as :func:`pp2_textures` and :func:`float32_textures` return them):

============================  ======  =====================================  ===========================================
file                          format  RGB                                    A
============================  ======  =====================================  ===========================================
``PivotPos_ParentIndex``      half    Pivot Position (16-bit) [cm]           Parent Index (Int as float): the half whose
                              EXR                                            bits are index + 1024 (PP2's packing,
                                                                             decoded by ``UnpackIntegerAsFloat``)
``XVector_XExtent``           8-bit   X Vector (8-bit): (v + 1)/2 → byte     X Extent Divided by 2048: round(255 ·
                              PNG     round(255 · (v + 1)/2)                 clip(L/2048, 8/2048, 1)), L [cm]; decoded
                                                                             max(8, a · 2048) (8–2048 cm)
``PivotPos_StepsFromRoot``    half    Pivot Position (16-bit) [cm]           Number of Steps From Root (a plain half,
                              EXR                                            exact to 2048)
``PivotPos_ParentIndex_f32``  float   pivot [cm]                             parent index as a float value (exact)
``XVector_XExtent_f32``       float   X axis, unit, in [−1, 1]               extent L [cm]
``Frequency_Damping_f32``     float   R: first frequency [Hz], G: damping    the element's own index
                                      ratio ζ, B: steps from root
============================  ======  =====================================  ===========================================

The first two are PP2's default textures 1 and 2 (what ``PivotPainter2FoliageShader`` reads); the third is a
PP2 option pair giving the depth directly. Precision: a half keeps 11 significant bits, so a pivot at 5–10 m from
the origin is rounded to within 0.25 cm and one at 10–20 m to within 0.5 cm; the 8-bit axis to 1/255 per
component; the 8-bit extent to 1024/255 ≈ 4 cm, clamped to 8 cm–20.48 m. The parent index packing holds indices up
to 30,719 (:data:`MAX_ELEMENTS`). Channel layout and import settings: docs/pivot_painter.md.

Measured (tests/addon/test_pivot_painter.py, files read back by OpenEXR and Pillow and decoded with PP2's
formulas, a six-branch tree with pivots 2–5 m from the origin): float32 pivots within 2e-4 mm, axes within
1.2e-6°; half pivots within 0.123 cm (0.99 of half the half-float step there); 8-bit axes within 0.90/255 per
component (0.25°), extents within 3.6 cm (half the step: 4.0 cm); parent indices (0 … 30,719) and depths exact.
A tapered 2 m branch's frequency channel is 0.15 % below an independent finite-element beam.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..solver import branch_modes
from ..solver import quaternion as quat
from .texture_files import write_exr, write_png

UNITS_PER_METRE = 100.0  # Unreal units (cm) per metre
EXTENT_8BIT_SCALE = 2048.0  # [cm]: PP2's "X Extent Divided by 2048 - 2048 Max"
EXTENT_8BIT_MIN = 8.0  # [cm]: Decode8BitAlphaAxisExtent's floor
HALF_INDEX_OFFSET = 1024  # PP2's Int as float: the half's bits are index + 1024 (no subnormal, no zero)
MAX_ELEMENTS = 0x7BFF - HALF_INDEX_OFFSET + 1  # the largest finite half's bits, 0x7BFF, hold index 30,719
_AXIS_Z = np.array([0.0, 0.0, 1.0])


@dataclass(frozen=True)
class Elements:
    """Per element (branch) e: ``pivot`` (e, 3) [m], ``axis`` (e, 3) unit, ``parent`` (e,) (self for a root),
    ``depth`` (e,), ``extent`` (e,) [m], ``frequency_hz`` (e,) and ``damping_ratio`` (e,) (NaN when not asked
    for); model frame (module docstring)."""

    pivot: np.ndarray
    axis: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    extent: np.ndarray
    frequency_hz: np.ndarray
    damping_ratio: np.ndarray

    @property
    def count(self) -> int:
        return int(self.parent.size)


def hierarchy_depth(parent: np.ndarray) -> np.ndarray:
    """Steps from the root of every element, ``parent`` (e,) pointing to itself at a root; one vectorised step
    per level. ValueError on a cycle."""
    parent = np.asarray(parent, np.int64)
    depth = np.zeros(parent.size, np.int64)
    node = np.arange(parent.size)
    for _ in range(parent.size + 1):
        up = parent[node]
        moving = up != node
        if not np.any(moving):
            return depth
        depth += moving
        node = up
    raise ValueError("the branch parents form a cycle: no root above some branch")


def _base_points(model, first: np.ndarray) -> np.ndarray:
    """The base joint point of each segment in ``first``: its point of the joint whose child it is (the
    segment's lower end, −l/2 along d3, where no joint holds it)."""
    joint_of = np.full(model.n_segments, -1, np.int64)
    joint_of[model.joint_child] = np.arange(model.n_joints)
    joint = joint_of[first]
    local = np.zeros((first.size, 3))
    local[:, 2] = -0.5 * model.lengths[first]
    held = joint >= 0
    local[held] = model.joint_point_child[joint[held]]
    return model.positions[first] + quat.rotate(model.orientations[first], local)


def _extents(model, spans: list, pivot: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """max over each branch's segment ends of (p − pivot)·axis [m]."""
    owner = np.concatenate([np.full(len(s), b) for b, s in enumerate(spans)])
    segs = np.concatenate(spans).astype(np.int64)
    half = 0.5 * model.lengths[segs, None] * quat.rotate(model.orientations[segs], _AXIS_Z)
    reach = np.maximum(
        np.einsum("ij,ij->i", model.positions[segs] + half - pivot[owner], axis[owner]),
        np.einsum("ij,ij->i", model.positions[segs] - half - pivot[owner], axis[owner]),
    )
    extent = np.zeros(len(spans))
    np.maximum.at(extent, owner, reach)
    return extent


def branch_elements(model, branch_map, *, damping: float = 0.0, modes: bool = True) -> Elements:
    """The PP2 elements of ``model`` (a RodModel built by :func:`solver.tree_from_branches`, leaves allowed) and
    its ``branch_map``: one per branch (module docstring). ``modes``: also each branch's first natural frequency
    and damping ratio under the mass-proportional ``damping`` c [1/s] (:func:`solver.branch_modes`, one
    eigenproblem per branch); otherwise those are NaN."""
    spans = [np.asarray(s, np.int64) for s in branch_map.span_segment]
    if len(spans) > MAX_ELEMENTS:
        raise ValueError(f"{len(spans)} branches: Pivot Painter 2's parent index holds {MAX_ELEMENTS} at most")
    first = np.array([s[0] for s in spans], np.int64)
    pivot = _base_points(model, first)
    axis = quat.rotate(model.orientations[first], _AXIS_Z)
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    parent = np.array([b if p is None else int(p[0]) for b, p in enumerate(branch_map.branch_parent)], np.int64)
    frequency = np.full(len(spans), np.nan)
    ratio = np.full(len(spans), np.nan)
    if modes:
        found = branch_modes(model, spans, damping=damping)
        frequency, ratio = found.frequency_hz, found.damping_ratio
    return Elements(pivot, axis, parent, hierarchy_depth(parent), _extents(model, spans, pivot, axis), frequency, ratio)


def texture_size(count: int) -> tuple[int, int]:
    """(width, height) of a texture with a texel per element: the most square exact factor pair W·H = count
    with W ≥ H and W ≤ 4 H, else H = ⌊√count⌋, W = ⌈count/H⌉."""
    count = max(int(count), 1)
    root = int(np.floor(np.sqrt(count)))
    for height in range(root, 0, -1):
        if count % height == 0:
            if count // height <= 4 * height:
                return count // height, height
            break
    return -(-count // root), root


def element_uv(element: np.ndarray, width: int, height: int) -> np.ndarray:
    """The PP2 UV (k, 2) of each element index in ``element`` (k,), in Blender's convention (v up): the centre
    of the element's texel, which Unreal's CalculateMeshElementIndex maps back to the index once the exporter
    has flipped v (module docstring)."""
    element = np.asarray(element, np.int64)
    u = (element % width + 0.5) / width
    v = 1.0 - (element // width + 0.5) / height
    return np.stack((u, v), axis=1)


def segment_elements(model, branch_map) -> np.ndarray:
    """The element (branch) of every segment (n,): a branch's own segments; a leaf or any segment outside the
    branches, the element of the segment it hangs from (its joint's parent); a root anchor, the branch it
    holds; −1 for a segment joined to none. With each mesh vertex's segment (its bone's), this gives the
    vertex's element for :func:`element_uv`."""
    element = np.full(model.n_segments, -1, np.int64)
    for b, spans in enumerate(branch_map.span_segment):
        element[np.asarray(spans, np.int64)] = b
    hangs_from = np.full(model.n_segments, -1, np.int64)
    hangs_from[model.joint_child] = model.joint_parent
    for _ in range(model.n_segments):  # leaves on leaves would need more than one pass
        todo = (element < 0) & (hangs_from >= 0)
        todo[todo] &= element[hangs_from[todo]] >= 0
        if not np.any(todo):
            break
        element[todo] = element[hangs_from[todo]]
    anchors = np.asarray(branch_map.anchors, np.int64)
    for anchor in anchors[element[anchors] < 0]:
        held = model.joint_child[model.joint_parent == anchor]
        element[anchor] = element[held[0]] if held.size else -1
    return element


def unreal_space(
    elements: Elements, world_to_object=None, units_per_metre: float = UNITS_PER_METRE
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pivots [Unreal units], unit X axes and extents [Unreal units] in the exported object's space with
    Unreal's axes: (x, y, z) → units_per_metre · (x, −y, z) after ``world_to_object`` (4×4, metres)."""
    pivot, axis = elements.pivot, elements.axis
    scale = 1.0
    if world_to_object is not None:
        m = np.asarray(world_to_object, float)
        pivot = pivot @ m[:3, :3].T + m[:3, 3]
        axis = axis @ m[:3, :3].T
        norm = np.linalg.norm(axis, axis=1, keepdims=True)
        scale = norm[:, 0]
        axis = axis / norm
    flip = np.array([1.0, -1.0, 1.0])
    return units_per_metre * pivot * flip, axis * flip, units_per_metre * elements.extent * scale


def _texels(values: np.ndarray, width: int, height: int, fill: float = 0.0) -> np.ndarray:
    """(H, W, c) image of per-element rows ``values`` (e, c) in texel order, the rest ``fill``."""
    values = values.reshape(values.shape[0], -1)
    out = np.full((width * height, values.shape[1]), fill, values.dtype)
    out[: values.shape[0]] = values
    return out.reshape(height, width, -1)


def pack_index_as_half(index: np.ndarray) -> np.ndarray:
    """PP2's "Int as float": float16 values whose bit patterns are ``index`` + 1024 (0 ≤ index ≤ 30,719)."""
    index = np.asarray(index, np.int64)
    if np.any((index < 0) | (index >= MAX_ELEMENTS)):
        raise ValueError(f"an index outside 0…{MAX_ELEMENTS - 1} has no Int-as-float half")
    return (index + HALF_INDEX_OFFSET).astype(np.uint16).view(np.float16)


def pp2_textures(elements: Elements, world_to_object=None, units_per_metre: float = UNITS_PER_METRE) -> dict:
    """PP2's textures as arrays (H, W, 4), row 0 on top: ``PivotPos_ParentIndex`` and
    ``PivotPos_StepsFromRoot`` float16, ``XVector_XExtent`` uint8 (module docstring)."""
    width, height = texture_size(elements.count)
    pivot, axis, extent = unreal_space(elements, world_to_object, units_per_metre)
    pivot_rgb = _texels(pivot.astype(np.float16), width, height)
    parent = np.arange(width * height)  # the texels past the last element are roots
    parent[: elements.count] = elements.parent
    steps = _texels(elements.depth.astype(np.float16), width, height)
    axis_bytes = np.round(255.0 * (axis + 1.0) / 2.0)
    extent_bytes = np.round(255.0 * np.clip(extent / EXTENT_8BIT_SCALE, EXTENT_8BIT_MIN / EXTENT_8BIT_SCALE, 1.0))
    x_vector = np.concatenate((axis_bytes, extent_bytes[:, None]), axis=1).astype(np.uint8)
    return {
        "PivotPos_ParentIndex": np.concatenate(
            (pivot_rgb, pack_index_as_half(parent).reshape(height, width, 1)), axis=2
        ),
        "XVector_XExtent": _texels(x_vector, width, height),
        "PivotPos_StepsFromRoot": np.concatenate((pivot_rgb, steps), axis=2),
    }


def float32_textures(elements: Elements, world_to_object=None, units_per_metre: float = UNITS_PER_METRE) -> dict:
    """The same data unquantised, as float32 arrays (H, W, 4), plus the frequency and damping ratio:
    ``PivotPos_ParentIndex_f32``, ``XVector_XExtent_f32``, ``Frequency_Damping_f32`` (module docstring)."""
    width, height = texture_size(elements.count)
    pivot, axis, extent = unreal_space(elements, world_to_object, units_per_metre)
    n = elements.count
    columns = {
        "PivotPos_ParentIndex_f32": (pivot, elements.parent[:, None]),
        "XVector_XExtent_f32": (axis, extent[:, None]),
        "Frequency_Damping_f32": (
            np.stack((elements.frequency_hz, elements.damping_ratio, elements.depth), axis=1),
            np.arange(n)[:, None],
        ),
    }
    return {
        name: _texels(np.concatenate(parts, axis=1).astype(np.float32), width, height)
        for name, parts in columns.items()
    }


def write_textures(
    elements: Elements, directory, name: str, world_to_object=None, units_per_metre: float = UNITS_PER_METRE
) -> dict:
    """Write every texture as ``directory/name_<texture>.exr`` (half and float32) or ``.png`` (8-bit); returns
    {texture: path}."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    images = pp2_textures(elements, world_to_object, units_per_metre)
    images.update(float32_textures(elements, world_to_object, units_per_metre))
    paths = {}
    for texture, image in images.items():
        if image.dtype == np.uint8:
            paths[texture] = write_png(directory / f"{name}_{texture}.png", image)
        else:
            paths[texture] = write_exr(directory / f"{name}_{texture}.exr", image)
    return paths
