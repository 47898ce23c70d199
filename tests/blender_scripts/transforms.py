"""World transforms the solver cannot represent are refused (run by tests/blender/test_blender_transforms.py).

    blender -b --factory-startup --python transforms.py -- LEGACY_ZIP

Installs the legacy add-on ZIP (the caller points the user profile at a temporary folder), generates a
Sapling quaking aspen with leaves and gives one of its objects a world matrix at a time: the armature
mirrored (−1, 1, 1) or stretched (1, 1, 2), the armature under an Empty scaled (1, 2, 1) (also with the
armature turned 30° about Z under it: a shear), the leaves stretched (1, 1, 2), and a plain Bézier rope
mirrored (1, −1, 1). Convert and Bake run on each with the scene snapshotted before and after
(bad_input.py's snapshot: actions, pose bones with their rotation modes and values, objects). Then the
tree scaled (2, 2, 2) and turned about all three axes is converted.

Prints one line ``TRANSFORMS_RESULT {json}``.
"""

import math
import os
import sys

import bpy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bad_input import activate, call, first_diff, install, make_sapling, report_cases, snapshot  # noqa: E402
from curves_wind import bezier_curve  # noqa: E402


def bone_count():
    return {o.name: len(o.data.bones) for o in bpy.data.objects if o.type == "ARMATURE"}


def refused(selected):
    """Convert and Bake on ``selected``: outcome, message and the first change to the scene for each."""
    out = {}
    for op in ("convert", "bake"):
        activate(selected)
        before, bones_before = snapshot(), bone_count()
        outcome, message = call(op, frame_start=1, frame_end=3) if op == "bake" else call(op)
        activate(selected)  # the snapshot records the active object; a refusal must not change it anyway
        diff = first_diff(before, snapshot())
        out[op] = {"outcome": outcome, "message": message, "diff": diff, "bones_added": bone_count() != bones_before}
    return out


def tree():
    arm, curve, leaves = make_sapling()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 3
    scene.frame_set(1)
    scene.stiff_rods.use_storm = False
    return arm, curve, leaves


def armature_scaled(scale):
    def case():
        arm, _, _ = tree()
        arm.scale = scale
        bpy.context.view_layer.update()
        return refused(arm)

    return case


def parent_empty(turn_deg):
    def case():
        arm, _, _ = tree()
        empty = bpy.data.objects.new("Stretcher", None)
        bpy.context.scene.collection.objects.link(empty)
        empty.scale = (1.0, 2.0, 1.0)
        arm.parent = empty
        arm.rotation_euler = (0.0, 0.0, math.radians(turn_deg))
        bpy.context.view_layer.update()
        return refused(arm)

    return case


def leaves_stretched():
    arm, _, leaves = tree()
    leaves.scale = (1.0, 1.0, 2.0)
    bpy.context.view_layer.update()
    return refused(arm)


def rope_mirrored():
    for obj in list(bpy.data.objects):
        bpy.data.objects.remove(obj)
    rope = bezier_curve("Rope", [(0.4 * i, 0.0, 1.0) for i in range(6)])
    rope.scale = (1.0, -1.0, 1.0)
    bpy.context.view_layer.update()
    return refused(rope)


def uniform_and_turned():
    arm, _, _ = tree()
    arm.scale = (2.0, 2.0, 2.0)
    arm.rotation_euler = (0.3, 0.5, 0.7)
    bpy.context.view_layer.update()
    activate(arm)
    outcome, message = call("convert")
    return {"outcome": outcome, "message": message}


def main():
    install(sys.argv[sys.argv.index("--") + 1])
    out = {"blender": list(bpy.app.version)}
    cases = (
        ("armature_mirrored", armature_scaled((-1.0, 1.0, 1.0))),
        ("armature_stretched", armature_scaled((1.0, 1.0, 2.0))),
        ("parent_empty", parent_empty(0.0)),
        ("parent_empty_sheared", parent_empty(30.0)),
        ("leaves_stretched", leaves_stretched),
        ("rope_mirrored", rope_mirrored),
        ("uniform_and_turned", uniform_and_turned),
    )
    report_cases("TRANSFORMS_RESULT", out, cases)


if __name__ == "__main__":
    main()
