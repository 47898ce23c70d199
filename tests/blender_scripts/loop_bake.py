"""Seamless loop bakes of the bare small pine, measured by Blender itself (run by tests/blender/test_blender_loop.py).

    blender -b --factory-startup --python loop_bake.py -- ZIP OUT_DIR FRAMES

Installs the legacy add-on ZIP, generates Sapling's small pine without leaves, blows a gusty Wind field
(10 m/s, Noise 3: gusts of 0.3 of the mean) along +X, and bakes at 24 fps:
  ``loop``      Loop, Loop Length FRAMES, Auto Pre-roll, Blend Seam off: the keys are the simulation's own;
  ``free_wind`` the same with the wind's periodicity switched off (the loop's wind is the free field);
  ``no_loop``   no loop, the same pre-roll, 4 × FRAMES + 1 frames in the free gusty wind;
  ``periodic``  no loop, the same pre-roll, FRAMES + 2 frames in the loop's periodic wind: the loop's frames and
                one more, for the velocity one period after the first frame;
  ``blended``   Loop with Blend Seam on (the default).
After each bake the bones' tails are read from Blender's evaluated pose at every keyed frame (world space, m),
saved as OUT_DIR/<case>.npy (``rest.npy``: before any bake), and the bake is freed. Prints
``LOOP_RESULT {json}`` (pre-roll, bones, timings).
"""

import json
import math
import os
import sys
import time

import bpy
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import make_sapling_tree  # noqa: E402  (the repository's Sapling generator)


def install(zip_path):
    import addon_utils

    assert bpy.ops.preferences.addon_install(filepath=zip_path, overwrite=True) == {"FINISHED"}
    addon_utils.enable("stiff_rods", default_set=True, handle_error=lambda exc: (_ for _ in ()).throw(exc))
    assert addon_utils.check("stiff_rods")[1], "stiff_rods did not enable"


def gusty_wind():
    bpy.ops.object.effector_add(type="WIND", location=(0.0, 0.0, 0.0), rotation=(0.0, math.pi / 2, 0.0))
    field = bpy.context.active_object
    field.field.strength = 10.0  # × Field Speed 1 m/s
    field.field.noise = 3.0  # gusts: 0.3 of the mean
    field.field.seed = 4
    return field


def tails(arm, frames):
    """The pose bones' tails (len(frames), bones, 3) in world space, as Blender evaluates them at each frame."""
    out = np.empty((len(frames), len(arm.pose.bones), 3))
    buf = np.empty(3 * len(arm.pose.bones), dtype=np.float32)
    for i, f in enumerate(frames):
        bpy.context.scene.frame_set(f)
        arm.pose.bones.foreach_get("tail", buf)
        mw = np.array(arm.matrix_world)
        out[i] = buf.reshape(-1, 3) @ mw[:3, :3].T + mw[:3, 3]
    return out


def bake(arm, out, case, frames, reports):
    sc = bpy.context.scene.stiff_rods
    sc.use_loop = case in ("loop", "free_wind", "blended")
    sc.use_seam_blend = case == "blended"
    last = {"periodic": frames + 2, "no_loop": 4 * frames + 1}.get(case, frames + 1)
    t0 = time.perf_counter()
    assert bpy.ops.stiff_rods.bake(frame_start=1, frame_end=last) == {"FINISHED"}
    reports[case] = {"seconds": time.perf_counter() - t0}
    np.save(os.path.join(out, case + ".npy"), tails(arm, range(1, last + 1)))
    assert bpy.ops.stiff_rods.free_bake() == {"FINISHED"}


def with_wind(loop, run):
    """``run()`` with every bake's wind periodic (``loop`` True) or free (False), whatever the Loop setting."""
    from stiff_rods.addon import wind

    keep = wind.SceneWind.from_scene
    wind.SceneWind.from_scene = classmethod(
        lambda cls, scene, loop=False, forced=loop: keep.__func__(cls, scene, forced)
    )
    try:
        run()
    finally:
        wind.SceneWind.from_scene = keep


def main():
    zip_path, out, frames = sys.argv[sys.argv.index("--") + 1 :][:3]
    frames = int(frames)
    install(zip_path)
    arm = make_sapling_tree.make_tree("small_pine", leaves=False)
    gusty_wind()
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 24, 1.0
    scene.frame_start, scene.frame_end = 1, frames + 1
    bpy.context.view_layer.objects.active = arm
    for o in bpy.context.view_layer.objects:
        o.select_set(o == arm)
    sc = scene.stiff_rods
    sc.loop_frames, sc.use_auto_preroll = frames, True
    from stiff_rods.addon import bake as bake_module
    from stiff_rods.addon import session, settings

    s = session.Session(arm, scene)
    sc.use_loop = True
    preroll = bake_module.loop_warmup(settings.bake_spec(scene), s).most * frames  # the longest warm-up
    result = {"preroll": preroll, "bones": len(arm.pose.bones), "segments": s.model.n_segments}
    reports = {}
    np.save(os.path.join(out, "rest.npy"), tails(arm, [1]))
    bake(arm, out, "loop", frames, reports)
    with_wind(False, lambda: bake(arm, out, "free_wind", frames, reports))
    sc.preroll_frames = preroll
    bake(arm, out, "no_loop", frames, reports)
    sc.loop_frames = frames  # the period of the wind below
    with_wind(True, lambda: bake(arm, out, "periodic", frames, reports))
    sc.preroll_frames = 0
    bake(arm, out, "blended", frames, reports)
    result["cases"] = reports
    print("LOOP_RESULT " + json.dumps(result))


main()
