"""tools/bake_headless.py for a game: ``--loop``, ``--preroll``, ``--object``, ``--max-bones`` and ``--gltf`` in one
run, with Debian's Blender 3.4 and the legacy zip, on Sapling's small pine (no leaves) generated here; the .glb is
read with pygltflib, not Blender."""

import json
import shutil
import subprocess

import pytest

from blender_env import ROOT, blender_env, build_legacy_zip

pytestmark = pytest.mark.skipif(shutil.which("blender") is None, reason="Debian's blender is not installed")


def blender(args, profile, timeout=900):
    return subprocess.run(
        ["blender", "-b", "--factory-startup", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=blender_env(profile),
    )


def test_a_looping_game_rig_from_the_command_line(tmp_path):
    from pygltflib import GLTF2

    pine = tmp_path / "pine.blend"
    made = blender(
        ["--python", ROOT / "tools" / "make_sapling_tree.py", "--", "small_pine", pine, "--no-leaves"], tmp_path / "p0"
    )
    assert pine.is_file(), made.stdout[-2000:] + made.stderr[-2000:]
    zip_path = build_legacy_zip(tmp_path / "dist")
    glb, out = tmp_path / "pine.glb", tmp_path / "baked.blend"
    tool = [pine, "--python", ROOT / "tools" / "bake_headless.py", "--", "--zip", zip_path, "--object", "treeArm"]
    tool += ["--frames", "1", "30", "--loop", "6", "--preroll", "12", "--max-bones", "16", "--gltf", glb]
    proc = blender(tool + ["--out", out, "--json"], tmp_path / "p1")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1])
    assert summary["frames"] == [1, 7] and (summary["loop"], summary["preroll"]) == (6, 12)
    assert summary["game_bones"] <= 16 and summary["gltf_bytes"] == glb.stat().st_size
    gltf = GLTF2().load(str(glb))
    assert len(gltf.skins) == 1 and 2 <= len(gltf.skins[0].joints) <= 16
    assert len(gltf.animations) == 1  # the game rig's action alone, not the tree's bake
    times = {gltf.accessors[s.input].count for s in gltf.animations[0].samplers}
    assert times == {7}  # frames 1..7: the loop of 6 frames and its closing key
    # a wrong --object is refused with the names there are
    bad = blender(tool[:6] + ["--object", "nope", "--out", tmp_path / "x.blend"], tmp_path / "p2")
    assert bad.returncode != 0 and "no armature or curve of that name" in bad.stderr + bad.stdout
