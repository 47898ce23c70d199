# SPDX-License-Identifier: GPL-3.0-or-later
"""Stiff Rods: simulate stiff rods and trees in Blender.

Entry point for both packaging styles:

* Blender 4.2+ extension: metadata lives in ``blender_manifest.toml``.
* Legacy add-on (Blender 3.4+): metadata lives in ``bl_info`` below.

``bpy`` is only imported (via ``.addon``) when Blender calls ``register()``,
so this package stays importable without Blender.
"""

bl_info = {
    "name": "Stiff Rods",
    "author": "Stiff Rods contributors",
    "version": (0, 1, 0),
    "blender": (3, 4, 0),
    "location": "3D View > Sidebar > Stiff Rods",
    "description": "Simulate stiff rods and trees, such as Sapling-generated trees",
    "category": "Physics",
}


def register():
    from . import addon

    addon.register()


def unregister():
    from . import addon

    addon.unregister()
