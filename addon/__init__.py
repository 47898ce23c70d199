# SPDX-License-Identifier: GPL-3.0-or-later
"""Thin Blender layer of Stiff Rods.

The only part of the add-on that talks to ``bpy``; the numerical work lives in the
Blender-independent ``solver`` package. It owns reading Sapling armatures/curves into a solver
model (``reader``, ``session``), the settings (``properties``), the N-panel (``panel``), the
operators Convert / Simulate / Bake / Free Bake (``operators``) and keyframe writing (``keyframes``).
"""

import logging
import os

import bpy

from .. import solver
from . import compat, operators, ops_cache, ops_game, ops_instances, ops_pivot, ops_preview_bake, panel, properties

classes = (
    properties.classes
    + operators.classes
    + ops_cache.classes
    + ops_game.classes
    + ops_instances.classes
    + ops_pivot.classes
    + panel.classes
)


KERNEL_CACHE_ENV = "STIFF_RODS_KERNEL_CACHE"
_NULL_HANDLER = logging.NullHandler()


def kernel_cache_folder() -> str:
    """Where numba keeps the compiled solver: ``$STIFF_RODS_KERNEL_CACHE`` if set (a run that must not write into
    the Blender profile, e.g. ``tools/bake_headless.py``), else the extension's per-user folder (Blender 4.2+),
    else the user's datafiles folder (legacy add-on), so kernels are compiled once per install, not at every
    start."""
    if os.environ.get(KERNEL_CACHE_ENV):
        os.makedirs(os.environ[KERNEL_CACHE_ENV], exist_ok=True)
        return os.environ[KERNEL_CACHE_ENV]
    extension = (__package__ or "").rpartition(".")[0]
    if extension.startswith("bl_ext.") and hasattr(bpy.utils, "extension_path_user"):
        return bpy.utils.extension_path_user(extension, path="kernels", create=True)
    return bpy.utils.user_resource("DATAFILES", path=os.path.join("stiff_rods", "kernels"), create=True)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)
    properties.register_properties()
    if ops_preview_bake.forget_on_load not in bpy.app.handlers.load_post:
        bpy.app.handlers.load_post.append(ops_preview_bake.forget_on_load)
    # The operators report the solver's status (a WARNING without numba) through Blender; the solver's own log
    # records stay with a handler the user configured, instead of Python's last-resort print of a second copy.
    logging.getLogger(solver.COMPILED_LOGGER).addHandler(_NULL_HANDLER)
    note = compat.untested_version_note(bpy.app.version)
    if note:
        print(note, flush=True)
    try:
        solver.set_compiled_cache(kernel_cache_folder())
    except OSError:  # a read-only profile: numba's own cache folder is used instead
        pass


def unregister():
    logging.getLogger(solver.COMPILED_LOGGER).removeHandler(_NULL_HANDLER)
    if ops_preview_bake.forget_on_load in bpy.app.handlers.load_post:
        bpy.app.handlers.load_post.remove(ops_preview_bake.forget_on_load)
    ops_preview_bake.preview_record.forget()
    properties.unregister_properties()
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
    from .session import SESSIONS

    SESSIONS.clear()
