"""Frames per second of the live simulation step (physics + pose write) on the white birch.

    python3 benchmarks/live_fps.py --json        # target: fps ≥ 24

The live step is the body of the Simulate operator's timer (addon.operators.step_live): one frame
of physics (the live preview: one solver step of 1/fps s with at most the scene's Live Iterations
Newton iterations) and every pose bone written with foreach_set. The tree stands in a steady wind
(a Wind force field, ``--wind`` m/s) so it moves: in still air the pre-stressed tree is at rest and
the solver would stop after one iteration.
"""
import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _blender  # noqa: E402


def inner(ticks: int, live_iterations: int, leaves: bool, wind_mps: float) -> dict:
    import bpy
    import numpy as np
    _blender.load_addon()
    from stiff_rods.addon.operators import step_live, _switch_to_quaternions
    from stiff_rods.addon.session import Session
    from stiff_rods.addon.wind import SceneWind
    scene = bpy.context.scene
    scene.stiff_rods.live_iterations = live_iterations
    arm = next(o for o in scene.objects if o.type == "ARMATURE")
    _blender.add_wind_field(wind_mps)
    arm.stiff_rods.use_leaves = leaves           # the target is for the birch without leaf segments
    s = Session(arm, scene)
    _switch_to_quaternions(arm, s.source.bone_names)
    s.set_wind(SceneWind.from_scene(scene))
    s.reset(scene.frame_current, scene, live=True)
    step_live(s, scene)                      # warm-up: symbolic factorisation
    x0 = s.sim.positions.copy()
    times, sim, its, res = [], [], [], []
    for _ in range(ticks):
        t = time.perf_counter()
        step_live(s, scene)
        times.append(time.perf_counter() - t)
        sim.append(s.ms_per_step * s.substeps)
        its.append(s.iterations)
        res.append(s.residual)
    med = float(np.median(times))
    return {"segments": s.model.n_segments, "leaf_segments": s.stats()["leaves"], "bones": len(s.source.bone_names),
            "substeps": s.substeps, "iterations_max": s.sim.max_iterations, "iterations_mean": float(np.mean(its)),
            "residual_median": float(np.median(res)), "wind_mps": wind_mps,
            "max_motion_m": float(np.max(np.linalg.norm(s.sim.positions - x0, axis=1))),
            "ms_per_tick": 1e3 * med, "ms_sim_per_tick": float(np.median(sim)), "fps": 1.0 / med, "target_fps_ge": 24,
            "target_met": bool(1.0 / med >= 24)}


def main():
    if _blender.inside_blender():
        argv = sys.argv[sys.argv.index("--") + 1:]
        print(json.dumps(inner(int(argv[0]), int(argv[1]), argv[2] == "1", float(argv[3]))))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blend", default=str(_blender.ROOT / "sample_blends" / "white_birch.blend"))
    ap.add_argument("--ticks", type=int, default=20)
    ap.add_argument("--live-iterations", type=int, default=1, help="the scene's Live Iterations (default 1)")
    ap.add_argument("--wind", type=float, default=10.0, help="steady wind speed [m/s] (0: still air)")
    ap.add_argument("--leaves", action="store_true", help="every leaf a segment (the target is without)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = _blender.relaunch(__file__, args.blend, [str(args.ticks), str(args.live_iterations), "1" if args.leaves else "0", str(args.wind)])
    if not args.json:
        for k, v in result.items():
            print(f"{k:>18}: {v}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
