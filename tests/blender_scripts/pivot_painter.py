"""Pivot Painter Textures on a game rig of Sapling's small pine (run by tests/blender/test_blender_pivot_painter.py).

    blender -b --factory-startup --python pivot_painter.py -- ZIP OUT_DIR FRAMES

Installs the legacy add-on ZIP, generates the small pine without leaves, bakes frames 1..FRAMES in the storm
preset, builds a 16-bone game rig, then moves the tree and the rig alike (so the mesh's object space is not the
world) and:

1. asks Pivot Painter Textures while the .blend is unsaved (the default folder is relative): refused, no UV map;
2. asks it with a folder that cannot be made (under a file): refused, no UV map;
3. saves the .blend in OUT_DIR and asks it with the default folder (``//treeArm_pivot_painter/``).

Then it reads, with Blender only (no add-on code), what the test compares the files with, in the mesh object's
space: per spline, the first bone's head and tail and every bone's head and tail (``bones.npz``), the parent
spline of its first bone, the curve's centre line sampled per Bézier span with the bevel radius at its ends
(``centre.npz``), and per vertex its position and the UV of the ``PivotPainter`` map on each of its loops
(``mesh.npz``). Prints ``PIVOT_RESULT {json}``.
"""

import json
import math
import os
import re
import sys
import time

import bpy
import numpy as np
from mathutils import Matrix, geometry

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import make_sapling_tree  # noqa: E402  (the repository's Sapling generator)

BONE = re.compile(r"^bone(\d+)\.(\d+)$")
MOVE = Matrix.Translation((1.5, -2.0, 0.25)) @ Matrix.Rotation(math.radians(35.0), 4, "Z")


def install(zip_path):
    import addon_utils

    assert bpy.ops.preferences.addon_install(filepath=zip_path, overwrite=True) == {"FINISHED"}
    addon_utils.enable("stiff_rods", default_set=True, handle_error=lambda exc: (_ for _ in ()).throw(exc))
    from stiff_rods.addon import ops_pivot

    if not hasattr(bpy.types, "STIFF_RODS_OT_pivot_painter"):  # until the add-on registers it itself
        for cls in ops_pivot.classes:
            bpy.utils.register_class(cls)


def select_only(obj):
    for o in bpy.context.view_layer.objects:
        o.select_set(o == obj)
    bpy.context.view_layer.objects.active = obj


def ask(**kwargs):
    """The operator's result, or its ERROR message (the operator raises it in background mode)."""
    try:
        return sorted(bpy.ops.stiff_rods.pivot_painter(**kwargs))
    except RuntimeError as exc:
        return str(exc)


def bones(arm, to_object):
    """Per spline: heads and tails (K, 3) of its bones in point order, and its first bone's parent spline."""
    out, parent = {}, {}
    for b in arm.data.bones:
        spline, point = map(int, BONE.match(b.name).groups())
        m = to_object @ arm.matrix_world
        out.setdefault(spline, {})[point] = (m @ b.head_local, m @ b.tail_local)
        if point == 0:
            parent[spline] = int(BONE.match(b.parent.name).group(1)) if b.parent else -1
    splines = sorted(out)
    heads = [np.array([out[s][k][0] for k in sorted(out[s])]) for s in splines]
    tails = [np.array([out[s][k][1] for k in sorted(out[s])]) for s in splines]
    return splines, heads, tails, parent


def centre_lines(curve, to_object):
    """Per spline: its centre line (M, 3) sampled along each Bézier span, and the bevel radius (M,) linear
    between the span's ends (Sapling's radius × the bevel depth)."""
    m = to_object @ curve.matrix_world
    lines, radii = [], []
    depth, steps = curve.data.bevel_depth, 4 * curve.data.resolution_u
    for sp in curve.data.splines:
        pts, rad = [], []
        for a, b in zip(sp.bezier_points[:-1], sp.bezier_points[1:], strict=True):
            seg = geometry.interpolate_bezier(a.co, a.handle_right, b.handle_left, b.co, steps)
            skip = 1 if pts else 0  # a span starts where the last one ended
            pts += [m @ p for p in seg[skip:]]
            rad += list(depth * np.linspace(a.radius, b.radius, steps))[skip:]
        lines.append(np.array(pts))
        radii.append(np.array(rad))
    return lines, radii


def mesh_uv(mesh_obj):
    me = mesh_obj.data
    co = np.empty(3 * len(me.vertices), np.float32)
    me.vertices.foreach_get("co", co)
    loops = np.empty(len(me.loops), np.int64)
    me.loops.foreach_get("vertex_index", loops)
    uv = np.empty(2 * len(me.loops), np.float32)
    me.uv_layers["PivotPainter"].data.foreach_get("uv", uv)
    return co.reshape(-1, 3), loops, uv.reshape(-1, 2)


def main():
    zip_path, out, frames = sys.argv[sys.argv.index("--") + 1 :][:3]
    install(zip_path)
    from stiff_rods.addon import game_rig

    arm = make_sapling_tree.make_tree("small_pine", leaves=False)
    curve = next(c for c in arm.children if c.type == "CURVE")
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, int(frames)
    select_only(arm)
    result = {}
    clock = time.perf_counter()
    assert bpy.ops.stiff_rods.storm_preset() == {"FINISHED"}
    assert bpy.ops.stiff_rods.bake(frame_start=1, frame_end=int(frames)) == {"FINISHED"}
    result["bake_s"] = time.perf_counter() - clock
    clock = time.perf_counter()
    assert bpy.ops.stiff_rods.game_rig(max_bones=16) == {"FINISHED"}
    result["game_rig_s"] = time.perf_counter() - clock
    game = bpy.context.view_layer.objects.active
    mesh_obj = bpy.data.objects[game[game_rig.GAME_MESH]]
    for o in (arm, game):  # the tree and its rig moved alike: the mesh's space is no longer the world
        o.matrix_world = MOVE @ o.matrix_world
    bpy.context.view_layer.update()
    result["mesh_matrix"] = [list(r) for r in mesh_obj.matrix_world]
    uv_maps = [u.name for u in mesh_obj.data.uv_layers]
    select_only(game)
    result["unsaved"] = ask()
    with open(os.path.join(out, "a_file"), "w") as fh:
        fh.write("not a folder")
    result["bad_folder"] = ask(directory=os.path.join(out, "a_file", "sub"))
    result["uv_after_refusals"] = [u.name for u in mesh_obj.data.uv_layers] == uv_maps
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(out, "pine.blend"))
    clock = time.perf_counter()
    result["ok"] = ask()
    result["pivot_s"] = time.perf_counter() - clock
    result["report"] = json.loads(mesh_obj["stiff_rods_pivot_painter"])
    result["uv_maps"] = [u.name for u in mesh_obj.data.uv_layers]
    result["active_uv"] = mesh_obj.data.uv_layers.active.name if mesh_obj.data.uv_layers.active else None
    to_object = mesh_obj.matrix_world.inverted()
    splines, heads, tails, parent = bones(arm, to_object)
    result["splines"], result["spline_parent"] = splines, [parent[s] for s in splines]
    np.savez(os.path.join(out, "bones.npz"), *heads, *tails)
    lines, radii = centre_lines(curve, to_object)
    np.savez(os.path.join(out, "centre.npz"), *lines, *radii)
    co, loops, uv = mesh_uv(mesh_obj)
    np.savez(os.path.join(out, "mesh.npz"), co=co, loops=loops, uv=uv)
    print("PIVOT_RESULT " + json.dumps(result), flush=True)


main()
