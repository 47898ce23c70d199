"""Operator Pivot Painter Textures: Unreal Pivot Painter 2's element textures of the active game rig's tree and
the element UV channel on the rig's mesh (addon/pivot_export.py; layout in docs/pivot_painter.md)."""

from __future__ import annotations

import bpy
from bpy.props import StringProperty

from . import game_rig, ops_common, pivot_export, reader


class STIFF_RODS_OT_pivot_painter(bpy.types.Operator):
    """Write Unreal Pivot Painter 2 textures of the active game rig's tree (or of the active tree) into Folder, and
    the element index as the UV map 'PivotPainter' on the game rig's mesh"""

    bl_idname = "stiff_rods.pivot_painter"
    bl_label = "Pivot Painter Textures"
    bl_options = {"REGISTER", "UNDO"}

    directory: StringProperty(  # type: ignore[valid-type]
        name="Folder",
        subtype="DIR_PATH",
        default="",
        description="Where the textures go; empty: '//<tree>_pivot_painter/' next to the .blend (it must be saved)",
    )

    def execute(self, context):
        if context.mode != "OBJECT":
            self.report({"ERROR"}, "Pivot Painter Textures works in Object Mode: switch to Object Mode first")
            return {"CANCELLED"}
        obj = context.active_object
        ops_common.prepare_solver(self)
        try:
            out = pivot_export.export_pivot_painter(context, obj, self.directory)
        except (pivot_export.PivotExportError, game_rig.GameRigError, reader.ReadError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        except Exception as exc:  # Blender, the model or the disk: nothing kept in the scene (export_pivot_painter)
            name = obj.name if obj is not None else "nothing"
            self.report({"ERROR"}, f"Pivot Painter Textures of '{name}' failed: {type(exc).__name__}: {exc}")
            return {"CANCELLED"}
        width, height = out["size"]
        where = "no mesh (select a game rig for the UV channel)"
        if out["mesh"]:
            where = f"UV map '{pivot_export.UV_LAYER}' (channel {out['uv_index']}) on '{out['mesh']}'"
            where += f", {out['vertices']} vertices"
        self.report(
            {"INFO"},
            f"'{out['tree']}': {out['elements']} elements, {width} x {height} texels, {len(out['files'])} files in "
            f"{out['folder']}; {where}",
        )
        return {"FINISHED"}


classes = (STIFF_RODS_OT_pivot_painter,)
