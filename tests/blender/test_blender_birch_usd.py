"""Export Cache on the bundled leafy birch (5,878 bones, 9,459 leaves): its USD read by Pixar's pxr.

tests/blender_scripts/cache_export.py's ``birch`` phase bakes sample_blends/white_birch.blend in the storm (3
frames) in the bpy module, records Blender's evaluated world points of the branches (111,160 vertices) and the
leaves (56,754) per frame and exports the USD; the ``usd`` phase reads it with usd-core in a Python process
without bpy. Every frame's points must equal Blender's within 1e-5 m, and the storm must move them.
"""

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

from blender_env import ROOT, result_line

SCRIPT = ROOT / "tests" / "blender_scripts" / "cache_export.py"
FRAMES = 3
TOLERANCE_M = 1e-5
OBJECTS = {"tree": "tree_branches", "leaves": "leaves"}  # Blender's object → the exported object

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("bpy") is None, reason="the bpy module is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("pxr") is None, reason="usd-core (pxr) is not installed"),
]


def _python(*args):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--", *map(str, args)], capture_output=True, text=True, timeout=900
    )
    return result_line(proc, "CACHE_RESULT")


@pytest.fixture(scope="module")
def birch(tmp_path_factory):
    out = tmp_path_factory.mktemp("birch_usd")
    return {"bake": _python("birch", out), "usd": _python("usd", out, "birch")}, out


def test_birch_usd_holds_every_frame_of_branches_and_leaves(birch):
    r = birch[0]["usd"]
    assert r["pxr"]  # read without bpy in the process
    assert r["up_axis"] == "Z" and r["meters_per_unit"] == 1.0
    assert r["time_codes"][:2] == [1.0, FRAMES]
    assert sorted(r["prims"]) == sorted(OBJECTS.values())
    for prim in r["prims"].values():
        assert prim["times"] == list(range(1, FRAMES + 1))


@pytest.mark.parametrize("obj", sorted(OBJECTS))
def test_birch_usd_points_match_blenders_evaluated_meshes(birch, obj):
    out = birch[1]
    blender = np.load(out / f"birch_blender_{obj}.npy")
    read = np.load(out / f"birch_usd_{OBJECTS[obj]}.npy")
    assert read.shape == blender.shape == (FRAMES, birch[0]["bake"]["vertices"][obj], 3)
    assert np.abs(read - blender).max() < TOLERANCE_M
    sway = np.linalg.norm(blender[-1] - blender[0], axis=-1).max()  # m: the storm's gust moves the crown
    assert sway > 0.05
    assert np.linalg.norm(read[-1] - read[0], axis=-1).max() > 0.05
