"""The modal operators in a real Blender window (run by tests/blender/test_blender_gui.py under Xvfb).

    xvfb-run blender --factory-startup --enable-event-simulate --python gui_modal.py -- LEGACY_ZIP

In background mode timers never fire and modal handlers never run; here they do. With the legacy zip
installed in an isolated profile, on a Sapling quaking aspen in a Wind field, driven by
``bpy.app.timers`` and ``Window.event_simulate``:

1. Simulate (``INVOKE_DEFAULT`` in the 3D View): the timeline advances and the bones move; a simulated
   Esc stops it, the start frame and the rest pose come back.
2. Bake (``INVOKE_DEFAULT``, 12 frames): it runs modally (a frame or more per timer tick) and finishes
   with a tagged action.
3. Free Bake, then a second modal Bake cancelled by Esc after its first tick: nothing is written.
4. Quit: Blender must exit (a timer left behind would hang it; the caller's timeout catches that).

One line ``GUI_RESULT {json}``.
"""

import os
import sys

import bpy
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bad_input import install, make_sapling, wind_field  # noqa: E402
from gui_driver import in_view3d, key, run  # noqa: E402

OUT = {}


def invoke(op, **kw):
    return in_view3d(op, "INVOKE_DEFAULT", **kw)


def esc():
    key("ESC")


def pose(arm):
    return np.array([list(pb.rotation_quaternion) for pb in arm.pose.bones])


def baked(arm):
    ad = arm.animation_data
    return bool(ad and ad.action and ad.action.get("stiff_rods_bake"))


def script():
    """A generator: each ``yield`` hands control back to Blender's event loop for that many seconds."""
    zip_path = sys.argv[sys.argv.index("--") + 1]
    install(zip_path)
    arm, curve, leaves = make_sapling("quaking_aspen")
    arm.stiff_rods.use_leaves = False
    wind_field(8.0)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 12
    scene.frame_set(1)
    for o in bpy.context.view_layer.objects:
        o.select_set(o == arm)
    bpy.context.view_layer.objects.active = arm
    yield 0.5
    # 1. live simulation
    rest = pose(arm)
    modes_before = {pb.rotation_mode for pb in arm.pose.bones}
    OUT["simulate_invoke"] = sorted(invoke(bpy.ops.stiff_rods.simulate))
    yield 2.0
    OUT["frame_while_running"] = scene.frame_current
    OUT["pose_change_while_running"] = float(np.abs(pose(arm) - rest).max()) if len(rest) else 0.0
    OUT["modes_while_running"] = sorted({pb.rotation_mode for pb in arm.pose.bones})
    esc()
    yield 1.0
    OUT["frame_after_esc"] = scene.frame_current
    OUT["pose_error_after_esc"] = float(np.abs(pose(arm) - rest).max())
    OUT["modes_restored"] = {pb.rotation_mode for pb in arm.pose.bones} == modes_before
    frame = scene.frame_current
    yield 1.0
    OUT["frame_still_after_esc"] = scene.frame_current == frame  # no timer left stepping
    # 2. modal bake to the end
    OUT["bake_invoke"] = sorted(invoke(bpy.ops.stiff_rods.bake, frame_start=1, frame_end=12))
    OUT["bake_running_after_invoke"] = not baked(arm)
    for _ in range(120):
        if baked(arm):
            break
        yield 0.25
    OUT["bake_finished"] = baked(arm)
    OUT["bake_fcurves"] = len(arm.animation_data.action.fcurves) if baked(arm) else 0
    OUT["frame_after_bake"] = scene.frame_current
    # 3. free, then a bake cancelled by Esc
    OUT["free"] = sorted(bpy.ops.stiff_rods.free_bake())
    action_before = arm.animation_data.action.name if arm.animation_data and arm.animation_data.action else None
    actions_before = len(bpy.data.actions)
    # far more frames than 0.3 s can bake (about a millisecond per frame of the aspen, compiled)
    OUT["bake2_invoke"] = sorted(invoke(bpy.ops.stiff_rods.bake, frame_start=1, frame_end=20000))
    yield 0.3
    esc()
    yield 1.0
    OUT["cancelled_bake_wrote_nothing"] = (
        not baked(arm)
        and len(bpy.data.actions) == actions_before
        and (arm.animation_data.action.name if arm.animation_data.action else None) == action_before
    )
    OUT["frame_after_cancel"] = scene.frame_current


def main():
    run(script(), OUT, "GUI_RESULT")


main()
