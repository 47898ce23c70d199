"""Free Bake: remove exactly what Bake added (addon/bake.py) and give the tree back what it had before."""

from __future__ import annotations

import json
import os

import bpy
import numpy as np

from . import bones, keyframes, named_actions, ops_common, reader
from .bake import (
    BAKE_MARKS,
    PREV_ACTION,
    PREV_FAKE_USER,
    PREV_LEAF_CACHE,
    PREV_MODES,
    PREV_POINTS,
    baked_action,
    restore_modes,
)
from .checks import active_tree, check_not_running, check_not_tweaking
from .preview_record import forget


def _restore_points(curve, saved) -> list[int]:
    """Control points as they were before the bake (removing the keys leaves the last evaluated frame); the
    splines that are gone or have another number of points now (the user edited them: left alone)."""
    changed = []
    for spline, co, hl, hr in saved:
        if spline >= len(curve.data.splines):
            changed.append(spline)
            continue
        cps = reader.read_control_points(curve, spline)
        if len(co) != cps.co.shape[0]:
            changed.append(spline)
            continue
        cps.co = np.array(co)
        if cps.bezier:
            cps.handle_left, cps.handle_right = np.array(hl), np.array(hr)
        reader.write_control_points(curve, cps)
    return changed


def _remove_leaf_cache(info) -> list[str]:
    """Remove the leaves' Mesh Cache modifier and its file; what of them was already gone."""
    missing = []
    leaves = bpy.data.objects.get(info["object"])
    mod = leaves.modifiers.get(info["modifier"]) if leaves is not None else None
    if mod is not None and mod.type == "MESH_CACHE":
        leaves.modifiers.remove(mod)
    else:
        where = f"the leaves object '{info['object']}'" if leaves is None else f"'{info['object']}'"
        missing.append(f"the Mesh Cache modifier '{info['modifier']}' on {where}")
    if os.path.isfile(info["file"]):
        os.remove(info["file"])
    else:
        missing.append(f"the point cache file '{info['file']}'")
    return missing


def _give_action_back(owner, holder, action, unlinked) -> list[str]:
    """The action the bake replaced back in ``holder``'s slot (with its fake user as it was) and the bake's
    actions removed; what could not be given back."""
    missing: list[str] = []
    previous_name = owner.get(PREV_ACTION)
    previous = bpy.data.actions.get(previous_name) if previous_name else None
    if previous_name and previous is None:
        missing.append(f"its previous action '{previous_name}' (deleted)")
    anim = holder.animation_data
    current = anim.action if anim else None
    if action is not None or current is None:  # the bake's slot, or empty since the user unlinked the bake
        if previous is not None:
            holder.animation_data_create()
        if holder.animation_data is not None:
            holder.animation_data.action = previous
        if previous is not None and PREV_FAKE_USER in owner:
            previous.use_fake_user = bool(owner[PREV_FAKE_USER])
    elif previous is not None:  # the user assigned an action of their own since: theirs stays
        missing.append(f"an empty action slot to give '{previous.name}' back to (it keeps a fake user)")
    for a in ([action] if action is not None else []) + unlinked:
        bpy.data.actions.remove(a)
    return missing


def _give_bones_back(owner) -> list[str]:
    """The added bones removed and the rotation modes given back; what was no longer there."""
    missing: list[str] = []
    added = list(owner.get(bones.ADDED_BONES, []))
    gone = [n for n in added if n not in owner.data.bones]
    bones.remove_added_bones(owner)
    if gone:
        missing.append(f"{len(gone)} of the {len(added)} bones it added (e.g. '{gone[0]}')")
    if PREV_MODES in owner:
        gone = restore_modes(owner, json.loads(owner[PREV_MODES]))
        if gone:
            missing.append(f"{len(gone)} bones to give their rotation mode back to (e.g. '{gone[0]}')")
    return missing


class STIFF_RODS_OT_free_bake(bpy.types.Operator):
    """Remove exactly what Bake added and give the armature back its previous action"""

    bl_idname = "stiff_rods.free_bake"
    bl_label = "Free Bake"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        found = ops_common.chosen(context, check=False)
        if found is None:
            try:
                owner = active_tree(context)
                check_not_running(owner.name)
            except reader.ReadError as exc:
                self.report({"ERROR"}, str(exc))
                return {"CANCELLED"}
            owners = [owner]
        else:
            ops_common.report_refused(self, found)
            owners = ops_common.owners(found)
            if not owners:
                return ops_common.nothing_chosen(self, found)
        todo, bare = [], []
        for owner in owners:
            try:
                check_not_running(owner.name)
                todo.append(self._check(owner))
            except reader.ReadError as exc:  # checked for every tree before any is freed
                self.report({"ERROR"}, str(exc))
                return {"CANCELLED"}
            except LookupError:
                bare.append(owner.name)
        if not todo:
            what = f"'{bare[0]}' has" if len(bare) == 1 else f"None of {', '.join(repr(n) for n in bare)} has"
            self.report({"ERROR"}, f"{what} no Stiff Rods bake to free")
            return {"CANCELLED"}
        if bare:
            self.report({"WARNING"}, f"No Stiff Rods bake to free on {', '.join(repr(n) for n in bare)}")
        for owner, holder, action, unlinked in todo:
            missing = self._free(owner, holder, action, unlinked)
            forget(owner.name)  # Free Bake ends the tree's preview recording too
            self.report({"INFO"}, f"Freed the Stiff Rods bake of '{owner.name}'")
            if missing:
                self.report(
                    {"WARNING"},
                    f"Free Bake of '{owner.name}' could not find {'; '.join(missing)}: the rest is back as before "
                    "the bake",
                )
        return {"FINISHED"}

    @staticmethod
    def _check(owner) -> tuple:
        """(owner, holder, baked action, unlinked bake actions) when ``owner``'s bake can be freed; LookupError
        when it has none, ReadError when it cannot be freed now."""
        holder = owner if owner.type == "ARMATURE" else owner.data
        action = baked_action(holder)
        unlinked = keyframes.unlinked_bake_actions(holder)
        if action is None and not unlinked and not any(k in owner for k in BAKE_MARKS):
            raise LookupError(owner.name)
        check_not_tweaking(holder, "Free Bake")
        if owner.type == "ARMATURE" and any(n in owner.data.bones for n in owner.get(bones.ADDED_BONES, [])):
            try:
                bones.check_editable(owner)  # removing the added bones needs Edit Mode: check before any change
            except ValueError:
                raise reader.ReadError(
                    f"Armature '{owner.name}' must be visible for Free Bake to remove the bones its bake added: "
                    "unhide it (and enable it in the viewport), then Free Bake again"
                ) from None
        return owner, holder, action, unlinked

    @staticmethod
    def _free(owner, holder, action, unlinked) -> list[str]:
        """Put back everything the bake recorded on ``owner``; what was no longer there to put back."""
        missing = named_actions.free(owner, bpy.data)
        missing += _give_action_back(owner, holder, action, unlinked)
        if owner.type == "ARMATURE":
            missing += _give_bones_back(owner)
        if owner.type == "CURVE" and PREV_POINTS in owner:
            changed = _restore_points(owner, json.loads(owner[PREV_POINTS]))
            if changed:
                missing.append(f"splines {changed} as they were baked (edited since: left as they are)")
        if PREV_LEAF_CACHE in owner:
            missing += _remove_leaf_cache(json.loads(owner[PREV_LEAF_CACHE]))
        for key in BAKE_MARKS:
            if key in owner:
                del owner[key]
        return missing
