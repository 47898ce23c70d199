"""The compatibility set on every Blender of the test matrix (tools/blender_matrix.py): Debian's Blender 3.4 with
the legacy zip, and the bpy modules 4.2, 5.0, 5.2 and 5.3 with the extension zip of their range.

Each Blender runs tests/blender_scripts/compat_set.py once (two at a time): install the zip from disk into an
isolated profile; Convert, Bake and Free Bake the bundled birch (12 frames); replay the baked file in a fresh
profile without the add-on against a plain simulation loop; a 2-tree forest baked by the worker pool against
each tree's serial bake; tools/bake_headless.py; the compiled solver. The forest and the headless tool run on the
matrix's ends (3.4, the oldest and the newest bpy module: EDGES); 5.0 and 5.2 have them in test_forest.py and
test_headless_bake.py (the README's commands) and run the core set here. The tests below read its ``COMPAT`` line
and the bone tails it saved: the birch as played from the baked file must agree between Blender 5.2 (Python
3.13, numpy 2) and 3.4 (Python 3.11, Debian's numpy 1.24 and numba), both baked with Newton tolerance 1e-10.
"""

import os
import re
import subprocess
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from blender_env import ROOT, blender_env, build_zips, result_line

sys.path.insert(0, str(ROOT / "tools"))
from blender_matrix import MATRIX, Blender, by_version  # noqa: E402

SCRIPT = ROOT / "tests" / "blender_scripts" / "compat_set.py"
VERSIONS = [b.version for b in MATRIX]
EDGES = [MATRIX[0].version, *(b.version for b in MATRIX if b.is_module)][:2] + [MATRIX[-1].version]
# Blenders running at once: CI machines have 2 cores, and under pytest-xdist (README's test command: two workers)
# the other worker runs the rest of the suite on the second.
PARALLEL = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2
TIMEOUT = 1800  # s for one Blender's whole set
FRAMES = list(range(1, 13))
REPLAY = 1e-4  # m per bone tail: the baked file (float32 F-curves) against the plain simulation
SAME = 1e-9  # forest against serial bake: quaternion components of the keys
CROSS = 1e-5  # m per bone tail: the same bake on two Blenders (other numpy, numba, LLVM)
BIRCH_BONES = 5878
CROSS_PAIR = ("5.2.3", "3.4")


def package_version():
    with open(ROOT / "blender_manifest.toml", "rb") as fh:
        return tomllib.load(fh)["version"]


def command(blender: Blender, zip_path, work):
    """The command line and environment that run the compatibility set on ``blender``."""
    kernels = {"STIFF_RODS_KERNEL_CACHE": str(work / "kernels")}  # shared with its forest workers
    core = [] if blender.version in EDGES else ["core"]
    if not blender.is_module:
        args = ["blender", "-b", "--factory-startup", "--python", str(SCRIPT), "--", "run", str(zip_path), str(work)]
        return args + core, blender_env(work / "profile") | kernels
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "BLENDER_USER_"))}
    return [str(blender.python_exe), str(SCRIPT), "run", str(zip_path), str(work), *core], env | kernels


def run_one(blender: Blender, dist, root):
    """One Blender's compatibility set: its COMPAT result, wall time and work folder (or why it did not run)."""
    if blender.available() is not None:
        return {"skip": blender.available()}
    zip_path = dist / blender.zip_name(package_version())
    if not zip_path.is_file():
        return {"error": f"the build made no {zip_path.name}: {sorted(p.name for p in dist.glob('*.zip'))}"}
    work = root / blender.version
    work.mkdir()
    args, env = command(blender, zip_path, work)
    t0 = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT, env=env)
    wall = time.perf_counter() - t0
    (work / "stdout.txt").write_text(proc.stdout)
    (work / "stderr.txt").write_text(proc.stderr)
    try:
        return {"result": result_line(proc, "COMPAT"), "wall_s": wall, "work": work}
    except AssertionError as exc:
        return {"error": str(exc), "wall_s": wall}


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    root = tmp_path_factory.mktemp("matrix")
    build_zips(root / "dist", "--platforms", "linux-x64")
    t0 = time.perf_counter()
    with ThreadPoolExecutor(PARALLEL) as pool:
        runs = dict(zip(VERSIONS, pool.map(lambda b: run_one(b, root / "dist", root), MATRIX), strict=True))
    total = time.perf_counter() - t0
    walls = ", ".join(f"{v} {r['wall_s']:.0f} s" for v, r in runs.items() if "wall_s" in r)
    print(f"\nBlender matrix: {total:.0f} s in all ({PARALLEL} at a time); per Blender: {walls}")
    return runs


def compat(matrix, version, part=None):
    """The COMPAT result of ``version`` (its ``part``, which must have run without an error)."""
    run = matrix[version]
    if "skip" in run:
        pytest.skip(f"Blender {version}: {run['skip']}")
    assert "error" not in run, run["error"]
    result = run["result"]
    if part is None:
        return result
    assert part in result, f"{part} did not run: {sorted(result)}"
    assert "error" not in result[part], result[part]["error"]
    return result[part]


by_blender = pytest.mark.parametrize("version", VERSIONS)


@by_blender
def test_installs_the_zip_of_its_range(matrix, version):
    blender = by_version(version)
    result = compat(matrix, version)
    assert result["blender"].startswith(blender.series), result["blender"]
    assert result["zip"] == blender.zip_name(package_version())
    module = compat(matrix, version, "install")["module"]
    assert module == ("bl_ext.user_default.stiff_rods" if blender.is_module else "stiff_rods")
    compiled = compat(matrix, version, "compiled")
    profile = str(matrix[version]["work"] / "profile")
    assert compiled["addon_file"].startswith(profile), compiled["addon_file"]  # not this checkout
    assert compiled["python"].startswith(blender.python + "."), compiled["python"]


@by_blender
def test_compiled_solver_runs(matrix, version):
    blender = by_version(version)
    compiled = compat(matrix, version, "compiled")
    assert compiled["compiled"], compiled["compiled_message"]
    # numba: the bundled wheel, installed into the profile (4.2+); Debian's python3-numba (3.4)
    where = str(matrix[version]["work"] / "profile") if blender.is_module else "/usr/lib/python3/dist-packages/"
    assert compiled["numba_file"].startswith(where), compiled["numba_file"]
    assert compat(matrix, version, "bake")["sim_compiled"]


@by_blender
def test_convert_bake_free_bake(matrix, version):
    bake = compat(matrix, version, "bake")
    assert bake["bones_before"] == BIRCH_BONES
    assert bake["fcurves"] >= 4 * BIRCH_BONES  # a rotation (w, x, y, z) per bone
    assert bake["keyed_frames"] == FRAMES
    assert bake["max_tail_motion_m"] > 0.1, "the wind should move the birch"
    assert bake["bones_after_free"] == bake["bones_before"]
    assert bake["action_after_free"] == bake["action_before"]  # Sapling's own action is back


@by_blender
def test_replay_without_addon_matches_simulation(matrix, version):
    replay = compat(matrix, version, "replay")
    assert not replay["addon_enabled"] and not replay["operators"]
    assert replay["bones"] == BIRCH_BONES
    assert replay["max_error_m"] <= REPLAY


@pytest.mark.parametrize("version", EDGES)
def test_forest_of_two_trees_equals_serial_bakes(matrix, version):
    forest = compat(matrix, version, "forest")
    assert forest["outcome"] == ["FINISHED"]
    assert forest["trees"] == ["treeArm", "treeArm.001"]
    for name in forest["trees"]:
        assert forest["fcurves"][name] >= 4 * BIRCH_BONES, name
        assert forest["keyed_frames"][name] == FRAMES, name
        assert forest["forest_vs_serial"][name] <= SAME, forest["forest_vs_serial"]
    assert forest["tree_vs_tree"] > 1e-3, "the turned tree should sway otherwise than the first"


@pytest.mark.parametrize("version", EDGES)
def test_bake_headless(matrix, version):
    headless = compat(matrix, version, "headless")
    assert headless["exit"] == 0, headless.get("stderr")
    summary = headless["summary"]
    assert re.fullmatch(r"Stiff Rods: baked treeArm, frames 1-2, in \d+\.\d s", summary[0]), summary
    assert any(line.strip() == f"saved:  {headless['out']}" for line in summary), summary
    assert any(line.startswith("  solver: compiled solver active") for line in summary), summary
    assert headless["out_exists"]


def test_bakes_agree_across_blenders(matrix):
    """5.2.3 (Python 3.13, numpy 2, numba from its wheel) and 3.4 (Debian's Python 3.11, numpy 1.24, numba): the
    baked birch as played, and the plain simulation loop's tails."""
    for version in CROSS_PAIR:
        compat(matrix, version, "replay")  # ran, and saved its tails
    for name in ("tails.npy", "expected_tails.npy"):
        a, b = (np.load(matrix[v]["work"] / name) for v in CROSS_PAIR)
        assert a.shape == b.shape == (len(FRAMES), BIRCH_BONES, 3), name
        assert float(np.max(np.linalg.norm(a - b, axis=2))) <= CROSS, name
