"""Frames per second of the live simulation step (physics + pose write) on the white birch.

    python3 benchmarks/live_fps.py --json --matrix-reuse 0           # target: fps ≥ 60, factorised every frame
    python3 benchmarks/live_fps.py --json --matrix-reuse 0 --leaves  # target: fps ≥ 24 with every leaf a segment
    python3 benchmarks/live_fps.py --json --matrix-reuse 0 --python .venvs/bench-np2/bin/python  # in a bpy module

The live step is the body of the Simulate operator's timer (addon.operators.step_live): one frame
of physics (the live preview: one solver step of 1/fps s with at most the scene's Live Iterations
Newton iterations, the KKT matrix factorised every Live Matrix Reuse + 1 frames) and every pose bone
written with foreach_set. The tree stands in a steady wind (a Wind force field, ``--wind`` m/s) so it
moves: in still air the pre-stressed tree is at rest and the solver would stop after one iteration.

``fps`` is frames over the summed tick times of a run (a mean: ticks that factorise take longer than
those that reuse), the median of ``--rounds`` runs. ``solver_ms_median`` is the solver step inside a tick
(timed by the session), ``addon_ms_median`` the rest of the tick: reading the scene, the pose bones written,
the leaves' coordinates. Exact Newton (Live Matrix Reuse 0) runs alternately
from the same start, for the speed ratio in one run (``speedup_vs_exact``) and the price in accuracy:
residuals and the largest distance between the two motions, segment by segment, over the run.

Measured on 2 shared cores (Blender 3.4, numba 0.56), factorised every frame: bare birch 139 fps
(7.1 ms per tick: solver 5.9, the rest 1.2), leafy birch (9,459 leaf segments) 42.4 fps (23.5 ms: solver 18.3,
the rest 5.2); on a loaded machine 103–126 and 41–45 fps; the tick with the envelope preview 19–21 ms bare, 34 ms
leafy. The machine's load moves these by up to 3×: compare runs made side by side.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _blender  # noqa: E402
import _common  # noqa: E402

WINDOW_TAG = "LIVE_FPS_WINDOW"


def _timed_runs(s, scene, step_live, reuse: int, rounds: int, ticks: int) -> dict:
    """Per Live Matrix Reuse setting, ``rounds`` runs of ``ticks`` live ticks from the same start: fps, tick,
    solver and add-on times [ms], iterations, residuals and the path of every segment."""
    import numpy as np

    start = scene.frame_current
    runs: dict = {}
    # the chosen Live Matrix Reuse and exact Newton (0) alternately, from the same start: their speed ratio
    # is measured in one run, and their motions are compared frame by frame
    for setting in [reuse, 0] * rounds if reuse else [0] * rounds:
        scene.stiff_rods.live_matrix_reuse = setting
        s.reset(start, scene, live=True)
        step_live(s, scene)  # warm-up: symbolic factorisation
        x0 = s.sim.positions.copy()
        times, solver, its, res, path = [], [], [], [], []
        for _ in range(ticks):
            t = time.perf_counter()
            step_live(s, scene)
            times.append(time.perf_counter() - t)
            solver.append(1e-3 * s.ms_per_step)  # the solver step inside the tick, timed by the session
            its.append(s.iterations)
            res.append(s.residual)
            path.append(s.sim.positions.copy())
        runs.setdefault(setting, []).append(
            dict(
                fps=ticks / float(np.sum(times)),
                median_ms=1e3 * float(np.median(times)),
                solver_ms=1e3 * float(np.median(solver)),
                addon_ms=1e3 * float(np.median(np.subtract(times, solver))),
                max_ms=1e3 * float(np.max(times)),
                its=float(np.mean(its)),
                res=np.array(res),
                path=np.array(path),
                x0=x0,
            )
        )
    return runs


def _versus_exact(best: list, exact: list) -> dict:
    """The chosen setting's runs ``best`` against exact Newton's ``exact``: speed ratio, residuals and the largest
    distance between the two motions [m]."""
    import numpy as np

    d = np.max(np.linalg.norm(best[0]["path"] - exact[0]["path"], axis=2), axis=1)
    return {
        "fps_exact_newton": float(np.median([r["fps"] for r in exact])),
        "speedup_vs_exact": float(np.median([a["fps"] / b["fps"] for a, b in zip(best, exact, strict=True)])),
        "residual_median_exact": float(np.median(exact[0]["res"])),
        "residual_p90_exact": float(np.percentile(exact[0]["res"], 90)),
        "motion_difference_vs_exact_max_m": float(d.max()),
        "motion_difference_vs_exact_last_m": float(d[-1]),
    }


def inner(
    ticks: int, live_iterations: int, leaves: bool, wind_mps: float, reuse: int, rounds: int, depsgraph_ticks: int
) -> dict:
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
    runs = _timed_runs(s, scene, step_live, reuse, rounds, ticks)
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
        "solver_ms_median": float(np.median([r["solver_ms"] for r in best])),
        "addon_ms_median": float(np.median([r["addon_ms"] for r in best])),
        "fps": fps,
        "compiled": list(compiled_status()),
        "target_fps_ge": 24 if leaves else 60,
        "target_met": bool(fps >= (24 if leaves else 60)),
    }
    if reuse:
        out.update(_versus_exact(best, runs[0]))
    if depsgraph_ticks:
        out.update(_depsgraph_ms(s, scene, depsgraph_ticks))
        out["fps_with_depsgraph"] = 1e3 / (out["ms_per_tick_mean"] + out["depsgraph_ms"])
        out["fps_with_fast_preview"] = 1e3 / (out["tick_ms_fast_preview"] + out["depsgraph_ms_fast_preview"])
    return out


class _WindowMeasure:
    """One window measurement: start Simulate in the 3D View, let two ticks pass, count ticks, redraws and
    depsgraph updates for ``seconds``, stop it with Esc and write the rates into ``out[label]``."""

    def __init__(self, win, area, region, log: dict, out: dict, seconds: float):
        self.win, self.area, self.region = win, area, region
        self.log, self.out, self.seconds = log, out, seconds

    def measure(self, label):
        import bpy
        import numpy as np

        log, win = self.log, self.win
        with bpy.context.temp_override(window=win, area=self.area, region=self.region):
            started = bpy.ops.stiff_rods.simulate("INVOKE_DEFAULT")
        if "RUNNING_MODAL" not in started:
            raise RuntimeError(f"Simulate did not start: {started}")
        while len(log["tick"]) < 2:  # the first tick may prepare the solver
            yield 0.1
        t0 = time.perf_counter()
        yield self.seconds
        t1 = time.perf_counter()
        win.event_simulate(type="ESC", value="PRESS")
        win.event_simulate(type="ESC", value="RELEASE")
        n = {k: sum(t0 <= x < t1 for x in log[k]) for k in ("tick", "draw", "update")}
        ms = [m for x, m in zip(log["tick"], log["tick_ms"], strict=True) if t0 <= x < t1]
        ev = [m for x, m in zip(log["tick"], log["eval_ms"], strict=True) if t0 <= x < t1]
        draws = np.array([x for x in log["draw"] if t0 <= x < t1])
        self.out[label] = {
            "ticks_per_s": n["tick"] / (t1 - t0),
            "draws_per_s": n["draw"] / (t1 - t0),
            "depsgraph_updates_per_s": n["update"] / (t1 - t0),
            "tick_ms_median": float(np.median(ms)) if ms else None,
            "depsgraph_ms_median": float(np.median(ev)) if ev else None,
            "draw_interval_ms_median": float(1e3 * np.median(np.diff(draws))) if draws.size > 1 else None,
        }
        yield 1.0
        for k in log:
            log[k].clear()


def window(seconds: float, leaves: bool, wind_mps: float, live_iterations: int, scene_fps: int) -> None:
    """Inside Blender with a window (``--window``: Xvfb): the Simulate operator itself, its timer and the 3D View's
    redraws, for ``seconds`` after two ticks of warm-up; then the same with the tree curve's and the leaves' Armature
    modifiers off in the viewport. Prints the JSON line and quits Blender."""

    import bpy
    import gpu

    _blender.load_addon()
    from stiff_rods.addon import operators

    scene = bpy.context.scene
    scene.stiff_rods.live_iterations = live_iterations
    if scene_fps:
        scene.render.fps, scene.render.fps_base = scene_fps, 1.0
    arm = next(o for o in scene.objects if o.type == "ARMATURE")
    arm.stiff_rods.use_leaves = leaves
    _blender.add_wind_field(wind_mps)
    for o in scene.objects:
        o.select_set(o == arm)
    bpy.context.view_layer.objects.active = arm
    mods = [m for o in scene.objects if o.type in {"CURVE", "MESH"} for m in o.modifiers if m.type == "ARMATURE"]
    win = bpy.context.window_manager.windows[0]
    area = next(a for a in win.screen.areas if a.type == "VIEW_3D")
    region = next(r for r in area.regions if r.type == "WINDOW")
    log: dict[str, list[float]] = {"tick": [], "tick_ms": [], "eval_ms": [], "draw": [], "update": []}
    step_live = operators.step_live

    def timed_step(session, sc, preview=None):  # the modal operator looks step_live up at every tick
        t = time.perf_counter()
        step_live(session, sc, preview)
        log["tick"].append(t)
        log["tick_ms"].append(1e3 * (time.perf_counter() - t))
        t = time.perf_counter()  # the evaluation the redraw would do, timed apart from GL drawing
        bpy.context.evaluated_depsgraph_get().update()
        log["eval_ms"].append(1e3 * (time.perf_counter() - t))

    operators.step_live = timed_step
    draw = bpy.types.SpaceView3D.draw_handler_add(
        lambda: log["draw"].append(time.perf_counter()), (), "WINDOW", "POST_PIXEL"
    )
    bpy.app.handlers.depsgraph_update_post.append(lambda *_: log["update"].append(time.perf_counter()))
    out: dict = {"leaves": leaves, "wind_mps": wind_mps, "seconds": seconds, "scene_fps": scene.render.fps}
    out["gl_renderer"] = gpu.platform.renderer_get()  # under Xvfb a software rasteriser: drawing costs more

    measure = _WindowMeasure(win, area, region, log, out, seconds).measure

    def script():
        try:
            yield 1.0
            yield from measure("window")
            for m in mods:
                m.show_viewport = False
            yield from measure("window_armature_modifiers_off")
            for m in mods:
                m.show_viewport = True
        finally:
            bpy.types.SpaceView3D.draw_handler_remove(draw, "WINDOW")

    sys.path.insert(0, str(_blender.ROOT / "tests" / "blender_scripts"))
    from gui_driver import run  # the tests' window driver: runs the steps from a timer, prints, quits

    run(script(), out, WINDOW_TAG)


def _depsgraph_ms(s, scene, ticks: int) -> dict:
    """Milliseconds of ``depsgraph.update()`` after a live tick: what Blender evaluates before a viewport can draw
    the new pose (a ``-b`` run evaluates nothing by itself). Also with the tree curve's and the leaves'
    Armature modifiers off in the viewport, which is where Sapling's rig spends it, and with Simulate's fast
    preview (the tick writing the envelope-deformed curve itself, its modifier off): ``tick_ms_fast_preview``
    and ``depsgraph_ms_fast_preview``, medians."""
    import bpy
    import numpy as np
    from stiff_rods.addon.live_preview import EnvelopePreview
    from stiff_rods.addon.operators import step_live

    graph = bpy.context.evaluated_depsgraph_get()
    mods = [m for o in scene.objects if o.type in {"CURVE", "MESH"} for m in o.modifiers if m.type == "ARMATURE"]

    def timed(preview=None) -> tuple[float, float]:
        """Medians over ``ticks`` of the tick and of the depsgraph update after it [ms]."""
        graph.update()
        tick, update = [], []
        for _ in range(ticks):
            t0 = time.perf_counter()
            step_live(s, scene, preview)
            t1 = time.perf_counter()
            graph.update()
            tick.append(1e3 * (t1 - t0))
            update.append(1e3 * (time.perf_counter() - t1))
        return float(np.median(tick)), float(np.median(update))

    out = {}
    for label, on in (("depsgraph_ms", True), ("depsgraph_ms_armature_modifiers_off", False)):
        for m in mods:
            m.show_viewport = on
        out[label] = timed()[1]
    for m in mods:
        m.show_viewport = True
    preview = EnvelopePreview(s, scene)
    try:
        out["tick_ms_fast_preview"], out["depsgraph_ms_fast_preview"] = timed(preview)
    finally:
        preview.restore()
    return out


def _window(blend: str, args: list) -> dict:
    """Run :func:`window` in Blender under ``xvfb-run``; its JSON line."""
    cmd = ["xvfb-run", "-a", "-s", "-screen 0 1280x800x24", "blender", "--factory-startup", "--enable-event-simulate"]
    cmd += [blend, "--python", __file__, "--", "window"] + args
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_blender.blender_env(), timeout=900)
    lines = [line.removeprefix(WINDOW_TAG) for line in proc.stdout.splitlines() if line.startswith(WINDOW_TAG)]
    if not lines or "error" in json.loads(lines[-1]):
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"blender failed (exit {proc.returncode})")
    return json.loads(lines[-1])


def main():
    argv = _blender.blender_args()
    if argv is not None:
        if argv[0] == "window":
            return window(float(argv[1]), argv[2] == "1", float(argv[3]), int(argv[4]), int(argv[5]))
        a = argv
        print(json.dumps(inner(int(a[0]), int(a[1]), a[2] == "1", float(a[3]), int(a[4]), int(a[5]), int(a[6]))))
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
    ap.add_argument(
        "--depsgraph-ticks",
        type=int,
        default=3,
        help="ticks timed with depsgraph.update() after them (depsgraph_ms; 0: none)",
    )
    ap.add_argument("--window", action="store_true", help="run Simulate in a window under xvfb-run instead")
    ap.add_argument(
        "--python",
        help="an interpreter with the bpy module (pip install bpy): measure in it instead of Debian's blender",
    )
    ap.add_argument("--seconds", type=float, default=8.0, help="with --window: seconds measured per setting")
    ap.add_argument("--scene-fps", type=int, default=0, help="with --window: the scene's frame rate (0: the file's)")
    args = ap.parse_args()
    if args.window and args.python:
        ap.error("--window runs Debian's blender; it does not take --python")
    if args.window:
        extra = [str(args.seconds), "1" if args.leaves else "0", str(args.wind), str(args.live_iterations)]
        _common.report(_window(args.blend, extra + [str(args.scene_fps)]), args.json, "{:>18}: {}")
        return
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
            str(args.depsgraph_ticks),
        ],
        python=args.python,
    )
    _common.report(result, args.json, "{:>18}: {}")


if __name__ == "__main__":
    main()
