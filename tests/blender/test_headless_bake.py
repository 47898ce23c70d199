"""tools/bake_headless.py as a new user runs it: the README's command-1 bake line, taken from README.md
(frames shortened for CI time), under a temporary HOME that already holds a Blender 3.4 profile; and the
bpy-module path with the extension zip. The user's profile must come out byte-for-byte untouched
(files, sizes, mtimes), the output must be the summary and nothing else of the tool's, and the baked
.blend and the leaves' point cache must be where the summary says.
"""

import importlib.util
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import tomllib

import pytest

from blender_env import ROOT, build_legacy_zip, build_zips, extension_zip, load_module

matrix = load_module(ROOT / "tools" / "blender_matrix.py", "stiff_rods_blender_matrix")


def matrix_version():
    """The add-on's version (blender_manifest.toml), as in the zips' names."""
    return tomllib.loads((ROOT / "blender_manifest.toml").read_text(encoding="utf-8"))["version"]


README = ROOT / "README.md"
FRAMES = (1, 6)
TIMEOUT = 900
SUMMARY = "Stiff Rods: baked "
BLEND_COMPRESSED = (b"\x28\xb5\x2f\xfd", b"\x1f\x8b\x08\x00")  # zstd, gzip magic: a compressed .blend
STIFF_RODS_ENV = "STIFF_RODS_BAKE_PROFILE"  # set by the tool for a Blender it restarts

needs_blender = pytest.mark.skipif(shutil.which("blender") is None, reason="Debian's blender is not installed")


def readme_bake_command(block_index=0):
    """The `... bake_headless.py ...` part of README.md's ```sh code block ``block_index`` (0: command 1 with
    Debian's Blender, 1: its variant 1b with the newest LTS's bpy module)."""
    blocks = re.findall(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) > block_index, "README.md lacks a ```sh code block"
    parts = [
        p.strip()
        for line in blocks[block_index].splitlines()
        if not line.startswith("#")
        for p in line.split("&&")
        if "bake_headless.py" in p
    ]
    assert len(parts) == 1, f"expected one bake_headless.py command in README's code block {block_index}: {parts}"
    return parts[0]


def user_env(home, tmp=None):
    """A user's environment with ``home`` as HOME: no BLENDER_USER_*/XDG_* override sends Blender
    elsewhere, so its default profile is ``home/.config/blender``; temporary files go to ``tmp``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BLENDER_USER_", "XDG_", STIFF_RODS_ENV))}
    env.update(HOME=str(home), TMPDIR=str(tmp or tempfile.gettempdir()))
    return env


def make_home(tmp_path, version):
    """A HOME with an existing Blender profile: a preferences-like file and an (empty) add-ons folder,
    dated in the past so that a rewrite shows in the mtimes."""
    home = tmp_path / "home"
    profile = home / ".config" / "blender" / version
    (profile / "scripts" / "addons").mkdir(parents=True)
    (profile / "config").mkdir()
    (profile / "config" / "bookmarks.txt").write_text("[Bookmarks]\n/home/user/trees\n")
    for path in home.rglob("*"):
        os.utime(path, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    return home


def snapshot(folder):
    """Every file and folder under ``folder``: relative path -> (kind, size, mtime in ns)."""
    return {
        str(p.relative_to(folder)): (p.is_dir(), p.stat().st_size if p.is_file() else 0, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
    }


def pc2_header(path):
    """(points, start frame, samples) of a PC2 point cache (signature, version, points, start, rate, samples)."""
    with open(path, "rb") as fh:
        sig, version, points, start, rate, samples = struct.unpack("<12siiffi", fh.read(32))
    assert sig == b"POINTCACHE2\0" and version == 1 and rate == 1.0
    assert os.path.getsize(path) == 32 + 12 * points * samples
    return points, start, samples


def summary_paths(lines):
    """The .blend and cache paths named by the summary lines."""
    saved = [line.split(":", 1)[1].strip() for line in lines if line.strip().startswith("saved:")]
    caches = [line.split(":", 1)[1].strip() for line in lines if line.strip().startswith("cache:")]
    return saved, caches


def check_output(proc, work, out_name, tmp, baseline=()):
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{output[-6000:]}"
    lines = proc.stdout.splitlines()
    assert sum(line.startswith(SUMMARY) for line in lines) == 1, output
    assert sum("Saved" in line for line in output.splitlines()) <= 1, output
    for noise in ("addon_utils.disable", "Total files", "Modules Installed", "STATUS "):
        assert noise not in output, f"{noise!r} in the output:\n{output}"
    assert not list(work.rglob("*.blend1")), "a .blend1 backup was left"
    out = work / out_name
    pc2 = work / "leaves_stiff_rods.pc2"
    assert out.read_bytes()[:7] == b"BLENDER" or out.read_bytes()[:4] in BLEND_COMPRESSED, "not a .blend"
    assert pc2_header(pc2)[1:] == (float(FRAMES[0]), FRAMES[1] - FRAMES[0] + 1)
    assert summary_paths(lines) == ([str(out)], [str(pc2)])
    # everything printed beyond Blender's own start/quit lines is the summary: what, add-on, solver, .blend, cache
    own = [
        line
        for line in lines
        if line.strip() and line not in baseline and "Read blend:" not in line and line != "Blender quit"
    ]
    assert len(own) == 5 and own[0].startswith(SUMMARY) and own[1].startswith("  add-on: "), output
    # the compiled Newton iteration baked it (numba: Debian's python3-numba, or the extension's bundled wheel)
    assert own[2].startswith("  solver: compiled solver active (numba "), output
    assert not list(tmp.glob("stiff_rods*")), "the tool's temporary folder was left"


@pytest.fixture(scope="module")
def legacy_dist(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    build_legacy_zip(out)
    return out


def work_dir(tmp_path, dist=None):
    """A checkout-like working folder (the README command's relative paths), with ``dist`` as dist/."""
    work = tmp_path / "work"
    (work / "tools").mkdir(parents=True)
    shutil.copy2(ROOT / "tools" / "bake_headless.py", work / "tools")
    shutil.copytree(ROOT / "sample_blends", work / "sample_blends")
    if dist is not None:
        shutil.copytree(dist, work / "dist")
    return work


@needs_blender
def test_readme_command_bakes_without_touching_the_blender_profile(legacy_dist, tmp_path):
    command = readme_bake_command()
    assert re.search(r"\bblender -b ", command), command
    assert re.search(r"--frames \d+ \d+", command), command
    argv = shlex.split(re.sub(r"--frames \d+ \d+", f"--frames {FRAMES[0]} {FRAMES[1]}", command))
    out_name = argv[argv.index("--out") + 1]
    blender_version = re.search(
        r"Blender (\d+\.\d+)",
        subprocess.run(
            ["blender", "--version"], capture_output=True, text=True, timeout=120, env=user_env(tmp_path)
        ).stdout,
    )[1]
    home = make_home(tmp_path, blender_version)
    before = snapshot(home / ".config" / "blender")
    # Blender's own start-up lines in this environment (locale, audio warnings...), not the tool's
    base_home = tmp_path / "base-home"
    base_home.mkdir()
    baseline = subprocess.run(
        [
            "env",
            "-u",
            "PYTHONPATH",
            "PATH=/usr/bin:/bin",
            "blender",
            "-b",
            "--factory-startup",
            "--python-expr",
            "pass",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=user_env(base_home),
    ).stdout.splitlines()
    work = work_dir(tmp_path, legacy_dist)
    tmp = tmp_path / "tmp"
    tmp.mkdir()

    # PWD as a shell sets it: Blender resolves the relative .blend and --python paths against $PWD
    proc = subprocess.run(
        argv, cwd=work, env=dict(user_env(home, tmp), PWD=str(work)), capture_output=True, text=True, timeout=TIMEOUT
    )

    check_output(proc, work, out_name, tmp, baseline)
    assert f"Read blend: {work / 'sample_blends'}" in proc.stdout, "Blender did not run in the working folder"
    assert snapshot(home / ".config" / "blender") == before, "the user's Blender profile changed"
    # the compiled solver ran, its kernels kept in the user's cache folder for the next run
    assert list((home / ".cache" / "stiff_rods" / "kernels").rglob("*.nbi")), "no compiled kernels were cached"


def test_bpy_module_bakes_with_the_extension_zip_in_a_temporary_profile(tmp_path):
    if importlib.util.find_spec("bpy") is None:
        pytest.skip("the bpy module is not installed (python3 -m pip install -r requirements-dev.txt)")
    built = build_zips(tmp_path / "dist", "--platforms", "linux-x64", "--require-extension", timeout=900)
    ext = extension_zip(built)  # the zip for this Python's Blender (3.11: Blender 4.2-5.0)
    assert ext is not None, built
    home = make_home(tmp_path, "5.0")
    before = snapshot(home / ".config" / "blender")
    work = work_dir(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()

    proc = subprocess.run(
        [
            sys.executable,
            "tools/bake_headless.py",
            "--blend",
            "sample_blends/white_birch.blend",
            "--zip",
            str(ext),
            "--frames",
            str(FRAMES[0]),
            str(FRAMES[1]),
            "--out",
            "baked.blend",
        ],
        cwd=work,
        env=dict(user_env(home, tmp), PWD=str(work)),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )

    check_output(proc, work, "baked.blend", tmp)
    assert snapshot(home / ".config" / "blender") == before, "the user's Blender profile changed"


def test_readme_newest_lts_variant_bakes_compiled_in_blender_5_2(tmp_path):
    """README's command 1b: the same storm bake with Blender 5.2 LTS's bpy module (Python 3.13, numpy 2.5.5) and
    the 5.1+ extension zip, in a temporary profile; frames shortened for CI time."""
    newest_lts = matrix.NEWEST_LTS
    if newest_lts.available():
        pytest.skip(newest_lts.available())
    command = readme_bake_command(1)
    venv_python = str(newest_lts.python_exe.relative_to(ROOT))
    assert command.startswith(venv_python + " tools/bake_headless.py "), (command, venv_python)
    argv = shlex.split(re.sub(r"--frames \d+ \d+", f"--frames {FRAMES[0]} {FRAMES[1]}", command))
    argv[0] = str(newest_lts.python_exe)
    assert argv[argv.index("--zip") + 1] == "dist/" + newest_lts.zip_name(matrix_version())
    dist = tmp_path / "dist"
    build_zips(dist, "--platforms", "linux-x64", "--blender-ranges", "5.1+", "--require-extension", timeout=900)
    home = make_home(tmp_path, newest_lts.series)
    before = snapshot(home / ".config" / "blender")
    work = work_dir(tmp_path, dist)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.run(
        argv,
        cwd=work,
        env=dict(user_env(home, tmp), PWD=str(work)),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    check_output(proc, work, argv[argv.index("--out") + 1], tmp)
    assert "numba 0.68" in proc.stdout, proc.stdout  # the 5.1+ zip's bundled numba compiled the solver
    assert snapshot(home / ".config" / "blender") == before, "the user's Blender profile changed"
