"""A game rig's world vertices at some frames, read by a fresh Blender without Stiff Rods (run by
tests/blender/test_headless_game.py).

    blender -b --factory-startup BAKED.blend --python fbx_reimport.py -- blend OUT_DIR F1 F2 ...
    blender -b --factory-startup --python fbx_reimport.py -- fbx OUT_DIR FILE.fbx OFFSET F1 F2 ...

``blend``: the saved bake's game rig (the armature that carries the ``stiff_rods_game_rig`` property, and the mesh
it names). ``fbx``: an empty scene into which Blender's own FBX importer reads FILE.fbx, its animation placed from
frame OFFSET (the importer's Animation Offset: the file's takes start at time 0). For each frame F the mesh's
evaluated world vertex positions (V, 3) go to OUT_DIR/<mode>_<F>.npy; prints ``FBX_CHECK {json}`` with the
objects, the armature's bones and their rest heads (world, m),
the bones the importer had connected, the actions' frame ranges and the scene's frame rate.
"""

import json
import os
import sys

import bpy
import numpy as np

argv = sys.argv[sys.argv.index("--") + 1 :]
MODE, OUT = argv[0], argv[1]
if MODE == "fbx":
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.import_scene.fbx(filepath=argv[2], anim_offset=float(argv[3]))
    frames = [int(f) for f in argv[4:]]
    arm = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
    mesh = next(o for o in bpy.context.scene.objects if o.type == "MESH")
    # the importer connects a bone whose head is at its parent's (guessed) tail, and a connected bone ignores its
    # location keys: the rig's bones translate (mm, the rods stretch), so they are disconnected again, as in the
    # rig that was exported (FBX itself has no connected bones: engines apply the translation keys)
    connected = sorted(b.name for b in arm.data.bones if b.use_connect)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    for e in arm.data.edit_bones:
        e.use_connect = False
    bpy.ops.object.mode_set(mode="OBJECT")
else:
    frames = [int(f) for f in argv[2:]]
    arm = next(o for o in bpy.data.objects if "stiff_rods_game_rig" in o)
    mesh = bpy.data.objects[arm["stiff_rods_game_mesh"]]
    connected = sorted(b.name for b in arm.data.bones if b.use_connect)
    for o in bpy.context.scene.objects:  # only the game rig is evaluated (the tree's envelope deform is not needed)
        if o not in (arm, mesh):
            o.hide_viewport = True

scene = bpy.context.scene
for f in frames:
    scene.frame_set(f)
    ev = mesh.evaluated_get(bpy.context.evaluated_depsgraph_get())
    data = ev.to_mesh()
    co = np.empty(3 * len(data.vertices), np.float32)
    data.vertices.foreach_get("co", co)
    ev.to_mesh_clear()
    world = np.array(ev.matrix_world, dtype=float)
    np.save(os.path.join(OUT, f"{MODE}_{f}.npy"), co.reshape(-1, 3).astype(float) @ world[:3, :3].T + world[:3, 3])

anim = arm.animation_data
out = dict(
    objects=sorted([o.name, o.type] for o in scene.objects),
    armature=arm.name,
    bones=len(arm.data.bones),
    heads_m={b.name: list(arm.matrix_world @ b.head_local) for b in arm.data.bones},
    connected=connected,
    action=anim.action.name if anim is not None and anim.action is not None else None,
    actions={a.name: [float(v) for v in a.frame_range] for a in bpy.data.actions},
    vertices=len(mesh.data.vertices),
    uv_layers=[layer.name for layer in mesh.data.uv_layers],
    mesh_modifiers=[m.type for m in mesh.modifiers],
    fps=scene.render.fps / scene.render.fps_base,
)
print("FBX_CHECK " + json.dumps(out), flush=True)
