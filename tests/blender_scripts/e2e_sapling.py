"""End-to-end check inside real Blender, in two phases (run by tests/blender/test_blender_e2e.py).

    blender -b --factory-startup --python e2e_sapling.py -- bake PRESET OUT_DIR FRAMES ZIP
        Installs the legacy add-on ZIP the way a user does (Preferences > Add-ons > Install; the caller
        points BLENDER_USER_SCRIPTS/CONFIG at a temporary profile) and enables it. Generates a real
        Sapling tree from PRESET, converts it, runs the live step function, bakes FRAMES frames, saves
        OUT_DIR/tree.blend, and the simulated span end points per frame to OUT_DIR/expected_tails.npy
        (re-simulated independently of the bake).
    blender -b --factory-startup OUT_DIR/tree.blend --python e2e_sapling.py -- verify OUT_DIR FRAMES [export]
        With the add-on NOT enabled: plays the baked frames, compares bone tails with the
        simulation, checks every leaf vertex follows its bone rigidly, and with ``export`` writes
        FBX and glTF and counts their animation channels.
Each phase prints one line ``E2E_RESULT {json}``.
"""

import json
import os
import shutil
import sys

import bpy
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import make_sapling_tree  # noqa: E402  (the repository's Sapling generator)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bad_input import wind_field  # noqa: E402

WIND_MPS = 8.0  # the Wind field's strength: m/s at the default Field Speed of 1 m/s per unit


def argv():
    return sys.argv[sys.argv.index("--") + 1 :]


def span_tails(session):
    """World positions of the far end of every bone's segment (n_bones, 3)."""

    seg = session.bone_segment
    sim = session.sim
    local = np.zeros((seg.size, 3))
    local[:, 2] = 0.5 * session.model.lengths[seg]
    return sim.segment_points(local, seg)


def install(zip_path):
    import addon_utils

    assert bpy.ops.preferences.addon_install(filepath=zip_path, overwrite=True) == {"FINISHED"}
    addon_utils.enable("stiff_rods", default_set=True, handle_error=lambda exc: (_ for _ in ()).throw(exc))
    assert addon_utils.check("stiff_rods")[1], "stiff_rods did not enable"
    return "stiff_rods"


def bake_phase(preset, out, frames, zip_path):
    install(zip_path)
    run_bake(preset, out, frames, "stiff_rods")


def prune_twig_bones(arm):
    """Delete the bones of every terminal branch (no other branch's bone hangs from it): a rig like the one
    Sapling makes for mesh trees (bones only for the first armLevels levels). The bake adds them back."""
    import re

    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    eb = arm.data.edit_bones
    spline = {b.name: int(re.match(r"bone(\d+)\.", b.name).group(1)) for b in eb}
    carrying = {spline[b.parent.name] for b in eb if b.parent is not None and spline[b.parent.name] != spline[b.name]}
    for b in [b for b in eb if spline[b.name] not in carrying]:
        eb.remove(b)
    bpy.ops.object.mode_set(mode="OBJECT")


def run_bake(preset, out, frames, mod):
    session_mod = sys.modules[mod + ".addon.session"]
    ops_mod = sys.modules[mod + ".addon.operators"]
    wind_mod = sys.modules[mod + ".addon.wind"]
    if preset is None:
        arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    else:
        arm = make_sapling_tree.make_tree(preset)
        # a steady breeze from a Wind force field (+Z of the field object turned to +X): the tree is
        # pre-stressed (Rest Shape Auto = Loaded), so in still air it would not move at all
        wind_field(WIND_MPS)
        if preset == "small_pine":
            prune_twig_bones(arm)
    bpy.context.view_layer.objects.active = arm
    for o in bpy.context.view_layer.objects:
        o.select_set(o == arm)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    scene.frame_set(1)
    result = {"preset": preset}
    # every leaf a segment on the aspen and the birch (9459 leaves); pine and willow keep leaves on their
    # bones, which bounds CI time (the willow would be ~50k segments, simulated twice here)
    arm.stiff_rods.use_leaves = preset in (None, "quaking_aspen", "white_birch")
    assert bpy.ops.stiff_rods.convert() == {"FINISHED"}
    s = session_mod.SESSIONS[arm.name]
    result.update(
        segments=s.model.n_segments,
        bones=len(s.source.bone_names),
        branches=len(s.source.branches),
        prestress_capped=s.prestress_capped,
    )
    # the live step function (the modal timer's body): in still air the pre-stressed tree holds its
    # shape; in the wind its bones move; then Esc-like restore
    rest = np.array([pb.matrix.to_quaternion() for pb in arm.pose.bones[:50]])
    modes = ops_mod._switch_to_quaternions(arm, s.source.bone_names)
    for key, blowing in (("still_air_max_bone_change", False), ("live_max_bone_change", True)):
        scene.frame_set(1)
        s.set_wind(wind_mod.SceneWind.from_scene(scene) if blowing else None)
        s.reset(1, scene, live=True)  # as the Simulate operator does
        result["live_factor_reuse"] = (s.sim.factor_reuse, scene.stiff_rods.live_matrix_reuse)
        for _ in range(3):
            ops_mod.step_live(s, scene)
        bpy.context.view_layer.update()
        moved = np.array([pb.matrix.to_quaternion() for pb in arm.pose.bones[:50]])
        result[key] = float(np.max(np.abs(moved - rest)))
    result["live_frame"] = scene.frame_current
    ops_mod._restore_modes(arm, modes)
    s.write_rest()  # as Esc does: the leaves mesh back where it was
    scene.frame_set(1)
    # bake (into the saved file: the leaves' point cache goes next to it), then simulate again
    # independently for the reference tails and leaf vertices
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(out, "tree.blend"))
    anim = arm.animation_data
    result["action_before_bake"] = anim.action.name if anim and anim.action else None
    assert bpy.ops.stiff_rods.bake(frame_start=1, frame_end=frames) == {"FINISHED"}
    ref = session_mod.Session(arm, scene)
    scene.frame_set(1)
    ref.set_wind(wind_mod.SceneWind.from_scene(scene))
    ref.reset(1, scene)
    result["bake_factor_reuse"] = ref.sim.factor_reuse
    tails = [span_tails(ref)]
    for _ in range(frames - 1):
        ref.advance_frame(scene)
        tails.append(span_tails(ref))
    scene.frame_set(1)
    np.save(os.path.join(out, "expected_tails.npy"), np.array(tails))
    result["leaf_segments"] = 0 if ref.leaf_mesh is None else int(ref.leaf_segments.size)
    if ref.leaf_mesh is not None:
        np.save(os.path.join(out, "expected_leaves.npy"), ref.leaf_vertices_world())
    with open(os.path.join(out, "bone_names.json"), "w") as fh:
        json.dump(ref.source.bone_names, fh)
    result["max_tail_motion_m"] = float(np.max(np.linalg.norm(tails[-1] - tails[0], axis=1)))
    result["blender"] = list(bpy.app.version)
    action = arm.animation_data.action
    result["baked_action"] = action.name
    result["layered_action"] = hasattr(action, "layers") and len(action.layers) > 0
    result["bones_added"] = len(arm.get("stiff_rods_added_bones", []))
    result["bones_after_bake"] = len(arm.data.bones)
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(out, "tree.blend"))
    # Free Bake gives back the armature as it was: the added bones go, the action goes, the leaves' point
    # cache file goes (kept aside here and put back: the verify phase plays the saved bake)
    cache = json.loads(arm[ops_mod.PREV_LEAF_CACHE])["file"] if ops_mod.PREV_LEAF_CACHE in arm else None
    if cache:
        shutil.copy(cache, cache + ".keep")
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.stiff_rods.free_bake() == {"FINISHED"}
    result["leaf_cache_removed"] = None if cache is None else not os.path.exists(cache)
    if cache:
        shutil.move(cache + ".keep", cache)
    result["bones_after_free"] = len(arm.data.bones)
    result["action_after_free"] = (
        arm.animation_data.action.name if arm.animation_data and arm.animation_data.action else None
    )
    print("E2E_RESULT " + json.dumps(result))


def evaluated_world_vertices(obj):
    dg = bpy.context.evaluated_depsgraph_get()
    ev = obj.evaluated_get(dg)
    me = ev.to_mesh()
    co = np.empty(3 * len(me.vertices))
    me.vertices.foreach_get("co", co)
    ev.to_mesh_clear()
    mw = np.array(obj.matrix_world)
    return co.reshape(-1, 3) @ mw[:3, :3].T + mw[:3, 3]


def bone_world_deform(arm):
    """World-space deformation matrix of every bone: M_arm · P_pose · B_rest⁻¹ · M_arm⁻¹."""
    mw = np.array(arm.matrix_world)
    mwi = np.linalg.inv(mw)
    return {
        pb.name: mw @ np.array(pb.matrix) @ np.linalg.inv(np.array(pb.bone.matrix_local)) @ mwi for pb in arm.pose.bones
    }


def verify_phase(out, frames, export):
    import addon_utils

    enabled = [m.__name__ for m in addon_utils.modules() if addon_utils.check(m.__name__)[1]]
    result = {
        "stiff_rods_enabled": any("stiff_rods" in m for m in enabled),
        "stiff_rods_ops": hasattr(bpy.ops, "stiff_rods") and "bake" in dir(bpy.ops.stiff_rods),
    }
    expected = np.load(os.path.join(out, "expected_tails.npy"))
    with open(os.path.join(out, "bone_names.json")) as fh:
        names = json.load(fh)
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    leaves = next((o for o in bpy.data.objects if o.type == "MESH"), None)
    scene = bpy.context.scene
    mw = np.array(arm.matrix_world)
    index = {pb.name: i for i, pb in enumerate(arm.pose.bones)}
    order = np.array([index[n] for n in names])
    err = 0.0
    leaf_pos, bone_deform = [], []
    # bone tails at every frame (the heavy bevelled curve and the leaves need not be evaluated for that)
    others = [o for o in bpy.data.objects if o is not arm]
    for o in others:
        o.hide_viewport = True
    for f in range(1, frames + 1):
        scene.frame_set(f)
        flat = np.empty(3 * len(arm.pose.bones))
        arm.pose.bones.foreach_get("tail", flat)
        tails = flat.reshape(-1, 3)[order]
        world = tails @ mw[:3, :3].T + mw[:3, 3]
        err = max(err, float(np.max(np.linalg.norm(world - expected[f - 1], axis=1))))
    for o in others:
        o.hide_viewport = False
    if leaves is not None:
        for f in (1, frames):
            scene.frame_set(f)
            leaf_pos.append(evaluated_world_vertices(leaves))
            bone_deform.append(bone_world_deform(arm))
    result["replay_max_error_m"] = err
    result["max_tail_motion_m"] = float(np.max(np.linalg.norm(expected[-1] - expected[0], axis=1)))
    expected_leaves = os.path.join(out, "expected_leaves.npy")
    if leaf_pos and os.path.exists(expected_leaves):
        # leaves are their own segments: the file (Mesh Cache + Armature modifier) plays the simulated
        # leaf vertices, which do not simply follow their bones
        want = np.load(expected_leaves)
        result["leaves_match_simulation_max_error_m"] = float(np.max(np.linalg.norm(leaf_pos[1] - want, axis=1)))
        result["leaves_max_motion_m"] = float(np.linalg.norm(leaf_pos[1] - leaf_pos[0], axis=1).max())
        groups = {g.index: g.name for g in leaves.vertex_groups}
        single = [
            (v.index, groups[v.groups[0].group])
            for v in leaves.data.vertices
            if len(v.groups) == 1 and groups[v.groups[0].group] in bone_deform[1]
        ]
        idx = np.array([i for i, _ in single])
        t = np.array([bone_deform[1][name] @ np.linalg.inv(bone_deform[0][name]) for _, name in single])
        p0 = np.concatenate((leaf_pos[0][idx], np.ones((idx.size, 1))), axis=1)
        rigid = np.einsum("kij,kj->ki", t, p0)[:, :3]
        result["leaf_vertices_checked"] = int(want.shape[0])
        result["leaves_motion_beyond_bones_max_m"] = float(np.max(np.linalg.norm(rigid - leaf_pos[1][idx], axis=1)))
    elif leaf_pos:
        # every leaf vertex weighted to a single bone must move rigidly with that bone
        moved = np.linalg.norm(leaf_pos[1] - leaf_pos[0], axis=1)
        groups = {g.index: g.name for g in leaves.vertex_groups}
        single = [
            (v.index, groups[v.groups[0].group])
            for v in leaves.data.vertices
            if len(v.groups) == 1 and v.groups[0].weight > 0.999 and groups[v.groups[0].group] in bone_deform[1]
        ]
        idx = np.array([i for i, _ in single])
        t = np.array([bone_deform[1][name] @ np.linalg.inv(bone_deform[0][name]) for _, name in single])
        p0 = np.concatenate((leaf_pos[0][idx], np.ones((idx.size, 1))), axis=1)
        predicted = np.einsum("kij,kj->ki", t, p0)[:, :3]
        result["leaves_max_motion_m"] = float(moved.max())
        result["leaf_vertices_checked"] = int(idx.size)
        result["leaves_follow_bones_max_error_m"] = float(np.max(np.linalg.norm(predicted - leaf_pos[1][idx], axis=1)))
    if export:
        fbx = os.path.join(out, "tree.fbx")
        bpy.ops.export_scene.fbx(filepath=fbx, bake_anim=True, object_types={"ARMATURE", "MESH"})
        with open(fbx, "rb") as fh:
            data = fh.read()
        result["fbx_animation_curve_nodes"] = data.count(b"AnimationCurveNode")
        gl = os.path.join(out, "tree.gltf")
        bpy.ops.export_scene.gltf(filepath=gl, export_format="GLTF_SEPARATE", export_animations=True)
        with open(gl) as fh:
            g = json.load(fh)
        anims = g.get("animations", [])
        result["gltf_animations"] = len(anims)
        result["gltf_rotation_channels"] = sum(
            1 for a in anims for c in a["channels"] if c["target"]["path"] == "rotation"
        )
        result["gltf_keyframes"] = max(
            (g["accessors"][smp["input"]]["count"] for a in anims for smp in a["samplers"]), default=0
        )
    print("E2E_RESULT " + json.dumps(result))


args = argv() if "--" in sys.argv else sys.argv[1:]
if args[0] == "bake":
    bake_phase(args[1], args[2], int(args[3]), args[4])
else:
    verify_phase(args[1], int(args[2]), "export" in args[3:])
