"""Writing baked poses as plain keyframes, for both F-curve layouts.

Blender ≤ 4.3 keeps F-curves on ``Action.fcurves``; 4.4+ stores them in slots/channelbags
(``Action.fcurves`` was removed in 5.0), reached with ``Action.fcurve_ensure_for_datablock``.
"""

from __future__ import annotations

from typing import cast

import bpy
import numpy as np

BAKE_TAG = "stiff_rods_bake"
BAKE_OWNER = "stiff_rods_owner"  # the name of the object (or Curve data) a bake action was made for


def new_bake_action(owner) -> bpy.types.Action:
    """A fresh action assigned to ``owner`` (an object, or a Curve datablock), tagged as ours so Free Bake
    removes exactly it, also after the user unlinked it."""
    action = bpy.data.actions.new(f"{owner.name}_StiffRods")
    action[BAKE_TAG] = True
    action[BAKE_OWNER] = owner.name
    owner.animation_data_create()
    owner.animation_data.action = action
    return action


def unlinked_bake_actions(owner) -> list:
    """Bake actions made for ``owner`` that nothing uses any more (the user unlinked them)."""
    return [a for a in bpy.data.actions if a.users == 0 and not a.use_fake_user and _made_for(a, owner.name)]


def _made_for(action, name: str) -> bool:
    return action.get(BAKE_TAG) is not None and action.get(BAKE_OWNER) == name


def assigned_fcurves(holder) -> list:
    """The F-curves that animate ``holder`` (an ID) through its action: from 4.4 only the channelbags of the slot
    assigned to it (one action can hold the slots of several IDs), up to 4.3 all of the action's."""
    anim = holder.animation_data if holder is not None else None
    if anim is None or anim.action is None:
        return []
    action = anim.action
    if not hasattr(action, "layers"):
        return list(action.fcurves)
    slot = anim.action_slot
    if slot is None:
        return []
    bags = [st.channelbag(slot) for ly in action.layers for st in ly.strips]
    return [fc for bag in bags if bag is not None for fc in bag.fcurves]


def _fcurve(action, owner, data_path: str, index: int, group: str):
    if hasattr(action, "fcurve_ensure_for_datablock"):  # 4.4+: layered actions
        return action.fcurve_ensure_for_datablock(owner, data_path, index=index, group_name=group)
    return action.fcurves.new(data_path, index=index, action_group=group)


def write_keys(action, owner, data_paths, groups, frames: np.ndarray, values: np.ndarray) -> int:
    """Key every component of the vector properties ``data_paths`` (P,) of ``owner`` (an object, or any
    ID such as a Curve) at ``frames`` (F,) with ``values`` (F, P, C), F-curve p in group ``groups[p]``.

    Keys are written in bulk with ``keyframe_points.foreach_set`` and linear interpolation (the
    simulation is sampled at every frame). Returns the number of F-curves written."""
    frames = np.asarray(frames, dtype=float)
    co = np.empty((frames.size, 2))
    co[:, 0] = frames
    interpolation = cast(bpy.types.EnumProperty, bpy.types.Keyframe.bl_rna.properties["interpolation"])
    linear = interpolation.enum_items["LINEAR"].value
    interp = np.full(frames.size, linear, dtype=np.int32)
    count = 0
    for p, (path, group) in enumerate(zip(data_paths, groups, strict=True)):
        for c in range(values.shape[2]):
            fc = _fcurve(action, owner, path, c, group)
            fc.keyframe_points.add(frames.size)
            co[:, 1] = values[:, p, c]
            fc.keyframe_points.foreach_set("co", co.ravel())
            fc.keyframe_points.foreach_set("interpolation", interp)
            fc.update()
            count += 1
    return count


def write_bone_quaternions(action, owner, bone_names, frames: np.ndarray, quats: np.ndarray) -> int:
    """Key ``pose.bones[name].rotation_quaternion`` at ``frames`` (F,) with ``quats`` (F, n_bones, 4),
    each bone's F-curves in a group named after it (:func:`write_keys`)."""
    paths = [f'pose.bones["{name}"].rotation_quaternion' for name in bone_names]
    return write_keys(action, owner, paths, bone_names, frames, quats)
