"""Frames per second of the live simulation step (physics + pose write) on the white birch.

    python3 benchmarks/live_fps.py --json --matrix-reuse 0           # target: fps ≥ 60, factorised every frame
    python3 benchmarks/live_fps.py --json --matrix-reuse 0 --leaves  # target: fps ≥ 24 with every leaf a segment

The live step is the body of the Simulate operator's timer (addon.operators.step_live): one frame
of physics (the live preview: one solver step of 1/fps s with at most the scene's Live Iterations
Newton iterations, the KKT matrix factorised every Live Matrix Reuse + 1 frames) and every pose bone
written with foreach_set. The tree stands in a steady wind (a Wind force field, ``--wind`` m/s) so it
moves: in still air the pre-stressed tree is at rest and the solver would stop after one iteration.

``fps`` is frames over the summed tick times of a run (a mean: ticks that factorise take longer than
those that reuse), the median of ``--rounds`` runs. Exact Newton (Live Matrix Reuse 0) runs alternately
from the same start, for the speed ratio in one run (``speedup_vs_exact``) and the price in accuracy:
residuals and the largest distance between the two motions, segment by segment, over the run.
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _blender  # noqa: E402
import _common  # noqa: E402


def inner(ticks: int, live_iterations: int, leaves: bool, wind_mps: float, reuse: int, rounds: int) -> dict:
    import bpy
    import numpy as np

    _blender.load_addon()
    from stiff_rods.addon.operators import _switch_to_quaternions, step_live
    from stiff_rods.addon.session import Session
    from stiff_rods.addon.wind import SceneWind
    from stiff_rods.solver import compiled_status

    scene = bpy.context.scene
    scene.stiff_rods.live_iterations = live_iterations
    arm = next(o for o in scene.objects if o.type == "ARMATURE")
    _blender.add_wind_field(wind_mps)
    arm.stiff_rods.use_leaves = leaves  # the target is for the birch without leaf segments
    s = Session(arm, scene)
    _switch_to_quaternions(arm, s.source.bone_names)
    s.set_wind(SceneWind.from_scene(scene))
    start = scene.frame_current
    runs = {}
    # the chosen Live Matrix Reuse and exact Newton (0) alternately, from the same start: their speed ratio
    # is measured in one run, and their motions are compared frame by frame
    for setting in [reuse, 0] * rounds if reuse else [0] * rounds:
        scene.stiff_rods.live_matrix_reuse = setting
        s.reset(start, scene, live=True)
        step_live(s, scene)  # warm-up: symbolic factorisation
        x0 = s.sim.positions.copy()
        times, its, res, path = [], [], [], []
        for _ in range(ticks):
            t = time.perf_counter()
            step_live(s, scene)
            times.append(time.perf_counter() - t)
            its.append(s.iterations)
            res.append(s.residual)
            path.append(s.sim.positions.copy())
        runs.setdefault(setting, []).append(
            dict(
                fps=ticks / float(np.sum(times)),
                median_ms=1e3 * float(np.median(times)),
                max_ms=1e3 * float(np.max(times)),
                its=float(np.mean(its)),
                res=np.array(res),
                path=np.array(path),
                x0=x0,
            )
        )
    best = runs[reuse]
    fps = float(np.median([r["fps"] for r in best]))
    out = {
        "segments": s.model.n_segments,
        "leaf_segments": s.stats()["leaves"],
        "bones": len(s.source.bone_names),
        "wind_mps": wind_mps,
        "ticks": ticks,
        "rounds": rounds,
        "live_iterations": live_iterations,
        "live_matrix_reuse": reuse,
        "iterations_mean": best[0]["its"],
        "residual_median": float(np.median(best[0]["res"])),
        "residual_p90": float(np.percentile(best[0]["res"], 90)),
        "max_motion_m": float(np.max(np.linalg.norm(best[0]["path"][-1] - best[0]["x0"], axis=1))),
        "ms_per_tick_mean": 1e3 / fps,
        "ms_per_tick_median": float(np.median([r["median_ms"] for r in best])),
        "ms_per_tick_max": float(np.max([r["max_ms"] for r in best])),
        "fps": fps,
        "compiled": list(compiled_status()),
        "target_fps_ge": 24 if leaves else 60,
        "target_met": bool(fps >= (24 if leaves else 60)),
    }
    if reuse:
        exact = runs[0]
        out["fps_exact_newton"] = float(np.median([r["fps"] for r in exact]))
        out["speedup_vs_exact"] = float(np.median([a["fps"] / b["fps"] for a, b in zip(best, exact, strict=True)]))
        out["residual_median_exact"] = float(np.median(exact[0]["res"]))
        out["residual_p90_exact"] = float(np.percentile(exact[0]["res"], 90))
        d = np.max(np.linalg.norm(best[0]["path"] - exact[0]["path"], axis=2), axis=1)
        out["motion_difference_vs_exact_max_m"] = float(d.max())
        out["motion_difference_vs_exact_last_m"] = float(d[-1])
    return out


def main():
    if _blender.inside_blender():
        argv = sys.argv[sys.argv.index("--") + 1 :]
        print(json.dumps(inner(int(argv[0]), int(argv[1]), argv[2] == "1", float(argv[3]), int(argv[4]), int(argv[5]))))
        return
    ap = _common.arguments(__doc__)
    ap.add_argument("--blend", default=str(_blender.ROOT / "sample_blends" / "white_birch.blend"))
    ap.add_argument("--ticks", type=int, default=48, help="frames per run")
    ap.add_argument("--rounds", type=int, default=3, help="runs per setting, alternating")
    ap.add_argument(
        "--matrix-reuse",
        type=int,
        default=2,
        help="the scene's Live Matrix Reuse (default 2); exact Newton (0) runs alternately for comparison",
    )
    ap.add_argument("--live-iterations", type=int, default=1, help="the scene's Live Iterations (default 1)")
    ap.add_argument("--wind", type=float, default=10.0, help="steady wind speed [m/s] (0: still air)")
    ap.add_argument("--leaves", action="store_true", help="every leaf a segment (the target is without)")
    args = ap.parse_args()
    result = _blender.relaunch(
        __file__,
        args.blend,
        [
            str(args.ticks),
            str(args.live_iterations),
            "1" if args.leaves else "0",
            str(args.wind),
            str(args.matrix_reuse),
            str(args.rounds),
        ],
    )
    _common.report(result, args.json, "{:>18}: {}")


if __name__ == "__main__":
    main()
