"""Install Stiff Rods the way a user does, in real Blender, from the zips that tools/build_extension.py
builds: the legacy add-on zip in Debian's Blender 3.4 and the extension zip in Blender 5.0 (the bpy
module from PyPI). Every Blender runs in a subprocess with a timeout and an isolated user profile
(BLENDER_USER_* in a tmp dir), through tests/blender_scripts/install_check.py.
"""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECK_SCRIPT = ROOT / "tests" / "blender_scripts" / "install_check.py"
BLENDER_TIMEOUT = 600  # s, the whole check including the restarted second Blender

FORBIDDEN_PARTS = {"tests", "benchmarks", "tools", ".ci", "__pycache__", "sample_blends", "dist",
                   "build", ".git"}


def _load_build_module():
    spec = importlib.util.spec_from_file_location("stiff_rods_build_extension",
                                                  ROOT / "tools" / "build_extension.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = _load_build_module()


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    return tmp_path_factory.mktemp("dist")


@pytest.fixture(scope="module")
def legacy_zip(dist):
    return build.build_legacy_zip(dist)


@pytest.fixture(scope="module")
def extension_zip(dist):
    if build.find_blender_ext() is None:
        pytest.skip("Blender's extension CLI not found: the bpy module is not installed "
                    "(python3 -m pip install -r requirements-dev.txt)")
    (out,) = build.build_extension_zip(dist)
    return out


def _profile_env(tmp_path):
    """Environment for a Blender with a fresh, isolated user profile under tmp_path."""
    env = dict(os.environ)
    for var, sub in (("BLENDER_USER_RESOURCES", "resources"), ("BLENDER_USER_CONFIG", "config"),
                     ("BLENDER_USER_SCRIPTS", "scripts"), ("BLENDER_USER_DATAFILES", "datafiles")):
        path = tmp_path / "profile" / sub
        path.mkdir(parents=True, exist_ok=True)
        env[var] = str(path)
    return env


def _run_check(cmd, tmp_path, env=None):
    env = env or _profile_env(tmp_path)
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True,
                              timeout=BLENDER_TIMEOUT, cwd=tmp_path)
    except subprocess.TimeoutExpired as ex:
        out = ex.stdout.decode(errors="replace") if isinstance(ex.stdout, bytes) else ex.stdout
        pytest.fail(f"timed out after {BLENDER_TIMEOUT} s: {' '.join(map(str, cmd))}\n{out or ''}")
    output = done.stdout + "\n" + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("INSTALL_CHECK ")]
    assert lines, f"no INSTALL_CHECK line (exit {done.returncode}):\n{output[-8000:]}"
    assert lines[-1].startswith("INSTALL_CHECK OK "), f"{lines[-1]}\n{output[-8000:]}"
    assert done.returncode == 0, f"exit {done.returncode}:\n{output[-8000:]}"
    return json.loads(lines[-1][len("INSTALL_CHECK OK "):])


def _assert_registered(info, module):
    for phase in (info, info["restart"]):
        assert phase["module"] == module
        assert phase["classes"], "addon.classes is empty"
        assert set(phase["operators"]) <= {f"stiff_rods.{n}" for n in phase["ops_namespace"]}
    assert info["restart"]["solver_tip"][2] < 0.0


def test_legacy_zip_installs_and_registers_in_blender_3_4(legacy_zip, tmp_path):
    blender = shutil.which("blender")
    if blender is None:
        pytest.skip("blender is not on PATH (apt-get install blender; .ci/run installs it)")
    env = _profile_env(tmp_path)
    # Debian's Blender embeds the system libpython and takes its prefix (stdlib, dist-packages with
    # numpy/scipy) from the first python3.11 on PATH: under pyenv/venv that would be the wrong one.
    # Put Blender's own folder (/usr/bin, where the system python3.11 is) first, as for a user.
    env["PATH"] = os.pathsep.join([os.path.dirname(os.path.realpath(blender)), env.get("PATH", "")])
    info = _run_check([blender, "-b", "--factory-startup", "--python-exit-code", "1",
                       "--python", str(CHECK_SCRIPT), "--", str(legacy_zip), "legacy"], tmp_path, env)
    _assert_registered(info, "stiff_rods")
    assert Path(info["file"]).is_relative_to(tmp_path)


def test_extension_installs_in_bpy_5(extension_zip, tmp_path):
    if importlib.util.find_spec("bpy") is None:
        pytest.skip("the bpy module is not installed (python3 -m pip install -r requirements-dev.txt)")
    info = _run_check([sys.executable, str(CHECK_SCRIPT), str(extension_zip), "extension"], tmp_path)
    _assert_registered(info, "bl_ext.user_default.stiff_rods")
    assert Path(info["file"]).is_relative_to(tmp_path)
    restart = info["restart"]
    assert restart["scipy"] == build.SCIPY_VERSION, "the bundled scipy wheel was not the one used"
    assert Path(restart["scipy_file"]).is_relative_to(tmp_path)


def _zip_names(path):
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None, f"corrupt member in {path}"
        return zf.namelist()


def _assert_only_addon_files(names):
    for name in names:
        parts = set(Path(name).parts)
        assert not parts & FORBIDDEN_PARTS, f"{name} must not be packaged"
        assert not name.endswith((".pyc", ".pyo", ".zip", ".blend1")), name


def test_legacy_zip_layout(legacy_zip):
    names = _zip_names(legacy_zip)
    assert legacy_zip.name == f"stiff_rods-{build.package_version()}-legacy.zip"
    assert all(n.startswith("stiff_rods/") for n in names), "one top folder stiff_rods/"
    for required in ("__init__.py", "blender_manifest.toml", "addon/__init__.py", "solver/__init__.py"):
        assert "stiff_rods/" + required in names, required
    assert not any(n.endswith(".whl") for n in names), "the legacy zip uses Blender's own scipy"
    _assert_only_addon_files(names)


def test_extension_zip_validates_and_holds_only_addon_files(extension_zip, legacy_zip):
    for target in (ROOT, extension_zip):
        done = build.validate(target)
        assert done.returncode == 0, f"validate {target}:\n{done.stdout}\n{done.stderr}"
    names = _zip_names(extension_zip)
    _assert_only_addon_files(names)
    with zipfile.ZipFile(extension_zip) as zf:
        manifest = tomllib.loads(zf.read("blender_manifest.toml").decode("utf-8"))
    wheels = [n for n in names if n.endswith(".whl")]
    assert sorted(w.removeprefix("./") for w in manifest["wheels"]) == sorted(wheels)
    assert all(Path(w).name.startswith(f"scipy-{build.SCIPY_VERSION}-cp311-") for w in wheels)
    assert sorted(manifest["platforms"]) == sorted(build.DEFAULT_PLATFORMS)
    # Same add-on source files in both packages.
    legacy_py = {n.removeprefix("stiff_rods/") for n in _zip_names(legacy_zip) if n.endswith(".py")}
    assert {n for n in names if n.endswith(".py")} == legacy_py


def test_committed_manifest_lists_no_wheels():
    """The build writes wheels/platforms into a temporary copy; the committed manifest stays generic."""
    with open(ROOT / "blender_manifest.toml", "rb") as fh:
        manifest = tomllib.load(fh)
    assert "wheels" not in manifest and "platforms" not in manifest
    assert not list(ROOT.glob("*.whl"))
