"""Play a baked forest back with plain Blender (the bpy module, Stiff Rods not loaded; run by
tests/blender/test_forest.py):

    python forest_replay.py BAKED.blend

Prints ``FOREST_REPLAY {json}``: per armature with an action, its bone names and the world positions of
the bones' tails at every frame of the scene's range, and the names of the actions in the file.
"""

import json
import sys

import bpy
import numpy as np


def main():
    bpy.ops.wm.open_mainfile(filepath=sys.argv[sys.argv.index("--") + 1])
    scene = bpy.context.scene
    arms = [o for o in scene.objects if o.type == "ARMATURE" and o.animation_data and o.animation_data.action]
    out = {o.name: {"bones": [pb.name for pb in o.pose.bones], "tails": []} for o in arms}
    for frame in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(frame)
        for o in arms:
            flat = np.empty(3 * len(o.pose.bones))
            o.pose.bones.foreach_get("tail", flat)
            mw = np.array(o.matrix_world)
            out[o.name]["tails"].append((flat.reshape(-1, 3) @ mw[:3, :3].T + mw[:3, 3]).tolist())
    actions = {o.name: o.animation_data.action.name for o in arms}
    print(
        "FOREST_REPLAY "
        + json.dumps({"armatures": out, "actions": actions, "addons": sorted(bpy.context.preferences.addons.keys())})
    )


main()
