"""tools/bake_forest.py --usd / --abc: each worker writes its tree's cache, the parent a root USD layer.

A 3-tree Sapling forest with leaves (quaking aspen, callistemon whose later branches get bones from the bake,
white birch; made by Blender 3.4, tests/blender_scripts/forest_scene.py) in a gusty, turbulent wind, 6 frames, baked
once by the CLI on a 2-worker LocalCluster with ``--usd``, ``--abc`` and ``--out`` (the keyed .blend the parent
writes from the same workers' records, independently of the workers' keying and export). Read back
(tests/blender_scripts/forest_cache.py): the root layer by Pixar's pxr in a Python without bpy, the per-tree
Alembic files by a fresh bpy without the add-on, the keyed .blend by a bpy without the add-on (Blender's evaluated
meshes). Every tree's branch and leaf points at every frame agree within 1e-5 m, and they move.
"""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from blender_env import ROOT, blender_env, result_line

SCRIPTS = ROOT / "tests" / "blender_scripts"
TOOL = ROOT / "tools" / "bake_forest.py"
FRAMES = 6
TOLERANCE_M = 1e-5
SPEC = {
    "trees": [
        {"preset": "quaking_aspen", "seed": 1, "location": [0, 0, 0], "overrides": {"leaves": 6}},
        {"preset": "callistemon", "seed": 2, "location": [6, 0, 0], "overrides": {"leaves": 8}, "bone_splines": 8},
        {"preset": "white_birch", "seed": 3, "location": [0, 6, 0], "overrides": {"levels": 2, "leaves": 6}},
    ],
    "frames": [1, FRAMES],
    "wind": {"speed": 8.0, "gusts": 0.2, "turbulence": 1.5, "seed": 4},
}
TREES = ["treeArm", "treeArm.001", "treeArm.002"]

pytestmark = [
    pytest.mark.skipif(shutil.which("blender") is None, reason="Debian's blender is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("bpy") is None, reason="the bpy module is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("distributed") is None, reason="dask distributed is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("pxr") is None, reason="usd-core (pxr) is not installed"),
]


def sanitized(name):
    """An object name as USD and Alembic write it: letters, digits and ``_``."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def read(phase, *args):
    cmd = [sys.executable, str(SCRIPTS / "forest_cache.py"), "--", phase, *map(str, args)]
    return result_line(subprocess.run(cmd, capture_output=True, text=True, timeout=300), "FOREST_CACHE")


@pytest.fixture(scope="module")
def forest(tmp_path_factory):
    work = tmp_path_factory.mktemp("forest-cache")
    (work / "spec.json").write_text(json.dumps(SPEC))
    cmd = ["blender", "-b", "--factory-startup", "--python", str(SCRIPTS / "forest_scene.py"), "--"]
    proc = subprocess.run(
        cmd + [str(work / "forest.blend"), str(work / "spec.json")],
        capture_output=True,
        text=True,
        timeout=300,
        env=blender_env(work / "profile"),
    )
    made = result_line(proc, "FOREST_SCENE")
    assert [t["armature"] for t in made["trees"]] == TREES
    (work / "trees.json").write_text(json.dumps(made["trees"]))
    return work, made["trees"]


@pytest.fixture(scope="module")
def baked(forest):
    work, trees = forest
    out = work / "out"
    out.mkdir()
    before = sorted(os.listdir(work))
    mtime = (work / "forest.blend").stat().st_mtime_ns
    proc = tool(work / "forest.blend", "--workers", "2", "--usd", out / "forest.usda", "--abc", out / "abc")
    summary = json.loads(proc.stdout.splitlines()[-1])
    summary["blends"] = sorted(p.name for p in out.glob("*.blend"))  # before the keyed run below
    both = tool(work / "forest.blend", "--workers", "2", "--out", out / "keyed.blend", "--usd", out / "both.usda")
    input_kept = sorted(os.listdir(work)) == before and (work / "forest.blend").stat().st_mtime_ns == mtime
    keyed = read("keyed", out / "keyed.blend", work / "trees.json", out / "keyed.npz")
    usd = read("usd", out / "forest.usda", out / "usd.npz")
    abc = read("abc", out / "abc", out / "abc.npz")
    imported = read("usd_import", out / "forest.usda", out / "usd_import.npz")
    points = {k: dict(np.load(out / f"{k}.npz")) for k in ("keyed", "usd", "abc", "usd_import")}
    both = json.loads(both.stdout.splitlines()[-1])
    info = dict(summary=summary, stderr=proc.stderr, input_kept=input_kept, out=out, trees=trees, both=both)
    return info, (keyed, usd, abc, imported), points


def tool(*args):
    proc = subprocess.run([sys.executable, TOOL, *args, "--json"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_every_worker_exports_its_tree_and_the_parent_writes_no_keys_for_it(baked):
    info = baked[0]
    s = info["summary"]
    assert s["baked"] == 3 and s["failed"] == {} and s["refused"] == {}
    for name in TREES:
        assert re.search(rf"\] {re.escape(name)}: baked in .* exported .*\.usdc, .*\.abc in", info["stderr"]), name
        assert s["per_tree_export_s"][name] > 0 and s["per_tree_bake_s"][name] > 0
    files = ["treeArm", "treeArm_001", "treeArm_002"]
    assert sorted(os.listdir(info["out"] / "forest_trees")) == [f + ".usdc" for f in files]
    assert sorted(os.listdir(info["out"] / "abc")) == ["index.json"] + [f + ".abc" for f in files]
    assert s["parent_s"] < s["seconds"] and s["usd_root_s"] < 0.01  # plain text: microseconds
    assert s["out"] is None and s["blends"] == []  # no keyed .blend asked, none written
    assert info["input_kept"]  # the scene is not written, no point cache beside it
    both = info["both"]  # --out and --usd together: the keyed .blend and the caches
    assert both["baked"] == 3 and both["out"] == str(info["out"] / "keyed.blend") and both["keys"] > 0
    assert (info["out"] / "both.usda").read_text().count("prepend references") == 3


def test_root_layer_composes_every_tree_without_collisions(baked):
    usd = baked[1][1]
    assert usd["pxr"] and usd["up_axis"] == "Z" and usd["meters_per_unit"] == 1.0
    assert usd["time_codes"] == [1.0, FRAMES, 24.0]
    assert usd["trees"] == ["treeArm", "treeArm_001", "treeArm_002"]
    assert len(usd["paths"]) == len(set(usd["paths"])) == 6  # branches and leaves of each tree, each its own prim
    for times in usd["times"].values():
        assert times == list(range(1, FRAMES + 1))


def pairs(trees, reader, got):
    """(keyed key, read key) for every tree's branches and leaves."""
    out = []
    for t in trees:
        arm = t["armature"]
        prefix = arm if reader == "usd" else sanitized(arm)  # USD: the tree's name; Alembic, import: its file or prim
        for part, obj in (("branches", f"{t['curve']}_branches"), ("leaves", t["leaves"])):
            match = [k for k in got if k.split("/")[0] == prefix and sanitized(k.split("/")[1]) == sanitized(obj)]
            assert len(match) == 1, (arm, part, sorted(got))
            out.append((f"{arm}/{part}", match[0]))
    return out


@pytest.mark.parametrize("reader", ["usd", "abc", "usd_import"])
def test_caches_match_blenders_evaluated_meshes_of_the_keyed_forest(baked, reader):
    info, _, points = baked
    found = pairs(info["trees"], reader, points[reader])
    assert len(found) == 6  # all three trees, branches and leaves
    for key, read_key in found:
        ref, got = points["keyed"][key], points[reader][read_key]
        assert got.shape == ref.shape and ref.shape[0] == FRAMES, key
        assert np.abs(got - ref).max() < TOLERANCE_M, key
        sway = np.linalg.norm(ref - ref[0], axis=-1).max()
        assert sway > 1e-3, key  # the wind moves every tree's branches and leaves: not the rest pose


def test_blender_plays_the_caches_without_the_addon_as_mesh_sequence_caches(baked):
    keyed, _, abc, imported = baked[1]
    assert keyed["addon"] is False and abc["addon"] is False and imported["addon"] is False
    for modifiers in [*abc["modifiers"].values(), *imported["modifiers"].values()]:
        assert modifiers == ["MESH_SEQUENCE_CACHE"]
    assert imported["frames"] == [1, FRAMES]
    assert {t["status"] for t in abc["index"]["trees"]} == {"done"}
    assert abc["index"]["frames"] == [1, FRAMES]


def test_a_failing_tree_names_itself_and_leaves_no_file(forest, tmp_path):
    work, _ = forest
    broken = tmp_path / "broken.blend"
    run = subprocess.run(
        [sys.executable, SCRIPTS / "forest_bake.py", "--", work / "forest.blend", broken, "--break"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert broken.is_file(), run.stderr[-3000:]
    proc = subprocess.run(
        [sys.executable, TOOL, broken, "--workers", "2", "--json", "--usd", tmp_path / "forest.usda"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1
    s = json.loads(proc.stdout.splitlines()[-1])
    assert "PaOBCR" in s["failed"]["treeArm"] and "no matching span" in s["refused"]["treeArm.001"]
    assert re.search(r"\] treeArm: FAILED: .*PaOBCR", proc.stderr)
    assert s["baked"] == 1 and s["out"] is None and not list(tmp_path.glob("*baked*"))  # no keyed .blend
    assert os.listdir(tmp_path / "forest_trees") == ["treeArm_002.usdc"]  # nothing of the failed tree
    root = (tmp_path / "forest.usda").read_text()
    assert "treeArm_002.usdc" in root and root.count("prepend references") == 1
