"""The game rig of the baked white birch, in the bpy module (run by tests/blender/test_blender_game_rig.py).

    python game_rig.py ROOT OUT_DIR FRAMES LEAVES(0/1)

Loads the add-on of the checkout ROOT (tools/bake_forest.load_forest, which registers its operators),
opens sample_blends/white_birch.blend and:

1. asks Game Rig of the tree before any bake: it must refuse, and the file must be as before (objects, data,
   actions, modifiers, selection, frame);
2. bakes the storm preset over frames 1..FRAMES (leaves on or off), builds game rigs of 128 and 64 bones in one
   Game Rig (LODs 2), and exports each with Export glTF;
3. reads, with Blender, the evaluated world vertices of each game mesh at three frames (OUT_DIR/game_<B>_<f>.npy),
   its rest vertices (rest_<B>.npy), and the full rig's evaluated geometry (curve + leaves) at the middle frame,
   to check the reported error there.

With LEAVES 0 the leaves object is deleted before the bake (a bare tree: the rig's mesh is the curve's).

Prints ``GAME_RIG {json}``.
"""

import json
import os
import sys
import time

ROOT, OUT, FRAMES, LEAVES = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
sys.path.insert(0, os.path.join(ROOT, "tools"))
import bake_forest  # noqa: E402

bake_forest.load_forest(ROOT)
import bpy  # noqa: E402
import numpy as np  # noqa: E402
from stiff_rods.addon import game_files, game_rig  # noqa: E402

bpy.ops.wm.open_mainfile(filepath=os.path.join(ROOT, "sample_blends", "white_birch.blend"))
scene = bpy.context.scene
arm, curve, leaves = (bpy.data.objects[n] for n in ("treeArm", "tree", "leaves"))
out: dict = {}


def snapshot() -> dict:
    view_layer = bpy.context.view_layer
    return dict(
        objects=sorted(bpy.data.objects.keys()),
        meshes=sorted(bpy.data.meshes.keys()),
        armatures=sorted(bpy.data.armatures.keys()),
        actions=sorted(bpy.data.actions.keys()),
        modifiers={o.name: [[m.name, m.show_viewport] for m in o.modifiers] for o in bpy.data.objects},
        selected=sorted(o.name for o in view_layer.objects if o.select_get()),
        active=view_layer.objects.active.name if view_layer.objects.active else None,
        frame=scene.frame_current,
    )


def select_only(obj) -> None:
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj


def world_points(obj, depsgraph):
    return game_rig.evaluated_points(obj, depsgraph)


# 1. not baked: refused, nothing changed
check = [1, (1 + FRAMES) // 2, FRAMES]
select_only(arm)
scene.frame_set(check[1])
before = snapshot()
try:
    out["unbaked"] = sorted(bpy.ops.stiff_rods.game_rig(max_bones=64))
except RuntimeError as exc:  # the bpy module raises an operator's ERROR report
    out["unbaked"] = str(exc)
out["unbaked_unchanged"] = snapshot() == before

# 2. bake, build, export
scene.frame_start, scene.frame_end = 1, FRAMES
if not LEAVES:
    bpy.data.objects.remove(leaves)
arm.stiff_rods.use_leaves = LEAVES
assert bpy.ops.stiff_rods.storm_preset() == {"FINISHED"}
clock = time.perf_counter()
assert bpy.ops.stiff_rods.bake(frame_start=1, frame_end=FRAMES) == {"FINISHED"}
out["bake_s"] = time.perf_counter() - clock
select_only(arm)
scene.frame_set(check[1])  # a baked frame: the read gives it back without evaluating the tree once more
clock = time.perf_counter()
assert bpy.ops.stiff_rods.game_rig(max_bones=128, lods=2) == {"FINISHED"}
out["game_rig_s"] = time.perf_counter() - clock
games = sorted((o for o in bpy.data.objects if game_rig.GAME_TAG in o), key=lambda o: -len(o.data.bones))
out["active_after_build"] = bpy.context.view_layer.objects.active.name
out["rigs"] = []
for game in games:
    report = json.loads(game[game_rig.GAME_TAG])
    mesh = bpy.data.objects[game[game_rig.GAME_MESH]]
    path = os.path.join(OUT, f"game_{report['bones']}.glb")
    select_only(game)
    keep = snapshot()
    clock = time.perf_counter()
    assert bpy.ops.stiff_rods.export_gltf(filepath=path) == {"FINISHED"}
    report["export_wall_s"] = time.perf_counter() - clock
    report["export"] = json.loads(game[game_files.GAME_EXPORT])
    report["export_kept_scene"] = snapshot() == keep
    report["glb"], report["glb_bytes"], report["mesh"] = path, os.path.getsize(path), mesh.name
    report["bone_names"] = [b.name for b in game.data.bones]
    report["groups_per_vertex"] = max(len(v.groups) for v in mesh.data.vertices)
    co = np.empty(3 * len(mesh.data.vertices), np.float32)
    mesh.data.vertices.foreach_get("co", co)
    np.save(os.path.join(OUT, f"rest_{report['bones']}.npy"), co.reshape(-1, 3) @ np.array(mesh.matrix_world)[:3, :3].T)
    out["rigs"].append(report)

# 3. Blender's evaluated meshes at three frames (the full rig at the middle one)
out["check_frames"] = check
out["fps"] = scene.render.fps / scene.render.fps_base
scene.frame_set(check[1])
depsgraph = bpy.context.evaluated_depsgraph_get()
full = np.concatenate([world_points(o, depsgraph) for o in ([curve, leaves] if LEAVES else [curve])])
np.save(os.path.join(OUT, "full_mid.npy"), full)
out["frame_error"] = {}
for game in games:
    mesh = bpy.data.objects[game[game_rig.GAME_MESH]]
    d = np.linalg.norm(world_points(mesh, depsgraph) - full, axis=1)
    out["frame_error"][str(len(game.data.bones))] = [float(np.sqrt(np.mean(d**2))), float(d.max())]
curve.hide_viewport = True  # the test's own scene: the tree's 7 s envelope deform is not needed any more
if LEAVES:
    leaves.hide_viewport = True
for f in check:
    scene.frame_set(f)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    for game in games:
        mesh = bpy.data.objects[game[game_rig.GAME_MESH]]
        np.save(os.path.join(OUT, f"game_{len(game.data.bones)}_{f}.npy"), world_points(mesh, depsgraph))
print("GAME_RIG " + json.dumps(out), flush=True)
