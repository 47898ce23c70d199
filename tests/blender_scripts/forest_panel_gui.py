"""A forest bake from the N-panel in a window (run by tests/blender/test_blender_forest_panel_gui.py under Xvfb):

    xvfb-run blender --factory-startup --enable-event-simulate --python forest_panel_gui.py -- ZIP FOREST.blend WORK

With the legacy zip installed in an isolated profile, on a copy of FOREST.blend in WORK (three Sapling trees of
different presets, tests/blender_scripts/forest_scene.py), driven by ``bpy.app.timers`` and
``Window.event_simulate``:

1. the three trees selected, frames 1-30 (long enough for the workers to report frames between two of the
   operator's timer ticks), Parallel Workers 2: Bake (``INVOKE_DEFAULT`` in the 3D View) returns at once and
   bakes in worker processes (headless Blenders) while the timer polls them; the panel's status lines are
   recorded until every tree is baked; then the keys are compared with the same trees baked by Bake from a
   script with Parallel Workers 1 (one after the other in this Blender);
2. a long bake (frames 1-400) cancelled by Esc once the workers report frames: the scene as before
   (forest_panel.state: bad_input.snapshot plus modifiers, bones and point cache files), no cache folder,
   the worker processes gone;
3. Simulate on the three trees: the timeline advances, every tree's bones move; Esc gives each its rest pose;
4. Quit: Blender must exit (a timer left behind would hang it; the caller's timeout catches that).

One line ``FOREST_PANEL_GUI {json}``.
"""

import glob
import json
import os
import shutil
import sys

import bpy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bad_input import first_diff, install  # noqa: E402
from forest_bake import key_difference, scene_keys  # noqa: E402
from forest_panel import state  # noqa: E402
from gui_driver import in_view3d, key, run  # noqa: E402

ARGS = sys.argv[sys.argv.index("--") + 1 :]
TREES = ["treeArm", "treeArm.001", "treeArm.002"]
OUT: dict = {}


def select(names, workers):
    for o in bpy.context.view_layer.objects:
        o.select_set(o.name in names)
    bpy.context.view_layer.objects.active = bpy.data.objects[names[0]]
    bpy.context.scene.stiff_rods.forest_workers = workers


def cache_folders():
    return sorted(glob.glob(os.path.join(ARGS[2], "*_stiff_rods_forest*")))


def baked():
    """The trees that have a Stiff Rods bake."""
    tagged = [bpy.data.objects[n].animation_data for n in TREES]
    return [n for n, ad in zip(TREES, tagged, strict=True) if ad and ad.action and ad.action.get("stiff_rods_bake")]


def script():
    """A generator: each ``yield`` hands control back to Blender's event loop for that many seconds."""
    install(ARGS[0])
    from stiff_rods.addon import forest

    os.makedirs(ARGS[2], exist_ok=True)
    blend = os.path.join(ARGS[2], "forest.blend")
    shutil.copy(ARGS[1], blend)
    bpy.ops.wm.open_mainfile(filepath=blend)
    yield 1.0
    scene = bpy.context.scene
    # 1. the background bake, progress, the result against the serial bake
    select(TREES, workers=2)
    scene.frame_end = 30
    OUT["bake"] = sorted(in_view3d(bpy.ops.stiff_rods.bake, "INVOKE_DEFAULT"))
    OUT["baked_at_once"] = baked()
    OUT["cache_while_baking"] = [os.path.basename(f) for f in cache_folders()]
    status = []
    for _ in range(600):
        line = forest.STATUS.get(scene.name)
        if line and line not in status:
            status.append(line)
        if line is None and baked():
            break
        yield 0.1
    OUT["status"] = status
    OUT["baked"] = baked()
    OUT["cache_after"] = cache_folders()
    pool_keys = scene_keys(bpy, TREES)
    OUT["free"] = sorted(bpy.ops.stiff_rods.free_bake())
    select(TREES, workers=1)
    OUT["serial"] = sorted(bpy.ops.stiff_rods.bake())
    OUT["diff"] = key_difference(pool_keys, scene_keys(bpy, TREES))
    bpy.ops.stiff_rods.free_bake()
    # 2. Esc while the workers bake
    select(TREES, workers=2)
    scene.frame_end = 400
    scene.frame_set(1)
    before = state()
    OUT["long_bake"] = sorted(in_view3d(bpy.ops.stiff_rods.bake, "INVOKE_DEFAULT"))
    pids = []
    for _ in range(600):
        line = forest.STATUS.get(scene.name) or ""
        folder = cache_folders()
        if folder and os.path.isfile(os.path.join(folder[0], "manifest.json")):
            manifest = json.load(open(os.path.join(folder[0], "manifest.json")))
            pids = sorted({e["worker"] for e in manifest["trees"] if e["worker"]})
        if "frames/s" in line and not line.startswith("Forest bake: 0/3 trees, 0.0"):
            break
        yield 0.1
    OUT["status_at_esc"] = line
    OUT["worker_pids"] = pids
    key("ESC")
    yield 1.0
    OUT["status_after_esc"] = forest.STATUS.get(scene.name)
    OUT["diff_after_esc"] = first_diff(before, state())
    OUT["cache_after_esc"] = cache_folders()
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
            alive.append(pid)
        except ProcessLookupError:
            pass
    OUT["workers_alive_after_esc"] = alive
    select(TREES, workers=1)
    OUT["bake_after_esc"] = sorted(bpy.ops.stiff_rods.bake(frame_start=1, frame_end=2))  # nothing left running
    bpy.ops.stiff_rods.free_bake()
    # 3. Simulate on the three trees: each moves, Esc gives each its rest pose back
    scene.frame_set(1)
    rest = {n: poses(n) for n in TREES}
    OUT["simulate"] = sorted(in_view3d(bpy.ops.stiff_rods.simulate, "INVOKE_DEFAULT"))
    yield 2.0
    OUT["simulate_frames"] = scene.frame_current - 1
    OUT["simulate_moved"] = {n: max(abs(a - b) for a, b in zip(poses(n), rest[n], strict=True)) for n in TREES}
    key("ESC")
    yield 0.5
    OUT["simulate_rest_after_esc"] = {n: poses(n) == rest[n] for n in TREES}
    OUT["frame_after_simulate"] = scene.frame_current


def poses(name):
    return [v for pb in bpy.data.objects[name].pose.bones for v in pb.rotation_quaternion]


def main():
    run(script(), OUT, "FOREST_PANEL_GUI", persistent=True)  # a step loads a file


main()
