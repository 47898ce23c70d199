"""Install Stiff Rods the way a user does, in real Blender, from the zips that tools/build_extension.py
builds: the legacy add-on zip in Debian's Blender 3.4, and in every bpy-module Blender of tools/blender_matrix.py
(4.2.23 and 5.0.1 on Python 3.11 with numpy 1.26.4, 5.2.3 and 5.3.0 on Python 3.13 with numpy 2.5.5) the extension
zip of its Blender range for this machine's platform, with the venv's Python of that Blender. Each Blender runs in
a subprocess with a timeout and an isolated user profile (BLENDER_USER_* in a tmp dir), through
tests/blender_scripts/install_check.py. Blender must refuse the zip of the other range and of another platform,
with its own message. The extension is built once for this module, for both ranges and all six platforms (one
zip each); the layout tests read every zip.
"""

import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[2]
CHECK_SCRIPT = ROOT / "tests" / "blender_scripts" / "install_check.py"
BLENDER_TIMEOUT = 600  # s, the whole check including the restarted second Blender

# Development folders of the repository root (a solver subpackage may share one of these names)
# and folders never packaged at any depth.
FORBIDDEN_TOP = {"tests", "benchmarks", "tools", "sample_blends", "dist", "build"}
FORBIDDEN_ANY = {".ci", "__pycache__", ".git"}

# Blender's extension platforms -> test of a wheel's platform tag (the WHEEL file's Tag line).
WHEEL_TAG_FOR_PLATFORM = {
    "linux-x64": lambda tag: tag.startswith("manylinux") and tag.endswith("_x86_64"),
    "linux-arm64": lambda tag: tag.startswith("manylinux") and tag.endswith("_aarch64"),
    "macos-x64": lambda tag: tag.startswith("macosx_") and tag.endswith("_x86_64"),
    "macos-arm64": lambda tag: tag.startswith("macosx_") and tag.endswith("_arm64"),
    "windows-x64": lambda tag: tag == "win_amd64",
    "windows-arm64": lambda tag: tag == "win_arm64",
}
# Per Blender range: its Python, the numpy versions every wheel must admit (Blender 4.2-5.0 bundle numpy 1.26.x,
# 4.2 the oldest with 1.26.0; the 5.1+ bpy modules of the matrix resolve to numpy 2.5.5), the manifest's Blender
# versions (the maximum exclusive) and the platforms without a numba wheel for that Python (they run the numpy
# solver).
RANGES = {
    "4.2-5.0": dict(python="3.11", numpy=("1.26.0", "1.26.4"), min="4.2.0", max="5.1.0", no_numba={"windows-arm64"}),
    "5.1+": dict(python="3.13", numpy=("2.5.5",), min="5.1.0", max=None, no_numba={"macos-x64"}),
}
# Each zip's size limit. The largest are linux-x64's: 84.1 MB (4.2-5.0: scipy 37.7 + llvmlite 42.4 + numba 3.8 MB)
# and 99.2 MB (5.1+: scipy 35.3 + llvmlite 59.7 + numba 3.9 MB), under 100 MB with 0.8 MB to spare.
MAX_ZIP_BYTES = 100e6


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


build = _load(ROOT / "tools" / "build_extension.py", "stiff_rods_build_extension")
matrix = _load(ROOT / "tools" / "blender_matrix.py", "stiff_rods_blender_matrix")
MODULE_BLENDERS = [b for b in matrix.MATRIX if b.is_module]
BY_VERSION = {b.version: b for b in MODULE_BLENDERS}


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    return tmp_path_factory.mktemp("dist")


@pytest.fixture(scope="module")
def legacy_zip(dist):
    return build.build_legacy_zip(dist)


@pytest.fixture(scope="module")
def extension_zips(dist):
    """The default build: both Blender ranges, every platform, one zip each (built once for this module)."""
    if build.find_blender_ext() is None:
        pytest.skip(
            "Blender's extension CLI not found: the bpy module is not installed "
            "(python3 -m pip install -r requirements-dev.txt)"
        )
    build.build_extension_zip(dist)
    return {z.name: z for z in dist.glob("*.zip") if not z.name.endswith("-legacy.zip")}


def _zip_for(extension_zips, blender_range, blender_platform):
    name = build.zip_name(build.package_version(), blender_range, blender_platform)
    assert name in extension_zips, f"no {name} among {sorted(extension_zips)}"
    return extension_zips[name]


def _host_platform():
    system = {"Linux": "linux", "Darwin": "macos", "Windows": "windows"}.get(platform.system())
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower())
    if system is None or machine is None:
        pytest.skip(f"no Blender platform for {platform.system()} {platform.machine()}")
    return f"{system}-{machine}"


def _module_blender(version):
    """The matrix's bpy-module Blender ``version``; skips the test when it cannot run here."""
    blender = BY_VERSION[version]
    why = blender.available()
    if why is not None:
        pytest.skip(f"Blender {version} is not available: {why}")
    return blender


def _profile_env(tmp_path):
    """Environment for a Blender with a fresh, isolated user profile under tmp_path."""
    env = dict(os.environ)
    for var, sub in (
        ("BLENDER_USER_RESOURCES", "resources"),
        ("BLENDER_USER_CONFIG", "config"),
        ("BLENDER_USER_SCRIPTS", "scripts"),
        ("BLENDER_USER_DATAFILES", "datafiles"),
    ):
        path = tmp_path / "profile" / sub
        path.mkdir(parents=True, exist_ok=True)
        env[var] = str(path)
    return env


def _run_check(cmd, tmp_path, env=None):
    """Run install_check.py (``cmd``); its JSON report and the process's output (stdout and stderr)."""
    env = env or _profile_env(tmp_path)
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=BLENDER_TIMEOUT, cwd=tmp_path)
    except subprocess.TimeoutExpired as ex:
        out = ex.stdout.decode(errors="replace") if isinstance(ex.stdout, bytes) else ex.stdout
        pytest.fail(f"timed out after {BLENDER_TIMEOUT} s: {' '.join(map(str, cmd))}\n{out or ''}")
    output = done.stdout + "\n" + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("INSTALL_CHECK ")]
    assert lines, f"no INSTALL_CHECK line (exit {done.returncode}):\n{output[-8000:]}"
    assert lines[-1].startswith("INSTALL_CHECK OK "), f"{lines[-1]}\n{output[-8000:]}"
    assert done.returncode == 0, f"exit {done.returncode}:\n{output[-8000:]}"
    return json.loads(lines[-1][len("INSTALL_CHECK OK ") :]), output


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
    info, _ = _run_check(
        [
            blender,
            "-b",
            "--factory-startup",
            "--python-exit-code",
            "1",
            "--python",
            str(CHECK_SCRIPT),
            "--",
            str(legacy_zip),
            "legacy",
        ],
        tmp_path,
        env,
    )
    _assert_registered(info, "stiff_rods")
    assert Path(info["file"]).is_relative_to(tmp_path)
    _assert_compiled(info["restart"], tmp_path)
    assert info["restart"]["numba_file"].startswith("/usr/lib/python3/dist-packages/")  # Debian's python3-numba


def _assert_compiled(restart, profile):
    """The installed solver ran its compiled Newton iteration (numba imported and the kernels compiled or
    loaded from the cache folder in the profile, which the first start fills with "preparing the solver…")."""
    active, message = restart["compiled"]
    assert active, message
    assert restart["sim_compiled"]
    # kept in the profile the add-on was installed into, so compiled once per install
    assert restart["kernel_cache"] and Path(restart["kernel_cache"]).is_relative_to(profile)
    assert any(f.endswith(".ready") for f in restart["kernel_cache_files"]), restart["kernel_cache_files"]


@pytest.mark.parametrize("version", [b.version for b in MODULE_BLENDERS])
def test_extension_installs_in_bpy_module(version, extension_zips, tmp_path):
    """Install from Disk, enable, restart, run the compiled solver with the bundled numba, disable, uninstall."""
    blender = _module_blender(version)
    zip_path = _zip_for(extension_zips, blender.zip_range, _host_platform())
    assert zip_path.name == blender.zip_name(build.package_version(), _host_platform())
    info, _ = _run_check([str(blender.python_exe), str(CHECK_SCRIPT), str(zip_path), "extension"], tmp_path)
    assert info["blender"].split()[0] == version
    assert info["python"].rsplit(".", 1)[0] == blender.python == RANGES[blender.zip_range]["python"]
    _assert_registered(info, "bl_ext.user_default.stiff_rods")
    assert Path(info["file"]).is_relative_to(tmp_path)
    restart = info["restart"]
    assert restart["numpy"] == blender.numpy  # Blender's (the venv's) numpy, not a bundled one
    versions = {
        _wheel_metadata(zip_path, w)["Name"]: _wheel_metadata(zip_path, w)["Version"] for w in _wheels_in(zip_path)
    }
    assert restart["scipy"] == versions["scipy"], "the bundled scipy wheel was not the one used"
    assert Path(restart["scipy_file"]).is_relative_to(tmp_path)
    _assert_compiled(restart, tmp_path)
    assert Path(restart["numba_file"]).is_relative_to(tmp_path)  # the bundled wheel
    assert restart["numba"] == versions["numba"]


def _refusal(version, blender_range, blender_platform, extension_zips, tmp_path):
    """Install the zip of ``blender_range`` and ``blender_platform`` into Blender ``version``: it must install
    nothing; the output, where Blender printed why."""
    blender = _module_blender(version)
    zip_path = _zip_for(extension_zips, blender_range, blender_platform)
    info, output = _run_check(
        [str(blender.python_exe), str(CHECK_SCRIPT), str(zip_path), "extension-refused"], tmp_path
    )
    assert info["blender"].split()[0] == version and info["installed"] is False
    return output


def test_blender_4_2_refuses_the_5_1_zip(extension_zips, tmp_path):
    output = _refusal("4.2.23", "5.1+", _host_platform(), extension_zips, tmp_path)
    assert "This Blender version (4.2.23) doesn't meet the minimum supported version (5.1.0)" in output, output[-4000:]


def test_blender_5_2_refuses_the_4_2_to_5_0_zip(extension_zips, tmp_path):
    output = _refusal("5.2.3", "4.2-5.0", _host_platform(), extension_zips, tmp_path)
    assert "This Blender version (5.2.3) must be less than the maximum version (5.1.0)" in output, output[-4000:]


@pytest.mark.parametrize("version", ["4.2.23", "5.3.0"])
def test_blender_refuses_another_platforms_zip(version, extension_zips, tmp_path):
    host = _host_platform()
    other = "linux-x64" if host == "windows-x64" else "windows-x64"
    output = _refusal(version, BY_VERSION[version].zip_range, other, extension_zips, tmp_path)
    assert f"This platform ({host}) isn't one of ({other})" in output, output[-4000:]


def _zip_names(path):
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None, f"corrupt member in {path}"
        return zf.namelist()


def _assert_only_addon_files(names):
    for name in names:
        parts = Path(name).parts
        top = parts[1] if parts[0] == "stiff_rods" and len(parts) > 1 else parts[0]
        assert top not in FORBIDDEN_TOP, f"{name} must not be packaged"
        assert not set(parts) & FORBIDDEN_ANY, f"{name} must not be packaged"
        assert not name.endswith((".pyc", ".pyo", ".zip", ".blend1")), name


def test_legacy_zip_layout(legacy_zip):
    names = _zip_names(legacy_zip)
    assert legacy_zip.name == f"stiff_rods-{build.package_version()}-legacy.zip"
    assert all(n.startswith("stiff_rods/") for n in names), "one top folder stiff_rods/"
    for required in ("__init__.py", "blender_manifest.toml", "addon/__init__.py", "solver/__init__.py"):
        assert "stiff_rods/" + required in names, required
    assert not any(n.endswith(".whl") for n in names), "the legacy zip uses Blender's own scipy and numba"
    _assert_only_addon_files(names)


def _wheels_in(zip_path):
    return [n for n in _zip_names(zip_path) if n.endswith(".whl")]


def _wheel_metadata(zip_path, wheel):
    """Header fields of the METADATA and WHEEL files of ``wheel`` (a member of the zip at
    ``zip_path``): {key: value}, {key: [values]} for the repeated Requires-Dist and Tag."""
    with zipfile.ZipFile(zip_path) as zf, zf.open(wheel) as fh:
        with zipfile.ZipFile(fh) as wf:
            info = [n for n in wf.namelist() if n.count("/") == 1 and n.split("/")[0].endswith(".dist-info")]
            text = "".join(
                wf.read(n).decode("utf-8").split("\n\n")[0] + "\n" for n in info if n.endswith(("/METADATA", "/WHEEL"))
            )
    meta = {}
    for line in text.splitlines():
        key, sep, value = line.partition(": ")
        if sep and not line.startswith(" "):
            meta.setdefault(key, []).append(value.strip())
    return {k: v if k in ("Requires-Dist", "Tag") else v[0] for k, v in meta.items()}


def test_extension_build_writes_one_zip_per_range_and_platform(extension_zips, dist, legacy_zip):
    version = build.package_version()
    ranges = sorted({b.zip_range for b in MODULE_BLENDERS})
    assert sorted(RANGES) == ranges == sorted(build.RANGES)
    # tools/blender_matrix.py's names
    expected = {b.zip_name(version, p) for b in MODULE_BLENDERS for p in WHEEL_TAG_FOR_PLATFORM}
    assert sorted(extension_zips) == sorted(expected) and len(expected) == 2 * len(WHEEL_TAG_FOR_PLATFORM)
    records = {r["name"]: r for r in json.loads((dist / "zips.json").read_text())}
    assert set(records) == set(extension_zips)  # the legacy zip of build_legacy_zip() is not recorded
    for name, record in records.items():
        wheels = sorted(Path(w).name for w in _wheels_in(extension_zips[name]))
        assert record["size_bytes"] == extension_zips[name].stat().st_size
        assert sorted(record["wheels"]) == wheels
        assert record["python"] == RANGES[record["blender_range"]]["python"]
        assert name == build.zip_name(version, record["blender_range"], record["platform"])
        assert record["compiled"] == any(w.startswith("numba-") for w in wheels)
    table = build.readme_table(list(records.values())).splitlines()
    assert len(table) == 2 + len(records)
    # README's table of zips is this build's (tools/build_extension.py --update-readme README.md)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index(build.TABLE_START) : readme.index(build.TABLE_END)].splitlines()
    assert [line for line in table[2:]] == [line for line in section if "-blender" in line]
    assert build.readme_table([build.legacy_record(legacy_zip)]).splitlines()[2] in section
    for record in records.values():
        (row,) = [line for line in table if f"`{record['name']}`" in line]
        assert row.endswith(f"| {record['size_bytes'] / 1e6:.1f} MB |"), row


def _assert_wheels_fit(zip_path, blender_range, blender_platform):
    """The zip's wheels: scipy, plus numba and llvmlite where the platform has them; tagged for the range's
    Python and the platform; each admitting the range's numpy; numba pinning the bundled llvmlite."""
    spec = RANGES[blender_range]
    py = "cp" + spec["python"].replace(".", "")
    metas = {wheel: _wheel_metadata(zip_path, wheel) for wheel in _wheels_in(zip_path)}
    expected = {"scipy"} if blender_platform in spec["no_numba"] else {"scipy", "numba", "llvmlite"}
    assert sorted(m["Name"] for m in metas.values()) == sorted(expected)
    for wheel, meta in metas.items():
        tags = [tag.split("-") for tag in meta["Tag"]]
        assert tags and all(t[:2] == [py, py] for t in tags), meta["Tag"]
        assert all(WHEEL_TAG_FOR_PLATFORM[blender_platform](t[2]) for t in tags), meta["Tag"]
        assert spec["python"] in SpecifierSet(meta["Requires-Python"])
        numpy = [Requirement(r) for r in meta.get("Requires-Dist", []) if Requirement(r).name == "numpy"]
        assert len(numpy) == (meta["Name"] != "llvmlite"), meta.get("Requires-Dist")
        assert all(v in n.specifier for n in numpy for v in spec["numpy"]), f"{wheel} needs {numpy}"
    by_name = {m["Name"]: m for m in metas.values()}
    if "numba" in by_name:  # numba pins its llvmlite
        (llvm,) = [Requirement(r) for r in by_name["numba"]["Requires-Dist"] if r.startswith("llvmlite")]
        assert by_name["llvmlite"]["Version"] in llvm.specifier
    return sorted(metas)


@pytest.mark.parametrize("blender_platform", sorted(WHEEL_TAG_FOR_PLATFORM))
@pytest.mark.parametrize("blender_range", sorted(RANGES))
def test_zip_holds_its_range_and_platform_wheels_only(extension_zips, legacy_zip, blender_range, blender_platform):
    zip_path = _zip_for(extension_zips, blender_range, blender_platform)
    assert zip_path.stat().st_size <= MAX_ZIP_BYTES, f"{zip_path.name}: {zip_path.stat().st_size} bytes"
    done = build.validate(zip_path)
    assert done.returncode == 0, f"validate {zip_path}:\n{done.stdout}\n{done.stderr}"
    names = _zip_names(zip_path)
    _assert_only_addon_files(names)
    wheels = _assert_wheels_fit(zip_path, blender_range, blender_platform)

    # The manifest names this platform and its wheels only, in the top-level keys and in the
    # [build.generated] table Blender reads them from, and the range's Blender versions.
    with zipfile.ZipFile(zip_path) as zf:
        manifest = tomllib.loads(zf.read("blender_manifest.toml").decode("utf-8"))
    for table in (manifest, manifest["build"]["generated"]):
        assert table["platforms"] == [blender_platform]
        assert sorted(w.removeprefix("./") for w in table["wheels"]) == wheels
    assert manifest["blender_version_min"] == RANGES[blender_range]["min"]
    assert manifest.get("blender_version_max") == RANGES[blender_range]["max"]

    # Same add-on source files as the legacy zip.
    legacy_py = {n.removeprefix("stiff_rods/") for n in _zip_names(legacy_zip) if n.endswith(".py")}
    assert {n for n in names if n.endswith(".py")} == legacy_py


def test_source_tree_validates():
    if build.find_blender_ext() is None:
        pytest.skip("Blender's extension CLI not found: the bpy module is not installed")
    done = build.validate(ROOT)
    assert done.returncode == 0, f"validate {ROOT}:\n{done.stdout}\n{done.stderr}"


def test_committed_manifest_lists_no_wheels():
    """The build writes wheels/platforms into a temporary copy; the committed manifest stays generic."""
    with open(ROOT / "blender_manifest.toml", "rb") as fh:
        manifest = tomllib.load(fh)
    assert "wheels" not in manifest and "platforms" not in manifest
    assert not list(ROOT.glob("*.whl"))
