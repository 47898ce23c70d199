"""A forest baked into per-tree caches, read back three ways (run by tests/blender/test_forest_cache.py).

    python forest_cache.py -- keyed KEYED.blend TREES.json OUT.npz
        The bpy module with no add-on: opens the keyed .blend that tools/bake_forest.py --out wrote and saves
        Blender's evaluated world points [m] of every tree's branches (the curve's mesh) and leaves at every frame
        as ``<tree>/branches`` and ``<tree>/leaves`` (F, V, 3).
    python forest_cache.py -- usd FOREST.usda OUT.npz
        Plain Python with usd-core (pxr), no bpy: the root layer's stage, every Mesh prim's points at every time
        code to world with ComputeLocalToWorldTransform and metersPerUnit, saved as ``<tree>/<mesh prim>`` where
        ``<tree>`` is the stiffRodsTree customData of the tree's prim under /Forest.
    python forest_cache.py -- abc DIR OUT.npz
        A fresh bpy process without the add-on: each DIR/<tree>.abc imported into an empty scene, its meshes'
        evaluated world points per frame saved as ``<file stem>/<object>``.
    python forest_cache.py -- usd_import FOREST.usda OUT.npz
        A fresh bpy process without the add-on: Blender's USD importer on the root layer, every mesh's evaluated
        world points per frame (its modifiers: a Mesh Sequence Cache reading the tree's file).
Each phase prints ``FOREST_CACHE {json}``.
"""

import json
import os
import re
import sys

import numpy as np


def world_points(obj, depsgraph):
    """(V, 3) world positions [m] of ``obj``'s evaluated mesh."""
    ev = obj.evaluated_get(depsgraph)
    mesh = ev.to_mesh()
    co = np.empty(3 * len(mesh.vertices), np.float32)
    mesh.vertices.foreach_get("co", co)
    ev.to_mesh_clear()
    m = np.array(ev.matrix_world, dtype=float)
    return co.reshape(-1, 3).astype(float) @ m[:3, :3].T + m[:3, 3]


def sample(bpy, objects: dict, frames) -> dict:
    """key → (F, V, 3) evaluated world points of the object ``objects[key]`` at ``frames``."""
    scene, out = bpy.context.scene, {k: [] for k in objects}
    for f in frames:
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        for key, obj in objects.items():
            out[key].append(world_points(obj, dg))
    return {k: np.array(v) for k, v in out.items()}


def keyed(blend, trees_json, out):
    import bpy

    bpy.ops.wm.open_mainfile(filepath=blend, load_ui=False)
    scene = bpy.context.scene
    objects = {}
    for t in json.load(open(trees_json)):
        objects[f"{t['armature']}/branches"] = bpy.data.objects[t["curve"]]
        objects[f"{t['armature']}/leaves"] = bpy.data.objects[t["leaves"]]
    points = sample(bpy, objects, range(scene.frame_start, scene.frame_end + 1))
    np.savez(out, **points)
    return {"addon": "stiff_rods" in sys.modules, "frames": [scene.frame_start, scene.frame_end]}


def usd(root, out):
    from pxr import Usd, UsdGeom

    stage = Usd.Stage.Open(root)
    scale = UsdGeom.GetStageMetersPerUnit(stage)
    points, paths, times = {}, [], {}
    for tree_prim in stage.GetPrimAtPath("/Forest").GetChildren():
        tree = tree_prim.GetCustomDataByKey("stiffRodsTree")
        for prim in Usd.PrimRange(tree_prim):
            if not prim.IsA(UsdGeom.Mesh):
                continue
            attr = UsdGeom.Mesh(prim).GetPointsAttr()
            frames = []
            for t in attr.GetTimeSamples():
                local = np.array(attr.Get(t), dtype=float)
                m = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(t), dtype=float)  # row vectors
                frames.append(scale * (local @ m[:3, :3] + m[3, :3]))
            points[f"{tree}/{prim.GetName()}"] = np.array(frames)
            paths.append(str(prim.GetPath()))
            times[f"{tree}/{prim.GetName()}"] = list(attr.GetTimeSamples())
    np.savez(out, **points)
    return {
        "pxr": "bpy" not in sys.modules,
        "up_axis": UsdGeom.GetStageUpAxis(stage),
        "meters_per_unit": scale,
        "time_codes": [stage.GetStartTimeCode(), stage.GetEndTimeCode(), stage.GetTimeCodesPerSecond()],
        "trees": [p.GetName() for p in stage.GetPrimAtPath("/Forest").GetChildren()],
        "paths": paths,
        "times": times,
    }


def abc(folder, out):
    import bpy

    points, objects, modifiers = {}, {}, {}
    index = json.load(open(os.path.join(folder, "index.json")))
    frames = range(index["frames"][0], index["frames"][1] + 1)
    for file in sorted(f for f in os.listdir(folder) if f.endswith(".abc")):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        assert bpy.ops.wm.alembic_import(filepath=os.path.join(folder, file), as_background_job=False) == {"FINISHED"}
        stem = os.path.splitext(file)[0]
        meshes = {f"{stem}/{o.name}": o for o in bpy.context.scene.objects if o.type == "MESH"}
        objects[stem] = sorted(o.name for o in bpy.context.scene.objects)
        modifiers.update({k: [m.type for m in o.modifiers] for k, o in meshes.items()})
        points.update(sample(bpy, meshes, frames))
    np.savez(out, **points)
    return {"addon": "stiff_rods" in sys.modules, "objects": objects, "index": index, "modifiers": modifiers}


def unnumbered(name):
    """An imported prim's object name without the ``.001`` Blender adds when a name is taken (prim names hold
    no dots: the tree prim ``treeArm`` is taken by the tree's own ``treeArm`` Xform inside its file)."""
    return re.sub(r"\.\d{3}$", "", name)


def usd_import(root, out):
    """A fresh bpy without the add-on: Blender's USD importer on the root layer, the meshes' points per frame
    saved as ``<tree prim>/<object>`` (the tree prim: the object's ancestor below /Forest's object)."""
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert bpy.ops.wm.usd_import(filepath=root) == {"FINISHED"}
    scene = bpy.context.scene
    meshes = {}
    for o in scene.objects:
        if o.type == "MESH":
            chain = [o]
            while chain[-1].parent is not None:
                chain.append(chain[-1].parent)
            tree = chain[-2].name if len(chain) > 1 else ""
            meshes[f"{unnumbered(tree)}/{unnumbered(o.name)}"] = o
    points = sample(bpy, meshes, range(scene.frame_start, scene.frame_end + 1))
    np.savez(out, **points)
    return {
        "addon": "stiff_rods" in sys.modules,
        "frames": [scene.frame_start, scene.frame_end],
        "modifiers": {k: [m.type for m in o.modifiers] for k, o in meshes.items()},
    }


def main():
    args = sys.argv[sys.argv.index("--") + 1 :]
    phase = {"keyed": keyed, "usd": usd, "abc": abc, "usd_import": usd_import}[args[0]]
    print("FOREST_CACHE " + json.dumps(phase(*args[1:])))


main()
