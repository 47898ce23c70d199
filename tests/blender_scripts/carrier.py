"""Trees and rods on a moving carrier, played back without the add-on (run by tests/blender/test_blender_carrier.py
and, with the scene's unit scale, tests/blender/test_blender_units.py).

    blender -b --factory-startup --python carrier.py -- LEGACY_ZIP PARAMS_JSON
    python carrier.py bpy5 EXTENSION_ZIP PARAMS_JSON      (the bpy 5 module: the rods; it has no Sapling)

PARAMS_JSON names the cases to run and their inputs:

* ``rods``: {name: {...}} a straight vertical pole (a plain Bézier curve, Pinned Root, no gravity, no damping)
  parented to an Empty ("Cart") whose x location is keyed LINEAR at every frame from ``cart_x`` [m]; the
  scene's unit scale ``unit`` (Blender units are drawn as metres / unit); ``length``, ``radius``,
  ``segment``, ``youngs_gpa``, ``density``, ``substeps``, ``iterations``. Baked, then, with the add-on
  disabled, every frame is evaluated through the depsgraph: the tip (last control point of the evaluated
  curve, world) relative to the cart, in metres.
* ``aspen``: a Sapling quaking aspen parented to an Empty that waits, moves 3 m along +x and turns 60° about
  z (LINEAR keys), then stops; baked, then played without the add-on: the crown's bone tails (world) against
  where they would be if the tree were carried rigidly, the keys' spread, and at the last frame the bone
  tails and leaf vertices against the simulation's own segments. The bake is repeated from a later frame
  (the carrier elsewhere); then the tree on a still Empty (a key that does not move it) is baked again and
  its keys compared with the tree's keys without a carrier. Last, the armature moved by its own action
  (which Bake would replace with the bones' keys) must be refused with the scene left as it was.

Prints one line ``CARRIER_RESULT {json}``.
"""

import importlib
import json
import math
import os
import sys

import bpy
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import addon_utils  # noqa: E402  (the bpy module provides it once imported)
from bad_input import activate, call, first_diff, install, make_sapling, report_cases, snapshot  # noqa: E402
from curves_wind import bezier_curve, clear  # noqa: E402
from inputs import fcurves_of  # noqa: E402

FPS = 24
MOD = "stiff_rods"  # the add-on's module; the bpy 5 extension's is bl_ext.user_default.stiff_rods


def keyed_empty(name, keys):
    """An Empty keyed LINEAR at (frame, location, z rotation [rad]) ``keys``."""
    empty = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(empty)
    for frame, location, turn in keys:
        empty.location = location
        empty.rotation_euler = (0.0, 0.0, turn)
        empty.keyframe_insert("location", frame=frame)
        empty.keyframe_insert("rotation_euler", frame=frame)
    for fc in fcurves_of(empty.animation_data.action):
        for kp in fc.keyframe_points:
            kp.interpolation = "LINEAR"
    return empty


def evaluated_tip(rod):
    """World position [Blender units] of the last control point of the evaluated curve."""
    dg = bpy.context.evaluated_depsgraph_get()
    ev = rod.evaluated_get(dg)
    tip = np.array(ev.data.splines[0].bezier_points[-1].co)
    m = np.array(ev.matrix_world)
    return m[:3, :3] @ tip + m[:3, 3]


def rod_on_cart(p):
    clear()
    scene = bpy.context.scene
    unit = p["unit"]
    scene.unit_settings.system = "METRIC"
    scene.unit_settings.scale_length = unit
    frames = len(p["cart_x"])
    scene.frame_start, scene.frame_end = 1, frames
    ss = scene.stiff_rods
    ss.use_force_fields, ss.use_scene_gravity = False, False
    ss.substeps, ss.iterations, ss.tolerance = p["substeps"], p["iterations"], 1e-9
    n = 5
    rod = bezier_curve(
        "Pole", [(0.0, 0.0, p["length"] / unit * i / (n - 1)) for i in range(n)], bevel=p["radius"] / unit
    )
    cart = keyed_empty("Cart", [(f + 1, (x / unit, 0.0, 0.0), 0.0) for f, x in enumerate(p["cart_x"])])
    rod.parent = cart
    s = rod.stiff_rods
    s.material, s.youngs_modulus_gpa, s.torsion_modulus_gpa, s.density = (
        "CUSTOM",
        p["youngs_gpa"],
        p["youngs_gpa"] / 2.6,
        p["density"],
    )
    s.segment_length, s.damping, s.pin_root = p["segment"] / unit, 0.0, True
    scene.frame_set(1)
    activate(rod)
    out = {"bake": sorted(bpy.ops.stiff_rods.bake())}
    out["segments"] = int(SESSIONS()[rod.name].model.n_segments)
    addon_utils.disable(MOD, default_set=True)
    tip_rel, cart_world = [], []
    for f in range(1, frames + 1):
        scene.frame_set(f)
        m = np.array(cart.matrix_world)
        rel = np.linalg.solve(m[:3, :3], evaluated_tip(rod) - m[:3, 3])
        tip_rel.append((unit * rel).tolist())  # metres, in the cart's frame
        cart_world.append((unit * m[:3, 3]).tolist())
    addon_utils.enable(MOD, default_set=True)
    out.update(tip_relative_m=tip_rel, cart_m=cart_world)
    return out


def SESSIONS():  # noqa: N802  (the add-on's session table, under the legacy add-on's or the extension's name)
    return importlib.import_module(f"{MOD}.addon.session").SESSIONS


def bone_tails_world(arm, order):
    flat = np.empty(3 * len(arm.pose.bones))
    arm.pose.bones.foreach_get("tail", flat)
    m = np.array(arm.matrix_world)
    return flat.reshape(-1, 3)[order] @ m[:3, :3].T + m[:3, 3]


def evaluated_world_vertices(obj):
    ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    me = ev.to_mesh()
    co = np.empty(3 * len(me.vertices))
    me.vertices.foreach_get("co", co)
    ev.to_mesh_clear()
    m = np.array(ev.matrix_world)
    return co.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]


def baked_keys(arm):
    """Every F-curve's key values of the armature's action (F-curve order), as a flat list."""
    out = []
    for fc in fcurves_of(arm.animation_data.action):
        co = np.empty(2 * len(fc.keyframe_points))
        fc.keyframe_points.foreach_get("co", co)
        out.extend(co[1::2].tolist())
    return out


def aspen_setup():
    arm, curve, leaves = make_sapling()
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    ss = scene.stiff_rods
    ss.use_storm, ss.use_force_fields, ss.substeps, ss.iterations = False, False, 2, 5
    arm.stiff_rods.damping = 2.0
    return arm, curve, leaves


def aspen(p):
    carried_points = importlib.import_module(f"{MOD}.solver.build.binding").carried_points
    arm, curve, leaves = aspen_setup()
    scene = bpy.context.scene
    start, go, stop, end = p["frames"]
    scene.frame_start, scene.frame_end = start, end
    turn = math.radians(p["turn_deg"])
    cart = keyed_empty(
        "Cart",
        [
            (start, (0, 0, 0), 0.0),
            (go, (0, 0, 0), 0.0),
            (stop, (p["move_m"], 0, 0), turn),
            (end, (p["move_m"], 0, 0), turn),
        ],
    )
    arm.parent = cart
    scene.frame_set(start)
    activate(arm)
    out = {"bake": sorted(bpy.ops.stiff_rods.bake())}
    s = SESSIONS()[arm.name]
    names = list(s.source.bone_names)
    index = {pb.name: i for i, pb in enumerate(arm.pose.bones)}
    order = np.array([index[n] for n in names])
    # the simulation's own state at the last frame: segment ends and leaf vertices, world
    seg = s.bone_segment
    local = np.zeros((seg.size, 3))
    local[:, 2] = 0.5 * s.model.lengths[seg]
    sim_tails = s.sim.segment_points(local, seg)
    used, lseg, llocal = s.leaf_binding
    sim_leaves = carried_points(s.sim.positions, s.sim.orientations, lseg, llocal)
    keys = baked_keys(arm)
    n_keys = end - start + 1
    per_curve = np.array(keys).reshape(-1, n_keys)
    out["key_spread"] = float(np.max(per_curve.max(axis=1) - per_curve.min(axis=1)))
    addon_utils.disable(MOD, default_set=True)
    others = [o for o in bpy.data.objects if o not in (arm, cart)]
    for o in others:
        o.hide_viewport = True  # bone tails need neither the bevelled curve nor the leaves evaluated
    tails, carts = [], []
    for f in range(start, end + 1):
        scene.frame_set(f)
        tails.append(bone_tails_world(arm, order))
        carts.append(np.array(cart.matrix_world))
    for o in others:
        o.hide_viewport = False
    scene.frame_set(end)
    leaves_world = evaluated_world_vertices(leaves)[used]
    addon_utils.enable(MOD, default_set=True)
    tails = np.array(tails)
    rest = tails[0]
    crown = rest[:, 2] >= np.quantile(rest[:, 2], 0.8)  # the top fifth of the bone tails
    deviation = []  # the crown's mean offset from where a rigidly carried tree would have it [m, world]
    m0 = np.linalg.inv(carts[0])
    for t, m in zip(tails, carts, strict=True):
        rigid = rest[crown] @ (m @ m0)[:3, :3].T + (m @ m0)[:3, 3]
        deviation.append(np.mean(t[crown] - rigid, axis=0).tolist())
    out.update(
        deviation_m=deviation,
        cart_m=[c[:3, 3].tolist() for c in carts],
        tails_vs_simulation_m=float(np.max(np.linalg.norm(tails[-1] - sim_tails, axis=1))),
        leaves_vs_simulation_m=float(np.max(np.linalg.norm(leaves_world - sim_leaves, axis=1))),
        crown_bones=int(crown.sum()),
        frames=[start, go, stop, end],
    )
    # baked again from a later frame, where the carrier has moved and turned: the tree is read at the start
    activate(arm)
    assert bpy.ops.stiff_rods.free_bake() == {"FINISHED"}
    scene.frame_set(stop + 5)
    activate(arm)
    assert bpy.ops.stiff_rods.bake() == {"FINISHED"}
    out["from_a_later_frame_max_key_difference"] = float(np.max(np.abs(np.array(baked_keys(arm)) - np.array(keys))))
    # the same tree on a carrier that stands still: the keys of the tree without one
    activate(arm)
    assert bpy.ops.stiff_rods.free_bake() == {"FINISHED"}
    arm.parent = None
    bpy.data.objects.remove(cart)
    scene.frame_set(start)
    activate(arm)
    assert bpy.ops.stiff_rods.bake(frame_start=start, frame_end=start + 8) == {"FINISHED"}
    alone = baked_keys(arm)
    out["alone_carried"] = bool(SESSIONS()[arm.name].pins.carried)  # Sapling's empty windAction moves nothing
    assert bpy.ops.stiff_rods.free_bake() == {"FINISHED"}
    still = keyed_empty("Still", [(start, (0, 0, 0), 0.0)])
    arm.parent = still
    scene.frame_set(start)
    activate(arm)
    assert bpy.ops.stiff_rods.bake(frame_start=start, frame_end=start + 8) == {"FINISHED"}
    out["still_carrier_animated"] = bool(SESSIONS()[arm.name].pins.carried)
    out["still_vs_alone_max_key_difference"] = float(np.max(np.abs(np.array(baked_keys(arm)) - np.array(alone))))
    # moved by its own action, which Bake would replace: refused, the scene as it was
    assert bpy.ops.stiff_rods.free_bake() == {"FINISHED"}
    arm.parent = None
    bpy.data.objects.remove(still)
    arm.animation_data.action = None
    for frame, x in ((start, 0.0), (start + 8, 1.0)):
        arm.location = (x, 0.0, 0.0)
        arm.keyframe_insert("location", frame=frame)
    scene.frame_set(start)
    activate(arm)
    before = snapshot()
    outcome, message = call("bake", frame_start=start, frame_end=start + 8)
    out["own_action"] = {"outcome": outcome, "message": message, "diff": first_diff(before, snapshot())}
    return out


def main():
    global MOD
    if sys.argv[1:2] == ["bpy5"]:  # python carrier.py bpy5 EXTENSION_ZIP PARAMS_JSON
        args = sys.argv[2:]
        bpy.ops.extensions.package_install_files(filepath=args[0], repo="user_default", enable_on_install=True)
        MOD = "bl_ext.user_default.stiff_rods"
    else:
        args = sys.argv[sys.argv.index("--") + 1 :]
        install(args[0])
    with open(args[1]) as fh:
        params = json.load(fh)
    out = {"blender": list(bpy.app.version)}
    cases = [(name, (lambda p=p: rod_on_cart(p))) for name, p in params.get("rods", {}).items()]
    if "aspen" in params:
        cases.append(("aspen", lambda: aspen(params["aspen"])))
    report_cases("CARRIER_RESULT", out, cases)


if __name__ == "__main__":
    main()
