# SPDX-License-Identifier: GPL-3.0-or-later
"""Thin Blender layer of Stiff Rods.

The only part of the add-on that talks to ``bpy``; the numerical work lives in the
Blender-independent ``solver`` package. It owns reading Sapling armatures/curves into a solver
model (``reader``, ``session``), the settings (``properties``), the N-panel (``panel``), the
operators Convert / Simulate / Bake / Free Bake (``operators``) and keyframe writing (``keyframes``).
"""

import bpy

from . import operators, panel, properties

classes = properties.classes + operators.classes + panel.classes


def register():
    for cls in classes:
        bpy.utils.register_class(cls)
    properties.register_properties()


def unregister():
    properties.unregister_properties()
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
    from .session import SESSIONS

    SESSIONS.clear()
