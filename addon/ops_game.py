"""Operators of the game export: Game Rig (a reduced skeleton within a bone budget, addon/game_rig.py), Export
glTF and Export FBX (the game rig alone as a GLB or an FBX, addon/game_files.py)."""

from __future__ import annotations

import bpy
from bpy.props import IntProperty, StringProperty
from bpy_extras.io_utils import ExportHelper

from . import game_files, game_rig


def _budgets(max_bones: int, lods: int) -> list[int]:
    """Max Bones, then half, a quarter… of it per further LOD (at least 2 bones each), without repeats."""
    out: list[int] = []
    for k in range(lods):
        b = max(2, max_bones >> k)
        if b not in out:
            out.append(b)
    return out


class STIFF_RODS_OT_game_rig(bpy.types.Operator):
    """Build a game rig of the active baked tree: a new armature of at most Max Bones bones and a copy of the tree's
    mesh skinned to it (at most 4 bones per vertex), keyed over the baked frames"""

    bl_idname = "stiff_rods.game_rig"
    bl_label = "Game Rig"
    bl_options = {"REGISTER", "UNDO"}

    max_bones: IntProperty(  # type: ignore[valid-type]
        name="Max Bones", default=64, min=2, max=1024, description="Joints of the game skeleton, at most"
    )
    lods: IntProperty(  # type: ignore[valid-type]
        name="LODs",
        default=1,
        min=1,
        max=4,
        description="Rigs built from one read of the bake: Max Bones, then half as many for each further LOD",
    )

    def execute(self, context):
        if context.mode != "OBJECT":
            self.report({"ERROR"}, "Game Rig works in Object Mode: switch to Object Mode first")
            return {"CANCELLED"}
        obj = context.active_object
        try:
            rigs = game_rig.game_rigs(context, obj, _budgets(self.max_bones, self.lods))
        except game_rig.GameRigError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        except Exception as exc:  # a failure of Blender or the fit: nothing was kept (game_rigs removes its objects)
            name = obj.name if obj is not None else "nothing"
            self.report({"ERROR"}, f"Game Rig of '{name}' failed: {type(exc).__name__}: {exc}")
            return {"CANCELLED"}
        for game, _, rep in rigs:
            self.report(
                {"INFO"},
                f"{game.name}: {rep['bones']} bones, {rep['vertices']} vertices, error RMS "
                f"{1e3 * rep['rms_error_m']:.2f} mm, max {1e3 * rep['max_error_m']:.1f} mm "
                f"({rep['max_fraction']:.2e} of the {rep['height_m']:.1f} m tree)",
            )
        view_layer = context.view_layer
        for o in context.selected_objects:
            o.select_set(False)
        rigs[0][0].select_set(True)
        view_layer.objects.active = rigs[0][0]
        return {"FINISHED"}


def _export(operator, context, export, what: str):
    """Run ``export(context, obj, filepath)`` for the operator; its reports and result set."""
    try:
        out = export(context, context.active_object, operator.filepath)
    except game_rig.GameRigError as exc:
        operator.report({"ERROR"}, str(exc))
        return {"CANCELLED"}
    except (RuntimeError, OSError) as exc:
        operator.report({"ERROR"}, f"{what} export to '{operator.filepath}' failed: {exc}")
        return {"CANCELLED"}
    operator.report({"INFO"}, f"Exported {out['filepath']}: {out['bytes']} bytes in {out['seconds']:.2f} s")
    return {"FINISHED"}


class STIFF_RODS_OT_export_gltf(bpy.types.Operator, ExportHelper):  # type: ignore[misc]  # Blender's own pattern
    """Export the selected game rig (its armature, mesh and action only) as glTF binary (.glb)"""

    bl_idname = "stiff_rods.export_gltf"
    bl_label = "Export Game Rig (glTF)"
    bl_options = {"REGISTER"}

    filename_ext = ".glb"
    filter_glob: StringProperty(default="*.glb", options={"HIDDEN"})  # type: ignore[valid-type]

    def execute(self, context):
        return _export(self, context, game_files.export_gltf, "glTF")


class STIFF_RODS_OT_export_fbx(bpy.types.Operator, ExportHelper):  # type: ignore[misc]  # Blender's own pattern
    """Export the selected game rig (its armature, mesh and animation only) as FBX for a game engine: no leaf
    bones, every frame keyed, one take per animation from time 0, metres"""

    bl_idname = "stiff_rods.export_fbx"
    bl_label = "Export Game Rig (FBX)"
    bl_options = {"REGISTER"}

    filename_ext = ".fbx"
    filter_glob: StringProperty(default="*.fbx", options={"HIDDEN"})  # type: ignore[valid-type]

    def execute(self, context):
        return _export(self, context, game_files.export_fbx, "FBX")


classes = (STIFF_RODS_OT_game_rig, STIFF_RODS_OT_export_gltf, STIFF_RODS_OT_export_fbx)
