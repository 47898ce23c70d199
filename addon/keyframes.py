"""Writing baked poses as plain keyframes, for both F-curve layouts.

Blender ≤ 4.3 keeps F-curves on ``Action.fcurves``; 4.4+ stores them in slots/channelbags
(``Action.fcurves`` was removed in 5.0), reached with ``Action.fcurve_ensure_for_datablock``.
"""
from __future__ import annotations

import bpy
import numpy as np

BAKE_TAG = "stiff_rods_bake"


def new_bake_action(owner) -> bpy.types.Action:
    """A fresh action assigned to ``owner`` (an object, or a Curve datablock), tagged as ours so Free Bake removes exactly it."""
    action = bpy.data.actions.new(f"{owner.name}_StiffRods")
    action[BAKE_TAG] = True
    owner.animation_data_create()
    owner.animation_data.action = action
    return action


def _fcurve(action, owner, data_path: str, index: int, group: str):
    if hasattr(action, "fcurve_ensure_for_datablock"):        # 4.4+: layered actions
        return action.fcurve_ensure_for_datablock(owner, data_path, index=index, group_name=group)
    return action.fcurves.new(data_path, index=index, action_group=group)


def write_bone_quaternions(action, owner, bone_names, frames: np.ndarray, quats: np.ndarray) -> int:
    """Key ``pose.bones[name].rotation_quaternion`` at ``frames`` (F,) with ``quats`` (F, n_bones, 4).

    Keys are written in bulk with ``keyframe_points.foreach_set`` and linear interpolation (the
    simulation is sampled at every frame). Returns the number of F-curves written."""
    frames = np.asarray(frames, dtype=float)
    n_frames = frames.size
    co = np.empty((n_frames, 2))
    co[:, 0] = frames
    count = 0
    linear = bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items["LINEAR"].value
    for b, name in enumerate(bone_names):
        path = f'pose.bones["{name}"].rotation_quaternion'
        for c in range(4):
            fc = _fcurve(action, owner, path, c, name)
            fc.keyframe_points.add(n_frames)
            co[:, 1] = quats[:, b, c]
            fc.keyframe_points.foreach_set("co", co.ravel())
            fc.keyframe_points.foreach_set("interpolation", np.full(n_frames, linear, dtype=np.int32))
            fc.update()
            count += 1
    return count


def write_vectors(action, owner, data_paths, frames: np.ndarray, values: np.ndarray, group: str) -> int:
    """Key the 3-vectors at ``data_paths`` (P,) of ``owner`` (any ID, e.g. a Curve) at ``frames`` (F,) with
    ``values`` (F, P, 3), in bulk and linear like :func:`write_bone_quaternions`. Returns F-curves written."""
    frames = np.asarray(frames, dtype=float)
    co = np.empty((frames.size, 2))
    co[:, 0] = frames
    linear = bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items["LINEAR"].value
    interp = np.full(frames.size, linear, dtype=np.int32)
    count = 0
    for p, path in enumerate(data_paths):
        for c in range(3):
            fc = _fcurve(action, owner, path, c, group)
            fc.keyframe_points.add(frames.size)
            co[:, 1] = values[:, p, c]
            fc.keyframe_points.foreach_set("co", co.ravel())
            fc.keyframe_points.foreach_set("interpolation", interp)
            fc.update()
            count += 1
    return count

