"""Leaf motion as a point cache that plain Blender plays: a PC2 file read by a Mesh Cache modifier.

PC2 (Blender's ``io_pc2`` / Mesh Cache format): the 12-byte signature ``POINTCACHE2\\0``, int32 version
1, int32 point count, float32 start frame, float32 sample rate (frames per sample), int32 sample count,
then float32 x, y, z per point per sample, little-endian.
"""

from __future__ import annotations

import os
import struct

import bpy
import numpy as np

MODIFIER_NAME = "Stiff Rods Leaves"


def write_pc2(path: str, frames: np.ndarray, start_frame: float) -> None:
    """``frames`` (samples, points, 3) [object-local m] sampled every frame from ``start_frame``."""
    frames = np.ascontiguousarray(frames, dtype="<f4")
    if frames.ndim != 3 or frames.shape[2] != 3:
        raise ValueError(f"point cache frames must be (samples, points, 3), got {frames.shape}")
    with open(path, "wb") as fh:
        fh.write(
            struct.pack("<12siiffi", b"POINTCACHE2\0", 1, frames.shape[1], float(start_frame), 1.0, frames.shape[0])
        )
        fh.write(frames.tobytes())


def cache_path(obj_name: str) -> tuple[str, str]:
    """(absolute path, path to store in the modifier): next to the saved .blend (relative ``//``), or in
    Blender's temporary folder for an unsaved file."""
    name = bpy.path.clean_name(f"{obj_name}_stiff_rods") + ".pc2"
    if bpy.data.filepath:
        folder = os.path.dirname(bpy.data.filepath)
        return os.path.join(folder, name), "//" + name
    path = os.path.join(bpy.app.tempdir, name)
    return path, path


def check_writable(obj_name: str) -> None:
    """Raise ValueError naming the file and the reason unless the point cache of ``obj_name`` can be written
    where :func:`cache_path` puts it (a bake checks this before it simulates, so it cannot fail at the end)."""
    path, _ = cache_path(obj_name)
    existed = os.path.exists(path)
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        where = "next to the .blend file" if bpy.data.filepath else "in Blender's temporary folder"
        raise ValueError(
            f"The leaves' point cache cannot be written {where} ('{path}': {exc.strerror}): save the .blend in "
            "a folder you can write to, or turn off Leaves"
        ) from None
    if not existed:
        os.remove(path)


def add_mesh_cache(obj, filepath: str, start_frame: int):
    """A Mesh Cache modifier first in ``obj``'s stack (before its Armature modifier), overwriting the
    base coordinates with the cache."""
    mod = obj.modifiers.new(MODIFIER_NAME, "MESH_CACHE")
    mod.cache_format = "PC2"
    mod.filepath = filepath
    mod.frame_start = float(start_frame)
    mod.frame_scale = 1.0
    mod.deform_mode = "OVERWRITE"
    mod.interpolation = "LINEAR"
    mod.forward_axis, mod.up_axis = "POS_Y", "POS_Z"  # PC2 coordinates are the object's own
    if obj.modifiers[0] != mod:  # first in the stack
        if hasattr(obj.modifiers, "move"):  # Blender 4.0+: no operator, so no evaluation of the whole scene
            obj.modifiers.move(len(obj.modifiers) - 1, 0)
        else:
            with bpy.context.temp_override(object=obj, active_object=obj):
                bpy.ops.object.modifier_move_to_index(modifier=mod.name, index=0)
    return mod
