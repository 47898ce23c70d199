"""Export Game Rig (FBX) and (glTF) in the bpy module, twice to the same file names (run by
tests/blender/test_headless_game.py).

    python fbx_export.py ROOT BAKED.blend OUT_DIR

Loads the add-on of the checkout ROOT (tools/bake_forest.load_forest, which registers its operators), opens a
.blend saved by tools/bake_headless.py with a game rig, selects the game MESH (the operators take either part of the
rig) and runs stiff_rods.export_fbx and stiff_rods.export_gltf twice each into OUT_DIR/rig.fbx and rig.glb. Prints
``FBX_EXPORT {json}``: per export the operator's result and the seconds and bytes it stored on the armature, whether
the selection, active object, action, slot and NLA tracks were as before after every export, and Export FBX on an
object that is not a game rig (refused). Then gives the rig two named actions (NLA tracks "calm" at frame 1 and
"storm" at frame 21, both of its action; no active action) and exports OUT_DIR/named.fbx and named.glb.
"""

import json
import os
import sys

ROOT, BAKED, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, os.path.join(ROOT, "tools"))
import bake_forest  # noqa: E402

bake_forest.load_forest(ROOT)
import bpy  # noqa: E402
from stiff_rods.addon import game_files  # noqa: E402

bpy.ops.wm.open_mainfile(filepath=BAKED)
game = next(o for o in bpy.data.objects if "stiff_rods_game_rig" in o)
mesh = bpy.data.objects[game["stiff_rods_game_mesh"]]
view_layer = bpy.context.view_layer
for o in view_layer.objects:
    o.select_set(o is mesh)
view_layer.objects.active = mesh


def snapshot():
    anim = game.animation_data
    return dict(
        selected=sorted(o.name for o in view_layer.objects if o.select_get()),
        active=view_layer.objects.active.name,
        action=anim.action.name if anim.action else None,
        slot=getattr(getattr(anim, "action_slot", None), "identifier", None),
        tracks=[[t.name, [s.name for s in t.strips]] for t in anim.nla_tracks],
        actions=sorted(a.name for a in bpy.data.actions),
        frame=bpy.context.scene.frame_current,
    )


before = snapshot()
out: dict = dict(version=bpy.app.version_string, before=before, exports=[])
for op, ext, key in (("export_fbx", "fbx", game_files.GAME_FBX_EXPORT), ("export_gltf", "glb", game_files.GAME_EXPORT)):
    for _ in range(2):
        path = os.path.join(OUT, f"rig.{ext}")
        result = sorted(getattr(bpy.ops.stiff_rods, op)(filepath=path))
        out["exports"].append(dict(op=op, result=result, kept=snapshot() == before, **json.loads(game[key])))
for o in view_layer.objects:
    o.select_set(False)
view_layer.objects.active = bpy.data.objects["tree"]
try:
    bpy.ops.stiff_rods.export_fbx(filepath=os.path.join(OUT, "tree.fbx"))
    out["refused"] = None
except RuntimeError as exc:  # the operator's error report
    out["refused"] = str(exc)
out["tree_fbx_written"] = os.path.exists(os.path.join(OUT, "tree.fbx"))
# named actions as addon/game_winds.py leaves them: one NLA track per wind, a strip named after it, no active action
anim = game.animation_data
action = anim.action
for wind, start in (("calm", 1), ("storm", 21)):
    track = anim.nla_tracks.new()
    track.name = wind
    track.strips.new(wind, start, action)
anim.action = None
view_layer.objects.active = game
named = snapshot()
for op, ext in (("export_fbx", "fbx"), ("export_gltf", "glb")):
    result = sorted(getattr(bpy.ops.stiff_rods, op)(filepath=os.path.join(OUT, f"named.{ext}")))
    out["exports"].append(dict(op=op, result=result, kept=snapshot() == named, named=True))
print("FBX_EXPORT " + json.dumps(out), flush=True)
