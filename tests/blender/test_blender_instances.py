"""Bake Instances: 200 instances of two real Sapling assets that do not sway in unison, read back by Blender.

tests/blender_scripts/instances.py generates Sapling's quaking aspen and small maple (a few leaves each) in
Debian's Blender 3.4, scatters them in the bpy module (Blender 5.0) as 100 collection instances (Empties) and
100 Geometry Nodes instances (the add-on's node group on two point meshes), bakes a gusty wind as 8 variants of a
24-frame loop over 48 frames, and reads every instance's branch tip through the depsgraph's object instances
(``matrix_world`` × the evaluated mesh: none of the add-on's data). A fresh bpy process without the add-on opens
the saved file and reads the tips again. The measures:

* every instance's tip moves;
* against its nearest neighbour, the median correlation of an instance's tip motion is below 0.5 (in unison: 1);
* the file plays the same without the add-on (same tips, float32 rounding);
* a collection of a cube instanced next to the trees is refused with its name, nothing changed;
* Hero trees: a camera between the two scatters with a Hero Distance of 15 m and a Hero Collection holding one
  far Empty make instances of both kinds and both assets real: each hero is a real curve (no instance) whose
  rest pose is where its instance was, whose tip motion is not any variant's, and the drawn trees stay 200;
  Hero Distance without a camera is refused, nothing changed;
* Free Instances gives the scene back (objects, collections, actions, armatures, modifiers, node inputs,
  visibility, custom properties, PC2 files).
"""

import importlib.util
import shutil
import subprocess
import sys

import numpy as np
import pytest

from blender_env import ROOT, result_line, run_blender

SCRIPT = ROOT / "tests" / "blender_scripts" / "instances.py"
MARKER = "INSTANCES_RESULT"

pytestmark = [
    pytest.mark.skipif(shutil.which("blender") is None, reason="Debian's blender is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("bpy") is None, reason="the bpy module is not installed"),
]


def _python(phase, out):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--", phase, str(out)], capture_output=True, text=True, timeout=600
    )
    return result_line(proc, MARKER)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("instances")
    args = ["blender", "-b", "--factory-startup", "--python", str(SCRIPT), "--", "make", str(out)]
    made = run_blender(args, out / "profile", MARKER, timeout=300)
    shutil.rmtree(out / "profile", ignore_errors=True)
    baked = _python("bake", out)
    replayed = _python("replay", out)
    return {"make": made, "bake": baked, "replay": replayed}, out


def _correlations(tips):
    """Each instance's tip motion (F, 3) against its nearest neighbour's (by mean tip position): the correlation
    of their displacements from their means."""
    d = tips - tips.mean(axis=0)
    pos = tips.mean(axis=0)
    dist = np.linalg.norm(pos[:, None] - pos[None], axis=-1)
    np.fill_diagonal(dist, np.inf)
    nn = dist.argmin(axis=1)
    num = np.einsum("fid,fid->i", d, d[:, nn])
    return num / np.sqrt(np.einsum("fid,fid->i", d, d) * np.einsum("fid,fid->i", d[:, nn], d[:, nn]))


def test_all_200_instances_are_there_and_every_one_moves(runs):
    r, out = runs
    assert r["make"]["version"][:2] == [3, 4]
    assert r["bake"]["instancers"] == 200 and r["bake"]["rest_instances"] == 200
    tips = np.load(out / "tips.npy")
    assert tips.shape[1] == 200
    heroes = r["bake"]["hero_curves"]
    nodes = sum("scatter_" in k for k in r["bake"]["keys"]) + sum("/" in src for src in heroes.values())
    assert nodes == 100  # Geometry Nodes instances, drawn or made real
    sway = np.linalg.norm(tips - tips[0], axis=-1).max(axis=0)  # m, per instance
    assert sway.min() > 5e-3  # every tip moves by millimetres at least (measured ≥ 13 mm)


def test_neighbours_do_not_sway_in_unison(runs):
    r, out = runs
    c = _correlations(np.load(out / "tips.npy"))
    gn = np.array(["scatter_" in k for k in r["bake"]["keys"]])
    print(
        f"median neighbour correlation {np.median(c):.3f} (collection {np.median(c[~gn]):.3f}, nodes "
        f"{np.median(c[gn]):.3f}), median |c| {np.median(np.abs(c)):.3f}"
    )
    assert np.median(c) < 0.5
    assert np.median(c[~gn]) < 0.5 and np.median(c[gn]) < 0.5
    assert len(set(r["bake"]["shifts"])) == 8  # 8 distinct phases


def test_one_asset_played_by_every_instance_would_fail(runs):
    """The check is not vacuous: the same tip motion on every instance (no variants) correlates 1."""
    tips = np.load(runs[1] / "tips.npy")
    same = tips[:, :1] - tips[:1, :1] + tips[:1]
    assert np.median(_correlations(same)) > 0.99


def test_the_saved_file_plays_without_the_addon(runs):
    r, out = runs
    assert r["replay"]["addon"] is False
    assert r["replay"]["keys"] == r["bake"]["keys"]
    np.testing.assert_allclose(np.load(out / "replay.npy"), np.load(out / "tips.npy"), atol=1e-5)


def test_an_asset_that_is_no_tree_is_refused_by_name(runs):
    refused = runs[0]["bake"]["refused"]
    assert "Asset 'rock'" in refused["message"] and "no Sapling tree" in refused["message"]
    assert refused["unchanged"]


def test_free_gives_the_scene_back(runs):
    b = runs[0]["bake"]
    assert b["after_bake"] != b["before"]
    assert any(c.endswith("_variant_7") for c in b["after_bake"]["collections"])
    assert b["after_bake"]["files"]  # the assets' leaves PC2
    assert any(c.endswith("_heroes") for c in b["after_bake"]["collections"])
    assert len(b["after_bake"]["hidden"]) > len(b["before"]["hidden"])  # the hero instancers
    assert b["after_bake"]["node_inputs"] != b["before"]["node_inputs"]  # Hero Camera / Distance set
    assert b["after_free"] == b["before"]


def _asset(key):
    return key.rsplit("/", 1)[1]


def test_heroes_are_real_trees_where_their_instances_were(runs):
    b = runs[0]["bake"]
    heroes = b["hero_curves"]  # hero curve → the instancer or scatter point it replaced
    points = [src for src in heroes.values() if "/" in src]
    empties = [src for src in heroes.values() if "/" not in src]
    print(f"{len(heroes)} heroes: {len(empties)} collection instances, {len(points)} node points")
    assert len(points) >= 2 and len(empties) >= 3 and "inst_0_0" in empties  # inst_0_0: the Hero Collection
    assert {_asset(k) for k in b["hero_rest"]} == {_asset(k) for k in b["rest"]}  # both assets
    assert "5 hero trees" not in b["panel"][1] and f"{len(heroes)} hero trees" in b["panel"][1]
    hero_keys = [k for k in b["keys"] if k.startswith("hero/")]
    assert sorted(hero_keys) == sorted(b["hero_rest"]) and len(hero_keys) == len(heroes)  # real, drawn once
    assert len(b["keys"]) == b["rest_instances"] == 200  # no instance both drawn and real
    rest_keys = list(b["rest"])
    rest_origin = np.array([b["rest"][k][0] for k in rest_keys])
    rest_tip = np.array([b["rest"][k][1] for k in rest_keys])
    drawn = np.array([b["origins"][k] for k in b["keys"] if not k.startswith("hero/")])
    for key, (origin, tip) in b["hero_rest"].items():
        i = int(np.argmin(np.linalg.norm(rest_origin - origin, axis=1)))
        assert _asset(rest_keys[i]) == _asset(key)
        assert np.linalg.norm(rest_origin[i] - origin) < 1e-4  # where the instance was
        assert np.linalg.norm(rest_tip[i] - tip) < 1e-4  # and its rest pose
        source = heroes[key.split("/")[1]]
        if "/" not in source:
            assert rest_keys[i].startswith(source + "/")  # the instancer it replaced
        assert np.linalg.norm(drawn - origin, axis=1).min() > 1e-3  # that instance is no longer drawn


def test_heroes_sway_unlike_every_variant(runs):
    r, out = runs
    keys = r["bake"]["keys"]
    tips = np.load(out / "tips.npy")
    d = tips - tips.mean(axis=0)
    for h, key in enumerate(keys):
        if not key.startswith("hero/"):
            continue
        same = [i for i, k in enumerate(keys) if _asset(k) == _asset(key) and not k.startswith("hero/")]
        motions = d[:, same].transpose(1, 0, 2).reshape(len(same), -1)
        distinct = [motions[0]]
        for m in motions[1:]:
            if min(np.abs(m - x).max() for x in distinct) > 1e-4:
                distinct.append(m)
        assert len(distinct) == 8  # every variant of the asset is among the drawn instances compared
        mine = d[:, h].reshape(-1)
        corr = motions @ mine / np.sqrt(np.einsum("ij,ij->i", motions, motions) * (mine @ mine))
        diff = np.abs(motions - mine).max(axis=1)
        print(f"{key}: max correlation with a variant {corr.max():.3f}, min difference {diff.min() * 1e3:.1f} mm")
        assert corr.max() < 0.99 and diff.min() > 1e-3


def test_heroes_do_not_sway_in_unison_with_each_other(runs):
    """The scene's wind varies in space (a Turbulence field): each hero at its own place feels its own gusts."""
    r, out = runs
    keys = r["bake"]["keys"]
    d = np.load(out / "tips.npy") - np.load(out / "tips.npy").mean(axis=0)
    for asset in {_asset(k) for k in keys if k.startswith("hero/")}:
        mine = [i for i, k in enumerate(keys) if k.startswith("hero/") and _asset(k) == asset]
        m = d[:, mine].transpose(1, 0, 2).reshape(len(mine), -1)
        c = (m @ m.T) / np.sqrt(np.outer(np.einsum("ij,ij->i", m, m), np.einsum("ij,ij->i", m, m)))
        np.fill_diagonal(c, -1.0)
        print(f"heroes of {asset}: largest correlation between two {c.max():.3f}")
        assert c.max() < 0.99


def test_hero_distance_without_a_camera_is_refused(runs):
    refused = runs[0]["bake"]["no_camera"]
    assert "has no camera" in refused["message"] and "Hero Distance" in refused["message"]
    assert refused["unchanged"]
