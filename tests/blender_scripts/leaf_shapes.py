"""Baked leaves keep their shape: an independent check in real Blender (run by tests/blender/test_blender_leaves.py).

    blender -b --factory-startup --python leaf_shapes.py -- bake TREE OUT_DIR FRAMES ZIP [edit]
        Installs the legacy add-on ZIP (the caller points the user profile at a temporary folder),
        takes TREE (a Sapling preset name, generated here, or a .blend path), optionally edits its leaves
        mesh as a user might (``edit``), blows the add-on's storm over FRAMES frames, bakes with every
        leaf a segment and saves OUT_DIR/tree.blend (the leaves' point cache next to it).
    blender -b --factory-startup OUT_DIR/tree.blend --python leaf_shapes.py -- measure FRAMES
        With the add-on NOT installed: evaluates the leaves mesh (Mesh Cache + Armature modifier) with
        Blender's depsgraph at every frame and measures, per leaf polygon, every edge's length against
        the unevaluated mesh, and its closest approach to a branch (the axes of the bones that carry
        the branches).
        Nothing of the add-on is used here.
Each phase prints one line ``LEAF_RESULT {json}``.
"""

import json
import os
import sys

import bmesh
import bpy
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import make_sapling_tree  # noqa: E402  (the repository's Sapling generator)


def install(zip_path):
    import addon_utils

    assert bpy.ops.preferences.addon_install(filepath=zip_path, overwrite=True) == {"FINISHED"}
    addon_utils.enable("stiff_rods", default_set=True, handle_error=lambda exc: (_ for _ in ()).throw(exc))
    assert addon_utils.check("stiff_rods")[1], "stiff_rods did not enable"


def edit_leaves(leaves):
    """Edits a user might make: weld a corner of some leaves onto a neighbouring leaf's corner (two leaves
    sharing a vertex), delete some leaves, subdivide some, add a loose vertex, and weight some vertices
    to two bones. Returns what was done."""
    me = leaves.data
    bm = bmesh.new()
    bm.from_mesh(me)
    bm.verts.ensure_lookup_table()
    bm.faces.ensure_lookup_table()
    rng = np.random.default_rng(7)
    # weld: the nearest corner of another leaf moved onto a corner of this one, then merged
    co = np.array([v.co for v in bm.verts])
    from mathutils.kdtree import KDTree

    kd = KDTree(len(co))
    for i, c in enumerate(co):
        kd.insert(c, i)
    kd.balance()
    island = np.full(len(co), -1)
    for k, f in enumerate(bm.faces):  # Sapling keeps a leaf's corners together: 6 (hex) or 4 (rect)
        for v in f.verts:
            island[v.index] = island[v.index] if island[v.index] >= 0 else k
    # only leaves of one branch span (one bone's group): a welded pair is one rigid piece on one branch
    group = [max(v.groups, key=lambda g: g.weight).group if len(v.groups) else -1 for v in me.vertices]
    welds, used = [], set()
    for i in rng.choice(len(co), 2000, replace=False):
        for _, j, _ in kd.find_n(co[i], 12):
            other_leaf = j != i and abs(island[j] - island[i]) > 2 and group[i] == group[j]
            if other_leaf and i not in used and j not in used:
                welds.append((int(i), int(j)))
                used.update((i, j))
                break
        if len(welds) == 40:
            break
    targetmap = {bm.verts[j]: bm.verts[i] for i, j in welds}
    bmesh.ops.weld_verts(bm, targetmap=targetmap)
    bm.faces.ensure_lookup_table()
    faces = list(bm.faces)
    delete = [faces[k] for k in rng.choice(len(faces), 30, replace=False)]
    bmesh.ops.delete(bm, geom=delete, context="FACES")
    bm.edges.ensure_lookup_table()
    edges = list({e for f in list(bm.faces)[:60] for e in f.edges})
    bmesh.ops.subdivide_edges(bm, edges=edges, cuts=1, use_grid_fill=True)
    bm.verts.new((0.0, 0.0, -5.0))
    bm.to_mesh(me)
    bm.free()
    me.update()
    # two bones on some vertices (a user's weight painting): the vertex moves by their mean
    groups = leaves.vertex_groups
    two = 0
    for v in me.vertices:
        if len(v.groups) == 1 and v.index % 97 == 0:
            other = groups[(v.groups[0].group + 1) % len(groups)]
            other.add([v.index], 0.5, "REPLACE")
            two += 1
    return {
        "welded_corners": len(welds),
        "deleted_faces": 30,
        "subdivided_edges": len(edges),
        "loose_vertices": 1,
        "two_bone_vertices": two,
    }


def bake_phase(tree, out, frames, zip_path, edit):
    install(zip_path)
    if tree.endswith(".blend"):
        bpy.ops.wm.open_mainfile(filepath=tree)
        arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    else:
        arm = make_sapling_tree.make_tree(tree)
    leaves = next(o for o in bpy.data.objects if o.type == "MESH")
    result = {"tree": tree, "polygons": len(leaves.data.polygons), "vertices": len(leaves.data.vertices)}
    if edit:
        result["edits"] = edit_leaves(leaves)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    scene.frame_set(1)
    assert bpy.ops.stiff_rods.storm_preset() == {"FINISHED"}
    bpy.context.view_layer.objects.active = arm
    for o in bpy.context.view_layer.objects:
        o.select_set(o == arm)
    arm.stiff_rods.use_leaves = True
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(out, "tree.blend"))
    assert bpy.ops.stiff_rods.bake(frame_start=1, frame_end=frames) == {"FINISHED"}
    bpy.ops.wm.save_mainfile()
    result["mesh_cache"] = [m.type for m in leaves.modifiers]
    print("LEAF_RESULT " + json.dumps(result))


def world_vertices(obj, evaluated=True):
    if evaluated:
        ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
        me = ev.to_mesh()
    else:
        me = obj.data
    co = np.empty(3 * len(me.vertices))
    me.vertices.foreach_get("co", co)
    if evaluated:
        ev.to_mesh_clear()
    mw = np.array(obj.matrix_world)
    return co.reshape(-1, 3) @ mw[:3, :3].T + mw[:3, 3]


def measure_phase(frames):
    import addon_utils

    enabled = [m.__name__ for m in addon_utils.modules() if addon_utils.check(m.__name__)[1]]
    leaves = next(o for o in bpy.data.objects if o.type == "MESH")
    me = leaves.data
    loops = np.empty(len(me.loops), np.int64)
    me.loops.foreach_get("vertex_index", loops)
    start = np.empty(len(me.polygons), np.int64)
    me.polygons.foreach_get("loop_start", start)
    total = np.empty(len(me.polygons), np.int64)
    me.polygons.foreach_get("loop_total", total)
    # every polygon edge as (a, b) vertex pairs, and the polygon it belongs to
    nxt = np.arange(loops.size) + 1
    last = start + total - 1
    nxt[last] = start
    edge_a, edge_b = loops, loops[nxt]
    edge_poly = np.repeat(np.arange(start.size), total)
    rest = world_vertices(leaves, evaluated=False)
    rest_len = np.linalg.norm(rest[edge_b] - rest[edge_a], axis=1)
    used = np.unique(loops)
    scene = bpy.context.scene
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    amw = np.array(arm.matrix_world)
    # branches as their bones' axes (head → tail), sampled every 5 mm. A leaf polygon hangs on a branch:
    # its closest approach to one (its corner nearest to any branch axis) at every frame against the
    # first frame's. A leaf turning about its stem moves its corners by less than its length; a leaf
    # that leaves its branch moves away from every branch
    from scipy.spatial import cKDTree

    def branch_axes():
        head, tail = np.empty(3 * len(arm.pose.bones)), np.empty(3 * len(arm.pose.bones))
        arm.pose.bones.foreach_get("head", head)
        arm.pose.bones.foreach_get("tail", tail)
        head = head.reshape(-1, 3) @ amw[:3, :3].T + amw[:3, 3]
        tail = tail.reshape(-1, 3) @ amw[:3, :3].T + amw[:3, 3]
        count = np.ceil(np.linalg.norm(tail - head, axis=1) / 0.005).astype(int) + 1
        bone = np.repeat(np.arange(count.size), count)
        t = (np.arange(bone.size) - np.repeat(np.cumsum(count) - count, count)) / (count[bone] - 1)
        return cKDTree(head[bone] + t[:, None] * (tail - head)[bone]), tail

    per_frame = []
    for f in range(1, frames + 1):
        scene.frame_set(f)
        x = world_vertices(leaves)
        axes, tails = branch_axes()
        approach = np.full(start.size, np.inf)
        np.minimum.at(approach, edge_poly, axes.query(x[loops])[0])
        if f == 1:
            tails0, approach0 = tails, approach
        length = np.linalg.norm(x[edge_b] - x[edge_a], axis=1)
        strain = np.abs(length / rest_len - 1.0)
        worst = np.zeros(start.size)
        np.maximum.at(worst, edge_poly, strain)
        growth = approach - approach0
        per_frame.append(
            {
                "frame": f,
                "polygons_over_1pct": int(np.sum(worst > 0.01)),
                "polygons_over_10pct": int(np.sum(worst > 0.10)),
                "polygons_over_3x": int(np.sum(length / rest_len > 3.0)),
                "max_edge_strain": float(worst.max()),
                "max_edge_m": float(length.max()),
                "max_leaf_motion_m": float(np.linalg.norm(x[used] - rest[used], axis=1).max()),
                "max_bone_tail_motion_m": float(np.linalg.norm(tails - tails0, axis=1).max()),
                "max_approach_growth_m": float(growth.max()),
                "max_approach_growth_polygon": int(np.argmax(growth)),
                "approach_growth_p99_m": float(np.percentile(growth, 99)),
            }
        )
    peak = max(per_frame, key=lambda r: r["max_bone_tail_motion_m"])
    result = {
        "stiff_rods_enabled": any("stiff_rods" in m for m in enabled),
        "modifiers": [m.type for m in leaves.modifiers],
        "polygons": int(start.size),
        "max_rest_approach_m": float(approach0.max()),
        "frames": per_frame,
        "peak": peak,
        "max_polygons_over_1pct": max(r["polygons_over_1pct"] for r in per_frame),
        "max_edge_strain": max(r["max_edge_strain"] for r in per_frame),
        "max_approach_growth_m": max(r["max_approach_growth_m"] for r in per_frame),
    }
    print("LEAF_RESULT " + json.dumps(result))


args = sys.argv[sys.argv.index("--") + 1 :]
if args[0] == "bake":
    bake_phase(args[1], args[2], int(args[3]), args[4], "edit" in args[5:])
else:
    measure_phase(int(args[1]))
