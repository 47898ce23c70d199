"""Operator Export Cache: the active baked tree's branches and leaves per frame as USD or Alembic
(addon/cache_export.py), greyed out with the reason where this Blender is built without both."""

from __future__ import annotations

import os

import bpy
from bpy.props import EnumProperty, StringProperty
from bpy_extras.io_utils import ExportHelper

from . import cache_export

FORMAT_ITEMS = [
    ("USD", "USD", "Universal Scene Description, binary (.usdc)"),
    ("ALEMBIC", "Alembic", "Alembic (.abc)"),
]


class STIFF_RODS_OT_export_cache(bpy.types.Operator, ExportHelper):  # type: ignore[misc]  # Blender's own pattern
    """Export the active baked tree's branches and leaves as a point cache (USD or Alembic): their evaluated meshes
    at every baked frame, in world metres, written by Blender's own exporter"""

    bl_idname = "stiff_rods.export_cache"
    bl_label = "Export Cache"
    bl_options = {"REGISTER"}

    filename_ext = ".usdc"
    filter_glob: StringProperty(default="*.usd;*.usdc;*.usda;*.abc", options={"HIDDEN"})  # type: ignore[valid-type]
    format: EnumProperty(name="Format", items=FORMAT_ITEMS, default="USD")  # type: ignore[valid-type]
    wind: StringProperty(  # type: ignore[valid-type]
        name="Wind", description="Named Actions: the NLA track (wind) whose motion the cache holds"
    )

    @classmethod
    def poll(cls, context):
        reasons = []
        for fmt in cache_export.FORMATS:
            ok, reason = cache_export.available(fmt)
            if ok:
                return True
            reasons.append(reason)
        cls.poll_message_set(reasons[0].replace(" (", " and Alembic (", 1) if len(set(reasons)) > 1 else reasons[0])
        return False

    def _with_extension(self) -> str:
        stem, ext = os.path.splitext(self.filepath)
        if ext.lower() in cache_export.EXTENSIONS:
            return stem + cache_export.extension(self.format)
        return self.filepath + cache_export.extension(self.format)

    def check(self, context):
        """The file name's extension follows the chosen format."""
        path = self._with_extension()
        if path != self.filepath:
            self.filepath = path
            return True
        return False

    def execute(self, context):
        self.filepath = self._with_extension()
        obj = context.active_object
        try:
            out = cache_export.export_cache(context, obj, self.filepath, self.format, self.wind)
        except (cache_export.CacheExportError, ValueError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        except (RuntimeError, OSError) as exc:
            self.report({"ERROR"}, f"Export Cache of '{obj.name}' to '{self.filepath}' failed: {exc}")
            return {"CANCELLED"}
        first, last = out["frames"]
        self.report(
            {"INFO"},
            f"Exported {', '.join(out['objects'])}, frames {first}-{last}, to {out['filepath']}: {out['bytes']} "
            f"bytes in {out['seconds']:.2f} s",
        )
        return {"FINISHED"}


classes = (STIFF_RODS_OT_export_cache,)
