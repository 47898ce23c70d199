"""Unusual scene inputs: the result is right (checked with numbers) or refused by name with the scene unchanged
(run by tests/blender/test_blender_inputs.py; the table is docs/scene_inputs.md).

    blender -b --factory-startup --python inputs.py -- LEGACY_ZIP OUT_DIR
    python inputs.py bpy5 EXTENSION_ZIP OUT_DIR        (the bpy 5 module: the cases that need no Sapling)

Installs the add-on (the caller points the user profile at a temporary folder), then runs every case in this one
process, each on its own small scene: a Sapling quaking aspen (Blender 3.4 ships Sapling) or a rope. A case
returns numbers and the operators' outcomes (the returned set, or the ERROR message), the WARNING lines they
printed, and ``diff``: the first difference between the scene before and after (None: unchanged). Prints one line
``INPUTS_RESULT {json}``.
"""

import contextlib
import io
import json
import os
import sys
import types

import bpy
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
from bad_input import _custom_props, activate, first_diff, install, report_cases  # noqa: E402
from curves_wind import RecordingLayout, bezier_curve, clear, points_of  # noqa: E402
from scene_state import hand_set_pose, pose_state  # noqa: E402

MOD = "stiff_rods"  # the add-on's module; the bpy 5 extension's is bl_ext.user_default.stiff_rods
OUT = "."  # a folder for saved files and libraries
G = 9.81


def mod(name):
    return sys.modules[f"{MOD}.addon.{name}"]


# ------------------------------------------------------------------ scenes
def reset():
    """An empty scene with the defaults the cases start from (frames 1–4, 24 fps, no wind, small solver)."""
    clear()
    for coll in (bpy.data.armatures, bpy.data.meshes, bpy.data.collections, bpy.data.libraries):
        for item in list(coll):
            coll.remove(item)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end, scene.frame_step = 1, 4, 1
    scene.gravity, scene.use_gravity = (0.0, 0.0, -G), True
    scene.frame_set(1)
    ss = scene.stiff_rods
    ss.use_storm, ss.use_force_fields, ss.substeps, ss.iterations = False, False, 1, 3
    mod("session").SESSIONS.clear()


def aspen(leaves=True, pruned=False):
    """A Sapling quaking aspen (158 bones, 441 leaves); ``pruned``: without the bones of its terminal branches
    (e2e_sapling.prune_twig_bones), so a bake adds them."""
    import make_sapling_tree

    reset()
    arm = make_sapling_tree.make_tree("quaking_aspen", leaves=leaves)
    if pruned:  # every bone of the branches that carry no other branch: a bake adds them back
        bpy.context.view_layer.objects.active = arm
        bpy.ops.object.mode_set(mode="EDIT")
        eb = arm.data.edit_bones
        spline = {b.name: b.name.split(".")[0] for b in eb}
        carrying = {spline[b.parent.name] for b in eb if b.parent and spline[b.parent.name] != spline[b.name]}
        for b in [b for b in eb if spline[b.name] not in carrying]:
            eb.remove(b)
        bpy.ops.object.mode_set(mode="OBJECT")
    curve = next(o for o in arm.children if o.type == "CURVE")
    leaf = next((o for o in curve.children if o.type == "MESH"), None)
    activate(arm)
    return arm, curve, leaf


def rope(name="Rope", n=6, spacing=0.4, z=1.0, material="RUBBER", pin_root=True):
    """A Bézier rope of ``n`` points along +X at height ``z``, resampled to 0.1 m segments."""
    obj = bezier_curve(name, [(spacing * i, 0.0, z) for i in range(n)])
    s = obj.stiff_rods
    s.material, s.segment_length, s.pin_root, s.collide = material, 0.1, pin_root, False
    activate(obj)
    return obj


# ------------------------------------------------------------------ observing
def fcurves_of(action):
    if action is None:
        return []
    if hasattr(action, "layers"):  # 4.4+: layered actions (Action.fcurves is gone in 5.0)
        return [fc for layer in action.layers for st in layer.strips for bag in st.channelbags for fc in bag.fcurves]
    return list(action.fcurves)


def action_of(obj):
    holder = obj.data if obj.type == "CURVE" else obj
    anim = holder.animation_data
    return anim.action if anim else None


def key_frames(obj):
    """The sorted frames keyed by the action of ``obj`` (an armature, or a curve's data)."""
    return sorted({round(k.co[0], 6) for fc in fcurves_of(action_of(obj)) for k in fc.keyframe_points})


def state():
    """What any operator could change: the frame, the actions (users, fake user), every object's custom
    properties, modifiers, mode, visibility, action with its keys, pose (mode and values of every bone), bones,
    curve points and mesh vertices."""
    scene = bpy.context.scene
    out = {
        "frame": [scene.frame_current, scene.frame_start, scene.frame_end],
        "actions": sorted([a.name, a.users, a.use_fake_user] for a in bpy.data.actions),
        "objects": {},
    }
    for obj in bpy.data.objects:
        act = action_of(obj)
        o = {
            "type": obj.type,
            "parent": obj.parent.name if obj.parent else None,
            "mode": obj.mode,
            "hide": [obj.hide_viewport, obj.name in bpy.context.view_layer.objects and obj.hide_get()],
            "props": _custom_props(obj),
            "modifiers": [[m.name, m.type] for m in obj.modifiers],
            "action": None
            if act is None
            else [act.name, [[fc.data_path, fc.array_index, len(fc.keyframe_points)] for fc in fcurves_of(act)]],
        }
        if obj.type == "ARMATURE":
            o["pose"] = pose_state(obj)
            o["bones"] = sorted(b.name for b in obj.data.bones)
        elif obj.type == "CURVE":
            o["splines"] = [
                [list(p.co) for p in (s.bezier_points if s.type == "BEZIER" else s.points)] for s in obj.data.splines
            ]
        elif obj.type == "MESH":
            co = np.empty(3 * len(obj.data.vertices), np.float32)
            obj.data.vertices.foreach_get("co", co)
            o["vertices"] = co.tolist()
        out["objects"][obj.name] = o
    return out


def run(op_name, **kw):
    """Run ``bpy.ops.stiff_rods.<op_name>``: {"outcome": returned set or "ERROR", "message": the ERROR's text,
    "warnings": the WARNING lines it printed}."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            outcome, message = sorted(getattr(bpy.ops.stiff_rods, op_name)(**kw)), None
        except RuntimeError as exc:
            text = str(exc).strip()
            outcome, message = "ERROR", text[len("Error: ") :] if text.startswith("Error: ") else text
    printed = out.getvalue() + err.getvalue()
    warnings = [line[len("Warning: ") :] for line in printed.splitlines() if line.startswith("Warning: ")]
    return {"outcome": outcome, "message": message, "warnings": warnings, "traceback": "Traceback" in printed}


def refused(op_name, selected=None, **kw):
    """``run`` with the scene compared before and after: ``diff`` is None when nothing changed."""
    if selected is not None:
        activate(selected)
    before = state()
    r = run(op_name, **kw)
    r["diff"] = first_diff(before, state())
    return r


def live_session():
    """What Simulate starts from (addon/operators.py: the Session, reset for the live preview), and the scene."""
    scene = bpy.context.scene
    s = mod("operators")._session(bpy.context)
    s.reset(scene.frame_current, scene, live=True)
    return s, scene


def live_steps(s, scene, n):
    """``n`` ticks of Simulate's timer (operators.step_live); the simulated segment positions."""
    for _ in range(n):
        mod("operators").step_live(s, scene)
    return s.sim.positions.copy()


def stop_live(s, scene):
    s.write_rest()
    scene.frame_set(s.start_frame)


def tip_sag(rope_obj, frames=6):
    """Convert the rope and simulate ``frames`` live ticks: how far its last segment sank [m], and the segments."""
    s, scene = live_session()
    z0 = s.sim.positions[s.branch_map.span_segment[0][-1], 2]
    x = live_steps(s, scene, frames)
    stop_live(s, scene)
    return float(z0 - x[s.branch_map.span_segment[0][-1], 2]), int(s.model.n_segments)


# ------------------------------------------------------------------ issue items
def solver_prepared():
    """The first Convert in a new profile loads the compiled solver and says it is preparing it (the kernels are
    compiled into the profile); the panel's Solver box then names the solver in use."""
    reset()
    rope()
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        outcome = sorted(bpy.ops.stiff_rods.convert())
    solver = sys.modules[MOD + ".solver"]
    known = solver.known_compiled_status()
    return {
        "outcome": outcome,
        "info": [line for line in out.getvalue().splitlines() if line.startswith("Info: Stiff Rods")],
        "status": list(known) if known else None,
        "cache": os.environ.get("NUMBA_CACHE_DIR"),
    }


def stale_model():
    """Convert a rope, then change one input at a time: the Session that Simulate steps must be rebuilt for each
    (segment count, material, curve, transform, gravity, frame rate, a bone deleted); changing only a setting
    every start re-reads (iterations) keeps it."""
    reset()
    obj = rope()
    scene = bpy.context.scene
    out = {"convert": run("convert")["outcome"]}
    sessions = mod("session").SESSIONS
    first = sessions["Rope"]
    out["segments_converted"] = first.model.n_segments
    s, _ = live_session()
    out["same_session_unchanged"] = s is first
    scene.stiff_rods.iterations = 4
    s, _ = live_session()
    out["same_session_after_iterations"] = s is first
    out["sag_rubber"], _ = tip_sag(obj)
    obj.stiff_rods.segment_length = 0.05
    out["sag_rubber_fine"], out["segments_after_length"] = tip_sag(obj)
    obj.stiff_rods.material = "STEEL"
    out["sag_steel"], _ = tip_sag(obj)
    out["density_after_material"] = mod("operators")._session(bpy.context).material[2]
    obj.data.splines[0].bezier_points[-1].co.z += 0.5  # the curve itself
    bpy.context.view_layer.update()
    s, _ = live_session()
    out["top_after_point_moved"] = float(s.model.positions[:, 2].max())
    obj.location.x += 2.0  # the transform
    bpy.context.view_layer.update()
    s, _ = live_session()
    out["min_x_after_move"] = float(s.model.positions[:, 0].min())
    scene.gravity = (0.0, 0.0, -3.0)
    s, _ = live_session()
    out["gravity_after_change"] = s.gravity.tolist()
    scene.render.fps = 50
    s, _ = live_session()
    out["frame_time_after_fps"] = s.frame_time
    # the panel says so while the model is out of date (the check is throttled to once a second: forced here)
    run("convert")
    obj.stiff_rods.segment_length = 0.2
    ops = mod("operators")
    out["up_to_date_after_change"] = ops.up_to_date(sessions["Rope"], obj, scene, every=0.0)
    drawn = []
    mod("panel").STIFF_RODS_PT_main.draw(type("P", (), {"layout": RecordingLayout(drawn)})(), bpy.context)
    out["panel_says"] = [d for d in drawn if "out of date" in d]
    return out


def stale_bones():
    """A Sapling tree converted, then a bone deleted, then the leaves moved: Simulate's session follows."""
    arm, curve, leaves = aspen()
    run("convert")
    out = {"bones_converted": len(mod("session").SESSIONS["treeArm"].source.bone_names)}
    bpy.ops.object.mode_set(mode="EDIT")
    eb = arm.data.edit_bones
    leaf_bone = next(b for b in eb if not b.children)
    out["deleted"] = leaf_bone.name
    eb.remove(leaf_bone)
    bpy.ops.object.mode_set(mode="OBJECT")
    s, scene = live_session()
    out["bones_after_delete"] = len(s.source.bone_names)
    live_steps(s, scene, 2)  # writes the pose: a stale session would look the deleted bone up
    out["frame_after_steps"] = scene.frame_current
    stop_live(s, scene)
    me = leaves.data
    co = np.empty(3 * len(me.vertices), np.float32)
    me.vertices.foreach_get("co", co)
    me.vertices.foreach_set("co", co + np.float32(0.25))  # every leaf 0.25 m up (and along x, y)
    me.update()
    bpy.context.view_layer.update()
    s, _ = live_session()
    out["leaf_shift_seen_m"] = float(np.mean(s.leaf_mesh.co[:, 2]) - np.mean(co.reshape(-1, 3)[:, 2]))
    return out


def simulate_headless():
    """Simulate from a script in background mode, both ways of calling it: a clear ERROR, nothing changed."""
    reset()
    obj = rope()
    return {"exec": refused("simulate", obj), "invoke": _invoke_simulate(obj)}


def _invoke_simulate(obj):
    activate(obj)
    before = state()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            r = {"outcome": sorted(bpy.ops.stiff_rods.simulate("INVOKE_DEFAULT")), "message": None}
        except RuntimeError as exc:
            r = {"outcome": "ERROR", "message": str(exc).strip()[len("Error: ") :]}
    r["diff"] = first_diff(before, state())
    return r


def free_after_unlink(kind):
    """Bake a Sapling aspen with a hand-set pose in every rotation mode, leaves (point cache) and bones the bake
    adds; then the user unlinks the baked action (``unlink``), deletes it (``delete``), or also deletes the
    leaves' Mesh Cache modifier and an added bone (``damaged``). Free Bake must give back everything it finds."""
    arm, curve, leaves = aspen(pruned=True)
    hand_set_pose(arm)
    bpy.context.scene.frame_set(1)
    before = state()
    bake = run("bake", frame_start=1, frame_end=3)
    added = list(arm.get("stiff_rods_added_bones", []))
    cache = json.loads(arm["stiff_rods_leaf_cache"])["file"] if "stiff_rods_leaf_cache" in arm else None
    out = {"bake": bake, "added_bones": len(added), "cache_written": bool(cache and os.path.isfile(cache))}
    baked = arm.animation_data.action
    arm.animation_data.action = None
    if kind != "unlink":
        bpy.data.actions.remove(baked)
    if kind == "damaged":
        leaves.modifiers.remove(leaves.modifiers["Stiff Rods Leaves"])
        bpy.ops.object.mode_set(mode="EDIT")
        arm.data.edit_bones.remove(arm.data.edit_bones[added[-1]])
        bpy.ops.object.mode_set(mode="OBJECT")
        out["deleted_bone"] = added[-1]
    out["rebake_refused"] = refused("bake", arm, frame_start=1, frame_end=3)
    out["free"] = run("free_bake")
    bpy.context.scene.frame_set(1)
    after = state()
    if kind == "damaged":  # the user's own deletion of an added bone stays deleted: compare the rest
        before["objects"]["treeArm"]["bones"] = after["objects"]["treeArm"]["bones"]
    out["diff"] = first_diff(before, after)
    out["cache_left"] = bool(cache and os.path.isfile(cache))
    out["bake_actions_left"] = [a.name for a in bpy.data.actions if a.get("stiff_rods_bake")]
    out["free_again"] = run("free_bake")
    return out


def free_after_user_action():
    """The user unlinked the bake and assigned an action of their own: theirs stays, the previous one is kept
    with a fake user, and Free Bake says so; the rest is given back."""
    reset()
    obj = rope()
    obj.data.animation_data_create()
    prev = bpy.data.actions.new("RopeBefore")
    obj.data.animation_data.action = prev
    out = {"bake": run("bake", frame_start=1, frame_end=4)}
    mine = bpy.data.actions.new("MyOwn")
    obj.data.animation_data.action = mine
    out["free"] = run("free_bake")
    out["assigned"] = obj.data.animation_data.action.name
    out["previous_fake_user"] = prev.use_fake_user
    out["bake_actions_left"] = [a.name for a in bpy.data.actions if a.get("stiff_rods_bake")]
    out["props_left"] = sorted(k for k in obj.keys() if k.startswith("stiff_rods_"))
    return out


def pin_to_own_parts():
    """Pin To naming the tree's armature, curve or leaves, and an Empty at the pinned root: ERRORs in the user's
    words, the scene unchanged; the Pin To field's poll offers none of the tree's parts."""
    arm, curve, leaves = aspen()
    root = bpy.data.objects.new("RootEmpty", None)
    bpy.context.scene.collection.objects.link(root)
    far = bpy.data.objects.new("Hand", None)
    bpy.context.scene.collection.objects.link(far)
    out = {}
    for part in (arm, curve, leaves, root):
        arm.stiff_rods.pin_object = part
        out[part.name] = refused("convert", arm)
    arm.stiff_rods.pin_object = None
    bpy.context.view_layer.update()
    poll = mod("properties")._pin_candidate
    out["offered"] = sorted(o.name for o in bpy.data.objects if poll(arm.stiff_rods, o))
    out["offered_for_curve_settings"] = sorted(o.name for o in bpy.data.objects if poll(curve.stiff_rods, o))
    out["settings_owner"] = {o.name: mod("properties").settings_owner(o).name for o in (arm, curve, leaves, far)}
    return out


# ------------------------------------------------------------------ transforms and sizes
def parent_uniform_turned():
    """The tree under an Empty scaled 2× uniformly and turned: every segment centre is the midpoint of its span's
    control points in world space (read from Blender's matrices here), and it bakes."""
    arm, curve, _ = aspen(leaves=False)
    empty = bpy.data.objects.new("Cart", None)
    bpy.context.scene.collection.objects.link(empty)
    empty.scale = (2.0, 2.0, 2.0)
    empty.rotation_euler = (0.3, -0.2, 0.9)
    empty.location = (3.0, -1.0, 0.5)
    arm.parent = empty
    bpy.context.view_layer.update()
    s = mod("operators")._session(bpy.context, rebuild=True)
    mw = np.array(curve.matrix_world)
    err = 0.0
    for b, si in enumerate(s.source.spline_index):
        co = np.array([p.co for p in curve.data.splines[si].bezier_points])
        world = co @ mw[:3, :3].T + mw[:3, 3]
        mid = 0.5 * (world[1:] + world[:-1])
        seg = np.asarray(s.branch_map.span_segment[b])
        err = max(err, float(np.abs(s.model.positions[seg] - mid).max()))
    height = float(np.ptp(np.array([p.co.z for p in curve.data.splines[0].bezier_points])))
    return {"max_centre_error_m": err, "trunk_height_local": height, "bake": run("bake", frame_start=1, frame_end=3)}


def moved_and_turned_rope():
    """The same rope at the origin and turned 90° about Z, moved to (5, 3, 1): the same motion, turned."""
    reset()
    a = rope("RopeA")
    b = rope("RopeB")
    b.rotation_euler.z = np.pi / 2
    b.location = (5.0, 3.0, 1.0)
    bpy.context.view_layer.update()
    out = {}
    for obj in (a, b):
        activate(obj)
        s, scene = live_session()
        x0 = s.sim.positions.copy()
        out[obj.name] = (live_steps(s, scene, 8) - x0).tolist()
        stop_live(s, scene)
    da, db = np.array(out.pop("RopeA")), np.array(out.pop("RopeB"))
    turn = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    out["max_motion_m"] = float(np.abs(da).max())
    out["max_difference_m"] = float(np.abs(da @ turn.T - db).max())
    return out


def delta_transforms():
    """Delta transforms count: a delta scale (1, 1, 2) is refused by name; a delta location moves the model."""
    reset()
    obj = rope()
    obj.delta_scale = (1.0, 1.0, 2.0)
    bpy.context.view_layer.update()
    out = {"delta_scale": refused("convert", obj)}
    obj.delta_scale = (1.0, 1.0, 1.0)
    obj.delta_location = (0.0, 0.0, 3.0)
    bpy.context.view_layer.update()
    s = mod("operators")._session(bpy.context, rebuild=True)
    out["model_z_after_delta_location"] = float(np.mean(s.model.positions[:, 2]))
    return out


def sized_rope(scale):
    """The rope scaled uniformly by ``scale`` (2 m → 2 cm or 200 m): it sags, finitely, less than its length."""
    reset()
    obj = rope()
    obj.scale = (scale, scale, scale)
    obj.data.bevel_depth = 0.01
    bpy.context.view_layer.update()
    sag, segments = tip_sag(obj, frames=4)
    return {"sag_m": sag, "segments": segments, "length_m": 2.0 * scale, "bake": run("bake")}


def huge_tree():
    """The aspen scaled 20× (a 200 m tree): it bakes and every baked rotation is a finite unit quaternion."""
    arm, _, _ = aspen(leaves=False)
    arm.scale = (20.0, 20.0, 20.0)
    bpy.context.view_layer.update()
    out = {"bake": run("bake", frame_start=1, frame_end=3)}
    bpy.context.scene.frame_set(3)
    q = np.array([list(pb.rotation_quaternion) for pb in arm.pose.bones])
    out["finite"] = bool(np.all(np.isfinite(q)))
    out["max_norm_error"] = float(np.abs(np.linalg.norm(q, axis=1) - 1.0).max())
    return out


# ------------------------------------------------------------------ curves
def zero_length_spline():
    """A plain curve whose points all coincide: refused by name, nothing changed."""
    reset()
    obj = bezier_curve("Dot", [(1.0, 1.0, 1.0)] * 4)
    return {"convert": refused("convert", obj), "bake": refused("bake", obj)}


def mixed_splines():
    """One curve with a Bézier, a poly and a NURBS spline: each is a rod, each sags, the bake keys all three and
    Free Bake puts every point back exactly."""
    reset()
    data = bpy.data.curves.new("Mixed", "CURVE")
    data.dimensions, data.bevel_depth = "3D", 0.01
    for k, kind in enumerate(("BEZIER", "POLY", "NURBS")):
        sp = data.splines.new(kind)
        pts = sp.bezier_points if kind == "BEZIER" else sp.points
        pts.add(4)
        for i, p in enumerate(pts):
            p.co = (0.4 * i, float(k), 1.0) if kind == "BEZIER" else (0.4 * i, float(k), 1.0, 1.0)
            if kind == "BEZIER":
                p.handle_left_type = p.handle_right_type = "VECTOR"
        if kind == "NURBS":
            sp.use_endpoint_u = True
    obj = bpy.data.objects.new("Mixed", data)
    bpy.context.scene.collection.objects.link(obj)
    obj.stiff_rods.material, obj.stiff_rods.segment_length, obj.stiff_rods.collide = "RUBBER", 0.1, False
    activate(obj)
    before = state()
    out = {"bake": run("bake", frame_start=1, frame_end=8)}
    bpy.context.scene.frame_set(8)
    out["end_sag_m"] = [
        float(1.0 - (sp.bezier_points[-1].co.z if sp.type == "BEZIER" else sp.points[-1].co.z)) for sp in data.splines
    ]
    out["keyed_splines"] = sorted({fc.data_path.split("]")[0] + "]" for fc in fcurves_of(action_of(obj))})
    out["free"] = run("free_bake")
    bpy.context.scene.frame_set(1)
    out["diff"] = first_diff(before, state())
    return out


# ------------------------------------------------------------------ bones, modes, visibility
def renamed_bone():
    """A Sapling bone renamed after Convert: refused by name (the branch of a bone is found by its name)."""
    arm, _, _ = aspen(leaves=False)
    run("convert")
    arm.data.bones[-1].name = "MyBone"
    return {"convert": refused("convert", arm), "bake": refused("bake", arm)}


def pose_mode_bake():
    """A Sapling armature in Pose Mode whose bake adds bones (Edit Mode and back): it bakes, stays in Pose Mode,
    and Free Bake gives everything back."""
    arm, _, _ = aspen(leaves=False, pruned=True)
    bpy.ops.object.mode_set(mode="POSE")
    before = state()
    out = {"bake": run("bake", frame_start=1, frame_end=3), "mode_after_bake": arm.mode}
    out["bones_added"] = len(arm.get("stiff_rods_added_bones", []))
    out["free"] = run("free_bake")
    out["mode_after_free"] = arm.mode
    bpy.context.scene.frame_set(1)
    out["diff"] = first_diff(before, state())
    return out


def hidden_armature(how):
    """The armature hidden (``hide``: eye icon) or disabled in viewports (``disable``): a bake that must add bones
    is refused by name; one that needs no Edit Mode bakes; Free Bake of added bones while hidden is refused
    before it changes anything."""
    arm, _, _ = aspen(leaves=False, pruned=True)

    def hide(flag):
        if how == "hide":
            arm.hide_set(flag)
        else:
            arm.hide_viewport = flag

    hide(True)
    out = {"bake_adding_bones": refused("bake", arm, frame_start=1, frame_end=3)}
    arm.stiff_rods.add_bones = False
    out["bake_without_adding"] = run("bake", frame_start=1, frame_end=3)
    out["free_without_added"] = run("free_bake")
    arm.stiff_rods.add_bones = True
    hide(False)
    run("bake", frame_start=1, frame_end=3)
    hide(True)
    out["free_hidden_with_added"] = refused("free_bake", arm)
    hide(False)
    out["free_visible"] = run("free_bake")
    return out


# ------------------------------------------------------------------ frames and time
def bake_ranges():
    """Bake ranges and frame settings: beyond the scene's range, negative frames, a single frame, a frame step
    of 3, a subframe and a current frame outside the range. Keys land on every frame asked for, the scene's
    own range and current frame stay."""
    reset()
    obj = rope()
    scene = bpy.context.scene
    out = {}
    for label, start, end in (("beyond", 1, 10), ("negative", -6, -2), ("single", 3, 3)):
        scene.frame_set(2)
        r = run("bake", frame_start=start, frame_end=end)
        out[label] = {"bake": r["outcome"], "keys": key_frames(obj), "frame_after": scene.frame_current}
        run("free_bake")
    scene.frame_step = 3
    run("bake", frame_start=1, frame_end=6)
    out["frame_step_3"] = {"keys": key_frames(obj)}
    run("free_bake")
    scene.frame_step = 1
    s, _ = live_session()
    live_steps(s, scene, 3)
    out["live_frames_with_step"] = scene.frame_current - s.start_frame
    stop_live(s, scene)
    scene.frame_set(2, subframe=0.5)
    run("bake", frame_start=1, frame_end=4)
    out["subframe"] = {"keys": key_frames(obj), "frame_after": scene.frame_current}
    run("free_bake")
    scene.frame_set(20)
    run("bake", frame_start=1, frame_end=4)
    out["outside"] = {"frame_after": scene.frame_current, "scene_range": [scene.frame_start, scene.frame_end]}
    run("free_bake")
    return out


def free_fall(fps, fps_base, frames, substeps=2):
    """An unpinned rope, no damping, falls ``frames`` frames at ``fps``/``fps_base``: its mean drop against the
    time-stepped free fall g·dt²·N(N+1)/2 (N = frames × substeps steps of dt)."""
    reset()
    obj = rope(pin_root=False)
    obj.stiff_rods.damping = 0.0
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = fps, fps_base
    scene.stiff_rods.substeps = substeps
    s = mod("operators")._session(bpy.context, rebuild=True)
    s.reset(1, scene)
    z0 = float(s.sim.positions[:, 2].mean())
    for _ in range(frames):
        s.advance_frame(scene)
    drop = z0 - float(s.sim.positions[:, 2].mean())
    dt = fps_base / fps / substeps
    n = frames * substeps
    return {"drop_m": drop, "expected_m": G * dt * dt * n * (n + 1) / 2, "continuous_m": G * (n * dt) ** 2 / 2}


def gravity_off():
    """Scene gravity off: a pinned rope stays exactly where it is drawn."""
    reset()
    obj = rope()
    bpy.context.scene.use_gravity = False
    rest = points_of(obj).copy()
    out = {"bake": run("bake", frame_start=1, frame_end=6)}
    bpy.context.scene.frame_set(6)
    out["max_motion_m"] = float(np.abs(points_of(obj) - rest).max())
    return out


# ------------------------------------------------------------------ files and folders
def unsaved_leaf_cache():
    """An unsaved file: the leaves' point cache goes to Blender's temporary folder with a warning; Free Bake
    removes it."""
    arm, _, _ = aspen()
    assert not bpy.data.filepath
    r = run("bake", frame_start=1, frame_end=3)
    path = json.loads(arm["stiff_rods_leaf_cache"])["file"]
    out = {"bake": r, "in_tempdir": os.path.dirname(path) == os.path.normpath(bpy.app.tempdir)}
    out["cache_exists"] = os.path.isfile(path)
    out["free"] = run("free_bake")
    out["cache_after_free"] = os.path.isfile(path)
    return out


def unwritable_cache():
    """A saved file whose leaves' point cache cannot be written (a folder is in the way, as root too): the bake
    is refused by name before it simulates, nothing changed."""
    arm, _, _ = aspen()
    folder = os.path.join(OUT, "unwritable")
    os.makedirs(folder, exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(folder, "tree.blend"))
    arm = bpy.data.objects["treeArm"]
    blocker = os.path.join(folder, "leaves_stiff_rods.pc2")
    os.makedirs(blocker, exist_ok=True)
    out = {"bake": refused("bake", arm, frame_start=1, frame_end=3)}
    os.rmdir(blocker)
    out["bake_when_writable"] = run("bake", frame_start=1, frame_end=3)
    out["cache_next_to_blend"] = os.path.isfile(blocker)
    out["free"] = run("free_bake")
    return out


def saved_and_reopened():
    """Convert, save, reopen: Simulate's session is rebuilt from the reopened objects (the old one points at
    freed data) and steps; Bake works."""
    aspen(leaves=False)
    path = os.path.join(OUT, "reopen.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    run("convert")
    old = mod("session").SESSIONS["treeArm"]
    bpy.ops.wm.open_mainfile(filepath=path)
    activate(bpy.data.objects["treeArm"])
    s, scene = live_session()
    live_steps(s, scene, 2)
    out = {"rebuilt": s is not old, "frame_after_steps": scene.frame_current}
    stop_live(s, scene)
    out["bake"] = run("bake", frame_start=1, frame_end=3)
    out["free"] = run("free_bake")
    return out


def renamed_and_deleted():
    """The tree renamed after Convert: its new name is simulated and baked. Its leaves deleted between Convert and
    Bake: the bake has no leaves and Free Bake gives everything back. A Pin To object deleted after Convert: the
    pin is gone from the rebuilt model."""
    arm, curve, leaves = aspen()
    run("convert")
    arm.name = "Aspen"
    s, scene = live_session()
    out = {"owner_after_rename": s.owner_name}
    bake = run("bake", frame_start=1, frame_end=3)
    out["bake_renamed"] = bake["outcome"]
    out["action_renamed"] = action_of(arm).name if action_of(arm) else None
    out["free_renamed"] = run("free_bake")["outcome"]
    run("convert")
    bpy.data.objects.remove(leaves)
    before = state()
    out["bake_without_leaves"] = run("bake", frame_start=1, frame_end=3)
    out["leaf_cache_recorded"] = "stiff_rods_leaf_cache" in arm
    out["free_without_leaves"] = run("free_bake")
    bpy.context.scene.frame_set(1)
    out["diff"] = first_diff(before, state())
    hand = bpy.data.objects.new("Hand", None)
    bpy.context.scene.collection.objects.link(hand)
    hand.location = (0.0, 0.0, 4.0)
    arm.stiff_rods.pin_object = hand
    arm.stiff_rods.rest_shape = "STRESS_FREE"  # Loaded: see pin_on_loaded_tree
    activate(arm)
    s, _ = live_session()
    out["pinned_with_hand"] = int(s.model.pinned.sum())
    bpy.data.objects.remove(hand)
    activate(arm)
    s, _ = live_session()
    out["pinned_after_hand_deleted"] = int(s.model.pinned.sum())
    return out


def pin_on_loaded_tree():
    """Pin To an Empty 4 m up the aspen's trunk with the default Rest Shape (Loaded: pre-stressed for gravity)."""
    arm, _, _ = aspen(leaves=False)
    hand = bpy.data.objects.new("Hand", None)
    bpy.context.scene.collection.objects.link(hand)
    hand.location = (0.0, 0.0, 4.0)
    arm.stiff_rods.pin_object = hand
    return {"convert": refused("convert", arm)}


def instanced_collection():
    """The tree in a collection shown through an instancing Empty: selecting the instance is refused by name."""
    arm, curve, leaves = aspen(leaves=False)
    coll = bpy.data.collections.new("TreeCollection")
    for o in (arm, curve):
        coll.objects.link(o)
    inst = bpy.data.objects.new("TreeInstance", None)
    inst.instance_type, inst.instance_collection = "COLLECTION", coll
    bpy.context.scene.collection.objects.link(inst)
    return {op: refused(op, inst) for op in ("convert", "bake", "free_bake")}


def linked_library():
    """The aspen linked from another .blend (read-only here): Convert reads it; Bake and Free Bake refuse by name
    and change nothing. A library override of it bakes and frees."""
    arm, curve, _ = aspen(leaves=False)
    coll = bpy.data.collections.new("Tree")
    bpy.context.scene.collection.children.link(coll)
    for o in (arm, curve):
        coll.objects.link(o)
        bpy.context.scene.collection.objects.unlink(o)
    lib_path = os.path.join(OUT, "library.blend")
    bpy.ops.wm.save_as_mainfile(filepath=lib_path, copy=True)  # the open file is not the library
    reset()
    with bpy.data.libraries.load(lib_path, link=True) as (src, dst):
        dst.collections = ["Tree"]
    linked = dst.collections[0]
    bpy.context.scene.collection.children.link(linked)
    arm = next(o for o in linked.objects if o.type == "ARMATURE")
    activate(arm)
    out = {"convert_linked": run("convert")}
    out["bake_linked"] = refused("bake", arm, frame_start=1, frame_end=3)
    bpy.context.scene.collection.children.unlink(linked)
    override = linked.override_hierarchy_create(bpy.context.scene, bpy.context.view_layer)
    arm = next(o for o in override.objects if o.type == "ARMATURE")
    out["override_is_override"] = arm.override_library is not None
    activate(arm)
    before = state()
    out["bake_override"] = run("bake", frame_start=1, frame_end=3)
    activate(arm)
    out["free_override"] = run("free_bake")
    bpy.context.scene.frame_set(1)
    out["diff_override"] = first_diff(before, state())
    return out


def leaves_without_faces():
    """A leaves mesh with its faces deleted (vertices only): no leaf segments; the tree bakes without a cache."""
    arm, _, leaves = aspen()
    leaves.data.clear_geometry()
    s = mod("operators")._session(bpy.context, rebuild=True)
    out = {"leaves": s.stats()["leaves"], "bake": run("bake", frame_start=1, frame_end=3)}
    out["leaf_cache"] = "stiff_rods_leaf_cache" in arm
    return out


def two_scenes():
    """The same rope in two scenes with different gravity: each scene's Simulate uses its own."""
    reset()
    obj = rope()
    other = bpy.data.scenes.new("Moon")
    other.collection.objects.link(obj)
    other.gravity = (0.0, 0.0, -1.62)
    out = {"earth": mod("operators")._session(bpy.context).gravity.tolist()}
    moon = types.SimpleNamespace(active_object=obj, scene=other)  # what _session reads of a context in that scene
    out["moon"] = mod("operators")._session(moon).gravity.tolist()
    bpy.data.scenes.remove(other)
    return out


CASES = (
    ("solver_prepared", solver_prepared),  # first: the solver is not loaded yet
    ("stale_model", stale_model),
    ("simulate_headless", simulate_headless),
    ("pin_to_own_parts", pin_to_own_parts),
    ("free_after_unlink", lambda: free_after_unlink("unlink")),
    ("free_after_delete", lambda: free_after_unlink("delete")),
    ("free_after_damage", lambda: free_after_unlink("damaged")),
    ("free_after_user_action", free_after_user_action),
    ("stale_bones", stale_bones),
    ("parent_uniform_turned", parent_uniform_turned),
    ("moved_and_turned_rope", moved_and_turned_rope),
    ("delta_transforms", delta_transforms),
    ("tiny_rope", lambda: sized_rope(0.01)),
    ("huge_rope", lambda: sized_rope(100.0)),
    ("huge_tree", huge_tree),
    ("zero_length_spline", zero_length_spline),
    ("mixed_splines", mixed_splines),
    ("renamed_bone", renamed_bone),
    ("pose_mode_bake", pose_mode_bake),
    ("hidden_armature", lambda: hidden_armature("hide")),
    ("disabled_armature", lambda: hidden_armature("disable")),
    ("bake_ranges", bake_ranges),
    ("fps_1000", lambda: free_fall(1000, 1.0, 50)),
    ("fps_ntsc", lambda: free_fall(30, 1.001, 12)),
    ("fps_1", lambda: free_fall(1, 1.0, 1, substeps=8)),
    ("gravity_off", gravity_off),
    ("unsaved_leaf_cache", unsaved_leaf_cache),
    ("renamed_and_deleted", renamed_and_deleted),
    ("pin_on_loaded_tree", pin_on_loaded_tree),
    ("instanced_collection", instanced_collection),
    ("leaves_without_faces", leaves_without_faces),
    ("two_scenes", two_scenes),
    ("unwritable_cache", unwritable_cache),
    ("saved_and_reopened", saved_and_reopened),
    ("linked_library", linked_library),
)
SAPLING_FREE = {  # the cases the bpy 5 module runs: no Sapling there
    "solver_prepared",
    "stale_model",
    "simulate_headless",
    "free_after_user_action",
    "moved_and_turned_rope",
    "zero_length_spline",
    "mixed_splines",
    "bake_ranges",
    "fps_ntsc",
    "gravity_off",
}


def main():
    global MOD, OUT
    if sys.argv[1:2] == ["bpy5"]:  # python inputs.py bpy5 EXTENSION_ZIP OUT_DIR
        zip_path, OUT = sys.argv[2], sys.argv[3]
        bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default", enable_on_install=True)
        MOD = "bl_ext.user_default.stiff_rods"
        cases = [c for c in CASES if c[0] in SAPLING_FREE]
    else:
        zip_path, OUT = sys.argv[sys.argv.index("--") + 1 :][:2]
        install(zip_path)
        cases = list(CASES)
    os.makedirs(OUT, exist_ok=True)
    only = os.environ.get("INPUTS_CASES")  # a comma-separated subset, when debugging one case
    if only:
        cases = [c for c in cases if c[0] in only.split(",")]
    report_cases("INPUTS_RESULT", {"blender": list(bpy.app.version)}, cases)


if __name__ == "__main__":
    main()
