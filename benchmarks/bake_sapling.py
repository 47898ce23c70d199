"""Bake a Sapling tree and replay it: where the time goes, and how exactly the keys replay.

    python3 benchmarks/bake_sapling.py --blend sample_blends/white_birch.blend --frames 48 --json

Keys: segments, bones_keyed, frames, ms_per_frame_sim (solver), ms_per_frame_write (pose
quaternions + keyframe writing, per frame), replay_max_error_m (bone tails played back from the
keys vs the simulated segment ends, all frames), max_tail_motion_m. The tree stands in a steady wind
(a Wind force field, ``--wind`` m/s, default 10): it is pre-stressed, so in still air it would not move.
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _blender  # noqa: E402
import _common  # noqa: E402


def inner(frames: int, wind_mps: float) -> dict:
    import bpy
    import numpy as np

    _blender.load_addon()
    from stiff_rods.addon import keyframes
    from stiff_rods.addon.session import Session
    from stiff_rods.addon.wind import SceneWind

    arm = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
    scene = bpy.context.scene
    _blender.add_wind_field(wind_mps)
    t0 = time.perf_counter()
    s = Session(arm, scene)
    convert_s = time.perf_counter() - t0
    seg = s.bone_segment
    local = np.zeros((seg.size, 3))
    local[:, 2] = 0.5 * s.model.lengths[seg]
    start = scene.frame_start
    s.set_wind(SceneWind.from_scene(scene))
    s.reset(start, scene)
    quats, tails, sim_t, write_t = [], [], [], []
    for f in range(frames):
        if f:
            t = time.perf_counter()
            s.advance_frame()
            sim_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        quats.append(s.bone_quaternions())
        write_t.append(time.perf_counter() - t)
        tails.append(s.sim.segment_points(local, seg))
    t = time.perf_counter()
    action = keyframes.new_bake_action(arm)
    for pb in arm.pose.bones:
        pb.rotation_mode = "QUATERNION"
    keyframes.write_bone_quaternions(
        action, arm, s.source.bone_names, np.arange(start, start + frames), np.array(quats)
    )
    keys_s = time.perf_counter() - t
    for o in scene.objects:
        o.hide_viewport = o is not arm
    index = {pb.name: i for i, pb in enumerate(arm.pose.bones)}
    order = np.array([index[n] for n in s.source.bone_names])
    mw = np.array(arm.matrix_world)
    err = 0.0
    for f in range(frames):
        scene.frame_set(start + f)
        flat = np.empty(3 * len(arm.pose.bones))
        arm.pose.bones.foreach_get("tail", flat)
        world = flat.reshape(-1, 3)[order] @ mw[:3, :3].T + mw[:3, 3]
        err = max(err, float(np.max(np.linalg.norm(world - tails[f], axis=1))))
    return {
        "segments": s.model.n_segments,
        "bones_keyed": len(s.source.bone_names),
        "frames": frames,
        "substeps": s.substeps,
        "iterations_max": s.sim.max_iterations,
        "convert_s": convert_s,
        "ms_per_frame_sim": 1e3 * float(np.median(sim_t)) if sim_t else 0.0,
        "ms_per_frame_write": 1e3 * (float(np.median(write_t)) + keys_s / frames),
        "keyframe_write_s": keys_s,
        "replay_max_error_m": err,
        "max_tail_motion_m": float(np.max(np.linalg.norm(tails[-1] - tails[0], axis=1))),
    }


def main():
    if _blender.inside_blender():
        argv = sys.argv[sys.argv.index("--") + 1 :]
        print(json.dumps(inner(int(argv[0]), float(argv[1]))))
        return
    ap = _common.arguments(__doc__)
    ap.add_argument("--blend", default=str(_blender.ROOT / "sample_blends" / "white_birch.blend"))
    ap.add_argument("--frames", type=int, default=48)
    ap.add_argument("--wind", type=float, default=10.0, help="steady wind speed [m/s] (0: still air)")
    args = ap.parse_args()
    result = _blender.relaunch(__file__, args.blend, [str(args.frames), str(args.wind)])
    result["wind_mps"] = args.wind
    result["blend"] = args.blend
    _common.report(result, args.json, "{:>22}: {}")


if __name__ == "__main__":
    main()
