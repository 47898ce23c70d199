"""A world matrix the solver cannot represent is refused by name (issue 21), in real Blender 3.4 with the
legacy zip installed in an isolated profile. One Blender process runs tests/blender_scripts/transforms.py
on a Sapling quaking aspen: a mirrored, stretched, stretched-by-its-parent or sheared armature, stretched
leaves and a mirrored plain curve make Convert and Bake report an ERROR naming the object and leave the
scene as it was; a uniformly scaled, turned tree still converts.
"""

import shutil

import pytest

from blender_env import ROOT, build_legacy_zip, run_blender

SCRIPT = ROOT / "tests" / "blender_scripts" / "transforms.py"

pytestmark = pytest.mark.skipif(shutil.which("blender") is None, reason="Debian's blender is not installed")

MIRRORED = "is mirrored (negative scale) in world space"
APPLY = "Object > Apply > Scale"

# case -> what the ERROR message of Convert and Bake starts with
EXPECTED = {
    "armature_mirrored": f"'treeArm' {MIRRORED}",
    "armature_stretched": "'treeArm' has a non-uniform scale (1, 1, 2) in world space",
    "parent_empty": "'treeArm' has a non-uniform scale (1, 2, 1) in world space",
    "parent_empty_sheared": "'treeArm' has a shear (scaled by (",
    "leaves_stretched": "'leaves' has a non-uniform scale (1, 1, 2) in world space",
    "rope_mirrored": f"'Rope' {MIRRORED}",
}


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    zip_path = build_legacy_zip(tmp_path_factory.mktemp("dist"))
    profile = tmp_path_factory.mktemp("transforms-profile")
    out = run_blender(
        ["blender", "-b", "--factory-startup", "--python", str(SCRIPT), "--", zip_path],
        profile,
        "TRANSFORMS_RESULT",
        timeout=600,
    )
    assert out["blender"][:2] == [3, 4]
    return out


def part(result, name):
    out = result[name]
    assert "error" not in out, out["error"]
    return out


@pytest.mark.parametrize("op", ["convert", "bake"])
@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_refused_with_an_error_naming_the_object(result, case, op):
    r = part(result, case)[op]
    # in background mode an operator that reports ERROR and returns CANCELLED raises "Error: <message>"
    assert r["outcome"] == "raised", r
    assert r["message"].startswith(EXPECTED[case]), r["message"]
    assert APPLY in r["message"], r["message"]


@pytest.mark.parametrize("op", ["convert", "bake"])
@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_refusal_leaves_the_scene_unchanged(result, case, op):
    r = part(result, case)[op]
    assert r["diff"] is None, r["diff"]  # actions, pose bones (names, rotation modes and values), objects
    assert not r["bones_added"]


def test_uniformly_scaled_turned_tree_still_converts(result):
    r = part(result, "uniform_and_turned")
    assert r["outcome"] == ["FINISHED"], r
