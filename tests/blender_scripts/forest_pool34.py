"""The process pool inside Blender 3.4 with the legacy add-on installed (run by tests/blender/test_forest.py):

    blender -b --factory-startup --python forest_pool34.py -- LEGACY_ZIP FOREST.blend WORK_DIR

Installs the zip (the caller points the user profile at a temporary folder), opens the forest, bakes
every tree with ForestPool in 2 worker processes that are this Blender headless (``blender -b``, the
installed add-on imported from its folder), writes them with write_forest; then opens the forest again
and runs Bake on each tree. Prints ``FOREST_POOL34 {json}``: the pool's progress and failures, the
workers' pids, and per tree the largest difference between the two bakes' keyframes.
"""

import json
import os
import sys

import bpy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bad_input import install  # noqa: E402
from forest_bake import key_difference, scene_keys  # noqa: E402


def main():
    zip_path, blend, work = sys.argv[sys.argv.index("--") + 1 :][:3]
    install(zip_path)
    from stiff_rods.addon import forest

    bpy.ops.wm.open_mainfile(filepath=blend)
    scene = bpy.context.scene
    found = forest.resolve(forest.collection_objects(bpy.data.collections["Forest"]))
    names = [t.name for t in found.trees]
    pool = forest.ForestPool(
        blend, found.trees, scene.frame_start, scene.frame_end, os.path.join(work, "cache34"), workers=2
    )
    final = pool.run()
    out = {
        "addon_root": forest.ADDON_ROOT,
        "trees": names,
        "finished": final.finished,
        "failures": final.failures,
        "fps": final.fps,
        "workers": sorted({e["worker"] for e in pool.manifest["trees"]}),
    }
    forest.write_forest(pool.folder)
    forest_keys = scene_keys(bpy, names)
    bpy.ops.wm.open_mainfile(filepath=blend)
    for name in names:
        bpy.context.view_layer.objects.active = bpy.data.objects[name]
        bpy.ops.stiff_rods.bake()
    out["keys_vs_operator"] = key_difference(forest_keys, scene_keys(bpy, names))
    print("FOREST_POOL34 " + json.dumps(out))


main()
