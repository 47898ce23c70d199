"""tools/bake_headless.py for a game, and the game rig's FBX checked by re-import into a fresh Blender: one run of
``--object --loop --preroll --max-bones 16 --gltf --fbx`` with Debian's Blender 3.4 and the legacy zip on Sapling's
small pine (no leaves) in the storm preset (the .glb read with pygltflib, not Blender), and Export Game Rig (FBX) in
the bpy module (5.0) on the same saved bake.

The reference is the saved .blend opened by a fresh Blender without the add-on: the game mesh's evaluated world
vertices at the loop's first, middle and last frames (tests/blender_scripts/fbx_reimport.py ``blend``). Another
fresh Blender imports the FBX into an empty scene with its own importer (``fbx``), Animation Offset = the loop's
first frame (the file's take starts at time 0, as the glTF's). Blender's importer connects a bone whose head is at
its parent's tail, and a connected bone drops its location keys: the script disconnects them again (measured:
with bone000.001 connected, the pine's vertices were 0.6-7.6 mm off; disconnected, 3-4 µm). The FBX mesh keeps
the vertex order, so vertices are matched by index.
"""

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from blender_env import ROOT, blender_env, build_legacy_zip, run_blender

pytestmark = pytest.mark.skipif(shutil.which("blender") is None, reason="Debian's blender is not installed")

SCRIPT = ROOT / "tests" / "blender_scripts" / "fbx_reimport.py"
BUDGET = 16
TOLERANCE_M = 1e-3


def blender(args, profile, timeout=900):
    return subprocess.run(
        ["blender", "-b", "--factory-startup", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=blender_env(profile),
    )


@pytest.fixture(scope="module")
def baked(tmp_path_factory):
    """(tool summary, folder, the reference read from the saved .blend, its three frames)."""
    tmp = tmp_path_factory.mktemp("fbx")
    pine = tmp / "pine.blend"
    made = blender(["--python", ROOT / "tools" / "make_sapling_tree.py", "--", "small_pine", pine, "--no-leaves"], tmp)
    assert pine.is_file(), made.stdout[-2000:] + made.stderr[-2000:]
    zip_path = build_legacy_zip(tmp / "dist")
    tool = [pine, "--python", ROOT / "tools" / "bake_headless.py", "--", "--zip", zip_path, "--object", "treeArm"]
    tool += ["--frames", "1", "30", "--storm", "--loop", "6", "--preroll", "12", "--max-bones", BUDGET]
    tool += ["--gltf", tmp / "pine.glb", "--fbx", tmp / "pine.fbx", "--pivot-painter", tmp / "pp"]
    tool += ["--out", tmp / "baked.blend", "--json"]
    proc = blender(tool, tmp / "p1")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1])
    first, last = summary["frames"]
    frames = [first, (first + last) // 2, last]
    ref = read(["blender", "-b", "--factory-startup", tmp / "baked.blend"], "blend", tmp, frames)
    print({k: summary[k] for k in ("game_bones", "fbx_bytes", "fbx_export_s", "gltf_bytes", "gltf_export_s")})
    return summary, tmp, ref, frames, tool


def test_the_headless_glb_holds_the_loop_of_the_game_rig(baked):
    from pygltflib import GLTF2

    summary, tmp, _, _, _ = baked
    glb = tmp / "pine.glb"
    assert summary["frames"] == [1, 7] and (summary["loop"], summary["preroll"]) == (6, 12)
    assert summary["game_bones"] <= BUDGET and summary["gltf_bytes"] == glb.stat().st_size
    gltf = GLTF2().load(str(glb))
    assert len(gltf.skins) == 1 and 2 <= len(gltf.skins[0].joints) <= BUDGET
    assert len(gltf.animations) == 1  # the game rig's action alone, not the tree's bake
    times = {gltf.accessors[s.input].count for s in gltf.animations[0].samplers}
    assert times == {7}  # frames 1..7: the loop of 6 frames and its closing key


def test_the_exported_mesh_carries_the_pivot_painter_uv_channel(baked):
    """--pivot-painter: the textures in the folder, and in the .glb the mesh's TEXCOORD_1 holding, per vertex, the
    centre of one element's texel (Unreal reads ⌊u W⌋ + ⌊v H⌋ W, v down: glTF's v), every element used."""
    from PIL import Image
    from pygltflib import GLTF2

    summary, tmp, _, _, _ = baked
    folder = tmp / "pp"
    assert summary["pivot_painter"] == str(folder)
    png = next(folder.glob("*_XVector_XExtent.png"))
    assert len(list(folder.glob("*.exr"))) == 5  # PP2's two half textures, three float32
    width, height = Image.open(png).size
    gltf = GLTF2().load(str(tmp / "pine.glb"))
    blob = gltf.binary_blob()
    uv = []
    for prim in gltf.meshes[0].primitives:
        acc = gltf.accessors[prim.attributes.TEXCOORD_1]
        view = gltf.bufferViews[acc.bufferView]
        start = (view.byteOffset or 0) + (acc.byteOffset or 0)
        uv.append(np.frombuffer(blob, "<f4", acc.count * 2, start).reshape(-1, 2))
    uv = np.concatenate(uv).astype(float)
    texel = uv * [width, height] - 0.5
    assert np.abs(texel - np.round(texel)).max() < 1e-3  # texel centres
    element = np.floor(uv[:, 0] * width) + np.floor(uv[:, 1] * height) * width
    # Sapling's small pine: one element per spline; each element's texel lies in the image, and every one of the
    # first elements up to the last used is used (no branch without vertices)
    used = np.unique(element).astype(int)
    assert used[0] == 0 and np.array_equal(used, np.arange(used.size)) and used.size <= width * height
    assert used.size > (width - 1) * height  # the texture is the tightest that holds the elements


def test_a_wrong_object_is_refused_with_the_names_there_are(baked):
    _, tmp, _, _, tool = baked
    bad = blender(tool[:6] + ["--object", "nope", "--out", tmp / "x.blend"], tmp / "p4")
    assert bad.returncode != 0 and "no armature or curve of that name" in bad.stderr + bad.stdout


def read(command, mode, folder, args):
    """fbx_reimport.py's result in a fresh Blender (``command``: Debian's Blender, or this Python's bpy module and
    the script), its vertices per frame in a new folder of ``folder``."""
    out = folder / f"{mode}_{len(list(folder.glob(mode + '_*')))}"
    out.mkdir()
    script = ["--python", SCRIPT, "--"] if command[0] == "blender" else []
    argv = [*command, *script, mode, out, *args]
    result = run_blender([str(a) for a in argv], folder / "p2", "FBX_CHECK", 300, exit_zero=True)
    frames = [int(a) for a in args[-3:]]
    result["positions"] = {f: np.load(out / f"{mode}_{f}.npy") for f in frames}
    return result


def check_reimport(imp: dict, ref: dict, frames) -> list:
    """The FBX read back against the .blend: the rig alone, its bones and their rest in metres, one take over the
    loop's frames, the vertices within 1 mm at each frame. The errors (m) per frame."""
    assert sorted(t for _, t in imp["objects"]) == ["ARMATURE", "MESH"]  # the game rig alone, not the tree
    assert imp["bones"] == ref["bones"] <= BUDGET  # no leaf bones added
    assert set(imp["heads_m"]) == set(ref["heads_m"])
    heads = max(np.linalg.norm(np.subtract(imp["heads_m"][n], ref["heads_m"][n])) for n in ref["heads_m"])
    assert heads < 1e-5  # metres stay metres (not ×100 or ×0.01)
    assert list(imp["actions"].values()) == [[float(frames[0]), float(frames[-1])]]  # one take, the loop's frames
    assert imp["action"].endswith(ref["action"])  # Blender names it "<armature>|<take>", the take the action
    assert imp["fps"] == ref["fps"] and imp["vertices"] == ref["vertices"]
    errors = [float(np.linalg.norm(imp["positions"][f] - ref["positions"][f], axis=1).max()) for f in frames]
    motion = float(np.linalg.norm(ref["positions"][frames[1]] - ref["positions"][frames[0]], axis=1).max())
    print({"fbx_max_error_m": errors, "motion_m": motion, "connected_on_import": imp["connected"]})
    assert motion > 20 * TOLERANCE_M  # a frame off would fail the check: the storm moves the pine by more
    assert max(errors) < TOLERANCE_M
    return errors


def test_the_headless_fbx_reimports_in_a_fresh_blender(baked):
    summary, tmp, ref, frames, _ = baked
    assert summary["frames"] == [1, 7] and summary["loop"] == 6
    assert summary["game_bones"] == ref["bones"] <= BUDGET
    fbx = tmp / "pine.fbx"
    assert summary["fbx_bytes"] == fbx.stat().st_size and summary["fbx_export_s"] > 0.0
    assert summary["fbx"] == str(fbx) and summary["gltf_bytes"] == (tmp / "pine.glb").stat().st_size
    imp = read(["blender", "-b", "--factory-startup"], "fbx", tmp, [fbx, frames[0], *frames])
    check_reimport(imp, ref, frames)
    assert "PivotPainter" in imp["uv_layers"]  # the element index channel travels with the FBX mesh
    # the loop closes in the file too: its last key is its first
    assert np.abs(imp["positions"][frames[0]] - imp["positions"][frames[-1]]).max() < 1e-5


def test_export_fbx_in_blender_5_reexports_and_reimports(baked):
    pytest.importorskip("bpy")
    pygltflib = pytest.importorskip("pygltflib")
    _, tmp, ref, frames, _ = baked
    out = tmp / "bpy"
    out.mkdir()
    args = [sys.executable, ROOT / "tests" / "blender_scripts" / "fbx_export.py", ROOT, tmp / "baked.blend", out]
    result = run_blender([str(a) for a in args], tmp / "p3", "FBX_EXPORT", 300, exit_zero=True)
    print([(e["op"], round(e["seconds"], 2), e["bytes"]) for e in result["exports"][:4]])
    assert [e["result"] for e in result["exports"]] == [["FINISHED"]] * 6  # FBX, glTF twice to one name; named
    assert all(e["kept"] for e in result["exports"])  # selection, active, action, slot, NLA tracks as before
    assert [e["bytes"] for e in result["exports"][:4]] == [(out / "rig.fbx").stat().st_size] * 2 + [
        (out / "rig.glb").stat().st_size
    ] * 2
    assert "not a Stiff Rods game rig" in result["refused"] and not result["tree_fbx_written"]
    imp = read([sys.executable, SCRIPT, "--"], "fbx", tmp, [out / "rig.fbx", frames[0], *frames])
    check_reimport(imp, ref, frames)
    # named actions: one take per NLA track, from time 0, named after it (FBX); one glTF animation per track
    named = read([sys.executable, SCRIPT, "--"], "fbx", tmp, [out / "named.fbx", frames[0], *frames])
    takes = {name.split("|")[-1]: span for name, span in named["actions"].items()}
    assert takes == {"calm": [1.0, 7.0], "storm": [1.0, 7.0]}
    gltf = pygltflib.GLTF2().load(str(out / "named.glb"))
    assert sorted(a.name for a in gltf.animations) == ["calm", "storm"]
