"""Named Actions on a real Sapling tree (run by tests/blender/test_blender_named_actions.py).

    blender -b --factory-startup --python named_actions.py -- make ZIP OUT_DIR
        Debian's Blender 3.4: installs the legacy add-on ZIP, generates Sapling's small pine without leaves, saves
        OUT_DIR/pine.blend, then bakes it with Named Actions and frees it (the legacy layout of actions).
    python named_actions.py -- bake OUT_DIR
        The bpy module (Blender 5.0, slotted actions) with the add-on of this checkout: opens OUT_DIR/pine.blend,
        bakes Named Actions (calm, breeze, storm) over 12 frames, exports the armature to OUT_DIR/pine.glb with
        Blender's glTF exporter (its NLA tracks as animations), and frees the bake.
Each phase prints ``NAMED_RESULT {json}``: the NLA tracks and their actions and frames after the bake, the bones'
rotation spread per track (radians, from Blender's evaluated pose with that track alone), and the scene's state
before the bake and after Free Bake (actions, tracks, rotation modes, bone count).
"""

import json
import math
import os
import sys
import time

import bpy
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FRAMES = 12
GAME_BONES = 16


def state(arm):
    anim = arm.animation_data
    return {
        "actions": sorted(a.name for a in bpy.data.actions),
        "active": anim.action.name if anim and anim.action else None,
        "tracks": [t.name for t in anim.nla_tracks] if anim else [],
        "modes": sorted({pb.rotation_mode for pb in arm.pose.bones}),
        "bones": len(arm.data.bones),
        "marks": sorted(k for k in arm.keys() if k.startswith("stiff_rods_")),  # the bake's, not the settings
    }


def spread(arm, track):
    """rms over bones and frames of each bone's rotation angle from its rest pose, with only ``track`` playing
    (pose-bone quaternions: the game rig's bones rest where its fit put them, so it has no rotation at rest)."""
    anim = arm.animation_data
    for t in anim.nla_tracks:
        t.mute = t != track
    angles = []
    for f in range(1, FRAMES + 1):
        bpy.context.scene.frame_set(f)
        q = np.array([tuple(pb.rotation_quaternion) for pb in arm.pose.bones])
        angles.append(2 * np.arcsin(np.clip(np.linalg.norm(q[:, 1:], axis=1), 0, 1)))  # exact near 0
    for t in anim.nla_tracks:
        t.mute = False
    return float(np.sqrt(np.mean(np.square(angles))))


def named_bake(arm):
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, FRAMES
    bpy.context.view_layer.objects.active = arm
    for o in bpy.context.view_layer.objects:
        o.select_set(o == arm)
    scene.stiff_rods.use_named_actions = True
    before = state(arm)
    t0 = time.perf_counter()
    assert bpy.ops.stiff_rods.bake(frame_start=1, frame_end=FRAMES) == {"FINISHED"}
    out = {"before": before, "bake_s": time.perf_counter() - t0, "baked": state(arm)}
    anim = arm.animation_data
    out["strips"] = {t.name: [(s.action.name, s.frame_start, s.frame_end) for s in t.strips] for t in anim.nla_tracks}
    out["spread"] = {t.name: spread(arm, t) for t in anim.nla_tracks}
    return out


def game_rig(arm, glb):
    """A 16-bone game rig of the named-action tree and its glTF (the add-on's operators)."""
    for o in bpy.context.view_layer.objects:
        o.select_set(o == arm)
    bpy.context.view_layer.objects.active = arm
    actions, objects = set(bpy.data.actions), set(bpy.data.objects)
    assert bpy.ops.stiff_rods.game_rig(max_bones=GAME_BONES) == {"FINISHED"}
    game = bpy.context.view_layer.objects.active
    anim = game.animation_data
    out = {
        "report": json.loads(game["stiff_rods_game_rig"]),
        "active": anim.action.name if anim.action else None,
        "strips": {t.name: [(s.action.name, s.frame_start, s.frame_end) for s in t.strips] for t in anim.nla_tracks},
        "spread": {t.name: spread(game, t) for t in anim.nla_tracks},
    }
    assert bpy.ops.stiff_rods.export_gltf(filepath=glb) == {"FINISHED"}
    out["name"] = game.name
    for o in set(bpy.data.objects) - objects:  # the game rig removed: Free Bake is checked on the tree alone
        bpy.data.objects.remove(o)
    for a in set(bpy.data.actions) - actions:
        bpy.data.actions.remove(a)
    return out


def make(zip_path, out):
    import addon_utils

    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import make_sapling_tree

    assert bpy.ops.preferences.addon_install(filepath=zip_path, overwrite=True) == {"FINISHED"}
    addon_utils.enable("stiff_rods", default_set=True, handle_error=lambda exc: (_ for _ in ()).throw(exc))
    arm = make_sapling_tree.make_tree("small_pine", leaves=False)
    bpy.ops.object.effector_add(type="WIND", rotation=(0.0, math.pi / 2, 0.0))  # ignored by the named winds
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(out, "pine.blend"))
    result = named_bake(arm)
    result["game"] = game_rig(arm, os.path.join(out, "pine_game_34.glb"))
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.stiff_rods.free_bake() == {"FINISHED"}
    result["freed"] = state(arm)
    return result


def bake(out):
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import bake_forest

    bake_forest.load_forest(ROOT)
    bpy.ops.wm.open_mainfile(filepath=os.path.join(out, "pine.blend"))
    arm = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
    result = named_bake(arm)
    for o in bpy.context.view_layer.objects:
        o.select_set(o == arm)
    props = bpy.ops.export_scene.gltf.get_rna_type().properties.keys()
    mode = {"export_animation_mode": "NLA_TRACKS"} if "export_animation_mode" in props else {}
    if "export_optimize_animation_size" in props:  # every frame's key: a calm sway is below its threshold
        mode["export_optimize_animation_size"] = False
    t0 = time.perf_counter()
    bpy.ops.export_scene.gltf(
        filepath=os.path.join(out, "pine.glb"), use_selection=True, export_animations=True, **mode
    )
    result["gltf_export_s"] = time.perf_counter() - t0
    result["game"] = game_rig(arm, os.path.join(out, "pine_game_50.glb"))
    bpy.context.view_layer.objects.active = arm
    for o in bpy.context.view_layer.objects:
        o.select_set(o == arm)
    assert bpy.ops.stiff_rods.free_bake() == {"FINISHED"}
    result["freed"] = state(arm)
    result["fps"] = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    return result


def main():
    args = sys.argv[sys.argv.index("--") + 1 :]
    result = make(args[1], args[2]) if args[0] == "make" else bake(args[1])
    print("NAMED_RESULT " + json.dumps(result))


main()
