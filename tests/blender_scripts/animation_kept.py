"""A user's animation comes through Bake and Free Bake unchanged on Blender 4.4+ (slotted actions), run by
tests/blender/test_blender_animation_kept.py with a bpy module (4.4+) and the extension zip it takes:

    python animation_kept.py EXTENSION_ZIP

The caller points the user profile at a temporary folder (BLENDER_USER_* set before ``import bpy``). The
script installs the extension from the zip (Get Extensions > Install from Disk), opens
sample_blends/white_birch.blend (a Sapling birch: armature ``treeArm``, curve, leaves) and gives it a
user's animation:

* the action ``UserSway`` with three slots: ``Tree Sway`` (the armature: quaternion, Euler and scale keys on
  bones, a custom property), ``Prop Mover`` (an Empty: location and rotation) and ``Spare`` (no ID, used by an
  NLA strip); keys with Bézier, linear and constant interpolation, handles moved by hand;
* two NLA tracks on the armature: Sapling's ``windAction`` and the action ``UserIdle`` (its slot named
  ``Idle``, not after the armature) pushed down as strips (Combine at an animated influence of 0.6; Add,
  muted, repeated), plus a strip of ``UserSway``'s ``Spare`` slot; the armature's own action plays with
  Combine at 0.8.

Everything is recorded (every action, layer, strip, channelbag, F-curve and key with handles and interpolation,
every slot, every ID's action, slot and NLA tracks and strips, the evaluated Empty and keyed bones at three
frames). Then:

1. ``refused``: a location F-curve in the armature's slot (its own action would move it): Bake refuses and the
   scene is exactly as before; the F-curve is removed again. ``tweak``: the same with the armature's NLA in
   tweak mode (its action cannot be swapped then).
2. ``bake``: Convert (leaves following their bones), Bake frames 1–3. The user's actions must be unchanged key for
   key (Bake gives the armature's action a fake user while the bake holds the armature: recorded), the Empty and
   the NLA as they were; the baked keys are in a new action, its one slot assigned to the armature.
3. ``free``: Free Bake. Everything recorded must be exactly as before the bake.

Prints one line ``ANIM_KEPT {json}``.
"""

import json
import os
import sys
import time
import traceback

import bpy

HERE = os.path.dirname(os.path.abspath(__file__))
BLEND = os.path.join(HERE, "..", "..", "sample_blends", "white_birch.blend")
MODULE = "bl_ext.user_default.stiff_rods"
FRAMES = (1, 3)
PROBE_FRAMES = (9, 23)
BONES = ("bone000.000", "bone000.002", "bone001.000")  # bones the user's slot keys


# ------------------------------------------------------------------ the user's animation
def keyed(fcurves, path, index, keys, group=None):
    """An F-curve of ``fcurves`` (a channelbag's) with ``keys`` [(frame, value, interpolation)], every key's
    handles then moved by hand (free handles) so they are not what Blender would compute."""
    fc = fcurves.new(path, index=index)
    if group is not None:
        fc.group = group
    for frame, value, interpolation in keys:
        kp = fc.keyframe_points.insert(frame, value)
        kp.interpolation = interpolation
    fc.update()
    for k, kp in enumerate(fc.keyframe_points):
        kp.handle_left_type = kp.handle_right_type = "FREE"
        kp.handle_left = (kp.co[0] - 2.5, kp.co[1] + 0.125 * (k + 1))
        kp.handle_right = (kp.co[0] + 1.5, kp.co[1] - 0.0625 * (k + 1))
    return fc


def channelbag(action, slot):
    if not action.layers:
        action.layers.new("Layer")
    layer = action.layers[0]
    strip = layer.strips[0] if layer.strips else layer.strips.new(type="KEYFRAME")
    return strip.channelbags.new(slot)


def bone_curves(bag):
    grp = {name: bag.groups.new(name) for name in BONES}
    bone = 'pose.bones["{}"].'.format
    for c, v in enumerate((0.98, 0.1, -0.12, 0.05)):
        keys = [(1, v, "BEZIER"), (12, v * 0.9, "LINEAR"), (30, v, "BEZIER")]
        keyed(bag.fcurves, bone(BONES[0]) + "rotation_quaternion", c, keys, grp[BONES[0]])
    for c, v in enumerate((0.2, -0.1, 0.3)):
        keys = [(1, v, "CONSTANT"), (15, -v, "BEZIER")]
        keyed(bag.fcurves, bone(BONES[1]) + "rotation_euler", c, keys, grp[BONES[1]])
    keys = [(3, 1.0, "BEZIER"), (18, 1.4, "BEZIER"), (26, 0.9, "LINEAR")]
    keyed(bag.fcurves, bone(BONES[2]) + "scale", 1, keys, grp[BONES[2]])
    keyed(bag.fcurves, '["user_weight"]', 0, [(1, 0.0, "LINEAR"), (20, 1.0, "BEZIER")])


def user_animation(arm):
    """The armature, an Empty and the NLA as described in the module's docstring; the Empty."""
    arm["user_weight"] = 0.0
    empty = bpy.data.objects.new("UserEmpty", None)
    bpy.context.scene.collection.objects.link(empty)

    sway = bpy.data.actions.new("UserSway")
    tree_slot = sway.slots.new(id_type="OBJECT", name="Tree Sway")
    prop_slot = sway.slots.new(id_type="OBJECT", name="Prop Mover")
    spare_slot = sway.slots.new(id_type="OBJECT", name="Spare")
    bone_curves(channelbag(sway, tree_slot))
    bag = channelbag(sway, prop_slot)
    for c in range(3):
        keyed(bag.fcurves, "location", c, [(1, 0.5 * c, "BEZIER"), (10, 2.0 - c, "LINEAR"), (24, 1.0 + c, "BEZIER")])
    keyed(bag.fcurves, "rotation_euler", 2, [(1, 0.0, "BEZIER"), (24, 1.2, "BEZIER")])
    bag = channelbag(sway, spare_slot)
    keyed(bag.fcurves, 'pose.bones["bone000.001"].location', 2, [(1, 0.0, "BEZIER"), (16, 0.02, "BEZIER")])

    idle = bpy.data.actions.new("UserIdle")
    idle_slot = idle.slots.new(id_type="OBJECT", name="Idle")
    bag = channelbag(idle, idle_slot)
    keyed(bag.fcurves, f'pose.bones["{BONES[1]}"].rotation_euler', 0, [(1, 0.0, "BEZIER"), (20, 0.4, "BEZIER")])

    ad = arm.animation_data
    wind = ad.action  # Sapling's windAction (no F-curves), with its one slot
    base = ad.nla_tracks.new()
    base.name = "User Base"
    strip = base.strips.new("Wind", 1, wind)
    strip.action_slot = wind.slots[0]
    strip = base.strips.new("Idle", 40, idle)
    strip.action_slot = idle_slot
    strip.blend_type = "COMBINE"
    strip.use_animated_influence = True
    strip.influence = 0.6
    strip.extrapolation = "HOLD_FORWARD"
    top = ad.nla_tracks.new(prev=base)
    top.name = "User Spare"
    strip = top.strips.new("Spare", 5, sway)
    strip.action_slot = spare_slot
    strip.blend_type = "ADD"
    strip.repeat = 2.0
    strip.mute = True
    top.lock = True

    ad.action = sway
    ad.action_slot = tree_slot
    ad.action_blend_type = "COMBINE"
    ad.action_influence = 0.8
    ad.action_extrapolation = "HOLD_FORWARD"
    empty.animation_data_create()
    empty.animation_data.action = sway
    empty.animation_data.action_slot = prop_slot
    return empty


# ------------------------------------------------------------------ records
def vec(v):
    return [float(x) for x in v]


def key_record(kp):
    return {
        "co": vec(kp.co),
        "handle_left": vec(kp.handle_left),
        "handle_right": vec(kp.handle_right),
        "handle_types": [kp.handle_left_type, kp.handle_right_type],
        "interpolation": kp.interpolation,
        "easing": kp.easing,
        "type": kp.type,
    }


def fcurve_record(fc):
    return {
        "data_path": fc.data_path,
        "array_index": fc.array_index,
        "group": fc.group.name if fc.group else None,
        "extrapolation": fc.extrapolation,
        "mute": fc.mute,
        "modifiers": [m.type for m in fc.modifiers],
        "keys": [key_record(kp) for kp in fc.keyframe_points],
    }


def action_record(action):
    slots = {s.handle: s.identifier for s in action.slots}
    return {
        "fake_user": action.use_fake_user,
        "users": action.users,
        "custom": sorted(action.keys()),
        "slots": [
            {
                "identifier": s.identifier,
                "handle": s.handle,
                "name": s.name_display,
                "id_root": s.target_id_type,
                "users": sorted(u.name for u in s.users()),
            }
            for s in action.slots
        ],
        "active_slot": action.slots.active.identifier if action.slots.active else None,
        "layers": [
            {
                "name": ly.name,
                "strips": [
                    {
                        "type": st.type,
                        "channelbags": [
                            {
                                "slot": slots.get(bag.slot_handle),
                                "groups": [g.name for g in bag.groups],
                                "fcurves": [fcurve_record(fc) for fc in bag.fcurves],
                            }
                            for bag in st.channelbags
                        ],
                    }
                    for st in ly.strips
                ],
            }
            for ly in action.layers
        ],
    }


STRIP_ATTRS = (
    "name", "frame_start", "frame_end", "action_frame_start", "action_frame_end", "blend_type", "influence",
    "use_animated_influence", "mute", "extrapolation", "repeat", "scale", "blend_in", "blend_out", "use_reverse",
    "action_slot_handle",
)  # fmt: skip
ANIM_ATTRS = (
    "action_blend_type", "action_influence", "action_extrapolation", "use_nla", "use_tweak_mode",
    "action_slot_handle", "last_slot_identifier",
)  # fmt: skip


def anim_record(idb):
    ad = idb.animation_data
    if ad is None:
        return None
    out = {a: getattr(ad, a) for a in ANIM_ATTRS}
    out["action"] = ad.action.name if ad.action else None
    out["action_slot"] = ad.action_slot.identifier if ad.action_slot else None
    out["nla"] = [
        {
            "name": t.name,
            "mute": t.mute,
            "lock": t.lock,
            "solo": t.is_solo,
            "strips": [
                {a: getattr(s, a) for a in STRIP_ATTRS}
                | {
                    "action": s.action.name if s.action else None,
                    "action_slot": s.action_slot.identifier if s.action_slot else None,
                    "fcurves": [fcurve_record(fc) for fc in s.fcurves],
                }
                for s in t.strips
            ],
        }
        for t in ad.nla_tracks
    ]
    return out


def evaluated(arm, empty):
    """The Empty's world matrix and the keyed bones' pose matrices at PROBE_FRAMES (the animation at work)."""
    scene = bpy.context.scene
    before = scene.frame_current
    # Only the animated objects are evaluated: the birch's curve and leaves (deformed by every bone) take
    # seconds per frame in the depsgraph and carry no animation of their own.
    hidden = [o for o in scene.objects if o not in (arm, empty) and not o.hide_viewport]
    for o in hidden:
        o.hide_viewport = True
    out = {}
    for f in PROBE_FRAMES:
        scene.frame_set(f)
        out[str(f)] = {
            "empty": [vec(r) for r in empty.matrix_world],
            "bones": {n: [vec(r) for r in arm.pose.bones[n].matrix_basis] for n in BONES},
            "user_weight": float(arm.evaluated_get(bpy.context.evaluated_depsgraph_get())["user_weight"]),
        }
    scene.frame_set(before)
    for o in hidden:
        o.hide_viewport = False
    return out


def record(arm, empty, skip=(), evaluate=True):
    """Everything of the user's animation (``skip``: actions left out, the bake's); with ``evaluate`` also the
    evaluated Empty and bones (slow: the birch's depsgraph at each probe frame)."""
    ids = [*bpy.data.objects, *bpy.data.armatures, *bpy.data.curves, *bpy.data.meshes]
    return {
        "actions": {a.name: action_record(a) for a in bpy.data.actions if a.name not in skip},
        "ids": {f"{type(i).__name__}:{i.name}": anim_record(i) for i in ids},
        "evaluated": evaluated(arm, empty) if evaluate else None,
    }


def differences(a, b, path="", out=None, limit=12):
    """Where the records ``a`` and ``b`` differ: a list of "path: a != b", at most ``limit``."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                out.append(f"{path}/{k}: {'missing before' if k not in a else 'missing after'}")
            else:
                differences(a[k], b[k], f"{path}/{k}", out, limit)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            differences(x, y, f"{path}[{k}]", out, limit)
    elif isinstance(a, list) and isinstance(b, list):
        out.append(f"{path}: {len(a)} items before, {len(b)} after")
    elif a != b:
        out.append(f"{path}: {json.dumps(a)[:200]} != {json.dumps(b)[:200]}")
    return out[:limit]


def counts(rec):
    actions = rec["actions"].values()
    bags = [bag for a in actions for ly in a["layers"] for st in ly["strips"] for bag in st["channelbags"]]
    nla = [t for i in rec["ids"].values() if i for t in i["nla"]]
    return {
        "actions": len(rec["actions"]),
        "slots": sum(len(a["slots"]) for a in actions),
        "fcurves": sum(len(b["fcurves"]) for b in bags),
        "keys": sum(len(fc["keys"]) for b in bags for fc in b["fcurves"]),
        "nla_tracks": len(nla),
        "nla_strips": sum(len(t["strips"]) for t in nla),
        "ids_with_action": sum(1 for i in rec["ids"].values() if i and i["action"]),
    }


# ------------------------------------------------------------------ the operators
def call(op, **kw):
    try:
        return sorted(getattr(bpy.ops.stiff_rods, op)(**kw))
    except RuntimeError as exc:
        return f"raised: {exc}"


def activate(obj):
    for o in bpy.context.view_layer.objects:
        o.select_set(o == obj)
    bpy.context.view_layer.objects.active = obj


def refused_case(arm, empty, before):
    """Bake of an armature whose own slot moves it: refused, nothing changed."""
    bag = arm.animation_data.action.layers[0].strips[0].channelbag(arm.animation_data.action_slot)
    fc = keyed(bag.fcurves, "location", 0, [(1, 0.0, "BEZIER"), (10, 0.3, "BEZIER")])
    moving = record(arm, empty, evaluate=False)
    activate(arm)
    outcome = call("bake", frame_start=FRAMES[0], frame_end=FRAMES[1])
    diff = differences(moving, record(arm, empty, evaluate=False))
    bag.fcurves.remove(fc)
    back = differences(static(before), record(arm, empty, evaluate=False))
    return {"outcome": outcome, "changed": diff, "after_removing_the_fcurve": back}


def tweak_case(arm, empty, before):
    """Bake while the armature's NLA is in tweak mode (editing the Idle strip's action): refused, nothing changed."""
    ad = arm.animation_data
    track = ad.nla_tracks["User Base"]
    ad.nla_tracks.active = track
    for t in ad.nla_tracks:
        for st in t.strips:
            st.select = st.name == "Idle"
    ad.use_tweak_mode = True
    tweaking = record(arm, empty, evaluate=False)
    activate(arm)
    outcome = call("bake", frame_start=FRAMES[0], frame_end=FRAMES[1])
    diff = differences(tweaking, record(arm, empty, evaluate=False))
    ad.use_tweak_mode = False
    for st in track.strips:
        st.select = False
    return {
        "tweaking": tweaking["ids"]["Object:treeArm"]["use_tweak_mode"],
        "outcome": outcome,
        "changed": diff,
        "after_leaving_tweak_mode": differences(static(before), record(arm, empty, evaluate=False)),
    }


def bake_case(arm, empty, before):
    activate(arm)
    t0 = time.perf_counter()
    r = {"convert": call("convert")}
    r["convert_seconds"] = round(time.perf_counter() - t0, 2)
    t0 = time.perf_counter()
    r["bake"] = call("bake", frame_start=FRAMES[0], frame_end=FRAMES[1])
    r["bake_seconds"] = round(time.perf_counter() - t0, 2)
    ad = arm.animation_data
    baked = ad.action
    r["baked_action"] = baked.name if baked else None
    r["baked_tagged"] = bool(baked is not None and baked.get("stiff_rods_bake"))
    if not r["baked_tagged"]:
        return r
    r["baked_slot"] = ad.action_slot.identifier if ad.action_slot else None
    r["baked_slots"] = [s.identifier for s in baked.slots]
    r["baked_fcurves"] = len(_fcurves(baked))
    r["baked_paths"] = sorted({fc.data_path.split('"]')[-1] for fc in _fcurves(baked)})
    r["baked_frames"] = sorted({kp.co[0] for fc in _fcurves(baked) for kp in fc.keyframe_points})
    during = record(arm, empty, skip={baked.name})
    # the user's actions, key for key, apart from the fake user and users count Bake changes while it holds them
    r["user_actions"] = differences(_content(before["actions"]), _content(during["actions"]))
    r["user_actions_kept_by"] = {n: _holders(a) for n, a in during["actions"].items() if n in before["actions"]}
    r["user_actions_before"] = {n: _holders(a) for n, a in before["actions"].items()}
    others = {k: v for k, v in during["ids"].items() if k != "Object:treeArm"}
    r["other_ids"] = differences({k: v for k, v in before["ids"].items() if k != "Object:treeArm"}, others)
    r["armature_nla"] = differences(before["ids"]["Object:treeArm"]["nla"], during["ids"]["Object:treeArm"]["nla"])
    r["remembered"] = {k: arm[k] for k in arm.keys() if k.startswith("stiff_rods_previous")}
    r["empty_evaluated"] = differences(
        {f: e["empty"] for f, e in before["evaluated"].items()}, {f: e["empty"] for f, e in during["evaluated"].items()}
    )
    return r


def _holders(action_rec):
    """Fake user, users, and each slot's users of a recorded action."""
    slots = {s["identifier"]: s["users"] for s in action_rec["slots"]}
    return {"fake_user": action_rec["fake_user"], "users": action_rec["users"], "slot_users": slots}


def _fcurves(action):
    return [fc for ly in action.layers for st in ly.strips for bag in st.channelbags for fc in bag.fcurves]


def static(rec):
    return dict(rec, evaluated=None)


def _content(actions):
    """The actions without what Bake changes while it holds the armature: the fake user, the users of the
    action and of the armature's slot."""
    out = {}
    for n, a in actions.items():
        out[n] = {k: v for k, v in a.items() if k not in ("fake_user", "users")}
        out[n]["slots"] = [{k: v for k, v in s.items() if k != "users"} for s in a["slots"]]
    return out


def main():
    zip_path = os.path.abspath(sys.argv[1])
    out = {"blender": list(bpy.app.version)}
    try:
        done = bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default", enable_on_install=True)
        assert done == {"FINISHED"}, done
        assert MODULE in bpy.context.preferences.addons, f"{MODULE} is not enabled"
        out["module_file"] = sys.modules[MODULE].__file__
        bpy.ops.wm.open_mainfile(filepath=os.path.abspath(BLEND))
        arm = bpy.data.objects["treeArm"]
        arm.stiff_rods.use_leaves = False  # the leaves follow their bones: 5,879 segments, not 15,338 (CI time)
        empty = user_animation(arm)
        t0 = time.perf_counter()
        before = record(arm, empty)
        out["record_seconds"] = round(time.perf_counter() - t0, 2)
        out["before"] = counts(before)
        out["refused"] = refused_case(arm, empty, before)
        out["tweak"] = tweak_case(arm, empty, before)
        out["bake"] = bake_case(arm, empty, before)
        out["free"] = {"outcome": call("free_bake")}
        after = record(arm, empty)
        out["after"] = counts(after)
        out["free"]["differences"] = differences(before, after)
        out["free"]["equal"] = before == after
        out["free"]["actions"] = sorted(after["actions"])
    except Exception:
        out["error"] = traceback.format_exc()
    print("ANIM_KEPT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
