"""The leafy birch baked through the add-on in the storm preset with Collide on: a ground plane and a ball in the crown.

    python3 benchmarks/bake_collide.py --frames 72 --json
    python3 benchmarks/bake_collide.py --frames 24 --blender     # Debian's Blender instead of the bpy module

Runs the add-on's own bake path (addon/session.py ``Session``, addon/bake.py ``run_bake``, the wind set as the Bake
operator sets it) on ``sample_blends/white_birch.blend`` with the scene's storm (the Storm Preset: calm → 30 m/s →
calm over the frames, blowing to +X), the armature's Collide on and two Collision objects: a ground plane 5 cm under
the lowest point of the tree (its leaves included; the trunk's base, held by its root joint, makes no contact) and a
UV sphere in the crown (of random points in the crown's upper middle the one farthest from every bone, its radius
0.8 of that clearance), which the swaying branches reach. The contacts use the solver's default method
(``Contacts()``).

Keys: ``bake_s`` (wall time of ``run_bake``), ``frames``, ``segments``, ``steps``, ``contact_steps`` (steps with
contact rows), ``cap_share`` (of the contact steps, those at the Simulator's iteration cap), ``converged_share`` (of
the contact steps, those that met the tolerance), ``cap_share_without_contact`` (of the steps without contact rows,
those at the cap: the joints' own convergence in the same bake), ``median_iterations`` (per contact step),
``xpbd_fraction`` (contact steps the schur method solved with XPBD's iteration), ``max_rows``, ``max_penetration_m``
(deepest penetration at a step's end, over all steps), ``method`` (the contact strategy that ran),
``iterations_cap``, ``tolerance``.
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _blender  # noqa: E402
import _common  # noqa: E402


def _bone_points(arm):
    import numpy as np

    mw = np.array(arm.matrix_world)
    pts = np.array([p for b in arm.data.bones for p in (b.head_local, b.tail_local)])
    return pts @ mw[:3, :3].T + mw[:3, 3]


def _crown_ball(pts):
    """(centre, radius) of a ball in the crown: of random points in the crown's middle (its upper 40 %, within a
    quarter of its width of the trunk), the one farthest from every bone point, the radius 0.8 of that clearance
    (leaves reach beyond the bones), so the swaying branches around it reach it."""
    import numpy as np

    lo, hi = pts.min(0), pts.max(0)
    rng = np.random.default_rng(0)
    cand = lo + rng.random((4000, 3)) * (hi - lo)
    middle = np.linalg.norm(cand[:, :2] - pts[:, :2].mean(0), axis=1) < 0.25 * (hi - lo)[:2].max()
    cand = cand[middle & (cand[:, 2] > lo[2] + 0.6 * (hi[2] - lo[2]))]
    clearance = np.array([np.sqrt(((pts - c) ** 2).sum(1)).min() for c in cand])
    k = int(np.argmax(clearance))
    return cand[k], 0.8 * float(clearance[k])


def _lowest_corner(obj) -> float:
    """The lowest z [m] of ``obj``'s bounding box in world space (the tree's leaves hang below its bones)."""
    import numpy as np

    corners = np.array([tuple(c) for c in obj.bound_box])
    mw = np.array(obj.matrix_world)
    return float((corners @ mw[:3, :3].T + mw[:3, 3])[:, 2].min())


def _collision_object(obj):
    obj.modifiers.new("Collision", "COLLISION")
    return obj


def setup_scene(frames: int, iterations: int = 5):
    """The storm over ``frames`` frames, Collide on, the ground and the ball; returns the armature."""
    import bpy

    scene = bpy.context.scene
    arm = next(o for o in scene.objects if o.type == "ARMATURE")
    scene.frame_start, scene.frame_end = 1, frames
    ss = scene.stiff_rods
    span = frames - 1
    ss.use_storm = True
    ss.storm_frame_start, ss.storm_frame_peak_start = 1, 1 + round(0.25 * span)
    ss.storm_frame_peak_end, ss.storm_frame_end = 1 + round(0.55 * span), 1 + round(0.75 * span)
    ss.storm_peak_speed, ss.storm_gusts, ss.storm_turbulence = 30.0, 0.25, 0.15
    ss.iterations = iterations
    arm.stiff_rods.collide = True
    pts = _bone_points(arm)
    lowest = min(_lowest_corner(o) for o in scene.objects if o.type in ("ARMATURE", "MESH", "CURVE"))
    bpy.ops.mesh.primitive_plane_add(size=60.0, location=(pts[0, 0], pts[0, 1], lowest - 0.05))
    _collision_object(bpy.context.object).name = "Ground"
    centre, radius = _crown_ball(pts)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=radius, location=tuple(centre), segments=48, ring_count=24)
    _collision_object(bpy.context.object).name = "Ball"
    return arm


def inner(frames: int, iterations: int) -> dict:
    import bpy
    import numpy as np

    _blender.load_addon()
    from stiff_rods.addon.bake import run_bake
    from stiff_rods.addon.session import Session
    from stiff_rods.addon.wind import SceneWind

    arm = setup_scene(frames, iterations)
    scene = bpy.context.scene
    session = Session(arm, scene)
    session.set_wind(SceneWind.from_scene(scene))  # as the Bake operator does
    t0 = time.perf_counter()
    run_bake(scene, session, 1, frames)
    bake_s = time.perf_counter() - t0
    contacts = next(c for c in session.sim.gs_constraints if hasattr(c, "reports"))  # the bake's own simulator
    reports = [r for r in contacts.reports if r.rows]
    others = [r for r in contacts.reports if not r.rows]
    return {
        "bake_s": bake_s,
        "frames": frames,
        "segments": session.model.n_segments,
        "steps": len(contacts.reports),
        **_common.contact_convergence(contacts.reports),
        # the same bake's steps without contact rows: what the joints alone reach in the iterations
        "cap_share_without_contact": float(np.mean([r.hit_cap for r in others])) if others else 0.0,
        "converged_share": float(np.mean([r.converged for r in reports])) if reports else 0.0,
        "max_rows": max((r.rows for r in reports), default=0),
        "max_penetration_m": max((r.max_penetration for r in reports), default=0.0),
        "method": type(contacts.solver.options).__name__,
        "iterations_cap": session.sim.max_iterations,
        "tolerance": session.sim.tolerance,
    }


def main():
    args = _blender.blender_args()
    if args is not None:
        print(json.dumps(inner(int(args[0]), int(args[1]))))
        return
    ap = _common.arguments(__doc__)
    ap.add_argument("--blend", default=str(_blender.ROOT / "sample_blends" / "white_birch.blend"))
    ap.add_argument("--frames", type=int, default=72)
    ap.add_argument("--iterations", type=int, default=5, help="the scene's Iterations (Newton iterations per step)")
    ap.add_argument("--blender", action="store_true", help="Debian's Blender instead of this Python's bpy module")
    args = ap.parse_args()
    python = None if args.blender else sys.executable
    result = _blender.relaunch(__file__, args.blend, [str(args.frames), str(args.iterations)], python=python)
    result["blend"] = args.blend
    _common.report(result, args.json, "{:>24}: {}")


if __name__ == "__main__":
    main()
