"""What the scene does to a tree: the result is right or refused (run by tests/blender/test_blender_scene_state.py).

    blender -b --factory-startup --python scene_state.py -- LEGACY_ZIP

Installs the legacy add-on ZIP (the caller points the user profile at a temporary folder) and runs:

* ``pose``: a Sapling quaking aspen (no leaves) whose bones are set by hand in every rotation mode
  (quaternion, the six Euler orders, axis-angle) with distinct values in all three rotation properties,
  under Sapling's own empty ``windAction``, without an action, and with a user's keyed action on some
  of them; each time Bake (frames 1–3), then Free Bake. Records every bone's mode, rotation, location
  and scale as Blender stores them (float32 read as Python floats, compared exactly on the pytest side)
  and the user's action key by key.
* ``colliders``: a 2 m rubber rope falls 16 frames onto a plane flattened by its object scale (0 on Z),
  next to degenerate Collision objects: a cube scaled to zero thickness, a cube whose vertices were
  moved to z = 0, a cube with a NaN vertex and one with an infinite vertex. Convert and Bake run with
  the reports and the Python output they print captured.

Prints one line ``SCENE_STATE_RESULT {json}``.
"""

import contextlib
import io
import os
import sys

import bpy
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import make_sapling_tree  # noqa: E402
from bad_input import activate, install, report_cases  # noqa: E402
from curves_wind import bezier_curve, clear, points_of  # noqa: E402

MODES = ("QUATERNION", "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX", "AXIS_ANGLE")


def call(op_name, **kw):
    """(outcome, printed): outcome is the returned set, or "raised: <message>"; printed is what the call
    wrote to Python's stdout and stderr (Blender prints an operator's reports there in background mode,
    and the traceback of an exception in the operator)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            outcome = sorted(getattr(bpy.ops.stiff_rods, op_name)(**kw))
        except RuntimeError as exc:
            outcome = f"raised: {exc}"
    return outcome, out.getvalue() + err.getvalue()


# ------------------------------------------------------------------ pose round trip
def pose_state(arm):
    return {
        pb.name: {
            "mode": pb.rotation_mode,
            "quaternion": list(pb.rotation_quaternion),
            "euler": list(pb.rotation_euler),
            "axis_angle": list(pb.rotation_axis_angle),
            "location": list(pb.location),
            "scale": list(pb.scale),
        }
        for pb in arm.pose.bones
    }


def action_state(action):
    if action is None:
        return None
    return {
        "name": action.name,
        "use_fake_user": action.use_fake_user,
        "users": action.users,
        "fcurves": [
            {
                "data_path": fc.data_path,
                "index": fc.array_index,
                "group": fc.group.name if fc.group else None,
                "extrapolation": fc.extrapolation,
                "modifiers": len(fc.modifiers),
                "keys": [
                    [
                        list(k.co),
                        list(k.handle_left),
                        list(k.handle_right),
                        k.interpolation,
                        k.handle_left_type,
                        k.handle_right_type,
                        k.easing,
                    ]
                    for k in fc.keyframe_points
                ],
            }
            for fc in action.fcurves
        ],
    }


def hand_set_pose(arm):
    """Every bone gets a rotation mode (cycling through all eight) and its own non-trivial values in all
    three rotation properties (the quaternion deliberately not unit length), location and scale."""
    for i, pb in enumerate(arm.pose.bones):
        pb.rotation_mode = MODES[i % len(MODES)]
        a = 0.01 * (i + 1)
        pb.rotation_quaternion = (0.9 - a, 0.1 + a, -0.3, 0.2 + 0.5 * a)
        pb.rotation_euler = (0.1 + a, -0.2 - a, 0.3 + 2.0 * a)
        pb.rotation_axis_angle = (0.5 + a, 0.3, -0.4 - a, 0.8)
        pb.location = (0.001 * i, -0.002, 0.003)
        pb.scale = (1.0, 1.0 + a, 1.0)


def key_user_action(arm):
    """A user's action keyed at frames 1 and 3 on one bone per kind of rotation property (and one on its
    location), the keys' values distinct; returns the action."""
    bones = list(arm.pose.bones)
    by_mode = {m: next(pb for pb in bones if pb.rotation_mode == m) for m in ("XYZ", "QUATERNION", "AXIS_ANGLE")}
    for frame, sign in ((1, 1.0), (3, -1.0)):
        pb = by_mode["XYZ"]
        pb.rotation_euler = (0.2 * sign, 0.1, -0.3)
        pb.keyframe_insert("rotation_euler", frame=frame)
        pb = by_mode["QUATERNION"]
        pb.rotation_quaternion = (0.8, 0.2 * sign, 0.1, 0.3)
        pb.keyframe_insert("rotation_quaternion", frame=frame)
        pb = by_mode["AXIS_ANGLE"]
        pb.rotation_axis_angle = (0.6 * sign, 0.0, 0.6, 0.8)
        pb.keyframe_insert("rotation_axis_angle", frame=frame)
        pb = next(b for b in bones if b.rotation_mode == "ZXY")
        pb.location = (0.01 * sign, 0.02, 0.0)
        pb.keyframe_insert("location", frame=frame)
    action = arm.animation_data.action
    action.name = "UserPose"
    return action


def bake_and_free(arm, label):
    """Bake frames 1–3, then Free Bake; the states before, right after Free Bake and after the frame is
    evaluated again, plus what the bake itself did (so the test knows the modes were switched)."""
    scene = bpy.context.scene
    scene.frame_set(1)
    anim = arm.animation_data
    before = {"pose": pose_state(arm), "action": action_state(anim.action if anim else None)}
    activate(arm)
    res = {"label": label, "before": before, "actions_before": sorted(a.name for a in bpy.data.actions)}
    res["bake_outcome"], res["bake_printed"] = call("bake", frame_start=1, frame_end=3)
    baked = arm.animation_data.action if arm.animation_data else None
    res["baked_action"] = baked.name if baked is not None else None
    res["modes_during_bake"] = sorted({pb.rotation_mode for pb in arm.pose.bones})
    res["free_outcome"], res["free_printed"] = call("free_bake")
    anim = arm.animation_data
    res["after_free"] = {"pose": pose_state(arm), "action": action_state(anim.action if anim else None)}
    res["actions_after_free"] = sorted(a.name for a in bpy.data.actions)
    scene.frame_set(1)
    res["after_free_evaluated"] = {"pose": pose_state(arm), "action": action_state(anim.action if anim else None)}
    return res


def pose_round_trip():
    arm = make_sapling_tree.make_tree("quaking_aspen", leaves=False)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 3
    ss = scene.stiff_rods
    ss.use_storm, ss.substeps, ss.iterations = False, 1, 3
    hand_set_pose(arm)
    out = {"bones": len(arm.pose.bones), "modes": sorted({pb.rotation_mode for pb in arm.pose.bones})}
    out["sapling_action"] = bake_and_free(arm, "hand-set pose under Sapling's (empty) windAction")
    arm.animation_data.action = None
    out["no_action"] = bake_and_free(arm, "hand-set pose, no action")
    key_user_action(arm)
    hand_set_pose(arm)  # the keyed channels take their keys' values again at the next frame_set
    out["user_action"] = bake_and_free(arm, "hand-set pose and a user's keyed action")
    return out


# ------------------------------------------------------------------ degenerate colliders
def collision(obj):
    obj.modifiers.new("Collision", "COLLISION")
    return obj


def cube(name, location, scale=(1.0, 1.0, 1.0)):
    bpy.ops.mesh.primitive_cube_add(size=0.5, location=location)
    obj = bpy.context.active_object
    obj.name = obj.data.name = name
    obj.scale = scale
    return collision(obj)


def degenerate_colliders():
    clear()
    scene = bpy.context.scene
    scene.frame_end = 16
    cube("FlatCube", (3.0, 2.0, 0.5), scale=(1.0, 1.0, 0.0))
    squashed = cube("SquashedCube", (3.0, -2.0, 0.5))
    for v in squashed.data.vertices:
        v.co.z = 0.0
    cube("NaNCube", (-2.0, 2.0, 0.5)).data.vertices[3].co.x = float("nan")
    inf = cube("InfCube", (-2.0, -2.0, 0.5)).data
    co = np.empty(3 * len(inf.vertices))
    inf.vertices.foreach_get("co", co)
    co[3 * 5 + 1] = np.inf  # foreach_set stores it as is (assigning co.y clamps it to FLT_MAX)
    inf.vertices.foreach_set("co", co)
    inf.update()
    bpy.ops.mesh.primitive_plane_add(size=6.0, location=(1.0, 0.0, 0.0))
    ground = collision(bpy.context.active_object)
    ground.name = "FlattenedGround"
    ground.scale = (1.0, 1.0, 0.0)  # a plane is flat anyway: its object scale of 0 on Z leaves it a ground

    rope = bezier_curve("Rope", [(0.4 * i, 0.0, 0.3) for i in range(6)], bevel=0.01)
    s = rope.stiff_rods
    s.material, s.segment_length, s.pin_root, s.collide = "RUBBER", 0.1, False, True
    activate(rope)
    out = {"rest_z": points_of(rope)[:, 2].tolist()}
    out["convert_outcome"], out["convert_printed"] = call("convert")
    out["bake_outcome"], out["bake_printed"] = call("bake", frame_start=1, frame_end=16)
    action = rope.data.animation_data.action if rope.data.animation_data else None
    if action is not None and action.get("stiff_rods_bake"):
        z = {}  # the baked z of every control point at frame 16, read from its F-curve
        for fc in action.fcurves:
            if fc.data_path.endswith(".co") and fc.array_index == 2:
                z[fc.data_path] = fc.evaluate(16)
        out["baked_z_frame16"] = sorted(z.values())
    return out


def main():
    install(sys.argv[sys.argv.index("--") + 1])
    out = {"blender": list(bpy.app.version)}
    report_cases("SCENE_STATE_RESULT", out, (("pose", pose_round_trip), ("colliders", degenerate_colliders)))


if __name__ == "__main__":
    main()
