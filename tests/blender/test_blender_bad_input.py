"""Bad input in real Blender 3.4 gives a clear ERROR naming the problem and leaves the scene as it was
(issue: bad input). One Blender process runs every case of tests/blender_scripts/bad_input.py on a
Sapling quaking aspen, with the legacy zip installed in an isolated profile.
"""

import shutil

import pytest

from blender_env import ROOT, build_legacy_zip, run_blender

SCRIPT = ROOT / "tests" / "blender_scripts" / "bad_input.py"

pytestmark = pytest.mark.skipif(shutil.which("blender") is None, reason="Debian's blender is not installed")

SAPLING_ONLY = "is not a Sapling tree armature"
NOTHING = "Nothing selected"
NO_SPLINE = "has no spline with at least 2 points"
EDIT = "is in Edit Mode: switch to Object Mode first"
EMPTY_RANGE = "Bake range is empty"
COINCIDE = "coincide (zero-length segment)"

# case -> phrase the ERROR message must contain
EXPECTED = {
    "nothing_selected_convert": NOTHING,
    "nothing_selected_bake": NOTHING,
    "nothing_selected_free_bake": NOTHING,
    "plain_armature_convert": "'PlainArmature' " + SAPLING_ONLY,
    "plain_armature_bake": "'PlainArmature' " + SAPLING_ONLY,
    "plain_armature_free_bake": "'PlainArmature' " + SAPLING_ONLY,
    "leaves_mesh_convert": "'leaves' is a mesh",
    "curve_no_splines_convert": "'EmptyCurve' " + NO_SPLINE,
    "curve_no_splines_bake": "'EmptyCurve' " + NO_SPLINE,
    "curve_single_point_splines_convert": "'EmptyCurve' " + NO_SPLINE,
    "curve_single_point_splines_bake": "'EmptyCurve' " + NO_SPLINE,
    "edit_mode_armature_convert": "'treeArm' " + EDIT,
    "edit_mode_armature_bake": "'treeArm' " + EDIT,
    "edit_mode_armature_free_bake": "'treeArm' " + EDIT,
    "edit_mode_curve_convert": "'tree' " + EDIT,
    "edit_mode_curve_bake": "'tree' " + EDIT,
    "edit_mode_curve_free_bake": "'tree' " + EDIT,
    "bake_range_end_before_start": EMPTY_RANGE + ": end frame 5 is before start frame 10",
    "bake_start_after_scene_end": EMPTY_RANGE + ": end frame 4 is before start frame 9",
    "user_action_bad_range": EMPTY_RANGE,
    "free_bake_nothing_baked": "'treeArm' has no Stiff Rods bake to free",
    "free_bake_nothing_baked_curve_selected": "'treeArm' has no Stiff Rods bake to free",
    "zero_length_segment_convert": "spline 0: points 1 and 2 " + COINCIDE,
    "zero_length_segment_bake": "spline 0: points 1 and 2 " + COINCIDE,
    "zero_length_segment_curve_selected_convert": "spline 0: points 1 and 2 " + COINCIDE,
    "bake_twice": "'treeArm' already has a Stiff Rods bake: Free Bake first",
}


@pytest.fixture(scope="module")
def legacy_zip(tmp_path_factory):
    return build_legacy_zip(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="module")
def result(legacy_zip, tmp_path_factory):
    out = run_blender(
        ["blender", "-b", "--factory-startup", "--python", str(SCRIPT), "--", legacy_zip],
        tmp_path_factory.mktemp("bad-input-profile"),
        "BAD_INPUT_RESULT",
        timeout=600,
    )
    assert "error" not in out, out["error"]
    assert out["blender"][:2] == [3, 4]
    return out["cases"]


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_bad_input_reports_error_and_changes_nothing(result, case):
    r = result[case]
    assert r["outcome"] == "raised", f"{case}: no ERROR report, returned {r['outcome']}"
    assert EXPECTED[case] in r["message"], r["message"]
    assert r["scene_unchanged"], f"{case} changed the scene: {r['diff']}"


def test_snapshot_sees_a_successful_bake(result):
    r = result["control_successful_bake"]
    assert r["outcome"] == ["FINISHED"] and not r["scene_unchanged"]


def test_bake_twice_keeps_the_first_bake(result):
    assert result["bake_twice"]["first_bake_still_assigned"]


def test_bake_keeps_the_user_action_and_free_bake_gives_it_back(result):
    r = result["bake_with_user_action"]
    assert r["bake_outcome"] == ["FINISHED"], r["bake_message"]
    assert r["after_bake_assigned"] == "treeArm_StiffRods"
    assert r["after_bake_user_action_in_data"] and r["after_bake_user_action_fake_user"]
    assert r["after_bake_user_fcurves"] == 9  # 3 bones × rotation_euler, untouched
    assert r["free_outcome"] == ["FINISHED"], r["free_message"]
    assert r["assigned_after_free"] == "windAction" and r["same_action_assigned"]
    assert r["same_rotation_modes"]
    assert r["scene_unchanged"], r["diff"]  # poses, keys, actions, properties
    assert r["fake_user_after_free"] == r["fake_user_before"]  # the fake user Bake set is taken back


def test_free_bake_gives_back_a_pose_set_by_hand(result):
    r = result["info_static_pose_after_free_bake"]
    assert r["kept"], r


def test_missing_leaves_still_converts_and_bakes(result):
    r = result["missing_leaves"]
    assert r["convert_outcome"] == ["FINISHED"], r["convert_message"]
    assert r["bake_outcome"] == ["FINISHED"], r["bake_message"]
    assert r["baked_fcurves"] > 0
    assert r["free_outcome"] == ["FINISHED"], r["free_message"]
    assert r["scene_unchanged"], r["diff"]
