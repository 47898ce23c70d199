"""The game skeleton part of benchmarks/game_export.py, run inside Blender (the bpy module) on the white birch.

:func:`run` bakes the leafy birch in the storm preset with the add-on's Bake operator, exports the full baked rig
with Blender's glTF exporter (timed), builds the game rigs of the budgets from one read of the bake
(``game_rig.game_rigs``: the vertex error measured on Blender's evaluated meshes at every baked frame), exports
each (timed), and reads every file back with an independent reader (benchmarks/_gltf_skin.py, pygltflib): joints,
key count and time range, and the skinned vertices rebuilt from the file alone at the first, middle and last baked
frame against Blender's evaluated game mesh (world space).
"""

from __future__ import annotations

import os
import time

import _gltf_skin
import numpy as np

REBUILD_TOLERANCE_M = 1e-3  # the issue's: the rebuilt skinned vertices within 1 mm of Blender's


def _exporter():
    """The add-on's game-rig glTF export, wherever it lives (addon/game_files.py, before it addon/game_rig.py)."""
    from stiff_rods.addon import game_rig

    try:
        from stiff_rods.addon import game_files
    except ImportError:
        game_files = None
    return getattr(game_files, "export_gltf", None) or getattr(game_rig, "export_gltf")  # noqa: B009


def _select_only(objects) -> None:
    import bpy

    view_layer = bpy.context.view_layer
    for o in view_layer.objects:
        o.select_set(False)
    for o in objects:
        o.select_set(True)
    view_layer.objects.active = objects[0]


def _world_points(obj, depsgraph=None) -> np.ndarray:
    """World vertex positions (V, 3) [m] of ``obj``: evaluated with ``depsgraph``, else its mesh data at rest."""
    mesh = obj.evaluated_get(depsgraph).to_mesh() if depsgraph is not None else obj.data
    co = np.empty(3 * len(mesh.vertices))
    mesh.vertices.foreach_get("co", co)
    if depsgraph is not None:
        obj.evaluated_get(depsgraph).to_mesh_clear()
    m = np.array(obj.matrix_world)
    return co.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]


def _bake(scene, arm, frames: int) -> float:
    import bpy

    scene.frame_start, scene.frame_end = 1, frames
    arm.stiff_rods.use_leaves = True
    _select_only([arm])
    assert bpy.ops.stiff_rods.storm_preset() == {"FINISHED"}
    clock = time.perf_counter()
    assert bpy.ops.stiff_rods.bake(frame_start=1, frame_end=frames) == {"FINISHED"}
    return time.perf_counter() - clock


def _export_full(arm, path: str) -> dict:
    """Blender's glTF exporter on the full baked tree (armature, its curve and leaves, the bake action), as an
    artist would run it: every joint, the tree's own deforms evaluated at every frame it samples."""
    import bpy

    _select_only([arm, *arm.children_recursive])
    options = dict(
        export_format="GLB",
        use_selection=True,
        export_animations=True,
        export_animation_mode="ACTIVE_ACTIONS",
        export_skins=True,
    )
    known = getattr(bpy.ops.export_scene.gltf, "get_rna_type")().properties.keys()  # noqa: B009
    clock = time.perf_counter()
    bpy.ops.export_scene.gltf(filepath=path, **{k: v for k, v in options.items() if k in known})
    seconds = time.perf_counter() - clock
    s = _gltf_skin.summary(_gltf_skin.read(path))
    return dict(
        full_rig_gltf_export_s=seconds,
        full_rig_gltf_bytes=os.path.getsize(path),
        full_rig_gltf_joints=s["joints"],
        full_rig_gltf_channels=s["channels"],
        full_rig_gltf_keys=s["keys"],
    )


def _gltf_checks(path: str, budget: int, frames: int, fps: float) -> dict:
    s = _gltf_skin.summary(_gltf_skin.read(path))
    t1 = (frames - 1) / fps  # the exporter slides the first baked frame to t = 0
    return dict(
        gltf_joints=s["joints"],
        gltf_skins=s["skins"],
        gltf_animations=s["animations"],
        gltf_keys=s["keys"],
        gltf_t0_s=s["t0_s"],
        gltf_t1_s=s["t1_s"],
        gltf_frames_ok=s["keys"] == frames and s["t0_s"] == 0.0 and abs(s["t1_s"] - t1) < 1e-5,
        gltf_joints_ok=0 < s["joints"] <= budget,
    )


def _rebuild_errors(scene, rigs: list, paths: list, check: list, fps: float) -> list:
    """Per rig, the largest distance [m] of the vertices rebuilt from its .glb from Blender's evaluated game mesh,
    at each frame of ``check``."""
    import bpy

    files = [_gltf_skin.read(p) for p in paths]
    rests = [_world_points(mesh) for _, mesh, _ in rigs]
    out: list = [[] for _ in rigs]
    for f in check:
        scene.frame_set(f)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        for i, (_, mesh, _) in enumerate(rigs):
            rest, moved = _gltf_skin.skinned(files[i], (f - check[0]) / fps)
            out[i].append(_gltf_skin.match_error(rest, moved, rests[i], _world_points(mesh, depsgraph)))
    return out


def _budget_row(report: dict, export: dict, checks: dict, errors: list) -> dict:
    keep = ("budget", "bones", "rms_error_m", "max_error_m", "rms_fraction", "max_fraction", "max_influences")
    row = {k: report[k] for k in keep if k in report}
    row.update(gltf_export_s=export["seconds"], gltf_bytes=export["bytes"], **checks)
    row.update(rebuild_error_m=errors, rebuild_ok=max(errors) <= REBUILD_TOLERANCE_M)
    row["seconds"] = report.get("seconds")
    return row


def run(frames: int, budgets: list, full_export: bool, out_dir: str) -> dict:
    """The game skeleton keys (module docstring) on the open white birch; files go to ``out_dir``."""
    import bpy
    from stiff_rods.addon import game_rig

    scene = bpy.context.scene
    arm = bpy.data.objects["treeArm"]
    fps = scene.render.fps / scene.render.fps_base
    result: dict = dict(rig_frames=frames, fps=fps, bake_s=_bake(scene, arm, frames))
    if full_export:
        result.update(_export_full(arm, os.path.join(out_dir, "full_rig.glb")), full_rig_frames=frames)
    clock = time.perf_counter()
    rigs = game_rig.game_rigs(bpy.context, arm, budgets)
    result["game_rigs_s"] = time.perf_counter() - clock
    export = _exporter()
    exports, paths = [], []
    for game, _, report in rigs:
        paths.append(os.path.join(out_dir, f"game_{report['bones']}.glb"))
        clock = time.perf_counter()
        exports.append(dict(export(bpy.context, game, paths[-1]), wall_s=time.perf_counter() - clock))
    for o in arm.children_recursive:  # the tree's 7 s/frame envelope deform is not needed to read the game meshes
        o.hide_viewport = True
    check = [1, (1 + frames) // 2, frames]
    errors = _rebuild_errors(scene, rigs, paths, check, fps)
    result["budgets"] = [
        _budget_row(rep, ex, _gltf_checks(p, rep["budget"], frames, fps), err)
        for (_, _, rep), ex, p, err in zip(rigs, exports, paths, errors, strict=True)
    ]
    first = rigs[0][2]
    result.update(vertices=first["vertices"], height_m=first["height_m"], check_frames=check)
    result["gltf_rebuild_error_m"] = max(max(e) for e in errors)
    result["gltf_checks_ok"] = all(
        r["rebuild_ok"] and r["gltf_frames_ok"] and r["gltf_joints_ok"] for r in result["budgets"]
    )
    return result
