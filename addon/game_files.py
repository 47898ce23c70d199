"""The game rig's files: glTF binary and FBX of the game armature and mesh alone, with their animation.

* :func:`export_gltf`: a GLB with the rig's active action, or one animation per NLA track for a rig with named
  actions (Blender's glTF exporter).
* :func:`export_fbx`: an FBX for a game engine's skeletal-mesh import (Blender's FBX exporter): armature and
  skinned mesh, no leaf bones, every frame keyed (no curve simplification), metres as the file's unit
  (UnitScaleFactor 100 with unscaled transforms: no ×100 on the root), Blender's bone axes (Y along the bone).
  One take per animation: a rig with named actions (NLA tracks, addon/game_winds.py) gives one take per strip,
  named after it; otherwise its active action is exported as one take named after the action, through a
  temporary NLA strip (removed afterwards) so that, as in the glTF, the take starts at time 0.

Both export the rig alone (the selection and active object are given back) and store ``{"seconds", "bytes",
"filepath"}`` on the armature (GAME_EXPORT, GAME_FBX_EXPORT). The exporters sample the animation by setting every
frame, so the tree's own Armature modifiers are off meanwhile (~7 s a frame for the birch's envelope deform).

Measured (tests/blender/test_headless_game.py): Sapling's small pine (32,880 vertices), 16 bones, a 6-frame storm
loop: FBX 2.32 MB in 1.0-2.0 s (Blender 3.4; 2.06 MB in 0.7-1.0 s in 5.0.1), glTF 2.32 MB in 1.1-1.8 s. Read back
by Blender's FBX importer in a fresh Blender, the mesh matches the saved .blend's within 4 µm at the loop's first,
middle and last frames (once the bones the importer connects are disconnected: docs/notes/game_export.md, FBX).
"""

from __future__ import annotations

import contextlib
import json
import os
import time

import bpy

from .exporting import known_options, selected_alone
from .game_rig import GAME_MESH, GAME_TAG, GameRigError, _tree_deforms, switched_off

GAME_EXPORT = "stiff_rods_game_export"  # on the game armature: its last glTF export (JSON: seconds, bytes, file)
GAME_FBX_EXPORT = "stiff_rods_game_fbx_export"  # on the game armature: its last FBX export (the same keys)
TEMPORARY_TRACK = "stiff_rods_fbx_take"  # the NLA track that carries the active action while the FBX is written


def game_parts(obj):
    """(armature, mesh) of the game rig ``obj`` belongs to (either of the two), or raise :class:`GameRigError`."""
    if obj is not None and obj.type == "MESH" and obj.parent is not None and GAME_TAG in obj.parent:
        obj = obj.parent
    if obj is None or obj.type != "ARMATURE" or GAME_TAG not in obj:
        what = f"'{obj.name}' is not" if obj is not None else "Nothing selected is"
        raise GameRigError(f"{what} a Stiff Rods game rig: build one with Game Rig, then select it")
    mesh = bpy.data.objects.get(obj.get(GAME_MESH, ""))
    if mesh is None:
        raise GameRigError(f"Game rig '{obj.name}' has lost its mesh '{obj.get(GAME_MESH)}'")
    return obj, mesh


def gltf_options(named: bool = False) -> dict:
    """The exporter's options for a game rig that this Blender's exporter has: the rig's active action alone (3.x's
    exporter has no animation mode; without merging it exports every action whose bones it can match), or with
    ``named`` (Named Actions on NLA tracks) one animation per track, named after it. Never the file's other
    armature actions (3.x adds every action whose bones match the rig's, and the game bones carry the tree's bone
    names); every frame keyed (a calm wind's sway is under the size optimiser's threshold: 2 keys)."""
    wanted = dict(
        export_format="GLB",
        use_selection=True,
        export_animations=True,
        export_animation_mode="NLA_TRACKS" if named else "ACTIVE_ACTIONS",
        export_anim_single_armature=False,
        export_optimize_animation_size=False,
        export_anim_slide_to_zero=True,
        export_skins=True,
        export_all_influences=False,
        export_apply=False,
    )
    known = known_options(bpy.ops.export_scene.gltf)
    if "export_animation_mode" not in known:  # 3.x: one merged animation, not every action bones could take
        wanted["export_nla_strips"] = named
    return {k: v for k, v in wanted.items() if k in known}


def fbx_options() -> dict:
    """The FBX exporter's options for a game engine's skeletal mesh that this Blender's exporter has (3.4–5.x).

    FBX_SCALE_ALL with apply_unit_scale: transforms and vertices stay in metres and the file says so
    (UnitScaleFactor 100, in cm), the setting Unity's manual asks for; Unreal converts the unit on import; Blender's
    importer reads it back in metres. NLA strips as takes, each from time 0 (:func:`export_fbx`); no "all
    actions" (it would also export a larger LOD's action on a smaller rig whose bones it covers)."""
    wanted = dict(
        use_selection=True,
        object_types={"ARMATURE", "MESH"},
        global_scale=1.0,
        apply_unit_scale=True,
        apply_scale_options="FBX_SCALE_ALL",
        axis_forward="-Z",
        axis_up="Y",
        use_mesh_modifiers=False,  # the skin is the file's: the Armature modifier must not be applied
        mesh_smooth_type="FACE",  # smoothing groups: engines warn without them
        use_tspace=False,
        use_custom_props=False,
        add_leaf_bones=False,
        primary_bone_axis="Y",
        secondary_bone_axis="X",
        use_armature_deform_only=True,
        armature_nodetype="NULL",
        bake_anim=True,
        bake_anim_use_all_bones=True,
        bake_anim_use_nla_strips=True,
        bake_anim_use_all_actions=False,
        bake_anim_force_startend_keying=True,
        bake_anim_step=1.0,
        bake_anim_simplify_factor=0.0,  # every frame keyed, as in the glTF: the loop's keys are the bake's
        path_mode="AUTO",
        embed_textures=False,
        batch_mode="OFF",
    )
    known = known_options(bpy.ops.export_scene.fbx)
    return {k: v for k, v in wanted.items() if k in known}


def export_gltf(context, obj, filepath: str) -> dict:
    """Export the game rig of ``obj`` alone (armature, mesh, its active action, or its NLA tracks when it has named
    actions) as a GLB; the selection and active object are given back. ``{"seconds", "bytes", "filepath"}`` (also
    on the armature: GAME_EXPORT)."""
    game, mesh = game_parts(obj)
    options = gltf_options(named=bool(_strips(game.animation_data)))
    with _tree_off(game):
        out = _export(context, game, mesh, lambda: bpy.ops.export_scene.gltf(filepath=filepath, **options))
    return _record(game, GAME_EXPORT, out, filepath)


def export_fbx(context, obj, filepath: str) -> dict:
    """Export the game rig of ``obj`` alone (armature, mesh, its animation: one take per NLA strip, or the active
    action as one take) as FBX; the selection, active object and the rig's animation data are given back.
    ``{"seconds", "bytes", "filepath"}`` (also on the armature: GAME_FBX_EXPORT)."""
    game, mesh = game_parts(obj)
    with _tree_off(game), _takes(game):
        out = _export(context, game, mesh, lambda: bpy.ops.export_scene.fbx(filepath=filepath, **fbx_options()))
    return _record(game, GAME_FBX_EXPORT, out, filepath)


def _tree_off(game):
    """The Armature modifiers of the tree the game rig was built from, switched off inside the block."""
    tree = bpy.data.objects.get(json.loads(game[GAME_TAG]).get("tree", ""))
    return switched_off(_tree_deforms(tree, list(tree.children_recursive)) if tree is not None else [])


def _strips(anim) -> list:
    return [s for t in anim.nla_tracks if not t.mute for s in t.strips if not s.mute] if anim is not None else []


@contextlib.contextmanager
def _takes(game):
    """The game armature's animation as NLA strips inside the block: its own (named actions) or, when it has none,
    a temporary track with one strip of its active action, named after it (removed after the block)."""
    anim = game.animation_data
    action = anim.action if anim is not None else None
    if _strips(anim) or action is None:
        if not _strips(anim):
            raise GameRigError(f"Game rig '{game.name}' has no animation to export: build it again from the bake")
        yield
        return
    slot = getattr(anim, "action_slot", None)  # 4.4+
    track = anim.nla_tracks.new()
    track.name = TEMPORARY_TRACK
    try:
        track.strips.new(action.name, round(action.frame_range[0]), action)
        yield
    finally:
        anim.nla_tracks.remove(track)
        if anim.action != action:  # the exporter gives it back; here in case it failed half-way
            anim.action = action
        if slot is not None and anim.action_slot != slot:
            anim.action_slot = slot


def _export(context, game, mesh, write) -> dict:
    """``write()`` with only ``game`` and ``mesh`` selected (``game`` active); the selection given back after."""
    with selected_alone(context.view_layer, [game, mesh]):
        clock = time.perf_counter()
        write()
        return dict(seconds=time.perf_counter() - clock)


def _record(game, key: str, out: dict, filepath: str) -> dict:
    out = dict(out, bytes=os.path.getsize(filepath), filepath=filepath)
    game[key] = json.dumps(out)
    return out
