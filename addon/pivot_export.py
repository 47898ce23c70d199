"""Pivot Painter 2 data of a tree in Blender: the element textures (:mod:`addon.pivot_painter`) and the element
index as a UV channel on a mesh that follows the tree (the game rig's mesh, :mod:`addon.game_rig`).

* The elements come from the tree's rod model as the add-on builds it (:func:`checks.tree_session`: the Session
  Convert and Bake use), one per branch, with the frequency and damping ratio under the Simulator's damping.
* A vertex's element is its branch: the vertex takes the branch segment whose bark it lies on, the least
  | distance to the segment's axis − the segment's radius | among the segments sampled nearest to it, and each
  mesh island (a connected piece: Sapling's curve converts to one tube per spline) takes the branch most of its
  vertices chose, so a tube is never split between two elements. A leaf (an island of its own) is the element
  of the branch it hangs from in the rod model: its vertices are found at the model's leaves' vertices (within
  0.1 mm) and take the element of their leaf segment's branch (:func:`pivot_painter.segment_elements`; the
  leaf's joint is where :func:`solver.attach_leaves` put it). Without leaves in the model (Leaves off) a leaf
  takes the branch whose bark most of its vertices are nearest to. The bones' vertex groups are not used: a
  game rig's few bones each carry many branches, and PP2 needs every branch.
* The UV layer ``PivotPainter`` gets, on every loop of a vertex, the UV of its element's texel
  (:func:`pivot_painter.element_uv`). PP2's shaders read it from the mesh's second UV channel by default: the
  report says which channel it is.
* Spaces: the model is in the world (metres); the textures hold the pivots in the mesh object's space
  (``world_to_object``: the inverse of its world matrix) and the vertices are placed in the world by that same
  matrix, so the mesh and the tree must overlap as they do when the game rig is built.

Measured (tests/blender/test_blender_pivot_painter.py, Blender 3.4, Sapling's small pine without leaves, tree and
16-bone game rig moved and turned off the origin: 346 branches, 20 × 18 texels, 32,880 vertices, 0.8–1.4 s):
the float32 pivots are the branches' first bone heads within 2.4e-4 mm, the axes their directions within
2.4e-6°; every vertex maps to its own branch's element, within 1.014 bevel radii of that spline's centre line;
every branch has vertices. With leaves (48,607 needles, 227,308 vertices) 99.98 % of the leaf vertices get
the branch of the bone Sapling weighted them to.
"""

from __future__ import annotations

import json
import os
import time

import bpy
import numpy as np

from ..solver import quaternion as quat
from . import checks, game_rig, pivot_painter, reader
from .frames import metric

UV_LAYER = "PivotPainter"  # the UV map that holds each vertex's element
EXPORT_TAG = "stiff_rods_pivot_painter"  # on the mesh object: the last export's report (JSON)
SAMPLES = 5  # points along each segment for the nearest-segment search
CANDIDATES = 8  # nearest samples whose segments are scored per vertex
LEAF_MATCH = 1e-4  # [m]: a mesh vertex this close to a vertex of the model's leaves is that leaf's


class PivotExportError(ValueError):
    """Pivot Painter data that cannot be made; the message names the object and is shown as is."""


def targets(obj):
    """(tree owner, mesh object or None) for ``obj``: a game rig (armature or mesh) gives its tree and its mesh;
    a part of a Sapling tree or a curve gives that tree and no mesh."""
    game = obj.parent if obj is not None and obj.type == "MESH" and obj.parent is not None else obj
    if game is not None and game_rig.GAME_TAG in game:
        mesh = bpy.data.objects.get(game.get(game_rig.GAME_MESH, ""))
        tree = bpy.data.objects.get(json.loads(game[game_rig.GAME_TAG]).get("tree", ""))
        if mesh is None or tree is None:
            lost = f"its mesh '{game.get(game_rig.GAME_MESH)}'" if mesh is None else "its tree"
            raise PivotExportError(f"Game rig '{game.name}' has lost {lost}: Pivot Painter data needs both")
        return tree, mesh
    if obj is None:
        raise PivotExportError("Nothing is active: select a game rig or a Sapling tree")
    try:
        curve, armature, _ = reader.find_parts(obj)
    except reader.ReadError as exc:
        raise PivotExportError(f"{exc}; or select a game rig (Game Rig builds one)") from None
    return armature or curve, None


def tree_elements(context, owner):
    """(session, elements) of the tree ``owner``: one element per branch of its rod model, with each branch's
    first frequency and damping ratio under the Simulator's damping c [1/s]."""
    session = checks.tree_session(context, owner=owner)
    damping = float(getattr(session.sim, "damping", session.spec.rod.damping))
    return session, pivot_painter.branch_elements(session.model, session.branch_map, damping=damping)


def _segment_capsules(model, branch_map):
    """(segments (s,), branch (s,), ends a (s, 3), b (s, 3), radius (s,)) of the branches' segments [m]."""
    spans = [np.asarray(s, np.int64) for s in branch_map.span_segment]
    segs = np.concatenate(spans)
    branch = np.repeat(np.arange(len(spans)), [s.size for s in spans])
    half = 0.5 * model.lengths[segs, None] * quat.rotate(model.orientations[segs], np.array([0.0, 0.0, 1.0]))
    centre = model.positions[segs]
    return segs, branch, centre - half, centre + half, model.radii[segs].mean(axis=1)


def vertex_branches(model, branch_map, points: np.ndarray, edges: np.ndarray, leaves=None) -> np.ndarray:
    """The branch (V,) of every vertex at ``points`` (V, 3) [m, the model's frame], mesh ``edges`` (E, 2): the
    segment whose bark it lies on, or, within 0.1 mm of a leaf vertex of ``leaves`` ((k, 3) [m], element (k,)),
    that leaf's element; then per island the branch most of its vertices chose (module docstring)."""
    from scipy.sparse import coo_matrix  # noqa: PLC0415 (scipy loads only when an export runs)
    from scipy.sparse.csgraph import connected_components  # noqa: PLC0415
    from scipy.spatial import cKDTree  # noqa: PLC0415

    _, branch, a, b, radius = _segment_capsules(model, branch_map)
    t = np.linspace(0.0, 1.0, SAMPLES)[None, :, None]
    samples = (a[:, None] * (1.0 - t) + b[:, None] * t).reshape(-1, 3)
    k = min(CANDIDATES, samples.shape[0])
    cand = np.repeat(np.arange(a.shape[0]), SAMPLES)[cKDTree(samples).query(points, k=k)[1].reshape(-1, k)]
    ab = b[cand] - a[cand]
    along = np.einsum("vkj,vkj->vk", points[:, None] - a[cand], ab) / np.einsum("vkj,vkj->vk", ab, ab)
    foot = a[cand] + np.clip(along, 0.0, 1.0)[..., None] * ab
    score = np.abs(np.linalg.norm(points[:, None] - foot, axis=2) - radius[cand])
    chosen = branch[cand[np.arange(points.shape[0]), np.argmin(score, axis=1)]]
    if leaves is not None and leaves[0].shape[0]:
        dist, near = cKDTree(leaves[0]).query(points)
        chosen = np.where(dist < LEAF_MATCH, leaves[1][near], chosen)
    n = points.shape[0]
    graph = coo_matrix((np.ones(edges.shape[0]), (edges[:, 0], edges[:, 1])), shape=(n, n))
    _, island = connected_components(graph, directed=False)
    pairs, votes = np.unique(np.stack((island, chosen), axis=1), axis=0, return_counts=True)
    order = np.lexsort((-votes, pairs[:, 0]))  # per island, the most voted branch first
    first = order[np.r_[True, pairs[order[1:], 0] != pairs[order[:-1], 0]]]
    winner = np.empty(island.max() + 1, np.int64)
    winner[pairs[first, 0]] = pairs[first, 1]
    return winner[island]


def leaf_elements(session):
    """(world points (k, 3) [m], element (k,)) of the leaves mesh's vertices that ride on a leaf segment of the
    session's model, element the branch the leaf hangs from (:func:`pivot_painter.segment_elements`); None
    without leaves in the model."""
    if session.leaf_mesh is None:
        return None
    used, seg, _ = session.leaf_binding
    return session.leaf_mesh.co[used], pivot_painter.segment_elements(session.model, session.branch_map)[seg]


def _mesh_arrays(mesh_obj, unit: float):
    """(world points (V, 3) [m], edges (E, 2), loop vertices (L,)) of ``mesh_obj``'s own mesh data."""
    me = mesh_obj.data
    co = np.empty(3 * len(me.vertices), np.float32)
    me.vertices.foreach_get("co", co)
    edges = np.empty(2 * len(me.edges), np.int64)
    me.edges.foreach_get("vertices", edges)
    loops = np.empty(len(me.loops), np.int64)
    me.loops.foreach_get("vertex_index", loops)
    m = metric(mesh_obj.matrix_world, unit)
    return co.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3], edges.reshape(-1, 2), loops


def write_uv_layer(mesh_obj, uv: np.ndarray) -> int:
    """Write the per-vertex ``uv`` (V, 2) on every loop of the UV layer ``PivotPainter`` of ``mesh_obj`` (made
    if missing, at the end of the list; the active and render UV maps kept); its index. A new layer is removed
    again when writing fails."""
    me = mesh_obj.data
    layer = me.uv_layers.get(UV_LAYER)
    made = layer is None
    if made:
        active, render = me.uv_layers.active_index, [u.active_render for u in me.uv_layers]
        layer = me.uv_layers.new(name=UV_LAYER, do_init=False)
        if layer is None:
            raise PivotExportError(f"Mesh '{me.name}' has 8 UV maps, Blender's most: remove one for {UV_LAYER}")
    try:
        loops = np.empty(len(me.loops), np.int64)
        me.loops.foreach_get("vertex_index", loops)
        layer.data.foreach_set("uv", np.ascontiguousarray(uv[loops], np.float32).ravel())
        if made and render:  # the maps there were stay the active and render ones; the new one is last
            me.uv_layers.active_index = active
            for u, r in zip(me.uv_layers, render, strict=False):
                u.active_render = r
    except Exception:
        if made:
            me.uv_layers.remove(layer)
        raise
    return list(me.uv_layers).index(layer)


def texture_folder(directory: str, tree_name: str) -> str:
    """The absolute folder for the textures: ``directory``, or ``//<tree>_pivot_painter/`` when empty; a relative
    path (``//`` or not) is taken from the .blend's folder, refused when the .blend is not saved."""
    directory = directory or f"//{bpy.path.clean_name(tree_name)}_pivot_painter/"
    if os.path.isabs(directory) and not directory.startswith("//"):
        return directory
    if not bpy.data.filepath:
        raise PivotExportError(
            f"The folder '{directory}' is relative to the .blend, which is not saved: save the .blend, or pick an "
            "absolute folder"
        )
    return os.path.join(os.path.dirname(bpy.data.filepath), directory[2:] if directory.startswith("//") else directory)


def export_pivot_painter(context, obj, directory: str = "") -> dict:
    """Pivot Painter 2 data of the game rig or tree ``obj``: its textures in ``directory``
    (:func:`texture_folder`), named after the tree, and, for a game rig, the UV layer ``PivotPainter`` on its mesh.
    Returns the report (also on the mesh as JSON under EXPORT_TAG): ``tree``, ``mesh``, ``elements``, ``size``
    [W, H], ``files``, ``vertices``, ``uv_index``, ``seconds``. Files are written before the UV layer, and a new
    layer is removed if writing it fails: a failure changes nothing in the scene."""
    clock = time.perf_counter()
    owner, mesh_obj = targets(obj)
    folder = texture_folder(directory, owner.name)
    session, elements = tree_elements(context, owner)
    unit = session.unit
    width, height = pivot_painter.texture_size(elements.count)
    report = dict(tree=owner.name, mesh=None, elements=elements.count, size=[width, height], vertices=0)
    frame = mesh_obj if mesh_obj is not None else owner
    world_to_object = np.linalg.inv(metric(frame.matrix_world, unit))
    uv = None
    if mesh_obj is not None:
        points, edges, _ = _mesh_arrays(mesh_obj, unit)
        branch = vertex_branches(session.model, session.branch_map, points, edges, leaf_elements(session))
        uv = pivot_painter.element_uv(branch, width, height)
        report.update(mesh=mesh_obj.name, vertices=int(points.shape[0]), branches_used=int(np.unique(branch).size))
    paths = pivot_painter.write_textures(elements, folder, bpy.path.clean_name(owner.name), world_to_object)
    report["files"] = {k: str(p) for k, p in paths.items()}
    report["folder"] = folder
    if mesh_obj is not None and uv is not None:
        report["uv_index"] = write_uv_layer(mesh_obj, uv)
    report["seconds"] = time.perf_counter() - clock
    if mesh_obj is not None:
        mesh_obj[EXPORT_TAG] = json.dumps(report)
    return report
