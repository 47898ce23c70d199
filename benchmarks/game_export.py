"""Game export, the loop: the leafy birch in the looping storm, and how fast its sway settles into the loop.

    python3 benchmarks/game_export.py --json                 # the bpy module of this Python
    python3 benchmarks/game_export.py --loops 6 --frames 120 --json

Runs the add-on's own Session (addon/session.py) on ``sample_blends/white_birch.blend`` (leaves on) with the
scene's storm as a loop bake blows it (Loop on: the storm's peak of 30 m/s with gusts 0.25 and turbulence 0.15, all
repeating with the loop's period, ``WindField(period=T)``), FRAMES frames per loop at the file's frame rate. One
simulation of LOOPS loops from rest; the bones' segments (the keyed motion) are sampled at every frame:

* ``seam_by_warmup``: for k = 0 .. LOOPS − 1 loops of warm-up, the seam of the next loop: ``position`` the rms over
  the segments of the change of their centres from the loop's last frame (one period after its first) to its
  first, over the median rms frame-to-frame change in that loop; ``velocity`` the same for the forward-difference
  velocity one period apart; ``rotation`` addon/loop.py's measure (the segments' turn across the seam over the
  median turn per frame, both rms over the segments). The sway settles as e^(−0.25 t) at the default Damping.
* ``loop_seam_position_ratio``, ``loop_seam_velocity_ratio``: those of the loop after the warm-up the add-on's
  Auto Pre-roll takes (``auto_preroll_loops``: loops until one repeats itself, its seam ≤ 0.1 of a frame's motion;
  at most ``most_preroll_loops``, from the damping), target ≤ 1.
* ``loop_rms_ratio``: the rms distance of the segments from their rest position over that loop, over the same in
  the free (not periodic) storm at the same peak, simulated as long after the same warm-up.
* ``bake_s`` per loop and ``segments``.

The game skeleton's keys (``budgets``, ``full_rig_gltf_export_s``, ``gltf_rebuild_error_m``) are not here yet.
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _blender  # noqa: E402
import _common  # noqa: E402


def _storm(scene):
    ss = scene.stiff_rods
    ss.use_storm = True
    ss.storm_peak_speed, ss.storm_gusts, ss.storm_turbulence = 30.0, 0.25, 0.15


def _simulate(scene, session, frames: int):
    """Centres (F, S, 3) and orientations (F, S, 4) of the bones' segments at every frame, from rest."""
    import numpy as np

    seg = session.bone_segment
    session.reset(scene.frame_start, scene)
    x, q = [], []
    t0 = time.perf_counter()
    for _ in range(frames + 1):
        pos, rot = session.frame_state()
        x.append(pos[seg].copy())
        q.append(rot[seg].copy())
        session.advance_frame(scene)
    return np.array(x), np.array(q), time.perf_counter() - t0


def _seams(x, q, n: int, loop) -> list:
    import numpy as np

    def rms(a):
        return np.sqrt(np.mean(np.sum(a * a, axis=-1), axis=-1))

    out = []
    for k in range((x.shape[0] - 2) // n):
        xs = x[k * n : (k + 1) * n + 2]  # the loop and one frame more
        v = np.diff(xs, axis=0)
        out.append(
            {
                "warmup_loops": k,
                "position": float(rms(xs[n] - xs[0]) / np.median(rms(np.diff(xs[: n + 1], axis=0)))),
                "velocity": float(rms(v[n] - v[0]) / np.median(rms(np.diff(v[:n], axis=0)))),
                "rotation": float(loop.rotation_seam(q[k * n : (k + 1) * n + 1])),
            }
        )
    return out


def inner(frames: int, loops: int) -> dict:
    import bpy
    import numpy as np

    _blender.load_addon()
    from stiff_rods.addon import bake, loop, settings
    from stiff_rods.addon.session import Session
    from stiff_rods.addon.wind import SceneWind

    scene = bpy.context.scene
    arm = next(o for o in scene.objects if o.type == "ARMATURE")
    arm.stiff_rods.use_leaves = True
    _storm(scene)
    scene.stiff_rods.use_loop, scene.stiff_rods.loop_frames = True, frames
    session = Session(arm, scene)
    most = bake.loop_warmup(settings.bake_spec(scene), session).most
    loops = max(loops, most + 1)
    rest = session.model.positions[session.bone_segment]
    session.set_wind(SceneWind.from_scene(scene, loop=True))
    x, q, seconds = _simulate(scene, session, loops * frames + 1)
    seams = _seams(x, q, frames, loop)
    session.set_wind(SceneWind.from_scene(scene, loop=True, periodic=False))  # the free storm, the same peak
    xf, _, _ = _simulate(scene, session, loops * frames + 1)
    # the warm-up Auto Pre-roll takes (addon/bake.py BakeRun): the first loop that repeats itself, at most `most`
    k = next((s["warmup_loops"] + 1 for s in seams[:most] if s["position"] <= loop.SETTLED_SEAM), most)
    k = min(max(k, 1), len(seams) - 1)
    window = slice(k * frames, (k + 1) * frames + 1)
    sway = np.sqrt(np.mean(np.sum((x[window] - rest) ** 2, axis=-1)))
    free = np.sqrt(np.mean(np.sum((xf[k * frames :] - rest) ** 2, axis=-1)))
    return {
        "frames_per_loop": frames,
        "fps": scene.render.fps / scene.render.fps_base,
        "segments": session.model.n_segments,
        "auto_preroll_loops": k,
        "most_preroll_loops": most,
        "seam_by_warmup": seams,
        "loop_seam_position_ratio": seams[k]["position"],
        "loop_seam_velocity_ratio": seams[k]["velocity"],
        "loop_rms_ratio": float(sway / free),
        "bake_s_per_loop": seconds / loops,
    }


def main():
    args = _blender.blender_args()
    if args is not None:
        print(json.dumps(inner(int(args[0]), int(args[1]))))
        return
    ap = _common.arguments(__doc__)
    ap.add_argument("--blend", default=str(_blender.ROOT / "sample_blends" / "white_birch.blend"))
    ap.add_argument("--frames", type=int, default=120, help="frames per loop")
    ap.add_argument("--loops", type=int, default=6, help="loops simulated from rest")
    args = ap.parse_args()
    result = _blender.relaunch(__file__, args.blend, [str(args.frames), str(args.loops)], python=sys.executable)
    result["blend"] = args.blend
    _common.report(result, args.json, "{:>26}: {}")


if __name__ == "__main__":
    main()
