"""Unusual inputs that need a window (run by tests/blender/test_blender_inputs_gui.py under Xvfb; docs/scene_inputs.md).

    xvfb-run blender --factory-startup --enable-event-simulate --python inputs_gui.py -- LEGACY_ZIP

With the legacy zip installed in an isolated profile, on a Sapling quaking aspen without leaves, driven by
``bpy.app.timers`` and ``Window.event_simulate``:

1. a second Bake, a Simulate and a Free Bake while a modal Bake runs: refused by name; the first bake finishes;
2. a long Bake (30000 frames) cancelled late by Esc: nothing written, the frame and the rotation modes as before;
3. Simulate while the timeline plays: playback is stopped, the simulation advances one frame per tick; a second
   Simulate while it runs is refused; playback started during it is stopped again;
4. Undo (Ctrl+Z) while Simulate runs, then Esc: no traceback, the rest pose and start frame come back;
5. Undo after a finished modal Bake: the bake is gone, the rotation modes are back;
6. Quit: Blender must exit (a timer left behind would hang it; the caller's timeout catches that).

One line ``INPUTS_GUI_RESULT {json}``.
"""

import contextlib
import io
import os
import sys

import bpy
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bad_input import activate, install, make_sapling  # noqa: E402
from gui_driver import in_view3d, key, run  # noqa: E402

OUT = {}


def op(name, *args, **kw):
    """Run ``bpy.ops.<name>`` in the 3D View: the returned set, or "ERROR: <message>"."""
    fn = bpy.ops
    for part in name.split("."):
        fn = getattr(fn, part)
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            return sorted(in_view3d(fn, *args, **kw))
        except RuntimeError as exc:
            return "ERROR: " + str(exc).strip().removeprefix("Error: ")


def baked(arm):
    ad = arm.animation_data
    return bool(ad and ad.action and ad.action.get("stiff_rods_bake"))


def modes(arm):
    return sorted({pb.rotation_mode for pb in arm.pose.bones})


def pose(arm):
    return np.array([list(pb.rotation_quaternion) for pb in arm.pose.bones])


def script():
    """A generator: each ``yield`` hands control back to Blender's event loop for that many seconds."""
    install(sys.argv[sys.argv.index("--") + 1])
    arm, curve, leaves = make_sapling("quaking_aspen")
    bpy.data.objects.remove(leaves)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 12
    scene.frame_set(1)
    scene.stiff_rods.use_storm = False
    for i, pb in enumerate(arm.pose.bones):  # a pose in Euler modes: every mode switch would show
        pb.rotation_mode = "XYZ" if i % 2 else "ZXY"
    activate(arm)
    modes_before = modes(arm)
    yield 0.5
    # 1. a second Bake, a Simulate and a Free Bake while a modal Bake runs
    # long enough to outlast 0.2 s with the compiled solver (the aspen bakes a frame in about a millisecond)
    OUT["bake1"] = op("stiff_rods.bake", "INVOKE_DEFAULT", frame_start=1, frame_end=1500)
    yield 0.2
    OUT["bake2_while_running"] = op("stiff_rods.bake", "INVOKE_DEFAULT", frame_start=1, frame_end=40)
    OUT["simulate_while_baking"] = op("stiff_rods.simulate", "INVOKE_DEFAULT")
    OUT["free_while_baking"] = op("stiff_rods.free_bake")
    for _ in range(240):
        if baked(arm):
            break
        yield 0.25
    OUT["bake1_finished"] = baked(arm)
    OUT["bake_actions"] = sorted(a.name for a in bpy.data.actions if a.get("stiff_rods_bake"))
    OUT["free"] = op("stiff_rods.free_bake")
    # 2. a long bake cancelled late
    actions_before = sorted(a.name for a in bpy.data.actions)
    OUT["long_bake"] = op("stiff_rods.bake", "INVOKE_DEFAULT", frame_start=1, frame_end=30000)
    yield 3.0
    key("ESC")
    yield 1.0
    OUT["long_bake_wrote_nothing"] = not baked(arm) and sorted(a.name for a in bpy.data.actions) == actions_before
    OUT["frame_after_cancel"] = scene.frame_current
    OUT["modes_after_cancel"] = modes(arm) == modes_before
    OUT["bake_after_cancel"] = op("stiff_rods.bake", frame_start=1, frame_end=3)  # nothing left marked running
    OUT["free_after_cancel"] = op("stiff_rods.free_bake")
    # 3. playback while simulating
    rest = pose(arm)
    op("screen.animation_play")
    yield 0.5
    OUT["playing_before_simulate"] = bpy.context.screen.is_animation_playing
    scene.frame_set(1)
    OUT["simulate"] = op("stiff_rods.simulate", "INVOKE_DEFAULT")
    yield 0.1
    OUT["playing_after_simulate"] = bpy.context.screen.is_animation_playing
    OUT["simulate_twice"] = op("stiff_rods.simulate", "INVOKE_DEFAULT")
    frame = scene.frame_current
    yield 1.5
    OUT["frames_advanced"] = scene.frame_current - frame
    op("screen.animation_play")
    yield 1.0
    OUT["playing_during_simulate"] = bpy.context.screen.is_animation_playing
    # 4. undo while simulating, then Esc
    key("Z", ctrl=True)
    yield 1.0
    key("ESC")
    yield 1.0
    arm, scene = bpy.data.objects["treeArm"], bpy.context.scene  # undo may have replaced both
    OUT["frame_after_undo_esc"] = scene.frame_current
    OUT["pose_error_after_undo_esc"] = float(np.abs(pose(arm) - rest).max())
    OUT["modes_after_undo_esc"] = modes(arm) == modes_before
    frame = scene.frame_current
    yield 1.0
    OUT["still_after_esc"] = scene.frame_current == frame
    OUT["simulate_again"] = op("stiff_rods.simulate", "INVOKE_DEFAULT")  # nothing left marked running
    yield 0.5
    key("ESC")
    yield 0.5
    # 5. undo after a finished modal bake
    scene.frame_set(1)
    activate(arm)
    bpy.ops.ed.undo_push(message="before bake")
    OUT["bake_for_undo"] = op("stiff_rods.bake", "INVOKE_DEFAULT", frame_start=1, frame_end=6)
    for _ in range(120):
        if baked(arm):
            break
        yield 0.25
    OUT["baked_before_undo"] = baked(arm)
    op("ed.undo")
    yield 0.5
    arm = bpy.data.objects["treeArm"]
    OUT["baked_after_undo"] = baked(arm)
    OUT["modes_after_undo"] = modes(arm) == modes_before
    OUT["bake_actions_after_undo"] = sorted(a.name for a in bpy.data.actions if a.get("stiff_rods_bake"))


def main():
    run(script(), OUT, "INPUTS_GUI_RESULT")


main()
