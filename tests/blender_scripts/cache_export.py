"""Export Cache on a real Sapling tree (run by tests/blender/test_blender_cache_export.py).

    blender -b --factory-startup --python cache_export.py -- make OUT_DIR
        Debian's Blender 3.4 (built without USD and Alembic): generates Sapling's small pine with leaves, saves
        OUT_DIR/pine.blend, loads the add-on of this checkout and reports the Export Cache operator's poll.
    python cache_export.py -- bake OUT_DIR
        The bpy module (Blender 5.0): the storm preset, a 6-frame bake, Blender's evaluated world points of the
        branches (the curve's mesh) and the leaves at every frame (OUT_DIR/blender_<object>.npy, (F, V, 3) m),
        then Export Cache to OUT_DIR/pine.usdc and OUT_DIR/pine.abc; also Export Cache before the bake.
    python cache_export.py -- abc OUT_DIR
        A fresh bpy process without the add-on: imports OUT_DIR/pine.abc and writes its objects' evaluated world
        points per frame (OUT_DIR/abc_<object>.npy).
    python cache_export.py -- usd OUT_DIR [NAME]
        Plain Python with usd-core (pxr), no bpy: each mesh prim's points at each time code of OUT_DIR/NAME.usdc
        (default pine), to world with ComputeLocalToWorldTransform and the stage's metersPerUnit
        (OUT_DIR/usd_<xform>.npy, or OUT_DIR/NAME_usd_<xform>.npy for another NAME).
    python cache_export.py -- birch OUT_DIR
        The bpy module: the bundled leafy birch (sample_blends/white_birch.blend) in the storm, BIRCH_FRAMES frames
        baked, exported as OUT_DIR/birch.usdc, Blender's evaluated world points per frame
        (OUT_DIR/birch_blender_<object>.npy).
Each phase prints ``CACHE_RESULT {json}``.
"""

import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FRAMES = 6
BIRCH_FRAMES = 3


def world_points(obj, depsgraph):
    """(V, 3) world positions [m] of ``obj``'s evaluated mesh (float64 transform of Blender's float32 points)."""
    ev = obj.evaluated_get(depsgraph)
    mesh = ev.to_mesh()
    co = np.empty(3 * len(mesh.vertices), np.float32)
    mesh.vertices.foreach_get("co", co)
    ev.to_mesh_clear()
    m = np.array(ev.matrix_world, dtype=float)
    return co.reshape(-1, 3).astype(float) @ m[:3, :3].T + m[:3, 3]


def sample(bpy, objects, frames, out, prefix):
    """Every frame's evaluated world points of ``objects``, saved as OUT_DIR/<prefix>_<name>.npy."""
    scene = bpy.context.scene
    points = {o.name: [] for o in objects}
    for f in frames:
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        for o in objects:
            points[o.name].append(world_points(o, dg))
    for name, p in points.items():
        np.save(os.path.join(out, f"{prefix}_{name}.npy"), np.array(p))
    return {name: len(p[0]) for name, p in points.items()}


def load_addon():
    import bpy

    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import bake_forest

    bake_forest.load_forest(ROOT)
    from stiff_rods.addon import ops_cache  # registered here until the add-on registers it itself

    if not hasattr(bpy.types, ops_cache.STIFF_RODS_OT_export_cache.__name__):
        bpy.utils.register_class(ops_cache.STIFF_RODS_OT_export_cache)
    return ops_cache


def make(out):
    import bpy

    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import make_sapling_tree

    make_sapling_tree.make_tree("small_pine", leaves=True)
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(out, "pine.blend"))
    ops_cache = load_addon()
    from stiff_rods.addon import cache_export

    try:
        bpy.ops.stiff_rods.export_cache(filepath=os.path.join(out, "x.usdc"))
        message = None
    except RuntimeError as exc:
        message = str(exc)
    return {
        "version": list(bpy.app.version),
        "poll": ops_cache.STIFF_RODS_OT_export_cache.poll(bpy.context),
        "call_error": message,
        "available": {fmt: list(cache_export.available(fmt)) for fmt in cache_export.FORMATS},
        "files": sorted(os.listdir(out)),
    }


def scene_state(bpy):
    scene, vl = bpy.context.scene, bpy.context.view_layer
    return {
        "selected": sorted(o.name for o in vl.objects if o.select_get()),
        "active": vl.objects.active.name if vl.objects.active else None,
        "frames": [scene.frame_start, scene.frame_end, scene.frame_current],
        "objects": sorted(o.name for o in bpy.data.objects),
        "meshes": sorted(m.name for m in bpy.data.meshes),
    }


def export(bpy, path, fmt):
    t0 = time.perf_counter()
    bpy.ops.stiff_rods.export_cache(filepath=path, format=fmt)
    return {"seconds": time.perf_counter() - t0, "bytes": os.path.getsize(path)}


def bake(out):
    import bpy

    load_addon()
    bpy.ops.wm.open_mainfile(filepath=os.path.join(out, "pine.blend"))
    scene = bpy.context.scene
    arm = bpy.data.objects["treeArm"]
    tree, leaves = bpy.data.objects["tree"], bpy.data.objects["leaves"]
    arm.location, arm.rotation_euler = (2.0, -1.5, 0.25), (0.0, 0.0, 0.7)  # world points ≠ local points
    scene.frame_start, scene.frame_end = 1, FRAMES
    vl = bpy.context.view_layer
    vl.objects.active = arm
    for o in vl.objects:
        o.select_set(o == arm)
    try:
        bpy.ops.stiff_rods.export_cache(filepath=os.path.join(out, "early.usdc"))
        early = None
    except RuntimeError as exc:
        early = str(exc)
    result = {"not_baked": early, "files_before_bake": sorted(os.listdir(out))}
    bpy.ops.stiff_rods.storm_preset()
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(out, "baked.blend"))  # the leaves' .pc2 goes beside it
    t0 = time.perf_counter()
    assert bpy.ops.stiff_rods.bake(frame_start=1, frame_end=FRAMES) == {"FINISHED"}
    result["bake_s"] = time.perf_counter() - t0
    scene.frame_set(3)
    leaves.select_set(True)  # a selection the export must give back
    before = scene_state(bpy)
    result["usd"] = export(bpy, os.path.join(out, "pine.usdc"), "USD")
    result["after_usd"] = scene_state(bpy)
    result["abc"] = export(bpy, os.path.join(out, "pine.abc"), "ALEMBIC")
    result["after_abc"] = scene_state(bpy)
    result["before"] = before
    result["vertices"] = sample(bpy, [tree, leaves], range(1, FRAMES + 1), out, "blender")
    result["files"] = sorted(os.listdir(out))
    return result


def birch(out):
    import shutil

    import bpy

    load_addon()
    blend = os.path.join(out, "birch.blend")
    shutil.copy(os.path.join(ROOT, "sample_blends", "white_birch.blend"), blend)
    bpy.ops.wm.open_mainfile(filepath=blend)
    scene = bpy.context.scene
    arm = bpy.data.objects["treeArm"]
    scene.frame_start, scene.frame_end = 1, BIRCH_FRAMES
    vl = bpy.context.view_layer
    vl.objects.active = arm
    for o in vl.objects:
        o.select_set(o == arm)
    bpy.ops.stiff_rods.storm_preset()
    t0 = time.perf_counter()
    assert bpy.ops.stiff_rods.bake(frame_start=1, frame_end=BIRCH_FRAMES) == {"FINISHED"}
    result = {"bake_s": time.perf_counter() - t0, "usd": export(bpy, os.path.join(out, "birch.usdc"), "USD")}
    objects = [bpy.data.objects["tree"], bpy.data.objects["leaves"]]
    result["vertices"] = sample(bpy, objects, range(1, BIRCH_FRAMES + 1), out, "birch_blender")
    return result


def abc(out):
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert bpy.ops.wm.alembic_import(filepath=os.path.join(out, "pine.abc"), as_background_job=False) == {"FINISHED"}
    meshes = [o for o in bpy.context.scene.objects if o.type == "MESH"]
    return {
        "addon": "stiff_rods" in sys.modules,
        "objects": sorted((o.name, o.type) for o in bpy.context.scene.objects),
        "vertices": sample(bpy, meshes, range(1, FRAMES + 1), out, "abc"),
    }


def usd(out, name="pine"):
    from pxr import Usd, UsdGeom

    stage = Usd.Stage.Open(os.path.join(out, f"{name}.usdc"))
    prefix = "usd" if name == "pine" else f"{name}_usd"
    scale = UsdGeom.GetStageMetersPerUnit(stage)
    prims = {}
    for prim in stage.Traverse():
        if not prim.IsA(UsdGeom.Mesh):
            continue
        mesh = UsdGeom.Mesh(prim)
        attr = mesh.GetPointsAttr()
        times = attr.GetTimeSamples()
        frames = []
        for t in times:
            local = np.array(attr.Get(t), dtype=float)
            m = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(t), dtype=float)  # row vectors
            frames.append(scale * (local @ m[:3, :3] + m[3, :3]))
        xform = prim.GetParent().GetName()  # the object's Xform; the Mesh prim is its data
        np.save(os.path.join(out, f"{prefix}_{xform}.npy"), np.array(frames))
        prims[xform] = {"path": str(prim.GetPath()), "times": list(times)}
    return {
        "pxr": "bpy" not in sys.modules,
        "up_axis": UsdGeom.GetStageUpAxis(stage),
        "meters_per_unit": scale,
        "time_codes": [stage.GetStartTimeCode(), stage.GetEndTimeCode(), stage.GetTimeCodesPerSecond()],
        "types": sorted({p.GetTypeName() for p in stage.Traverse()}),
        "prims": prims,
    }


def main():
    args = sys.argv[sys.argv.index("--") + 1 :]
    phase = {"make": make, "bake": bake, "abc": abc, "usd": usd, "birch": birch}[args[0]]
    print("CACHE_RESULT " + json.dumps(phase(*args[1:])))


main()
