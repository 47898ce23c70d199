"""Convert, Bake and Free Bake on many trees at once (the N-panel's forest), Blender 3.4 with the legacy add-on.

The forest (tests/blender_scripts/forest_scene.py): a quaking aspen with leaves, a white birch and a callistemon
whose later branches have no bones (Bake adds them), and a Bézier curve, in a gusty, turbulent wind. The cases run
in tests/blender_scripts/forest_panel.py; the baked files play back in a Blender without the add-on
(tests/blender_scripts/forest_replay.py) and are compared with the bones' tails of a plain simulation loop.
"""

import json
import shutil
import subprocess

import numpy as np
import pytest
from test_blender_bad_input import legacy_zip  # noqa: F401  (module fixture: builds the zip)

from blender_env import ROOT, blender_env, result_line, run_blender

SCRIPTS = ROOT / "tests" / "blender_scripts"
TREES = ["treeArm", "treeArm.001", "treeArm.002"]
SPEC = {
    "trees": [
        {"preset": "quaking_aspen", "seed": 1, "location": [0, 0, 0], "overrides": {"leaves": 6}},
        {"preset": "white_birch", "seed": 2, "location": [6, 0, 0], "overrides": {"levels": 2}, "leaves": False},
        {"preset": "callistemon", "seed": 3, "location": [0, 6, 0], "leaves": False, "bone_splines": 6},
    ],
    "curves": [{"location": [6, 6, 1]}],
    "frames": [1, 6],
    "wind": {"speed": 8.0, "gusts": 0.2, "turbulence": 1.0, "seed": 5},
}
REPLAY = 1e-4  # m per bone tail
SAME = 1e-9  # key values

pytestmark = pytest.mark.skipif(shutil.which("blender") is None, reason="Debian's blender is not installed")


def make_forest(work, spec=SPEC):
    """The forest of ``spec`` made by Blender 3.4 as ``work/forest.blend``."""
    (work / "spec.json").write_text(json.dumps(spec))
    cmd = ["blender", "-b", "--factory-startup", "--python", str(SCRIPTS / "forest_scene.py"), "--"]
    proc = subprocess.run(
        cmd + [str(work / "forest.blend"), str(work / "spec.json")],
        capture_output=True,
        text=True,
        timeout=600,
        env=blender_env(work / "profile"),
    )
    made = result_line(proc, "FOREST_SCENE")
    assert [t.get("armature", t["curve"]) for t in made["trees"]] == TREES + ["Rope0"]
    return work / "forest.blend"


@pytest.fixture(scope="module")
def result(legacy_zip, tmp_path_factory):  # noqa: F811
    work = tmp_path_factory.mktemp("forest-panel")
    blend = make_forest(work)
    args = ["blender", "-b", "--factory-startup", "--python", str(SCRIPTS / "forest_panel.py"), "--"]
    args += [legacy_zip, str(blend), str(work / "cases")]
    out = run_blender(args, work / "profile-addon", "FOREST_PANEL", timeout=900, exit_zero=True)
    out["work"] = str(work)
    return out


def case(result, name):
    out = result[name]
    assert "error" not in out, out["error"]
    return out


def replay(blend, profile):
    """Bone tails of ``blend`` played by a Blender without the add-on."""
    args = ["blender", "-b", "--factory-startup", "--python", str(SCRIPTS / "forest_replay.py"), "--", blend]
    return run_blender(args, profile, "FOREST_REPLAY", timeout=300)


@pytest.mark.parametrize("name, trees", [("two", TREES[:2]), ("three", TREES)])
def test_selected_trees_are_all_baked_replay_and_are_freed(result, name, trees, tmp_path):
    out = case(result, name)
    assert out["bake"] == ["FINISHED"], out["bake_reports"]
    assert out["baked"] == trees  # each selected tree, no other
    assert all(out["keys"][t] > 0 for t in trees)
    played = replay(out["blend"], tmp_path / "plain")
    assert not any("stiff_rods" in a for a in played["addons"])
    assert sorted(n for n, a in played["actions"].items() if a.endswith("_StiffRods")) == trees
    for tree in trees:
        ref, got = out["tails"][tree], played["armatures"][tree]
        sim = np.array(ref["tails"])
        tails = np.array(got["tails"])[:, [got["bones"].index(b) for b in ref["bones"]]]
        assert np.max(np.linalg.norm(sim - sim[0], axis=2)) > 1e-3, tree  # the tree does move in the wind
        assert np.max(np.linalg.norm(tails - sim, axis=2)) <= REPLAY, tree
    assert out["free"] == ["FINISHED"], out["free_reports"]
    assert out["baked_after_free"] == [] and out["diff_after_free"] is None
    assert out["free_reports"].count("Freed the Stiff Rods bake of") == len(trees)


def test_a_collection_chosen_bakes_every_tree_and_curve_of_it(result):
    out = case(result, "collection")
    assert out["bake"] == ["FINISHED"], out["reports"]
    assert out["baked"] == sorted(TREES + ["Rope0"])
    assert "Baked 4 trees" in out["reports"]
    assert out["free"] == ["FINISHED"] and out["diff_after_free"] is None


def test_parallel_workers_give_the_serial_keys(result):
    out = case(result, "workers")
    assert out["bake"] == ["FINISHED"], out["reports"]
    assert sorted(out["diff"]) == TREES and all(isinstance(v, float) for v in out["diff"].values()), out["diff"]
    assert max(out["diff"].values()) <= SAME
    assert out["cache_folders_left"] == []


def test_a_broken_tree_among_good_ones_refuses_the_bake_before_it_starts(result):
    out = case(result, "broken")
    assert out["bake"] == "raised" and out["baked"] == [] and out["diff"] is None, out
    lines = out["reports"].splitlines()
    assert any(
        line.startswith("Error: 'treeArm.001' cannot be baked: ") and "no matching span" in line for line in lines
    )
    assert any(line.startswith("Error: 'treeArm.002' cannot be baked: ") and "mirrored" in line for line in lines)
    assert "2 of the chosen trees cannot be baked" in out["reports"]


def test_convert_builds_every_selected_tree_and_names_what_it_left_out(result):
    out = case(result, "convert")
    assert out["convert"] == ["FINISHED"], out["reports"]
    assert out["sessions"] == TREES
    assert "3 of 3 trees" in out["reports"]
    assert "Not a tree or curve, left out: Camera" in out["reports"]


def test_the_active_tree_alone_when_it_is_not_selected(result):
    out = case(result, "active_alone")
    assert out["bake"] == ["FINISHED"] and out["baked"] == ["treeArm"], out


def test_a_tree_failing_in_its_worker_writes_nothing_and_is_named(result):
    out = case(result, "failed")
    assert out["bake"] == "raised" and out["baked"] == [] and out["diff"] is None, out
    assert "Bake failed: 'treeArm.001': " in out["reports"] and "PaOBCR" in out["reports"]
    assert "nothing was written" in out["reports"]
    assert out["cache_folders_left"] == []
