"""The Blender path end to end, with real Blender and real Sapling trees (issue: extension e2e).

For each preset: install the legacy zip into Debian's Blender 3.4 (isolated profile), generate the
tree with Sapling Tree Gen, convert, run the live step function, bake 48 frames; reopen the saved
file with the add-on not installed and compare every bone tail with an independent simulation
(≤ 1e-4 m), check leaves follow their bones, and export FBX/glTF with the animation. The extension zips on the
bpy modules 4.2-5.3 run the same path on the bundled birch (tests/blender/test_blender_matrix.py).
"""

import shutil

import pytest

from blender_env import ROOT, build_legacy_zip, run_blender

SCRIPT = ROOT / "tests" / "blender_scripts" / "e2e_sapling.py"
FRAMES = 48
PRESETS = ["quaking_aspen", "small_pine", "white_birch", "weeping_willow"]
LEAF_SEGMENT_PRESETS = ("quaking_aspen", "white_birch")  # as in e2e_sapling.py (CI time)

pytestmark = pytest.mark.skipif(shutil.which("blender") is None, reason="Debian's blender is not installed")


@pytest.fixture(scope="module")
def zips(tmp_path_factory):
    return (build_legacy_zip(tmp_path_factory.mktemp("dist")),)


@pytest.mark.parametrize("preset", PRESETS)
def test_sapling_tree_bakes_and_replays_without_the_addon(preset, zips, tmp_path):
    profile = tmp_path / "profile"
    out = tmp_path / "out"
    out.mkdir()
    baked = run_blender(
        [
            "blender",
            "-b",
            "--factory-startup",
            "--python",
            str(SCRIPT),
            "--",
            "bake",
            preset,
            str(out),
            str(FRAMES),
            zips[0],
        ],
        profile,
        "E2E_RESULT",
        timeout=1200,
    )
    assert baked["segments"] > baked["bones"] > 0
    if baked["prestress_capped"] == 0:  # pre-stressed: the tree holds its shape in still air
        assert baked["still_air_max_bone_change"] < 1e-5
    else:  # the willow's softest whips cannot: they sag from it
        assert preset == "weeping_willow" and baked["prestress_capped"] < 0.01 * baked["segments"]
    assert baked["live_frame"] == 4 and baked["live_max_bone_change"] > 1e-4  # the wind moved the bones live
    # the live preview reuses its KKT factorisation (scene setting Live Matrix Reuse); the bake never does
    assert baked["live_factor_reuse"] == [2, 2] and baked["bake_factor_reuse"] == 0
    assert baked["max_tail_motion_m"] > 1e-3  # the tree really moved
    # the pine's terminal twigs lose their bones first (a rig like Sapling's mesh trees, bones only for the
    # first armLevels levels): the bake adds them back (their tails are checked against the simulation below
    # with the others); Free Bake removes them
    assert (baked["bones_added"] > 0) == (preset == "small_pine")
    assert baked["bones_after_bake"] == baked["bones"] + baked["bones_added"]
    assert baked["bones_after_free"] == baked["bones"] and baked["action_after_free"] == baked["action_before_bake"]
    assert baked["leaf_cache_removed"] is (True if preset in LEAF_SEGMENT_PRESETS else None)
    args = [
        "blender",
        "-b",
        "--factory-startup",
        str(out / "tree.blend"),
        "--python",
        str(SCRIPT),
        "--",
        "verify",
        str(out),
        str(FRAMES),
    ] + (["export"] if preset == "quaking_aspen" else [])
    replay = run_blender(args, tmp_path / "clean-profile", "E2E_RESULT", timeout=1200)  # add-on not installed there
    assert not replay["stiff_rods_enabled"] and not replay["stiff_rods_ops"]
    assert replay["replay_max_error_m"] <= 1e-4
    assert replay["leaf_vertices_checked"] > 0 and replay["leaves_max_motion_m"] > 1e-3
    if preset in LEAF_SEGMENT_PRESETS:
        # every leaf is a segment: the baked file (Mesh Cache under the Armature modifier, add-on disabled)
        # plays exactly the simulated leaves, which move on their own, beyond their branch bones
        assert baked["leaf_segments"] > 0
        assert replay["leaves_match_simulation_max_error_m"] <= 1e-4
        assert replay["leaves_motion_beyond_bones_max_m"] > 1e-4
    else:  # leaves off: they follow their bones rigidly
        assert baked["leaf_segments"] == 0
        assert replay["leaves_follow_bones_max_error_m"] <= 1e-4
    if preset == "quaking_aspen":
        assert replay["fbx_animation_curve_nodes"] > 0
        assert replay["gltf_animations"] >= 1 and replay["gltf_rotation_channels"] >= baked["bones"]
        assert replay["gltf_keyframes"] >= FRAMES
