"""Simulate in a real window, then Bake from Preview (run by tests/blender/test_blender_preview_bake.py under Xvfb).

    xvfb-run blender --factory-startup --enable-event-simulate --python preview_bake.py -- LEGACY_ZIP OUT_DIR

With the legacy zip installed in an isolated profile, on Sapling's small pine (no leaves) in a Wind field:

1. Bake from Preview before any Simulate: refused, naming the tree; the scene's actions, the armature's animation,
   custom properties and pose unchanged.
2. The oracle: a plain solver loop with the preview's settings. A Session of the tree is built and reset as the
   live preview resets it; its Simulator (one step per frame, Live Iterations, Live Matrix Reuse, checked here)
   is stepped ``ORACLE_FRAMES`` times with ``Simulator.step``. Each frame's bone tails (world, m) are worked out
   here by forward kinematics from the bones' segments' orientations (a bone turns by its segment's rotation
   since rest about its head; a child's head rides on its parent), not by the add-on's bone maps.
3. Simulate (``INVOKE_DEFAULT`` in the 3D View, its timer at the scene's 24 fps) until the timeline has advanced at
   least ``FRAMES`` frames, then Esc.
4. Bake from Preview; a second one is refused (the bake is not overwritten). Save to OUT_DIR/baked.blend.

Writes OUT_DIR/oracle.npz (bone names, tails (F, B, 3) from frame 1) and prints ``PREVIEW_BAKE_RESULT {json}``.
"""

import os
import sys
import time

import bpy
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bad_input import install, make_sapling, wind_field  # noqa: E402
from curves_wind import RecordingLayout, bezier_curve  # noqa: E402
from gui_driver import in_view3d, key, run  # noqa: E402

FRAMES = 48
ORACLE_FRAMES = 60  # more than the frames Simulate shows before Esc lands
OUT = {}


def state(arm):
    ad = arm.animation_data
    return {
        "actions": sorted(a.name for a in bpy.data.actions),
        "action": ad.action.name if ad and ad.action else None,
        "props": sorted(arm.keys()),
        "pose": [list(pb.rotation_quaternion) + [pb.rotation_mode] for pb in arm.pose.bones],
    }


def call(op):
    """An operator called from the script: its result set, or its ERROR message (Blender raises it)."""
    try:
        return sorted(in_view3d(op, "EXEC_DEFAULT")), ""
    except RuntimeError as exc:
        return ["raised"], str(exc)


def quat_matrix(q):
    w, x, y, z = q / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def bone_tails(arm, names, segment, q_now, q_rest):
    """World tails (B, 3) [m] of the armature's bones (in ``arm.data.bones`` order) when bone ``names[i]`` turns
    by the rotation of its segment ``segment[i]`` since rest (world orientations ``q_rest`` → ``q_now``)."""
    mw = np.array(arm.matrix_world)
    ra = mw[:3, :3] / np.linalg.norm(mw[:3, 0])
    delta = {}
    for name, s in zip(names, segment, strict=True):
        world = quat_matrix(q_now[s]) @ quat_matrix(q_rest[s]).T
        delta[name] = ra.T @ world @ ra  # in armature space
    heads, tails, turn = {}, {}, {}

    def place(b):
        p = b.parent
        if p is not None and p.name not in heads:
            place(p)
        turn[b.name] = delta.get(b.name, turn[p.name] if p else np.eye(3))
        head_rest, tail_rest = np.array(b.head_local), np.array(b.tail_local)
        if p is None:
            heads[b.name] = head_rest
        else:
            heads[b.name] = heads[p.name] + turn[p.name] @ (head_rest - np.array(p.head_local))
        tails[b.name] = heads[b.name] + turn[b.name] @ (tail_rest - head_rest)

    for b in arm.data.bones:
        if b.name not in heads:
            place(b)
    return np.array([(mw @ np.append(tails[b.name], 1.0))[:3] for b in arm.data.bones])


def oracle(arm, scene, out_dir):
    """The plain solver loop (module docstring, 2); saves the tails, returns the live settings it checked."""
    from stiff_rods.addon import wind
    from stiff_rods.addon.session import Session

    s = Session(arm, scene)
    s.set_wind(wind.SceneWind.from_scene(scene))
    s.reset(scene.frame_current, scene, live=True)
    sim, run = s.sim, s.run
    ss = scene.stiff_rods
    assert (run.substeps, run.max_iterations, run.factor_reuse) == (1, ss.live_iterations, ss.live_matrix_reuse)
    names, segment = list(s.source.bone_names), np.asarray(s.bone_segment)
    q_rest = np.array(sim.orientations, copy=True)
    tails = [bone_tails(arm, names, segment, q_rest, q_rest)]
    for _ in range(ORACLE_FRAMES):
        sim.step()
        tails.append(bone_tails(arm, names, segment, np.asarray(sim.orientations), q_rest))
    np.savez(
        os.path.join(out_dir, "oracle.npz"), names=np.array([b.name for b in arm.data.bones]), tails=np.array(tails)
    )
    quality_and_cap(s, scene)
    return [run.substeps, run.max_iterations, run.factor_reuse]


def quality_and_cap(s, scene):
    """Preview Quality Bake: the live reset steps as Bake does. The cap: a recording limited to three frames'
    bytes keeps three frames and says it is full."""
    from stiff_rods.addon.preview_record import PreviewRecord

    ss = scene.stiff_rods
    ss.preview_quality = "BAKE"
    s.reset(scene.frame_current, scene, live=True)
    OUT["bake_quality_run"] = [s.run.substeps, s.run.max_iterations, s.run.factor_reuse]
    OUT["bake_settings"] = [ss.substeps, ss.iterations]
    OUT["panel_bake_quality"] = panel_lines("Preview:")
    ss.preview_quality = "FAST"
    OUT["panel_fast_quality"] = panel_lines("Preview:")
    frame_bytes = 32 * len(s.bone_segment)
    rec = PreviewRecord(s, None, s.run, 3 * frame_bytes)
    seconds = []
    for _ in range(4):
        s.sim.step()
        t = time.perf_counter()
        rec.take(s)
        seconds.append(time.perf_counter() - t)
    OUT["capped"] = [len(rec.frames), rec.full, rec.nbytes, 3 * frame_bytes]
    OUT["take_ms"] = 1e3 * min(seconds)


def curve_case():
    """A Bézier rope stepped by the live tick itself (``step_live``, as Simulate's timer calls it, recording on),
    then Bake from Preview: (frames recorded, largest distance [m] between the points each tick showed and the
    baked keys Blender evaluates at that frame)."""
    from stiff_rods.addon import ops_preview_bake
    from stiff_rods.addon.operators import step_live
    from stiff_rods.addon.session import Session

    scene = bpy.context.scene
    scene.frame_set(1)
    rope = bezier_curve("Rope", [(4.0, 0.0, 2.0), (4.5, 0.0, 2.0), (5.0, 0.0, 2.0)])
    s = Session(rope, scene)
    s.reset(1, scene, live=True)
    ops_preview_bake.start_recording(s, scene)
    shown = [points(rope)]
    for _ in range(10):
        step_live(s, scene)
        shown.append(points(rope))
    s.write_rest()
    scene.frame_set(1)
    for o in bpy.context.view_layer.objects:
        o.select_set(o == rope)
    bpy.context.view_layer.objects.active = rope
    done = call(bpy.ops.stiff_rods.bake_from_preview)
    baked = []
    for f in range(1, 12):
        scene.frame_set(f)
        baked.append(points(rope))
    sag = float(np.abs(np.array(shown) - shown[0]).max())
    return done, float(np.abs(np.array(baked) - np.array(shown)).max()), sag


def points(curve):
    sp = curve.data.splines[0]
    return [list(p.co) + list(p.handle_left) + list(p.handle_right) for p in sp.bezier_points]


def panel_lines(prefix):
    from stiff_rods.addon import panel

    drawn = []
    panel.STIFF_RODS_PT_main.draw(type("P", (), {"layout": RecordingLayout(drawn)})(), bpy.context)
    return [d[len("label:") :] for d in drawn if d.startswith("label:" + prefix)]


def script():
    """A generator: each ``yield`` hands control back to Blender's event loop for that many seconds."""
    zip_path, out_dir = sys.argv[sys.argv.index("--") + 1 :][:2]
    t0 = time.perf_counter()
    install(zip_path)
    arm, curve, leaves = make_sapling("small_pine")
    arm.stiff_rods.use_leaves = False
    curve.hide_set(True)  # what is compared are the bones; the bevelled curve would take most of a tick to draw
    wind_field(30.0)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 250
    scene.frame_set(1)
    for o in bpy.context.view_layer.objects:
        o.select_set(o == arm)
    bpy.context.view_layer.objects.active = arm
    yield 0.5
    before = state(arm)
    OUT["refused_without_recording"] = call(bpy.ops.stiff_rods.bake_from_preview)
    OUT["refused_changed_nothing"] = state(arm) == before
    OUT["tree"] = arm.name
    t1 = time.perf_counter()
    OUT["live_run"] = oracle(arm, scene, out_dir)
    t2 = time.perf_counter()
    OUT["bones"] = len(arm.data.bones)
    OUT["simulate_invoke"] = sorted(in_view3d(bpy.ops.stiff_rods.simulate, "INVOKE_DEFAULT"))
    for _ in range(400):
        if scene.frame_current >= 1 + FRAMES:
            break
        yield 0.05
    OUT["frame_before_esc"] = scene.frame_current
    from stiff_rods.addon.session import SESSIONS

    OUT["ms_per_step"] = SESSIONS[arm.name].ms_per_step
    key("ESC")
    yield 0.5
    OUT["seconds"] = {"setup": t1 - t0, "oracle": t2 - t1, "simulate": time.perf_counter() - t2}
    OUT["frame_after_esc"] = scene.frame_current
    OUT["panel_after_simulate"] = panel_lines("Preview recorded")
    OUT["bake_from_preview"] = call(bpy.ops.stiff_rods.bake_from_preview)
    action = arm.animation_data.action if arm.animation_data else None
    OUT["action_range"] = list(action.frame_range) if action else None
    OUT["second_refused"] = call(bpy.ops.stiff_rods.bake_from_preview)
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(out_dir, "baked.blend"))
    OUT["curve"] = curve_case()
    yield 0.1


def main():
    run(script(), OUT, "PREVIEW_BAKE_RESULT")


main()
