"""Export Cache: a baked tree's evaluated geometry per frame as USD or Alembic, with Blender's own exporters.

What is written: the branches (the curve's evaluated mesh, beveled and deformed by its bones or keyed control
points) and the leaves (their evaluated mesh: the bake's Mesh Cache modifier), every baked frame, in world metres
(USD: up axis Z, metersPerUnit 1; Alembic: Y up, Blender's importer turns it back). Nothing else of the scene.

Why the branches go through a stand-in: USD writes a curve object as BasisCurves of its control points, still at
rest (the Armature modifier's deformation of the curve is not sampled), and USD's armature export would write
the leaves as a UsdSkel binding instead of their points. So the curve's evaluated mesh is sampled here at every
baked frame into a PC2 point cache (world space, float32) played by a Mesh Cache modifier on a temporary mesh
object ``<curve>_branches``, which the exporter evaluates like the leaves; it and its cache are removed after
the export. The file is written under a temporary name next to the target and renamed when complete, so a
failed export leaves neither a partial file nor a damaged earlier one. While the exporter runs, the curve's own
modifiers are off (the curve is not exported, its stand-in holds the motion): the tree's deformation, ~6 s a frame
for the birch's 5,878 bone envelopes, is evaluated once per frame, not twice.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
import uuid

import bpy
import numpy as np

from . import bake, game_rig, game_winds, point_cache, reader
from .exporting import known_options, selected_alone

# format: (extension, bpy.app.build_options flag, bpy.ops.wm operator, label)
FORMATS = {
    "USD": (".usdc", "usd", "usd_export", "USD"),
    "ALEMBIC": (".abc", "alembic", "alembic_export", "Alembic"),
}
EXTENSIONS = {".usd", ".usda", ".usdc", ".usdz", ".abc"}


class CacheExportError(ValueError):
    """A tree or a file that cannot be exported; the message is shown to the user as is."""


def available(fmt: str) -> tuple[bool, str]:
    """(True, "") where this Blender can write ``fmt`` ("USD" or "ALEMBIC"), else (False, the reason)."""
    _, flag, op_name, label = FORMATS[fmt]
    version = ".".join(str(v) for v in bpy.app.version[:2])
    if not getattr(bpy.app.build_options, flag, False):
        return False, (
            f"This Blender {version} is built without {label} (a Linux distribution's build): Export Cache needs "
            "Blender from blender.org or the bpy module"
        )
    try:
        getattr(bpy.ops.wm, op_name).get_rna_type()
    except (AttributeError, KeyError):
        return False, f"This Blender {version} has no {label} exporter (bpy.ops.wm.{op_name})"
    return True, ""


def extension(fmt: str) -> str:
    return FORMATS[fmt][0]


def baked_motion(obj, wind: str = ""):
    """(curve, leaves or None, armature or None, baked frames (F,), wind action or None) of the baked tree or
    curve ``obj``; :class:`CacheExportError` naming it when it is not baked. A Named Actions bake needs ``wind``,
    the NLA track whose action the cache holds."""
    try:
        curve, arm, leaves = reader.find_parts(obj)
    except reader.ReadError as exc:
        raise CacheExportError(str(exc)) from exc
    holder = arm if arm is not None else curve.data
    name = arm.name if arm is not None else curve.name
    winds = game_winds.tree_winds(arm) if arm is not None else []
    if winds:
        tracks = [w.track for w in winds]
        chosen = next((w for w in winds if w.track == wind), None)
        if chosen is None:
            raise CacheExportError(
                f"'{name}' holds Named Actions ({', '.join(tracks)}): choose the wind to export"
                + (f" ('{wind}' is none of them)" if wind else "")
            )
        return curve, leaves, arm, chosen.frames, chosen.action
    action = bake.baked_action(holder)
    if action is None:
        raise CacheExportError(f"'{name}' is not baked: bake it first (Stiff Rods > Bake), then export its cache")
    start, end = (round(v) for v in action.frame_range)
    return curve, leaves, arm, np.arange(start, end + 1), None


def sample_branches(context, curve, frames: np.ndarray, progress=None) -> np.ndarray:
    """(F, V, 3) world positions [m] of ``curve``'s evaluated mesh at ``frames``; ``progress(i)`` after each."""
    scene = context.scene
    out = []
    for i, f in enumerate(frames):
        scene.frame_set(int(f))
        out.append(game_rig.evaluated_points(curve, context.evaluated_depsgraph_get()))
        if len(out[-1]) != len(out[0]):
            raise CacheExportError(
                f"'{curve.name}' changes its vertex count between frames {frames[0]} and {f}: a point cache "
                "needs a fixed topology (animated bevel or resolution?)"
            )
        if progress is not None:
            progress(i)
    return np.array(out)


@contextlib.contextmanager
def branch_stand_in(context, curve, frames: np.ndarray, folder: str, progress=None):
    """A temporary mesh object ``<curve>_branches`` playing the curve's evaluated mesh at ``frames`` (world
    space) from a PC2 cache in ``folder``; removed with its mesh after the block."""
    points = sample_branches(context, curve, frames, progress)
    context.scene.frame_set(int(frames[0]))
    mesh = bpy.data.meshes.new_from_object(curve.evaluated_get(context.evaluated_depsgraph_get()))
    obj = None
    try:
        mesh.vertices.foreach_set("co", points[0].astype(np.float32).ravel())
        mesh.name = obj_name = f"{curve.name}_branches"
        obj = bpy.data.objects.new(obj_name, mesh)
        context.scene.collection.objects.link(obj)
        path = os.path.join(folder, bpy.path.clean_name(obj_name) + ".pc2")
        point_cache.write_pc2(path, points, float(frames[0]))
        point_cache.add_mesh_cache(obj, path, int(frames[0]))
        yield obj
    finally:
        if obj is not None:
            bpy.data.objects.remove(obj)
        bpy.data.meshes.remove(mesh)


@contextlib.contextmanager
def scene_kept(context, objects, frames: np.ndarray):
    """Inside the block: ``objects`` alone selected (the first active), the scene's frame range the baked
    ``frames``; selection, active object and frame range given back after it."""
    scene = context.scene
    kept = (scene.frame_start, scene.frame_end)
    try:
        with selected_alone(context.view_layer, objects):
            scene.frame_start, scene.frame_end = int(frames[0]), int(frames[-1])
            yield
    finally:
        scene.frame_start, scene.frame_end = kept


def exporter_options(fmt: str, filepath: str, frames: np.ndarray) -> dict:
    """The exporter's options that this Blender has: the selected objects' evaluated meshes at every frame, in
    world metres, no armatures, lights, cameras, curves or instancing."""
    op_name = FORMATS[fmt][2]
    if fmt == "USD":
        wanted = dict(
            selected_objects_only=True,
            visible_objects_only=False,
            export_animation=True,
            evaluation_mode="VIEWPORT",
            export_armatures=False,
            export_shapekeys=False,
            export_curves=False,
            export_hair=False,
            export_points=False,
            export_volumes=False,
            export_lights=False,
            export_cameras=False,
            convert_world_material=False,
            export_textures=False,
            export_textures_mode="KEEP",
            use_instancing=False,
            meters_per_unit=1.0,
        )
    else:
        wanted = dict(
            start=int(frames[0]),
            end=int(frames[-1]),
            selected=True,
            visible_objects_only=False,
            flatten=False,
            curves_as_mesh=False,
            export_hair=False,
            export_particles=False,
            evaluation_mode="VIEWPORT",
            as_background_job=False,
            init_scene_frame_range=False,
            apply_subdiv=False,
            global_scale=1.0,
            use_instancing=False,
        )
    known = known_options(getattr(bpy.ops.wm, op_name))
    return dict({k: v for k, v in wanted.items() if k in known}, filepath=filepath, check_existing=False)


def _run_exporter(fmt: str, filepath: str, frames: np.ndarray) -> None:
    """Blender's exporter into a temporary file beside ``filepath``, renamed to it when complete."""
    folder, base = os.path.split(filepath)
    # a fresh name the exporter creates itself (the user's umask, not mkstemp's 0600)
    partial = os.path.join(folder, f".stiff_rods_{uuid.uuid4().hex[:12]}{os.path.splitext(base)[1]}")
    try:
        result = getattr(bpy.ops.wm, FORMATS[fmt][2])(**exporter_options(fmt, partial, frames))
        if "FINISHED" not in result or os.path.getsize(partial) == 0:
            raise CacheExportError(f"Blender's {FORMATS[fmt][3]} exporter wrote nothing to '{filepath}'")
        os.replace(partial, filepath)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def _check_target(fmt: str, filepath: str) -> str:
    ok, reason = available(fmt)
    if not ok:
        raise CacheExportError(reason)
    path = os.path.abspath(bpy.path.abspath(filepath))
    if os.path.splitext(path)[1].lower() not in EXTENSIONS or (fmt == "ALEMBIC") != path.lower().endswith(".abc"):
        raise CacheExportError(f"'{filepath}': a {FORMATS[fmt][3]} file ends in {extension(fmt)}")
    if not os.path.isdir(os.path.dirname(path)):
        raise CacheExportError(f"'{filepath}': the folder {os.path.dirname(path)} does not exist")
    return path


def export_cache(context, obj, filepath: str, fmt: str = "USD", wind: str = "") -> dict:
    """Write the baked tree ``obj`` (its armature or curve) to ``filepath`` as ``fmt`` ("USD" or "ALEMBIC"): its
    branches and leaves at every baked frame (module docstring). {"seconds", "bytes", "filepath", "frames":
    [first, last], "objects": the exported objects' names}; the scene as it was afterwards."""
    path = _check_target(fmt, filepath)
    if obj is None:
        raise CacheExportError("Nothing selected: select a baked tree (its armature or curve)")
    curve, leaves, arm, frames, action = baked_motion(obj, wind)
    t0 = time.perf_counter()
    wm, current = context.window_manager, context.scene.frame_current
    wm.progress_begin(0, len(frames))
    try:
        with contextlib.ExitStack() as stack:
            if action is not None:
                stack.enter_context(game_winds.playing(arm, action))
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="stiff_rods_cache_"))
            stand_in = stack.enter_context(branch_stand_in(context, curve, frames, folder, wm.progress_update))
            objects = [stand_in] + ([leaves] if leaves is not None else [])
            stack.enter_context(scene_kept(context, objects, frames))
            # the curve is not exported: its deform (the birch's envelopes, ~7 s a frame) is not evaluated again
            stack.enter_context(game_rig.switched_off([m for m in curve.modifiers if m.show_viewport]))
            names = [o.name for o in objects]
            _run_exporter(fmt, path, frames)
    finally:
        context.scene.frame_set(current)
        wm.progress_end()
    return {
        "seconds": time.perf_counter() - t0,
        "bytes": os.path.getsize(path),
        "filepath": path,
        "frames": [int(frames[0]), int(frames[-1])],
        "objects": names,
    }
