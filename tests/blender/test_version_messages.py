"""What the add-on says about the Blender and the solver it runs on: one INFO line in a Blender newer than the
newest tested one (addon/compat.py, checked against the CI matrix of tools/blender_matrix.py), and one WARNING,
not two, when numba cannot be loaded (Debian's Blender 3.4 baking headless with a numba that fails to import)."""

import shutil
import subprocess

import pytest

from blender_env import ROOT, blender_env, build_legacy_zip, load_module

compat = load_module(ROOT / "addon" / "compat.py", "stiff_rods_addon_compat")
matrix = load_module(ROOT / "tools" / "blender_matrix.py", "stiff_rods_blender_matrix")


def test_the_newest_tested_blender_is_the_newest_of_the_ci_matrix():
    assert compat.NEWEST_TESTED == tuple(int(v) for v in matrix.NEWEST.series.split("."))
    assert all(tuple(int(v) for v in b.series.split(".")) <= compat.NEWEST_TESTED for b in matrix.MATRIX)


@pytest.mark.parametrize("version", [(3, 4, 1), (4, 2, 23), (5, 0, 1), (5, 2, 3), (5, 3, 0), (5, 3, 12)])
def test_a_tested_blender_gets_no_note(version):
    assert compat.untested_version_note(version) is None


@pytest.mark.parametrize("version", [(5, 4, 0), (6, 0, 1)])
def test_a_newer_blender_gets_one_info_line_naming_the_newest_tested(version):
    note = compat.untested_version_note(version)
    assert note is not None and "\n" not in note
    assert note.startswith("Stiff Rods: INFO: Blender " + ".".join(map(str, version)))
    assert "newest Blender Stiff Rods is tested on" in note and " 5.3," in note


@pytest.mark.skipif(shutil.which("blender") is None, reason="Debian's blender is not installed")
def test_without_numba_the_headless_bake_warns_once_and_bakes_with_numpy(tmp_path):
    broken = tmp_path / "site" / "numba"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('numba built for another numpy')\n")
    legacy = build_legacy_zip(tmp_path / "dist")
    env = blender_env(tmp_path / "profile")
    env["PYTHONPATH"] = str(broken.parent)  # searched before the system's python3-numba
    env["STIFF_RODS_KERNEL_CACHE"] = str(tmp_path / "kernels")
    proc = subprocess.run(
        ["blender", "-b", str(ROOT / "sample_blends" / "white_birch.blend"), "--python",
         str(ROOT / "tools" / "bake_headless.py"), "--", "--zip", legacy, "--frames", "1", "2",
         "--out", str(tmp_path / "baked.blend")],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path,
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    said = [line for line in output.splitlines() if "numba unavailable" in line and "solver: " not in line]
    assert len(said) == 1, said  # one warning, not also the solver's log record
    assert said[0].startswith("Warning: Stiff Rods:") and "numba built for another numpy" in said[0]
    assert "using the numpy solver" in said[0]
    # the summary names the solver that baked
    assert "  solver: numba unavailable (ImportError: numba built for another numpy)" in proc.stdout
    assert "Stiff Rods: baked treeArm, frames 1-2" in proc.stdout and (tmp_path / "baked.blend").is_file()


def test_readme_compatibility_table_is_the_matrix():
    """README's Blender table is tools/blender_matrix.py's (`tools/blender_matrix.py table`): the versions it calls
    tested in CI are the matrix's, and the zips and their compiled solver are tools/bundled_wheels.py's."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index(matrix.TABLE_START) + len(matrix.TABLE_START) : readme.index(matrix.TABLE_END)]
    assert section.strip() == matrix.table().strip()
    tested = {
        v.strip()
        for line in section.splitlines()
        if "| yes: " in line
        for v in line.split("| yes: ")[1].split("|")[0].split(",")
    }
    assert tested == {b.version for b in matrix.MATRIX}
