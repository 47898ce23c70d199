"""Named Actions: one Bake, three winds, three actions on three NLA tracks; glTF exports them as three animations.

tests/blender_scripts/named_actions.py generates Sapling's small pine (no leaves) in Debian's Blender 3.4 and bakes
it there with the legacy add-on (actions without slots), then bakes it again in the bpy module (Blender 5.0,
slotted actions) and exports it with Blender's glTF exporter. The .glb is read with pygltflib, not Blender: three
animations named calm, breeze and storm, each of 12 frames over 11/24 s, the storm's rotations larger than the
calm's. Free Bake gives the scene back as it was (actions, NLA tracks, rotation modes, bones, no marks). A 16-bone
game rig of the named-action tree carries each wind as its own action on its own track, and its .glb holds them as
three animations.
"""

import importlib.util
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

from blender_env import ROOT, build_legacy_zip, result_line, run_blender

SCRIPT = ROOT / "tests" / "blender_scripts" / "named_actions.py"
TRACKS = ["calm", "breeze", "storm"]

pytestmark = [
    pytest.mark.skipif(shutil.which("blender") is None, reason="Debian's blender is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("bpy") is None, reason="the bpy module is not installed"),
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("named")
    zip_path = build_legacy_zip(tmp_path_factory.mktemp("dist"))
    args = ["blender", "-b", "--factory-startup", "--python", str(SCRIPT), "--", "make", zip_path, str(out)]
    legacy = run_blender(args, out / "profile", "NAMED_RESULT", timeout=900)
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--", "bake", str(out)], capture_output=True, text=True, timeout=900
    )
    return {"3.4": legacy, "5.0": result_line(proc, "NAMED_RESULT")}, out / "pine.glb", out


@pytest.mark.parametrize("version", ["3.4", "5.0"])
def test_three_winds_bake_three_named_actions_on_their_tracks(runs, version):
    r = runs[0][version]
    assert r["baked"]["tracks"] == TRACKS and r["baked"]["active"] is None
    arm = "treeArm"
    for track in TRACKS:
        assert r["strips"][track] == [[f"{arm}_{track}", 1.0, 12.0]]
    spread = r["spread"]
    assert 0 < spread["calm"] < spread["breeze"] < spread["storm"]  # the winds' speeds: 3, 8, 25 m/s


@pytest.mark.parametrize("version", ["3.4", "5.0"])
def test_free_bake_gives_the_scene_back_as_it_was(runs, version):
    r = runs[0][version]
    assert r["freed"] == r["before"]
    assert not r["freed"]["marks"]


def _accessor(gltf, blob, index):
    acc = gltf.accessors[index]
    view = gltf.bufferViews[acc.bufferView]
    width = {"SCALAR": 1, "VEC3": 3, "VEC4": 4}[acc.type]
    fmt = {5126: "f"}[acc.componentType]
    start = (view.byteOffset or 0) + (acc.byteOffset or 0)
    data = struct.unpack_from(f"<{acc.count * width}{fmt}", blob, start)
    return np.array(data).reshape(acc.count, width)


def test_gltf_holds_the_three_animations_by_name(runs):
    from pygltflib import GLTF2

    gltf = GLTF2().load(str(runs[1]))
    blob = gltf.binary_blob()
    names = sorted(a.name for a in gltf.animations)
    assert names == sorted(TRACKS)
    fps = runs[0]["5.0"]["fps"]
    for anim in gltf.animations:
        times = {tuple(_accessor(gltf, blob, s.input).ravel()) for s in anim.samplers}
        assert len(times) == 1  # every channel keyed at the same times
        t = np.array(times.pop())
        assert len(t) == 12  # frames 1..12, one key per frame
        np.testing.assert_allclose(np.diff(t), 1 / fps, rtol=1e-4)

    # the storm turns the bones more than the calm does, read from the glTF's rotation samples alone
    def turn(name):
        anim = next(a for a in gltf.animations if a.name == name)
        angles = []
        for ch in anim.channels:
            if ch.target.path == "rotation":
                q = _accessor(gltf, blob, anim.samplers[ch.sampler].output)
                r = q[:, 1:] * q[:1, :1] - q[:1, 1:] * q[:, :1] - np.cross(q[:, 1:], q[:1, 1:])  # vector part of q0⁻¹q
                angles.append(2 * np.arcsin(np.clip(np.linalg.norm(r, axis=1), 0, 1)))
        return float(np.sqrt(np.mean(np.square(angles))))

    assert 0 < turn("calm") < turn("storm")


@pytest.mark.parametrize("version", ["3.4", "5.0"])
def test_the_game_rig_carries_each_wind_as_its_own_action(runs, version):
    g = runs[0][version]["game"]
    assert g["active"] is None and sorted(g["strips"]) == sorted(TRACKS)
    for track in TRACKS:
        assert g["strips"][track] == [[f"{g['name']}_{track}", 1.0, 12.0]]
    rep = g["report"]
    assert 2 <= rep["bones"] <= 16 and rep["max_influences"] <= 4
    winds = rep["winds"]
    print(
        version,
        {t: [round(1e3 * w[k], 2) for k in ("rms_error_m", "max_error_m", "sway_rms_m")] for t, w in winds.items()},
    )
    assert sorted(winds) == sorted(TRACKS)
    # one fit over the three winds: each wind's own motion is reproduced (Blender's evaluated game mesh against
    # the full rig's at each of its frames), the error well under that wind's sway
    for track in TRACKS:
        w = winds[track]
        assert w["rms_error_m"] < 0.2 * w["sway_rms_m"], (track, w)
    assert 0 < winds["calm"]["sway_rms_m"] < winds["breeze"]["sway_rms_m"] < winds["storm"]["sway_rms_m"]
    assert 0 < g["spread"]["calm"] < g["spread"]["storm"]


@pytest.mark.parametrize("version", ["34", "50"])
def test_the_game_rigs_gltf_holds_the_three_winds_by_name(runs, version):
    from pygltflib import GLTF2

    gltf = GLTF2().load(str(runs[2] / f"pine_game_{version}.glb"))
    blob = gltf.binary_blob()
    assert len(gltf.skins) == 1 and 2 <= len(gltf.skins[0].joints) <= 16
    assert sorted(a.name for a in gltf.animations) == sorted(TRACKS)
    for anim in gltf.animations:
        counts = {_accessor(gltf, blob, s.input).shape[0] for s in anim.samplers}
        assert counts == {12}, (anim.name, counts)
