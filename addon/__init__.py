# SPDX-License-Identifier: GPL-3.0-or-later
"""Thin Blender layer of Stiff Rods.

This package is the only part of the add-on that talks to ``bpy``; the
numerical work lives in the Blender-independent ``solver`` package. The layer
will own:

* reading Sapling armatures, curves and leaves into a solver model,
* the add-on's properties (scene/object settings),
* the N-panel in "3D View > Sidebar > Stiff Rods",
* the operators (build model, simulate, bake),
* writing simulation results back as keyframes.

None of that exists yet: ``classes`` is empty for now.
"""

import bpy

classes = ()


def register():
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
