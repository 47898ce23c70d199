"""A game rig from a baked Sapling tree: ≤ Max Bones joints and ≤ 4 influences per vertex (the fit: skin_fit.py).

* :func:`read_full_rig` reads the baked tree from Blender's depsgraph: its mesh (the curve converted to a mesh at
  rest, joined with the leaves) as one new Mesh in world space, and per baked frame the evaluated world positions
  of that geometry and the pose bones' world matrices. Sapling deforms its curve with an Armature modifier by
  bone *envelopes* (no vertex groups) and its leaves with an Armature modifier by vertex groups (after a leafy
  bake, under a Mesh Cache of the leaves' own motion); the curve hangs on the armature with an Object parent.
  The rest geometry is the curve evaluated with those Armature modifiers switched off, and the leaves' mesh data.
* :func:`build_game_rig` fits the reduced rig (:func:`skin_fit.fit_game_rig`) and writes it as a NEW armature
  (rest = the fitted rest transforms, parents of :class:`skin_fit.BoneSelection`, bones named after the segment
  bones they stand for) with an action "<tree> game" of quaternion + location keys at every baked frame, and a
  NEW mesh (a copy of the tree's geometry) with ≤ 4 vertex groups per vertex and an Armature modifier. It then
  measures the vertex error on Blender's evaluated meshes: the full rig's geometry against the game mesh at every
  baked frame (RMS and max in m and over the tree's height).
* Its files (glTF, FBX): addon/game_files.py.

The tree's objects are never changed: the envelope Armature modifier of the birch's curve costs ~7 s per frame
(111,160 vertices × 5,878 bones), so while the rest mesh is read and the game mesh measured it is switched off
and given back as it was (also while the exporters sample the frames, game_files.py).

Measured (tests/blender/test_blender_game_rig.py): white birch without leaves (111,160 vertices, 16.8 m), storm
preset over frames 1–12, error on Blender's evaluated meshes over the 12 frames: 128 bones 32 mm RMS (1.9e-3 of the
height) / 0.56 m max, 64 bones 51 mm (3.0e-3) / 1.18 m (the max: twigs that sway on their own, skin_fit.py).
Reading the 12 frames 85–91 s (the envelope deform), each fit ~22 s, writing 2 s, measuring 2 s; glTF export
3.2–4.3 s, 8.9 MB. The skinned vertices rebuilt from the .glb alone match Blender's within 8 µm.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import cast

import bmesh
import bpy
import numpy as np
from mathutils import Matrix

from ..solver import quaternion as quat
from . import bake, game_winds, keyframes, reader, skin_fit

GAME_TAG = "stiff_rods_game_rig"  # on the game armature: the report (JSON), with the tree and budget
GAME_MESH = "stiff_rods_game_mesh"  # on the game armature: the name of its mesh object
WOOD_DENSITY = 700.0  # kg/m³: the bones' masses, only for FitOptions(weight="mass")
GLTF_MIN_WEIGHT = 1e-4  # Blender's glTF exporter drops weights ≤ this (io_scene_gltf2 min_influence) and renormalises
CANDIDATE_SAMPLES = 8  # nearest bone samples per vertex when finding the bone it follows


class GameRigError(ValueError):
    """A tree that cannot get a game rig; the message names the object and is shown as is."""


@dataclass
class FullRig:
    """The baked tree as read from the depsgraph: ``frames`` (F,) the baked frame numbers; the full
    ``skeleton`` (world space, m) and ``motion`` (rest and per-frame world vertices of ``mesh``, m); ``mesh`` a
    new Mesh datablock at rest in world space (curve vertices first, then the leaves'); ``height`` [m] of the
    mesh; ``bone_names`` (N,); ``seconds`` per stage; ``winds``: for a Named Actions bake, (track, first, stop) of
    each wind's rows in ``frames`` (game_winds.py), else empty."""

    tree: str
    frames: np.ndarray
    skeleton: skin_fit.Skeleton
    motion: skin_fit.MeshMotion
    mesh: bpy.types.Mesh
    height: float
    bone_names: list
    seconds: dict = field(default_factory=dict)
    winds: list = field(default_factory=list)


# --- the baked tree ---------------------------------------------------------------------------------------------


def baked_tree(obj):
    """(armature, curve, leaves or None, baked frames (F,)) of the Sapling tree ``obj`` (armature or curve)."""
    try:
        curve, arm, leaves = reader.find_parts(obj)
    except reader.ReadError as exc:
        raise GameRigError(str(exc)) from exc
    if arm is None:
        raise GameRigError(f"'{obj.name}' is a plain curve: a game rig needs a Sapling tree (armature and curve)")
    try:
        winds = game_winds.tree_winds(arm)
    except ValueError as exc:
        raise GameRigError(str(exc)) from exc
    if winds:  # Named Actions: every wind's frames, in the bake's order
        return arm, curve, leaves, np.concatenate([w.frames for w in winds])
    action = bake.baked_action(arm)
    if action is None:
        raise GameRigError(f"'{arm.name}' is not baked: bake it first (Stiff Rods > Bake), then build its game rig")
    start, end = (round(v) for v in action.frame_range)
    return arm, curve, leaves, np.arange(start, end + 1)


def _tree_deforms(arm, objects) -> list:
    return [
        m
        for o in objects
        if o is not None
        for m in o.modifiers
        if m.type == "ARMATURE" and m.object == arm and m.show_viewport
    ]


@contextlib.contextmanager
def switched_off(modifiers):
    """The ``modifiers`` hidden in the viewport (not evaluated) inside the block, given back after it."""
    try:
        for m in modifiers:
            m.show_viewport = False
        yield
    finally:
        for m in modifiers:
            m.show_viewport = True


def _matrices(collection, attr: str) -> np.ndarray:
    """(n, 4, 4) row-major matrices ``attr`` of a bpy collection (foreach_get gives them column-major)."""
    buf = np.empty(16 * len(collection), np.float32)
    collection.foreach_get(attr, buf)
    return buf.reshape(-1, 4, 4).transpose(0, 2, 1).astype(float)


def _vectors(collection, attr: str, size: int = 3) -> np.ndarray:
    buf = np.empty(size * len(collection), np.float32)
    collection.foreach_get(attr, buf)
    return buf.reshape(-1, size).astype(float)


def rigid(m: np.ndarray) -> np.ndarray:
    """(..., 3, 4) rigid transforms of (..., 4, 4) matrices with a uniform scale (the rotation columns made unit:
    M_f M_0⁻¹ is the same rigid map either way)."""
    out = m[..., :3, :4].copy()
    out[..., :3] /= np.linalg.norm(out[..., :3], axis=-2, keepdims=True)
    return out


def _world_points(world, local: np.ndarray) -> np.ndarray:
    w = np.array(world, dtype=float)
    return local @ w[:3, :3].T + w[:3, 3]


def read_skeleton(arm):
    """(names, parent (N,), mass (N,) kg, heads (N, 3), tails (N, 3), rest (N, 3, 4)) of ``arm``, world space."""
    bl = arm.data.bones
    names = [b.name for b in bl]
    index = {n: i for i, n in enumerate(names)}
    parent = np.array([index[b.parent.name] if b.parent else -1 for b in bl], np.int64)
    heads = _world_points(arm.matrix_world, _vectors(bl, "head_local"))
    tails = _world_points(arm.matrix_world, _vectors(bl, "tail_local"))
    radius = 0.5 * (_vectors(bl, "head_radius", 1) + _vectors(bl, "tail_radius", 1))[:, 0]
    scale = float(np.cbrt(abs(np.linalg.det(np.array(arm.matrix_world)[:3, :3]))))
    mass = WOOD_DENSITY * np.pi * (scale * radius) ** 2 * np.linalg.norm(tails - heads, axis=1)
    rest = rigid(np.array(arm.matrix_world) @ _matrices(bl, "matrix_local"))
    return names, parent, mass, heads, tails, rest


def evaluated_points(obj, depsgraph) -> np.ndarray:
    """World positions (V, 3) of ``obj``'s evaluated geometry (modifiers applied)."""
    ev = obj.evaluated_get(depsgraph)
    mesh = ev.to_mesh()
    try:
        co = _vectors(mesh.vertices, "co")
    finally:
        ev.to_mesh_clear()
    return _world_points(ev.matrix_world, co)


def rest_mesh(context, arm, curve, leaves, name: str) -> bpy.types.Mesh:
    """A new Mesh ``name`` in world space: the curve converted to a mesh at rest (its Armature modifiers off),
    then the leaves' mesh data; materials of both, the leaves' material indices shifted after the curve's."""
    with switched_off(_tree_deforms(arm, [curve])):
        depsgraph = context.evaluated_depsgraph_get()
        depsgraph.update()
        parts = [bpy.data.meshes.new_from_object(curve.evaluated_get(depsgraph))]
    parts[0].transform(curve.matrix_world)
    if leaves is not None:
        parts.append(leaves.data.copy())
        parts[1].transform(leaves.matrix_world)
    joined = bpy.data.meshes.new(name)
    bm = bmesh.new()
    try:
        faces = []
        for p in parts:
            bm.from_mesh(p)  # appends: vertices in the parts' order
            faces.append(len(p.polygons))
        for layer in list(bm.verts.layers.deform.values()):
            bm.verts.layers.deform.remove(layer)
        bm.to_mesh(joined)
    finally:
        bm.free()
    shift = np.repeat([0, len(parts[0].materials)][: len(parts)], faces).astype(np.int32)
    index = np.empty(len(joined.polygons), np.int32)
    joined.polygons.foreach_get("material_index", index)
    joined.polygons.foreach_set("material_index", index + shift)
    for p in parts:
        for mat in p.materials:
            joined.materials.append(mat)
        bpy.data.meshes.remove(p)
    return joined


def read_motion(context, arm, objects, frames: np.ndarray, vertices: int):
    """(positions (F, V, 3), poses (F, N, 3, 4)) world space at every frame: the evaluated geometry of ``objects``
    (in order) and ``arm``'s pose bones; the scene's frame is given back."""
    scene = context.scene
    keep = scene.frame_current
    positions = np.empty((frames.size, vertices, 3))
    poses = np.empty((frames.size, len(arm.data.bones), 3, 4))
    try:
        for i in np.argsort(frames == keep, kind="stable"):  # the user's frame last: giving it back is free
            scene.frame_set(int(frames[i]))
            depsgraph = context.evaluated_depsgraph_get()
            positions[i] = np.concatenate([evaluated_points(o, depsgraph) for o in objects])
            ev = arm.evaluated_get(depsgraph)
            poses[i] = rigid(np.array(ev.matrix_world) @ _matrices(ev.pose.bones, "matrix"))
    finally:
        scene.frame_set(keep)
    return positions, poses


def vertex_bones(skel: skin_fit.Skeleton, rest: np.ndarray, frames: np.ndarray, chunk: int = 32768) -> np.ndarray:
    """The full bone (V,) each vertex follows: of the bones nearest to it at rest (points along every bone), the
    one whose rigid motion M_b(f) v⁰ carries it closest to its baked positions (envelope skinning blends bones, so
    nearness alone misassigns vertices at forks)."""
    from scipy.spatial import cKDTree  # noqa: PLC0415 (scipy loads only when a rig is built)

    t = np.linspace(0.0, 1.0, 5)[None, :, None]
    samples = (skel.heads[:, None] * (1.0 - t) + skel.tails[:, None] * t).reshape(-1, 3)
    owner = np.repeat(np.arange(skel.parent.size), 5)
    _, near = cKDTree(samples).query(rest, k=CANDIDATE_SAMPLES)
    cand = owner[near]
    m = skin_fit.skinning_matrices(skel.poses, skel.rest)
    best = np.empty(rest.shape[0], np.int64)
    for lo in range(0, rest.shape[0], chunk):
        sl = slice(lo, lo + chunk)
        moved = skin_fit.transform_points(m[:, cand[sl]], rest[sl, None, :])  # (F, v, k, 3)
        err = np.sum((moved - frames[:, sl, None, :]) ** 2, axis=(0, 3))
        best[sl] = cand[sl][np.arange(err.shape[0]), np.argmin(err, axis=1)]
    return best


def read_full_rig(context, obj) -> FullRig:
    """The baked tree of ``obj`` as a :class:`FullRig` (module docstring); raises :class:`GameRigError`."""
    arm, curve, leaves, frames = baked_tree(obj)
    clock = time.perf_counter()
    mesh = rest_mesh(context, arm, curve, leaves, f"{arm.name} game")
    try:
        rest = _vectors(mesh.vertices, "co")
        names, parent, mass, heads, tails, bone_rest = read_skeleton(arm)
        seconds = dict(rest_mesh=time.perf_counter() - clock)
        clock = time.perf_counter()
        objects = [curve] + ([leaves] if leaves is not None else [])
        winds = game_winds.tree_winds(arm)
        read = lambda fr: read_motion(context, arm, objects, fr, rest.shape[0])  # noqa: E731
        if winds:  # one fit over every wind's frames, split by wind when keyed
            frames, positions, poses, spans = game_winds.read_winds(arm, winds, read)
        else:
            (positions, poses), spans = read(frames), []
        seconds["read_frames"] = time.perf_counter() - clock
        skel = skin_fit.Skeleton(parent, mass, heads, tails, bone_rest, poses)
        clock = time.perf_counter()
        motion = skin_fit.MeshMotion(rest, positions, vertex_bones(skel, rest, positions))
        seconds["vertex_bones"] = time.perf_counter() - clock
    except Exception:
        bpy.data.meshes.remove(mesh)
        raise
    height = float(np.ptp(rest[:, 2])) or 1.0
    return FullRig(arm.name, frames, skel, motion, mesh, height, names, seconds, spans)


# --- the game rig -----------------------------------------------------------------------------------------------


@contextlib.contextmanager
def editing(context, obj):
    """``obj``'s edit bones in Edit Mode inside the block; Object Mode and the active object given back after."""
    view_layer = context.view_layer
    view_layer.update()  # a new object's base becomes visible to the mode switch
    active = view_layer.objects.active
    view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    try:
        yield obj.data.edit_bones
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")
        view_layer.objects.active = active


def make_armature(context, name: str, collection, names, rest: np.ndarray, parent: np.ndarray, lengths):
    """A new armature object ``name`` at the origin in ``collection`` with bones ``names`` whose rest matrices are
    ``rest`` (B, 3, 4) world space and parents ``parent`` (B,); returns it and its bones' rest as Blender stores
    them (float32 head, tail and roll) (B, 3, 4)."""
    data = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, data)
    collection.objects.link(obj)
    with editing(context, obj) as eb:
        made = []
        for b, bone_name in enumerate(names):
            e = eb.new(bone_name)
            e.head, e.tail = (0.0, 0.0, 0.0), (0.0, float(lengths[b]), 0.0)
            e.matrix = Matrix(np.vstack((rest[b], [0.0, 0.0, 0.0, 1.0])).tolist())
            made.append(e)
        for b, p in enumerate(parent.tolist()):
            if p >= 0:
                made[b].parent = made[p]
    # data.bones is in hierarchy order after Edit Mode, not in creation order
    return obj, rigid(np.array([np.array(data.bones[n].matrix_local) for n in names]))


def _collection(context, arm):
    """The tree armature's first collection in the view layer, else the scene's."""
    layer = context.view_layer.layer_collection
    names = {c.name for c in arm.users_collection}
    stack = [layer]
    while stack:
        lc = stack.pop()
        if lc.collection.name in names and not lc.exclude:
            return lc.collection
        stack.extend(lc.children)
    return context.scene.collection


def basis_transforms(poses: np.ndarray, rest: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Pose-bone basis (F, B, 3, 4) giving world poses (F, B, 3, 4) for rest (B, 3, 4) and parents (B,): Blender
    poses a bone as P_p (R_p⁻¹ R_b) L, so L = R_b⁻¹ R_p P_p⁻¹ P_b (roots: R_b⁻¹ P_b)."""
    eye = np.broadcast_to(np.eye(3, 4), rest.shape)
    has = parent >= 0
    r_p = np.where(has[:, None, None], rest[np.maximum(parent, 0)], eye)
    p_p = np.where(has[None, :, None, None], poses[:, np.maximum(parent, 0)], eye[None])
    inv = skin_fit.rigid_inverse
    return skin_fit.compose(skin_fit.compose(inv(rest), r_p)[None], skin_fit.compose(inv(p_p), poses))


def key_pose(obj, action_name: str, names, frames: np.ndarray, basis: np.ndarray) -> bpy.types.Action:
    """A new action ``action_name`` on ``obj`` keying the pose bones ``names`` (B,): rotation_quaternion and location
    from ``basis`` (F, B, 3, 4) at ``frames``; quaternion signs kept continuous for the linear keys between
    frames."""
    q = quat.from_matrix(basis[..., :3])
    for f in range(1, q.shape[0]):
        q[f] *= np.where(np.sum(q[f] * q[f - 1], axis=-1) < 0.0, -1.0, 1.0)[:, None]
    for n in names:
        obj.pose.bones[n].rotation_mode = "QUATERNION"
    action = bpy.data.actions.new(action_name)
    obj.animation_data_create()
    obj.animation_data.action = action
    keyframes.write_keys(action, obj, [f'pose.bones["{n}"].rotation_quaternion' for n in names], names, frames, q)
    keyframes.write_keys(action, obj, [f'pose.bones["{n}"].location' for n in names], names, frames, basis[..., 3])
    return action


def exportable_weights(weights: np.ndarray, floor: float = GLTF_MIN_WEIGHT) -> np.ndarray:
    """``weights`` (V, 4) with those ≤ ``floor`` set to 0 and each row renormalised, as the glTF exporter writes
    them: the rig in Blender is then the rig in the file (kept, such weights moved birch vertices by up to
    0.4 mm between the two)."""
    w = np.where(weights > floor, weights, 0.0)
    return w / w.sum(axis=1, keepdims=True)


def skin_mesh(mesh, name: str, armature, names, indices: np.ndarray, weights: np.ndarray):
    """A new mesh object ``name`` (child of ``armature``) with one vertex group per bone, the ≤ 4 weights of every
    vertex, and an Armature modifier by vertex groups. Vertices of a group that share one weight (mostly 1) are
    added in one call."""
    obj = bpy.data.objects.new(name, mesh)
    for c in armature.users_collection:
        c.objects.link(obj)
    obj.parent = armature
    groups = [obj.vertex_groups.new(name=n) for n in names]
    for slot in range(indices.shape[1]):
        live = weights[:, slot] > 0.0
        key = np.stack((indices[live, slot], weights[live, slot]), axis=1)
        verts = np.flatnonzero(live)
        uniq, inverse = np.unique(key, axis=0, return_inverse=True)
        order = np.argsort(inverse.ravel(), kind="stable")
        bounds = np.searchsorted(inverse.ravel()[order], np.arange(uniq.shape[0] + 1))
        for u, (b, w) in enumerate(uniq.tolist()):
            groups[int(b)].add(verts[order[bounds[u] : bounds[u + 1]]].tolist(), float(w), "REPLACE")
    mod = cast(bpy.types.ArmatureModifier, obj.modifiers.new("Game Armature", "ARMATURE"))
    mod.object, mod.use_vertex_groups, mod.use_bone_envelopes = armature, True, False
    return obj


def measure(context, full: FullRig, game_mesh, tree_objects) -> np.ndarray:
    """The game mesh's evaluated world vertices (F, V, 3) at every baked frame (the tree's own Armature modifiers
    off meanwhile: they do not change the game mesh and cost seconds a frame)."""
    arm = bpy.data.objects[full.tree]
    scene = context.scene
    keep = scene.frame_current

    def evaluate(frames):
        out = np.empty((frames.size,) + full.motion.rest.shape)
        for i, f in enumerate(frames):
            scene.frame_set(int(f))
            out[i] = evaluated_points(game_mesh, context.evaluated_depsgraph_get())
        return out

    with switched_off(_tree_deforms(arm, tree_objects)):
        try:
            if full.winds:  # each wind's game action playing alone
                return game_winds.measure_winds(game_mesh.parent, full.winds, full.frames, evaluate)
            return evaluate(full.frames)
        finally:
            scene.frame_set(keep)


def _fit(full: FullRig, budget: int, options) -> skin_fit.GameRig:
    clock = time.perf_counter()
    rig = skin_fit.fit_game_rig(full.skeleton, full.motion, budget, options)
    rig.seconds["fit"] = time.perf_counter() - clock
    return rig


def _write_rig(context, full: FullRig, rig: skin_fit.GameRig, budget: int):
    """The game armature (keyed) and mesh for ``rig``; the objects are removed again if anything fails."""
    arm = bpy.data.objects[full.tree]
    tag = f"{full.tree} game {budget}"
    chosen = rig.selection.chosen
    names = [full.bone_names[i] for i in chosen]
    lengths = np.linalg.norm(full.skeleton.tails[chosen] - full.skeleton.heads[chosen], axis=1)
    made = []
    try:
        game, rest = make_armature(
            context, tag, _collection(context, arm), names, rig.rest, rig.selection.parent, lengths
        )
        made.append(game)
        # the poses that give the fitted skinning matrices M = P R⁻¹ with the rest Blender stored
        m = skin_fit.compose(rig.poses, skin_fit.rigid_inverse(rig.rest)[None])
        basis = basis_transforms(skin_fit.compose(m, rest[None]), rest, rig.selection.parent)
        frames = full.frames.astype(float)
        key = lambda name, rows: key_pose(game, name, names, frames[rows], basis[rows])  # noqa: E731
        if full.winds:
            made.extend(game_winds.key_winds(game, tag, full.winds, key))
        else:
            made.append(key(tag, slice(None)))
        mesh = full.mesh.copy()
        mesh.name = f"{tag} mesh"
        mesh_obj = skin_mesh(mesh, f"{tag} mesh", game, names, rig.indices, exportable_weights(rig.weights))
        made.append(mesh_obj)
    except Exception:
        _remove(made)
        raise
    game[GAME_MESH] = mesh_obj.name
    return game, mesh_obj


def _remove(made) -> None:
    for thing in reversed(made):
        if isinstance(thing, bpy.types.Action):
            bpy.data.actions.remove(thing)
            continue
        data = thing.data
        bpy.data.objects.remove(thing)
        if data is not None and data.users == 0:
            (bpy.data.armatures if isinstance(data, bpy.types.Armature) else bpy.data.meshes).remove(data)


def _wind_errors(full: FullRig, evaluated: np.ndarray) -> dict:
    """Per wind of a Named Actions bake: the vertex error over its frames and ``sway_rms_m``, the rms distance of
    the full rig's vertices from rest over them (what the game rig has to carry)."""
    out = {}
    for track, first, stop in full.winds:
        baked = full.motion.frames[first:stop]
        sway = float(np.sqrt(np.mean(np.sum((baked - full.motion.rest) ** 2, axis=-1))))
        out[track] = dict(skin_fit.vertex_error(evaluated[first:stop], baked, full.height), sway_rms_m=sway)
    return out


def build_game_rig(context, full: FullRig, budget: int, options: skin_fit.FitOptions | None = None):
    """(game armature, game mesh, report) for ≤ ``budget`` bones from ``full``; the report (also on the armature as
    JSON under GAME_TAG): ``tree``, ``bones``, ``vertices``, ``frames`` [first, last], ``height_m``, the error on
    Blender's evaluated meshes (:func:`skin_fit.vertex_error`), the fit's own last error and ``seconds``."""
    rig = _fit(full, budget, options)
    clock = time.perf_counter()
    game, mesh_obj = _write_rig(context, full, rig, budget)
    seconds = dict(rig.seconds, write=time.perf_counter() - clock)
    clock = time.perf_counter()
    try:
        _, curve, leaves, _ = baked_tree(bpy.data.objects[full.tree])
        evaluated = measure(context, full, mesh_obj, [curve, leaves])
    except Exception:
        _remove([game, mesh_obj])
        raise
    seconds["measure"] = time.perf_counter() - clock
    report = dict(
        tree=full.tree,
        budget=int(budget),
        bones=int(rig.selection.chosen.size),
        vertices=int(full.motion.rest.shape[0]),
        frames=[int(full.frames[0]), int(full.frames[-1])],
        height_m=full.height,
        max_influences=int(np.max(np.sum(rig.weights > 0.0, axis=1))),
        fit_error=rig.errors[-1],
        seconds=dict(full.seconds, **seconds),
        **skin_fit.vertex_error(evaluated, full.motion.frames, full.height),
    )
    if full.winds:
        report["winds"] = _wind_errors(full, evaluated)
    game[GAME_TAG] = json.dumps(report)
    return game, mesh_obj, report


def game_rigs(context, obj, budgets, options: skin_fit.FitOptions | None = None) -> list:
    """One read of the baked tree ``obj`` and a game rig for each of ``budgets`` (LODs): [(armature, mesh,
    report)]. Nothing is left in the file when one fails."""
    full = read_full_rig(context, obj)
    arm, curve, leaves, _ = baked_tree(obj)
    out: list = []
    try:  # the tree's own deforms off while building: each mode switch would evaluate them again (~7 s)
        with switched_off(_tree_deforms(arm, [curve, leaves])):
            for budget in budgets:
                out.append(build_game_rig(context, full, int(budget), options))
    except Exception:
        for game, mesh_obj, _ in out:
            _remove([game, mesh_obj])
        raise
    finally:
        bpy.data.meshes.remove(full.mesh)
    return out
