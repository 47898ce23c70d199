"""One forest baked four ways with the bpy module (run by tests/blender/test_forest.py with the venv's Python):

    python forest_bake.py FOREST.blend WORK_DIR

* ``serial``: every tree with addon/forest.py:bake_tree, one after the other in this process;
* ``pool``: ForestPool, 2 worker processes (Python with bpy);
* ``dask``: tools/bake_forest.py's main (LocalCluster, 2 workers), one worker process killed
  (SIGKILL) as soon as the first tree's result arrives while another tree is running on it;
* ``operator``: Bake (bpy.ops.stiff_rods.bake) on each tree, the keyframes it writes, against those
  write_forest writes from the pool's cache; then Free Bake on each tree of the forest-baked scene.

Also simulates each Sapling tree once more with a plain Session loop and records its bones' tails per
frame, for the replay check (tests/blender_scripts/forest_replay.py on the Dask-baked file).
Prints ``FOREST_BAKE_RESULT {json}``: per way the largest difference from ``serial`` per array.

    python forest_bake.py FOREST.blend BROKEN.blend --break

instead saves a copy of the forest with two broken trees: ``treeArm.001`` gets a bone whose name
points to no span of its curve (Bake refuses it), ``treeArm`` the curves-only rod model PaOBCR (its
Session raises in the worker).
"""

import json
import os
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ARRAYS = ("q_seg", "leaf_frames", "co", "handle_left", "handle_right")


def diffs(serial, records) -> dict:
    """Per tree: the largest |difference| of each array from the serial bake's (NaN-equal), and its shape."""
    import numpy as np

    out = {}
    for name, ref_record in serial.items():
        rec = records.get(name)
        if rec is None:
            out[name] = None
            continue
        ref, rec = ref_record.to_dict(), rec.to_dict()  # the BakeRecords' arrays by their names on disk
        out[name] = {
            k: float(np.nanmax(np.abs(rec[k] - ref[k]))) if rec[k].shape == ref[k].shape else "shape"
            for k in ARRAYS
            if k in ref
        }
    return out


def cached(forest, folder) -> dict:
    manifest = forest.read_manifest(folder)
    return {
        e["name"]: forest.load_record(os.path.join(folder, e["file"]))
        for e in manifest["trees"]
        if e["status"] == "done"
    }


def fcurve_values(action) -> dict:
    """(data path, index) -> key values of ``action`` (Blender 5: its layered channelbags)."""
    import numpy as np

    if hasattr(action, "fcurves"):
        curves = list(action.fcurves)
    else:
        curves = [
            fc for layer in action.layers for strip in layer.strips for bag in strip.channelbags for fc in bag.fcurves
        ]
    out = {}
    for fc in curves:
        co = np.empty(2 * len(fc.keyframe_points))
        fc.keyframe_points.foreach_get("co", co)
        out[f"{fc.data_path}[{fc.array_index}]"] = co.reshape(-1, 2)
    return out


def scene_keys(bpy, names) -> dict:
    out = {}
    for name in names:
        obj = bpy.data.objects[name]
        holder = obj if obj.type == "ARMATURE" else obj.data
        anim = holder.animation_data
        out[name] = fcurve_values(anim.action) if anim and anim.action else {}
    return out


def key_difference(a, b) -> dict:
    import numpy as np

    out = {}
    for name in a:
        if set(a[name]) != set(b[name]) or not a[name]:
            out[name] = f"F-curves differ: {len(a[name])} vs {len(b[name])}"
            continue
        out[name] = max(float(np.max(np.abs(a[name][k] - b[name][k]))) for k in a[name])
    return out


def reference_tails(bpy, scene, session_cls, wind, names, start, end) -> dict:
    """Each armature's bone tails (world, per frame) from a plain simulation loop (no forest code)."""
    import numpy as np

    out = {}
    for name in names:
        obj = bpy.data.objects[name]
        if obj.type != "ARMATURE":
            continue
        s = session_cls(obj, scene)
        s.set_wind(wind.SceneWind.from_scene(scene))
        s.reset(start, scene)
        seg = s.bone_segment
        local = np.zeros((seg.size, 3))
        local[:, 2] = 0.5 * s.model.lengths[seg]
        tails = [s.sim.segment_points(local, seg)]
        for _ in range(start, end):
            s.advance_frame(scene)
            tails.append(s.sim.segment_points(local, seg))
        scene.frame_set(start)
        out[name] = {"bones": list(s.source.bone_names), "tails": np.array(tails).tolist()}
    return out


def make_broken(bpy, blend, out):
    bpy.ops.wm.open_mainfile(filepath=blend)
    arm = bpy.data.objects["treeArm.001"]
    arm.data.bones[-1].name = "bone999.000"
    bpy.data.objects["treeArm"].stiff_rods.rod_model = "PAOBCR"
    bpy.ops.wm.save_as_mainfile(filepath=out)


def main():
    argv = sys.argv[sys.argv.index("--") + 1 :]
    blend, work = (os.path.abspath(a) for a in argv[:2])
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import bake_forest

    forest = bake_forest.load_forest(ROOT)
    import bpy

    if "--break" in argv:
        make_broken(bpy, blend, work)
        return
    from stiff_rods.addon import wind
    from stiff_rods.addon.session import Session

    bpy.ops.wm.open_mainfile(filepath=blend)
    scene = bpy.context.scene
    start, end = scene.frame_start, scene.frame_end
    found = forest.resolve(scene.objects)
    names = [t.name for t in found.trees]
    result = {"trees": names, "ignored": [r.name for r in found.ignored], "refused": [r.name for r in found.refused]}
    serial = {n: forest.bake_tree(scene, n, start, end) for n in names}
    arrays = {n: r.to_dict() for n, r in serial.items()}
    result["serial_shapes"] = {n: {k: list(r[k].shape) for k in ARRAYS if k in r} for n, r in arrays.items()}
    result["added_bones"] = {n: len(r.plan_names) for n, r in serial.items() if r.kind == "armature"}
    result["tails"] = reference_tails(bpy, scene, Session, wind, names, start, end)

    pool_dir = os.path.join(work, "pool_cache")
    progress = []
    pool = forest.ForestPool(blend, found.trees, start, end, pool_dir, workers=2, kind="python")
    final = pool.run(on_progress=lambda p: progress.append(p.trees_done))
    result["pool"] = {
        "finished": final.finished,
        "failures": final.failures,
        "workers": sorted({e["worker"] for e in pool.manifest["trees"]}),
        "progress_steps": sorted(set(progress)),
        "diff": diffs(serial, cached(forest, pool_dir)),
    }

    killed = {}

    def kill_once(client, r):
        if killed:
            return
        busy = [addr for addr, keys in client.processing().items() if keys]
        killed["busy"] = len(busy)
        if busy:
            pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
            os.kill(pid, signal.SIGKILL)
            killed["pid"] = pid

    dask_out = os.path.join(work, "dask_baked.blend")
    rc = bake_forest.main([blend, "--workers", "2", "--keep-cache", "--json", "--out", dask_out], on_result=kill_once)
    dask_records = cached(forest, forest.cache_folder(dask_out))
    result["dask"] = {
        "exit": rc,
        "killed": killed,
        "worker_pids": sorted({int(e["pid"]) for e in _manifest_workers(forest, dask_out)}),
        "diff": diffs(serial, dask_records),
        "blend": dask_out,
    }

    # the parent's writing from the pool's cache against Bake on each tree, both in fresh copies of the scene
    bpy.ops.wm.open_mainfile(filepath=blend)
    before = {n: len(k) for n, k in scene_keys(bpy, names).items()}
    write = forest.write_forest(pool_dir)
    forest_keys = scene_keys(bpy, names)
    free = {}
    for name in names:
        bpy.context.view_layer.objects.active = bpy.data.objects[name]
        free[name] = sorted(bpy.ops.stiff_rods.free_bake())
    after = {n: len(k) for n, k in scene_keys(bpy, names).items()}
    result["free_bake"] = {"outcome": free, "fcurves_before": before, "fcurves_after": after}
    bpy.ops.wm.open_mainfile(filepath=blend)
    for name in names:
        bpy.context.view_layer.objects.active = bpy.data.objects[name]
        assert bpy.ops.stiff_rods.bake() == {"FINISHED"}, name
    operator_keys = scene_keys(bpy, names)
    result["write"] = {"fcurves": write.fcurves, "keys": write.keys, "trees": write.trees}
    result["keys_vs_operator"] = key_difference(forest_keys, operator_keys)
    result["fcurves_per_tree"] = {n: len(k) for n, k in forest_keys.items()}
    print("FOREST_BAKE_RESULT " + json.dumps(result))


def _manifest_workers(forest, out):
    manifest = forest.read_manifest(forest.cache_folder(out))
    return [{"pid": e["worker"]} for e in manifest["trees"] if e["worker"] is not None]


if __name__ == "__main__":
    main()
