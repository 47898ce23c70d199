"""Pre-roll on the bare small pine in a constant wind (run by tests/blender/test_blender_preroll.py).

    blender -b --factory-startup --python preroll.py -- ZIP OUT_DIR FRAMES

Installs the legacy add-on ZIP, generates Sapling's small pine without leaves and blows a constant Wind field
(10 m/s along +X, Noise 0: no gusts) at 24 fps over frames 1..FRAMES. Then:

* the tree's first mode from the linearised model (solver.models.modes.tree_modes, the Session's Damping):
  frequency f [Hz], damping ratio ζ, decay time τ = 1/(ζ ω); the pre-roll P = max(3 τ, 12 s) in frames;
* ``record``: the segments' orientations of :func:`bake.run_bake` with Pre-roll P (the BakeRecord's ``q_seg``);
* ``loop``: the same, from a plain loop on the Session (reset at 1 − P, advance_frame each frame, the bone
  segments' orientations sampled from frame 1 on);
* Bake (the operator) with Pre-roll P and with none: the tallest bone's tail per frame from Blender's evaluated
  pose (world space, m), and with P the baked F-curves' quaternions against the record's keys;
* Bake with a Pre-roll one frame over the limit: the message and the scene before and after.
Saves OUT_DIR/<name>.npy and prints ``PREROLL_RESULT {json}``.
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

FPS = 24


def install(zip_path):
    import addon_utils

    assert bpy.ops.preferences.addon_install(filepath=zip_path, overwrite=True) == {"FINISHED"}
    addon_utils.enable("stiff_rods", default_set=True, handle_error=lambda exc: (_ for _ in ()).throw(exc))


def constant_wind():
    bpy.ops.object.effector_add(type="WIND", location=(0.0, 0.0, 0.0), rotation=(0.0, math.pi / 2, 0.0))
    field = bpy.context.active_object
    field.field.strength = 10.0  # × Field Speed 1 m/s
    field.field.noise = 0.0  # no gusts: the wind is the same at every frame
    return field


def tip(arm, bone, frames):
    """The tail of ``bone`` (len(frames), 3) in world space, as Blender evaluates the pose at each frame."""
    out = np.empty((len(frames), 3))
    for i, f in enumerate(frames):
        bpy.context.scene.frame_set(f)
        out[i] = (np.array(arm.matrix_world) @ np.append(np.array(arm.pose.bones[bone].tail), 1.0))[:3]
    return out


def select(arm):
    bpy.context.view_layer.objects.active = arm
    for o in bpy.context.view_layer.objects:
        o.select_set(o == arm)


def fcurve_quaternions(arm, names, frames):
    """(frames, bones, 4) rotation_quaternion keys of the baked action, read from its F-curves."""
    from stiff_rods.addon import keyframes

    curves = {(fc.data_path, fc.array_index): fc for fc in keyframes.assigned_fcurves(arm)}
    out = np.empty((len(frames), len(names), 4))
    for b, name in enumerate(names):
        for c in range(4):
            fc = curves[(f'pose.bones["{name}"].rotation_quaternion', c)]
            keys = {round(k.co[0]): k.co[1] for k in fc.keyframe_points}
            out[:, b, c] = [keys[f] for f in frames]
    return out


def first_mode(s):
    from stiff_rods.solver.models import modes

    c = float(s.spec.rod.damping)
    m = modes.tree_modes(s.model, 1, damping=c)
    f, zeta = float(m.frequency_hz[0]), float(m.damping_ratio[0])
    tau = 1.0 / (zeta * 2.0 * math.pi * f)
    from stiff_rods.solver.core.integrator import discrete_mode  # the same mode stepped by the Simulator

    stepped = discrete_mode(s.spec.scene.integrator, 2.0 * math.pi * f, s.frame_time / s.substeps, c)[0]
    return {
        "damping": c,
        "frequency": f,
        "zeta": zeta,
        "zeta_stepped": float(stepped),
        "integrator": s.spec.scene.integrator,
        "substeps": s.substeps,
        "tau": tau,
        "preroll": math.ceil(max(3 * tau, 12.0) * FPS),
    }


def plain_loop(s, scene, preroll, frames, seg):
    from stiff_rods.addon import wind

    s.set_wind(wind.SceneWind.from_scene(scene))
    s.reset(1 - preroll, scene)
    out = []
    while s.frame < frames:
        if s.frame >= 1:
            out.append(s.frame_state()[1][seg].copy())
        s.advance_frame(scene)
    out.append(s.frame_state()[1][seg].copy())
    scene.frame_set(1)
    return np.array(out)


def scene_state(arm):
    anim = arm.animation_data
    return {
        "actions": sorted(a.name for a in bpy.data.actions),
        "active": anim.action.name if anim and anim.action else None,
        "frame": bpy.context.scene.frame_current,
        "bones": len(arm.data.bones),
        "modes": sorted({pb.rotation_mode for pb in arm.pose.bones}),
        "marks": sorted(k for k in arm.keys() if k.startswith("stiff_rods_")),
    }


def refused(arm, limit_frames):
    """Bake with a Pre-roll one frame over the limit: (message, state before, state after)."""
    scene = bpy.context.scene
    scene.stiff_rods.preroll_frames = limit_frames + 1
    scene.frame_set(7)
    before = scene_state(arm)
    try:
        outcome = sorted(bpy.ops.stiff_rods.bake(frame_start=1, frame_end=48))
        message = ""
    except RuntimeError as exc:  # bpy.ops raises the operator's ERROR report
        outcome, message = "raised", str(exc).strip()
    return {"outcome": outcome, "message": message, "before": before, "after": scene_state(arm)}


def main():
    zip_path, out, frames = sys.argv[sys.argv.index("--") + 1 :][:3]
    frames = int(frames)
    install(zip_path)
    from stiff_rods.addon import bake, checks, wind

    arm = make_sapling_tree.make_tree("small_pine", leaves=False)
    constant_wind()
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    scene.frame_start, scene.frame_end = 1, frames
    scene.frame_set(1)
    select(arm)
    rest = {b.name: np.array(arm.matrix_world) @ np.append(np.array(b.tail_local), 1.0) for b in arm.data.bones}
    top = max(rest, key=lambda n: rest[n][2])
    result = {"tip_bone": top, "tip_rest": rest[top][:3].tolist(), "bones": len(arm.data.bones)}

    s = checks.tree_session(bpy.context, rebuild=True, owner=arm)
    result.update(first_mode(s))
    result["segments"] = s.model.n_segments
    preroll = result["preroll"]
    scene.stiff_rods.preroll_frames = preroll
    plan = bake.plan_bones(s)
    seg = s.bone_segment if plan is None else np.concatenate((s.bone_segment, plan.segments))
    t0 = time.perf_counter()
    s.set_wind(wind.SceneWind.from_scene(scene))
    rec = bake.run_bake(scene, s, 1, frames, plan)
    result["record_s"] = time.perf_counter() - t0
    np.save(os.path.join(out, "record.npy"), rec.q_seg)
    t0 = time.perf_counter()
    np.save(os.path.join(out, "loop.npy"), plain_loop(s, scene, preroll, frames, seg))
    result["loop_s"] = time.perf_counter() - t0

    for case, p in (("preroll", preroll), ("none", 0)):
        scene.stiff_rods.preroll_frames = p
        scene.frame_set(1)
        t0 = time.perf_counter()
        assert bpy.ops.stiff_rods.bake(frame_start=1, frame_end=frames) == {"FINISHED"}
        result[case + "_s"] = time.perf_counter() - t0
        np.save(os.path.join(out, case + "_tip.npy"), tip(arm, top, range(1, frames + 1)) - rest[top][:3])
        if p:
            names, keys = bake.bone_keys(arm, rec, add=False)
            np.save(os.path.join(out, "keys_record.npy"), keys)
            np.save(os.path.join(out, "keys_fcurves.npy"), fcurve_quaternions(arm, names, range(1, frames + 1)))
        assert bpy.ops.stiff_rods.free_bake() == {"FINISHED"}

    limit = math.floor(bake.PREROLL_LIMIT_S * FPS + 1e-9)
    result["limit_s"], result["limit_frames"] = bake.PREROLL_LIMIT_S, limit
    result["refused"] = refused(arm, limit)
    print("PREROLL_RESULT " + json.dumps(result))


main()
