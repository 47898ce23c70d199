"""A baked file replayed by plain Blender, without the add-on (run by tests/blender/test_blender_preview_bake.py).

    blender -b --factory-startup BAKED.blend --python preview_bake_replay.py -- OUT_NPZ

Every frame of the armature's action: the world tail (m) of every bone (``matrix_world @ PoseBone.tail``, Blender's
own evaluation of the keys). Writes OUT_NPZ (names, frames, tails (F, B, 3)) and prints
``PREVIEW_REPLAY_RESULT {json}`` (whether the add-on is loaded, the action's frame range).
"""

import json
import sys

import addon_utils
import bpy
import numpy as np

out_path = sys.argv[sys.argv.index("--") + 1]
arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
action = arm.animation_data.action
first, last = (int(round(f)) for f in action.frame_range)
frames = list(range(first, last + 1))
mw = np.array(arm.matrix_world)
tails = []
for f in frames:
    bpy.context.scene.frame_set(f)
    tails.append([(mw @ np.append(np.array(pb.tail), 1.0))[:3] for pb in arm.pose.bones])
np.savez(out_path, names=np.array([pb.name for pb in arm.pose.bones]), frames=np.array(frames), tails=np.array(tails))
result = {
    "addon_loaded": bool(addon_utils.check("stiff_rods")[1]) or hasattr(bpy.types.Scene, "stiff_rods"),
    "action": action.name,
    "frames": [first, last],
}
print("PREVIEW_REPLAY_RESULT " + json.dumps(result), flush=True)
