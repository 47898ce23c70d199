"""Frames per second of the live simulation step (physics + pose write) on the white birch.

    python3 benchmarks/live_fps.py --json        # target: fps ≥ 24

The live step is the body of the Simulate operator's timer (addon.operators.step_live): one frame
of physics (scene substeps × Newton iterations) and every pose bone written with foreach_set.
"""
import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _blender  # noqa: E402


def inner(ticks: int, substeps: int, leaves: bool) -> dict:
    import bpy
    import numpy as np
    _blender.load_addon()
    from stiff_rods.addon.operators import step_live, _switch_to_quaternions
    from stiff_rods.addon.session import Session
    scene = bpy.context.scene
    scene.stiff_rods.substeps = substeps
    arm = next(o for o in scene.objects if o.type == "ARMATURE")
    arm.stiff_rods.use_leaves = leaves           # the target is for the birch without leaf segments
    s = Session(arm, scene)
    _switch_to_quaternions(arm, s.source.bone_names)
    s.reset(scene.frame_current)
    step_live(s, scene)                      # warm-up: symbolic factorisation
    times, sim = [], []
    for _ in range(ticks):
        t = time.perf_counter()
        step_live(s, scene)
        times.append(time.perf_counter() - t)
        sim.append(s.ms_per_step * s.substeps)
    med = float(np.median(times))
    return {"segments": s.model.n_segments, "leaf_segments": s.stats()["leaves"], "bones": len(s.source.bone_names), "substeps": substeps,
            "iterations_max": s.sim.max_iterations, "ms_per_tick": 1e3 * med,
            "ms_sim_per_tick": float(np.median(sim)), "fps": 1.0 / med, "target_fps_ge": 24,
            "target_met": bool(1.0 / med >= 24)}


def main():
    if _blender.inside_blender():
        argv = sys.argv[sys.argv.index("--") + 1:]
        print(json.dumps(inner(int(argv[0]), int(argv[1]), argv[2] == "1")))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blend", default=str(_blender.ROOT / "sample_blends" / "white_birch.blend"))
    ap.add_argument("--ticks", type=int, default=20)
    ap.add_argument("--substeps", type=int, default=1)
    ap.add_argument("--leaves", action="store_true", help="every leaf a segment (the target is without)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = _blender.relaunch(__file__, args.blend, [str(args.ticks), str(args.substeps), "1" if args.leaves else "0"])
    if not args.json:
        for k, v in result.items():
            print(f"{k:>18}: {v}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
