"""Game export of the leafy birch: the game skeleton's budgets read back from glTF, and the seamless loop.

    python3 benchmarks/game_export.py --json                 # all of it, in the bpy module of this Python
    python3 benchmarks/game_export.py --skip-loop --rig-frames 24 --budgets 64,128 --json
    python3 benchmarks/game_export.py --skip-rig --loops 6 --frames 120 --json

Two runs in the bpy module on ``sample_blends/white_birch.blend``, the add-on loaded from this checkout.

The game skeleton (benchmarks/_game_rig_bench.py; ``--skip-rig`` leaves it out): the add-on's Storm Preset and
Bake operator bake the birch, leaves on, over frames 1..RIG_FRAMES; Blender's glTF exporter writes the full baked
rig (armature, curve and leaves, the bake action; ``--skip-full-export`` leaves it out); then
``game_rig.game_rigs`` builds a game rig per budget from one read of the bake and each is exported with the
add-on's glTF export. Every file is read back with pygltflib alone (benchmarks/_gltf_skin.py, no Blender, no
add-on code), and the skinned vertices are rebuilt from the file (joints, inverse bind matrices, JOINTS_0 /
WEIGHTS_0, the sampled channels; glTF 2.0 §3.7.3) at the first, middle and last frame, each file vertex matched by
its rest position to Blender's, against Blender's evaluated game mesh in world space:

* ``budgets``: per budget ``bones``, ``rms_error_m`` and ``max_error_m`` (and ``rms_fraction``, ``max_fraction``
  of the tree's height): the full rig's evaluated geometry against the game mesh's at every baked frame, as
  game_rig measures it; ``gltf_joints`` (≤ the budget: ``gltf_joints_ok``), ``gltf_keys``, ``gltf_t0_s``,
  ``gltf_t1_s`` (RIG_FRAMES keys from 0 to (RIG_FRAMES − 1)/fps: ``gltf_frames_ok``), ``gltf_export_s``,
  ``gltf_bytes``, ``rebuild_error_m`` at the three frames (``rebuild_ok``: ≤ 1 mm) and the fit's ``seconds``.
* ``gltf_rebuild_error_m``: the largest rebuild error over budgets and frames (target ≤ 1e-3 m);
  ``gltf_checks_ok`` all the checks above.
* ``full_rig_gltf_export_s``, ``full_rig_gltf_bytes``, ``full_rig_gltf_joints``, ``full_rig_gltf_channels``,
  ``full_rig_gltf_keys`` over ``full_rig_frames`` frames; ``bake_s``, ``game_rigs_s``, ``vertices``, ``height_m``.

The loop (``--skip-loop`` leaves it out) runs the add-on's own Session (addon/session.py) on the birch (leaves on)
with the scene's storm as a loop bake blows it (Loop on: the storm's peak of 30 m/s with gusts 0.25 and turbulence
0.15, all repeating with the loop's period, ``WindField(period=T)``), FRAMES frames per loop at the file's frame
rate. One simulation of LOOPS loops from rest; the bones' segments (the keyed motion) are sampled at every frame:

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
* ``bake_s_per_loop`` and ``segments``.

Measured (2 shared cores, loaded by other jobs; docs/notes/game_export.md), defaults: 24 rig frames (167,914
vertices, 16.9 m): 64 bones rms 106 mm / max 2.03 m, 128 bones 84 mm / 1.49 m; 64 and 128 joints, 24 keys over
0–0.958 s; rebuilt from the .glb within 7.9 µm of Blender at frames 1, 12, 24; game rig export 9.9 s / 9.2 s,
13.9 / 14.1 MB; the full rig (5,878 joints, 17,634 channels) 337 s, 18.0 MB. Loop: seam 0.017 (position) / 0.025
(velocity) after 2 warm-up loops, sway 0.983 of the free storm. About 20 min in all.
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


def _inside(args: list) -> dict:
    """Inside the bpy module: ``loop FRAMES LOOPS`` or ``rig FRAMES BUDGETS FULL(0/1)``."""
    if args[0] == "loop":
        return inner(int(args[1]), int(args[2]))
    import tempfile

    import _game_rig_bench

    _blender.load_addon()
    budgets = [int(b) for b in args[2].split(",")]
    with tempfile.TemporaryDirectory(prefix="game_export_") as out_dir:
        return _game_rig_bench.run(int(args[1]), budgets, args[3] == "1", out_dir)


def main():
    args = _blender.blender_args()
    if args is not None:
        print(json.dumps(_inside(args)))
        return
    ap = _common.arguments(__doc__)
    ap.add_argument("--blend", default=str(_blender.ROOT / "sample_blends" / "white_birch.blend"))
    ap.add_argument("--frames", type=int, default=120, help="frames per loop")
    ap.add_argument("--loops", type=int, default=6, help="loops simulated from rest")
    ap.add_argument("--budgets", default="64,128", help="game rig bone budgets, comma-separated")
    ap.add_argument("--rig-frames", type=int, default=24, help="frames baked for the game rigs and the full export")
    ap.add_argument("--skip-loop", action="store_true", help="leave out the loop keys")
    ap.add_argument("--skip-rig", action="store_true", help="leave out the game skeleton keys")
    ap.add_argument("--skip-full-export", action="store_true", help="leave out the full rig's glTF export")
    args = ap.parse_args()
    result: dict = {"blend": args.blend}
    if not args.skip_rig:
        rig_args = ["rig", str(args.rig_frames), args.budgets, str(int(not args.skip_full_export))]
        result.update(_blender.relaunch(__file__, args.blend, rig_args, python=sys.executable))
    if not args.skip_loop:
        loop_args = ["loop", str(args.frames), str(args.loops)]
        result.update(_blender.relaunch(__file__, args.blend, loop_args, python=sys.executable))
    _common.report(result, args.json, "{:>26}: {}")


if __name__ == "__main__":
    main()
