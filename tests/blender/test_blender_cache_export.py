"""Export Cache: a baked Sapling tree's branches and leaves per frame as USD and Alembic, read back independently.

tests/blender_scripts/cache_export.py generates Sapling's small pine with leaves in Debian's Blender 3.4 (built
without USD and Alembic: the operator is greyed out there, with the reason), bakes 6 storm frames in the bpy module
(Blender 5.0), records Blender's evaluated world points of the branches (the curve's mesh) and the leaves, and
exports the cache with Blender's USD and Alembic exporters. The USD is read by Pixar's usd-core (pxr) in a plain
Python process without bpy; the Alembic is imported into a fresh bpy process without the add-on. Both must give
Blender's points at every frame within 1e-5 m, and those points must move (the leaves' Mesh Cache and the bones'
deformation of the branches evaluated, not the rest pose).
"""

import importlib.util
import shutil
import subprocess
import sys

import numpy as np
import pytest

from blender_env import ROOT, result_line, run_blender

SCRIPT = ROOT / "tests" / "blender_scripts" / "cache_export.py"
FRAMES = 6
TOLERANCE_M = 1e-5
OBJECTS = {"tree": "tree_branches", "leaves": "leaves"}  # Blender's object → the exported object

pytestmark = [
    pytest.mark.skipif(shutil.which("blender") is None, reason="Debian's blender is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("bpy") is None, reason="the bpy module is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("pxr") is None, reason="usd-core (pxr) is not installed"),
]


def _python(phase, out):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--", phase, str(out)], capture_output=True, text=True, timeout=600
    )
    return result_line(proc, "CACHE_RESULT")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("cache")
    args = ["blender", "-b", "--factory-startup", "--python", str(SCRIPT), "--", "make", str(out)]
    legacy = run_blender(args, out / "profile", "CACHE_RESULT", timeout=300)
    shutil.rmtree(out / "profile", ignore_errors=True)
    baked = _python("bake", out)
    return {"3.4": legacy, "bake": baked, "usd": _python("usd", out), "abc": _python("abc", out)}, out


def test_blender_34_greys_export_cache_out_with_the_reason(runs):
    r = runs[0]["3.4"]
    assert r["version"][:2] == [3, 4]
    assert r["poll"] is False
    assert "built without USD and Alembic" in r["call_error"]
    assert all(not ok and "built without" in why for ok, why in r["available"].values())
    assert "x.usdc" not in r["files"]  # nothing written


def test_export_before_the_bake_says_so_and_writes_nothing(runs):
    r = runs[0]["bake"]
    assert "'treeArm' is not baked" in r["not_baked"]
    assert "early.usdc" not in r["files_before_bake"]


def test_export_gives_the_scene_back_and_leaves_no_partial_file(runs):
    r = runs[0]["bake"]
    assert r["after_usd"] == r["before"] and r["after_abc"] == r["before"]
    assert r["before"]["frames"] == [1, FRAMES, 3]
    assert not [f for f in r["files"] if f.startswith(".stiff_rods_")]
    assert r["usd"]["bytes"] > 0 and r["abc"]["bytes"] > 0


def test_usd_metadata_and_time_samples(runs):
    r = runs[0]["usd"]
    assert r["pxr"]  # read without bpy in the process
    assert r["up_axis"] == "Z" and r["meters_per_unit"] == 1.0
    assert r["time_codes"][:2] == [1.0, FRAMES]
    assert r["types"] == ["Mesh", "Xform"]  # no armature, curve, light or camera
    assert sorted(r["prims"]) == sorted(OBJECTS.values())
    for prim in r["prims"].values():
        assert prim["times"] == list(range(1, FRAMES + 1))


@pytest.mark.parametrize("reader", ["usd", "abc"])
@pytest.mark.parametrize("obj", sorted(OBJECTS))
def test_cache_points_match_blenders_evaluated_meshes(runs, reader, obj):
    out = runs[1]
    blender = np.load(out / f"blender_{obj}.npy")
    read = np.load(out / f"{reader}_{OBJECTS[obj]}.npy")
    assert read.shape == blender.shape == (FRAMES, runs[0]["bake"]["vertices"][obj], 3)
    assert np.abs(read - blender).max() < TOLERANCE_M
    sway = np.linalg.norm(blender - blender[0], axis=-1).max(axis=1)  # m, per frame from the first
    assert sway[3] > 0.05  # the storm moves branches and leaves by centimetres: not frozen at rest
    assert np.linalg.norm(read[3] - read[0], axis=-1).max() > 0.05


def test_alembic_reimport_needs_no_addon(runs):
    r = runs[0]["abc"]
    assert r["addon"] is False
    assert {name for name, kind in r["objects"] if kind == "MESH"} == set(OBJECTS.values())
