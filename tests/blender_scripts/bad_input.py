"""Bad input inside real Blender: every operator must report a clear ERROR and change nothing
(run by tests/blender/test_blender_bad_input.py).

    blender -b --factory-startup --python bad_input.py -- LEGACY_ZIP

Installs the legacy add-on ZIP (the caller points BLENDER_USER_SCRIPTS/CONFIG at a temporary
profile), generates a Sapling ``quaking_aspen`` and runs every case in this one process. For each
case the scene state is snapshotted, the operator is called (in background mode an operator that
reports ERROR raises ``RuntimeError("Error: <message>")``; otherwise its return set comes back), and
the state is compared with the snapshot. Prints one line ``BAD_INPUT_RESULT {json}``: per case
``outcome`` ("raised" or the returned set), ``message``, ``scene_unchanged`` and ``diff`` (the
first difference), plus case-specific checks.
"""

import json
import math
import os
import sys
import traceback

import addon_utils
import bpy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import make_sapling_tree  # noqa: E402  (the repository's Sapling generator)

FRAMES = (1, 4)  # short bakes: the cases are about input checks, not physics


def report_cases(marker, out, cases):
    """Each ``(name, function)`` case's result in ``out[name]`` (its traceback where it raised, so one broken
    case does not hide the others), then one line ``MARKER {json}`` for the test to read."""
    for name, case in cases:
        try:
            out[name] = case()
        except Exception:
            out[name] = {"error": traceback.format_exc()}
    print(marker + " " + json.dumps(out))


def install(zip_path):
    assert bpy.ops.preferences.addon_install(filepath=zip_path, overwrite=True) == {"FINISHED"}
    addon_utils.enable("stiff_rods", default_set=True, handle_error=lambda exc: (_ for _ in ()).throw(exc))
    assert addon_utils.check("stiff_rods")[1], "stiff_rods did not enable"


def wind_field(strength, location=(-6.0, 0.0, 3.0), angle_y_deg=90.0):
    """A Wind force field at ``location``, its +Z (the wind's direction) turned by ``angle_y_deg`` about +Y
    (90°: blowing along +X), with Strength ``strength`` (m/s at the default Field Speed)."""
    bpy.ops.object.effector_add(type="WIND", location=location, rotation=(0.0, math.radians(angle_y_deg), 0.0))
    field = bpy.context.active_object
    field.field.strength = strength
    return field


def make_sapling(preset_name="quaking_aspen"):
    arm = make_sapling_tree.make_tree(preset_name)
    curve = next(o for o in arm.children if o.type == "CURVE")
    leaves = next(o for o in curve.children if o.type == "MESH")
    return arm, curve, leaves


# ------------------------------------------------------------------ state
def _r(values):
    return [round(float(v), 6) for v in values]


def _custom_props(obj):
    """True custom properties (not the add-on's registered ``stiff_rods`` settings group)."""
    registered = type(obj).bl_rna.properties.keys()
    out = {}
    for k in obj.keys():
        if k in registered:
            continue
        v = obj[k]
        out[k] = repr(v.to_dict() if hasattr(v, "to_dict") else (v.to_list() if hasattr(v, "to_list") else v))
    return out


def _fcurve_state(action):
    if action is None:
        return None
    total = 0.0
    keys = 0
    for fc in action.fcurves:
        for kp in fc.keyframe_points:
            total += kp.co[0] * 1.000001 + kp.co[1]
            keys += 1
    return {"name": action.name, "fcurves": len(action.fcurves), "keys": keys, "checksum": round(total, 6)}


def snapshot(evaluate=False):
    """Everything a bad-input failure could touch. ``evaluate`` re-evaluates the animation at the
    current frame first (what the user sees after an action is swapped back)."""
    scene = bpy.context.scene
    if evaluate:
        scene.frame_set(scene.frame_current)
    state = {
        "frame": [scene.frame_current, scene.frame_start, scene.frame_end],
        "actions": sorted(a.name for a in bpy.data.actions),
        "active": bpy.context.view_layer.objects.active.name if bpy.context.view_layer.objects.active else None,
        "objects": {},
    }
    for obj in bpy.data.objects:
        o = {
            "type": obj.type,
            "parent": obj.parent.name if obj.parent else None,
            "mode": obj.mode,
            "props": _custom_props(obj),
        }
        if obj.type == "ARMATURE":
            anim = obj.animation_data
            o["action"] = _fcurve_state(anim.action if anim else None)
            o["bones"] = [
                (
                    pb.name,
                    pb.rotation_mode,
                    _r(pb.rotation_quaternion),
                    _r(pb.rotation_euler),
                    _r(pb.rotation_axis_angle),
                )
                for pb in obj.pose.bones
            ]
        if obj.type == "CURVE":
            o["splines"] = [
                [_r(p.co) for p in (s.bezier_points if s.type == "BEZIER" else s.points)] for s in obj.data.splines
            ]
        state["objects"][obj.name] = o
    return state


def first_diff(a, b, path=""):
    if type(a) is not type(b):
        return f"{path}: {a!r} -> {b!r}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                return f"{path}/{k}: {'added' if k not in a else 'removed'}"
            d = first_diff(a[k], b[k], f"{path}/{k}")
            if d:
                return d
        return None
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: length {len(a)} -> {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            d = first_diff(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {a!r} -> {b!r}"


# ------------------------------------------------------------------ running operators
def call(op_name, **kw):
    """(outcome, message): outcome is "raised" or the sorted returned set."""
    op = getattr(bpy.ops.stiff_rods, op_name)
    try:
        ret = op(**kw)
        return sorted(ret), None
    except RuntimeError as exc:
        msg = str(exc).strip()
        return "raised", msg[len("Error: ") :] if msg.startswith("Error: ") else msg


def activate(obj):
    bpy.context.view_layer.update()  # resync the view layer after objects were removed
    for o in bpy.context.view_layer.objects:
        if o is not None:
            o.select_set(o == obj)
    bpy.context.view_layer.objects.active = obj


RESULTS = {}


def bad(case, op_name, **kw):
    """Call ``op_name`` on the current (bad) scene; record outcome, message and whether the scene changed."""
    before = snapshot()
    settings_before = {o.name for o in bpy.data.objects if "stiff_rods" in o.keys()}
    outcome, message = call(op_name, **kw)
    after = snapshot()
    diff = first_diff(before, after)
    RESULTS[case] = {
        "op": op_name,
        "outcome": outcome,
        "message": message,
        "scene_unchanged": diff is None,
        "diff": diff,
        # the add-on's settings group (defaults) that reading obj.stiff_rods creates, for information
        "settings_group_created": sorted(
            {o.name for o in bpy.data.objects if "stiff_rods" in o.keys()} - settings_before
        ),
    }
    return RESULTS[case]


def ok(op_name, **kw):
    outcome, message = call(op_name, **kw)
    assert outcome == ["FINISHED"], f"{op_name}: {outcome} {message}"


# ------------------------------------------------------------------ the cases
def run_cases(arm, curve, leaves):
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES
    scene.frame_set(FRAMES[0])

    # nothing selected
    activate(None)
    for op in ("convert", "bake", "free_bake"):
        bad(f"nothing_selected_{op}", op)

    # a plain (non-Sapling) armature
    bpy.ops.object.armature_add(location=(5, 0, 0))
    plain = bpy.context.active_object
    plain.name = "PlainArmature"
    activate(plain)
    for op in ("convert", "bake", "free_bake"):
        bad(f"plain_armature_{op}", op)
    bpy.data.objects.remove(plain)

    # the leaves mesh selected
    activate(leaves)
    bad("leaves_mesh_convert", "convert")

    # an empty curve: no splines; splines with a single point
    cu = bpy.data.curves.new("EmptyCurve", "CURVE")
    empty = bpy.data.objects.new("EmptyCurve", cu)
    scene.collection.objects.link(empty)
    activate(empty)
    for op in ("convert", "bake"):
        bad(f"curve_no_splines_{op}", op)
    for kind in ("BEZIER", "POLY"):
        cu.splines.new(kind)  # a new spline has one point
    for op in ("convert", "bake"):
        bad(f"curve_single_point_splines_{op}", op)
    bpy.data.objects.remove(empty)
    bpy.data.curves.remove(cu)

    # an object in edit mode (the Sapling armature, then its curve)
    for obj, tag in ((arm, "armature"), (curve, "curve")):
        activate(obj)
        bpy.ops.object.mode_set(mode="EDIT")
        assert obj.mode == "EDIT"
        for op in ("convert", "bake", "free_bake"):
            bad(f"edit_mode_{tag}_{op}", op)
        bpy.ops.object.mode_set(mode="OBJECT")

    # bake range with end < start
    activate(arm)
    bad("bake_range_end_before_start", "bake", frame_start=10, frame_end=5)
    # only the start given, after the scene's end (Blender itself never lets scene end < start)
    bad("bake_start_after_scene_end", "bake", frame_start=FRAMES[1] + 5)

    # Free Bake with nothing baked (the armature, its curve and a plain curve)
    activate(arm)
    bad("free_bake_nothing_baked", "free_bake")
    activate(curve)
    bad("free_bake_nothing_baked_curve_selected", "free_bake")

    # zero length: two points of a Sapling spline coincide (Blender deletes zero-length bones on
    # leaving Edit Mode, so a coincident curve span is how a zero-length segment really arises)
    pts = curve.data.splines[0].bezier_points
    saved = tuple(pts[2].co)
    pts[2].co = pts[1].co
    activate(arm)
    for op in ("convert", "bake"):
        bad(f"zero_length_segment_{op}", op)
    activate(curve)
    bad("zero_length_segment_curve_selected_convert", "convert")
    pts[2].co = saved

    # Bake twice without Free Bake: the second must fail and leave the first bake alone
    activate(arm)
    ok("bake")
    first = arm.animation_data.action.name
    r = bad("bake_twice", "bake")
    r["first_bake_still_assigned"] = arm.animation_data.action.name == first
    ok("free_bake")

    # control: the snapshot does see what a successful Bake changes
    bad("control_successful_bake", "bake")
    ok("free_bake")

    user_action_case(arm)
    static_pose_probe(arm)
    missing_leaves_case(arm, curve, leaves)


def user_action_case(arm):
    """Bake on an armature with a user action (Sapling assigns ``windAction``; we give it keys and
    mixed rotation modes): the action is kept (fake user) and Free Bake gives it back exactly."""
    scene = bpy.context.scene
    action = arm.animation_data.action
    names = [pb.name for pb in arm.pose.bones]
    for i, name in enumerate(names[:3]):
        pb = arm.pose.bones[name]
        for f, angle in ((1, 0.0), (10, 0.2 + 0.1 * i)):
            pb.rotation_euler = (angle, 0.5 * angle, 0.0)
            pb.keyframe_insert("rotation_euler", frame=f)
    arm.pose.bones[names[3]].rotation_mode = "YZX"
    arm.pose.bones[names[4]].rotation_mode = "QUATERNION"
    arm.pose.bones[names[5]].rotation_mode = "AXIS_ANGLE"
    action.use_fake_user = False  # as Sapling made it (the earlier bakes set it)
    user_name = action.name
    fake_before = action.use_fake_user
    scene.frame_set(3)
    activate(arm)
    before = snapshot(evaluate=True)
    modes_before = {pb.name: pb.rotation_mode for pb in arm.pose.bones}
    # a failing Bake first: the user's action stays assigned
    bad("user_action_bad_range", "bake", frame_start=4, frame_end=2)
    outcome, message = call("bake")
    res = {"op": "bake+free_bake", "bake_outcome": outcome, "bake_message": message}
    kept = bpy.data.actions.get(user_name)
    res["after_bake_user_action_in_data"] = kept is not None
    res["after_bake_user_action_fake_user"] = bool(kept and kept.use_fake_user)
    res["after_bake_assigned"] = arm.animation_data.action.name if arm.animation_data.action else None
    res["after_bake_user_fcurves"] = len(kept.fcurves) if kept else None
    outcome, message = call("free_bake")
    res.update(free_outcome=outcome, free_message=message)
    after = snapshot(evaluate=True)
    res["assigned_after_free"] = arm.animation_data.action.name if arm.animation_data.action else None
    res["same_action_assigned"] = arm.animation_data.action is bpy.data.actions.get(user_name)
    res["same_rotation_modes"] = {pb.name: pb.rotation_mode for pb in arm.pose.bones} == modes_before
    res["diff"] = first_diff(before, after)
    res["scene_unchanged"] = res["diff"] is None
    res["fake_user_before"] = fake_before
    res["fake_user_after_free"] = bpy.data.actions[user_name].use_fake_user
    RESULTS["bake_with_user_action"] = res
    scene.frame_set(FRAMES[0])


def static_pose_probe(arm):
    """For information (not asserted): a pose set by hand without keys, kept by Bake + Free Bake?"""
    scene = bpy.context.scene
    anim = arm.animation_data
    saved_action = anim.action
    anim.action = None
    pb = arm.pose.bones[-1]
    pb.rotation_mode = "QUATERNION"
    pb.rotation_quaternion = (0.9, 0.1, 0.3, 0.2)
    before = _r(pb.rotation_quaternion)
    activate(arm)
    ok("bake")
    ok("free_bake")
    RESULTS["info_static_pose_after_free_bake"] = {
        "before": before,
        "after": _r(pb.rotation_quaternion),
        "kept": _r(pb.rotation_quaternion) == before,
    }
    pb.rotation_quaternion = (1, 0, 0, 0)
    anim.action = saved_action
    scene.frame_set(FRAMES[0])


def missing_leaves_case(arm, curve, leaves):
    """A Sapling tree whose leaves were deleted still converts and bakes; Free Bake undoes it."""
    bpy.data.objects.remove(leaves)
    activate(arm)
    before = snapshot(evaluate=True)
    res = {"op": "convert+bake+free_bake"}
    res["convert_outcome"], res["convert_message"] = call("convert")
    res["bake_outcome"], res["bake_message"] = call("bake")
    act = arm.animation_data.action
    res["baked_fcurves"] = len(act.fcurves) if act is not None and act.get("stiff_rods_bake") else 0
    res["free_outcome"], res["free_message"] = call("free_bake")
    res["diff"] = first_diff(before, snapshot(evaluate=True))
    res["scene_unchanged"] = res["diff"] is None
    RESULTS["missing_leaves"] = res


def main():
    zip_path = sys.argv[sys.argv.index("--") + 1]
    install(zip_path)
    arm, curve, leaves = make_sapling()
    out = {"blender": list(bpy.app.version)}
    try:
        run_cases(arm, curve, leaves)
    except Exception:
        out["error"] = traceback.format_exc()
    out["cases"] = RESULTS
    print("BAD_INPUT_RESULT " + json.dumps(out))


if __name__ == "__main__":  # also imported by curves_wind.py for its helpers
    main()
