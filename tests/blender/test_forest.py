"""A forest baked in parallel (addon/forest.py, tools/bake_forest.py) equals the serial bake.

The forest: three real Sapling trees of different presets and seeds, with leaves (quaking aspen;
callistemon with bones on its first branches only, so the bake adds the others; white birch) and a Bézier curve,
in a turbulent, gusty wind, made by Blender 3.4 (tests/blender_scripts/forest_scene.py). With the bpy
module (tests/blender_scripts/forest_bake.py): the serial bake, the process pool (2 workers) and a Dask
LocalCluster (2 workers, one killed in the middle) give the same arrays; the parent's keyframes are
Bake's own; Free Bake frees every tree; the Dask-baked file plays back without the add-on. The CLI bakes
the good trees of a forest with two broken ones and names those. In Blender 3.4 with the legacy add-on
installed, the pool of headless Blenders gives Bake's keyframes.
"""

import importlib.util
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from blender_env import ROOT, blender_env, build_legacy_zip, result_line

SCRIPTS = ROOT / "tests" / "blender_scripts"
TREES = ["treeArm", "treeArm.001", "treeArm.002", "Rope0"]
SPEC = {
    "trees": [
        {"preset": "quaking_aspen", "seed": 1, "location": [0, 0, 0], "overrides": {"leaves": 10}},
        {"preset": "callistemon", "seed": 2, "location": [6, 0, 0], "overrides": {"leaves": 12}, "bone_splines": 8},
        {"preset": "white_birch", "seed": 3, "location": [0, 6, 0], "overrides": {"levels": 2, "leaves": 8}},
    ],
    "curves": [{"location": [6, 6, 1]}],
    "frames": [1, 10],
    "wind": {"speed": 8.0, "gusts": 0.2, "turbulence": 1.5, "seed": 4},
}
SAME = 1e-9  # bone rotations (quaternion components), leaf and curve points [m]
REPLAY = 1e-4  # m per bone tail

pytestmark = [
    pytest.mark.skipif(shutil.which("blender") is None, reason="Debian's blender is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("bpy") is None, reason="the bpy module is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("distributed") is None, reason="dask distributed is not installed"),
]


@pytest.fixture(scope="module")
def forest_blend(tmp_path_factory):
    work = tmp_path_factory.mktemp("forest")
    spec = work / "spec.json"
    spec.write_text(json.dumps(SPEC))
    cmd = ["blender", "-b", "--factory-startup", "--python", str(SCRIPTS / "forest_scene.py"), "--"]
    proc = subprocess.run(
        cmd + [str(work / "forest.blend"), str(spec)],
        capture_output=True,
        text=True,
        timeout=600,
        env=blender_env(work / "profile"),
    )
    made = result_line(proc, "FOREST_SCENE")
    assert [t.get("armature", t["curve"]) for t in made["trees"]] == TREES
    return work / "forest.blend"


def run_python(args, marker, timeout=900):
    proc = subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, timeout=timeout)
    return result_line(proc, marker), proc


@pytest.fixture(scope="module")
def baked(forest_blend, tmp_path_factory):
    work = tmp_path_factory.mktemp("forest-bake")
    return run_python([SCRIPTS / "forest_bake.py", "--", forest_blend, work], "FOREST_BAKE_RESULT")[0]


def largest(diff):
    """The largest difference over all trees and arrays; a missing tree or a shape mismatch fails."""
    assert set(diff) == set(TREES), diff
    values = [v for d in diff.values() for v in (d.values() if isinstance(d, dict) else [d])]
    assert all(isinstance(v, float) for v in values), diff
    return max(values)


def test_every_tree_of_the_scene_is_found_once(baked):
    assert baked["trees"] == TREES
    assert sorted(baked["ignored"]) == ["Turbulence", "Wind"] and baked["refused"] == []
    assert baked["added_bones"]["treeArm.001"] > 0  # callistemon's branches had no bones: the bake adds them
    shapes = baked["serial_shapes"]
    assert all(len(s["leaf_frames"]) == 3 and s["leaf_frames"][0] == 10 for n, s in shapes.items() if n != "Rope0")
    assert shapes["Rope0"]["co"][:2] == [11, 2]  # rest + 10 frames, 2 control points


def test_process_pool_equals_the_serial_bake(baked):
    pool = baked["pool"]
    assert pool["finished"] and pool["failures"] == {}
    assert len(pool["workers"]) == 2, pool["workers"]  # both processes baked trees
    assert pool["progress_steps"][-1] == len(TREES)
    assert largest(pool["diff"]) <= SAME


def test_dask_bake_with_a_worker_killed_equals_the_serial_bake(baked):
    dask = baked["dask"]
    assert dask["exit"] == 0
    assert dask["killed"].get("pid"), dask["killed"]  # a busy worker process was killed mid-bake
    # the tree it was baking was baked again by another worker process: every tree is in the cache and equals the
    # serial bake (below); the killed process may have finished an earlier tree, so its pid may be in the manifest
    assert set(dask["worker_pids"]) - {dask["killed"]["pid"]}
    assert largest(dask["diff"]) <= SAME


def test_the_parent_writes_the_keys_bake_writes(baked):
    assert sorted(baked["write"]["trees"]) == sorted(TREES)
    assert baked["write"]["fcurves"] == sum(baked["fcurves_per_tree"].values())
    assert all(n > 0 for n in baked["fcurves_per_tree"].values())
    assert largest(baked["keys_vs_operator"]) <= SAME


def test_free_bake_frees_every_tree_of_the_forest(baked):
    free = baked["free_bake"]
    assert all(v == ["FINISHED"] for v in free["outcome"].values()), free
    assert free["fcurves_after"] == free["fcurves_before"]


def test_the_dask_baked_forest_replays_without_the_addon(baked):
    replay, _ = run_python([SCRIPTS / "forest_replay.py", "--", baked["dask"]["blend"]], "FOREST_REPLAY", 600)
    assert not any("stiff_rods" in a for a in replay["addons"])
    assert sorted(replay["armatures"]) == TREES[:3]
    for name, ref in baked["tails"].items():
        got = replay["armatures"][name]
        index = [got["bones"].index(b) for b in ref["bones"]]
        sim = np.array(ref["tails"])
        played = np.array(got["tails"])[:, index]
        assert np.max(np.linalg.norm(sim - sim[0], axis=2)) > 1e-3, name  # the tree does move
        assert np.max(np.linalg.norm(played - sim, axis=2)) <= REPLAY, name


def test_cli_bakes_the_good_trees_and_names_the_broken_ones(forest_blend, tmp_path):
    broken = tmp_path / "broken.blend"
    run = subprocess.run(
        [sys.executable, SCRIPTS / "forest_bake.py", "--", forest_blend, broken, "--break"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert broken.is_file(), run.stderr[-3000:]
    out = tmp_path / "baked.blend"
    proc = subprocess.run(
        [sys.executable, ROOT / "tools" / "bake_forest.py", broken, "--workers", "2", "--json", "--out", out],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.splitlines()[-1])
    assert "no matching span" in summary["refused"]["treeArm.001"]
    assert "PaOBCR" in summary["failed"]["treeArm"]
    assert summary["baked"] == 2 and summary["trees"] == 4
    last = proc.stderr.strip().splitlines()[-1]  # "bake_forest: 2 not baked: treeArm.001, treeArm"
    assert set(last.split(": ")[-1].split(", ")) == {"treeArm.001", "treeArm"}, last
    replay, _ = run_python([SCRIPTS / "forest_replay.py", "--", out], "FOREST_REPLAY", 600)
    baked_actions = {name for name, action in replay["actions"].items() if action.endswith("_StiffRods")}
    assert baked_actions == {"treeArm.002"}  # the good tree baked, the broken ones untouched
    assert not list(tmp_path.glob("*_stiff_rods_forest"))  # the cache folder is removed


def test_process_pool_of_headless_blenders_in_blender_3_4(forest_blend, tmp_path):
    zip_path = build_legacy_zip(tmp_path / "dist")
    proc = subprocess.run(
        ["blender", "-b", "--factory-startup", "--python", SCRIPTS / "forest_pool34.py", "--"]
        + [zip_path, forest_blend, tmp_path],
        capture_output=True,
        text=True,
        timeout=900,
        env=blender_env(tmp_path / "profile"),
    )
    out = result_line(proc, "FOREST_POOL34")
    assert str(tmp_path / "profile") in out["addon_root"]  # the installed add-on, not this checkout
    assert out["finished"] and out["failures"] == {} and len(out["workers"]) == 2
    assert out["trees"] == TREES
    assert largest(out["keys_vs_operator"]) <= SAME


def test_cli_bakes_a_seamless_loop_on_the_workers(forest_blend, tmp_path):
    """``--loop 8``: the worker bakes the birch as a loop (its wind repeating, warmed up in whole loops), keyed
    frames 1..9 with the last equal to the first; without the loop reaching the worker the seam would be open."""
    out = tmp_path / "loop.blend"
    proc = subprocess.run(
        [sys.executable, ROOT / "tools" / "bake_forest.py", forest_blend, "--objects", "treeArm.002"]
        + ["--loop", "8", "--frames", "1", "10", "--workers", "1", "--json", "--out", out],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.splitlines()[-1])["baked"] == 1
    replay, _ = run_python([SCRIPTS / "forest_replay.py", "--", out], "FOREST_REPLAY", 600)
    tails = np.array(replay["armatures"]["treeArm.002"]["tails"])  # the scene's frames 1..10
    step = np.median(np.linalg.norm(np.diff(tails[:9], axis=0), axis=-1))
    assert step > 1e-5  # the tree sways
    np.testing.assert_allclose(tails[8], tails[0], atol=REPLAY)  # frame 9 = frame 1: the loop closes
    assert np.abs(tails[9] - tails[8]).max() < REPLAY  # no keys after the loop: frame 10 holds frame 9
