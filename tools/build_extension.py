#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Build the installable packages of Stiff Rods (plain Python 3.11+, never imports ``bpy``).

    python3 tools/build_extension.py --out dist/

writes

* ``dist/stiff_rods-<version>-legacy.zip``: legacy add-on for Blender 3.4-4.1
  (Edit > Preferences > Add-ons > Install...). One top folder ``stiff_rods/`` with ``__init__.py``,
  ``blender_manifest.toml``, ``addon/`` and ``solver/``. No wheels: numpy, scipy and numba come from the
  Python that Blender runs (Debian's ``blender`` uses the system python3-numpy/-scipy/-numba; without
  numba the solver runs its numpy path).
* ``dist/stiff_rods-<version>-<platform>.zip``, one per platform: the Blender 4.2+ extension
  (Get Extensions > Install from Disk), built by Blender's own ``blender_ext.py build
  --split-platforms``, each with the scipy, numba and llvmlite wheels of its platform (Blender
  bundles numpy, not scipy) and a manifest naming only that platform. ``<platform>`` is written as Blender's CLI
  writes it: linux_x64, linux_arm64, macos_x64, macos_arm64, windows_x64, windows_arm64.
  ``--platforms linux-x64`` builds only the listed platforms (a quick local build);
  ``--no-split-platforms`` puts all listed platforms into one ``stiff_rods-<version>.zip``.

scipy per platform (cp311 wheels on PyPI; Blender 4.2-5.0 bundle Python 3.11 and numpy 1.26.x):

  linux-x64, linux-arm64, macos-x64, macos-arm64, windows-x64   scipy 1.15.3 (numpy >=1.23.5,<2.5)
  windows-arm64                                                 scipy 1.16.3 (numpy >=1.25.2,<2.6)

All six Blender platforms have a wheel. scipy 1.15.3 has no win_arm64 wheel (the first cp311
win_arm64 wheels are scipy 1.16.2); 1.16.3 is the newest release for it that accepts every
numpy 1.26.x (1.17 needs numpy >=1.26.4). The macos-arm64 wheel is built for macOS 12.0 or
newer: PyPI has no cp311 scipy wheel for arm64 macOS 11.

numba 0.61.2 with llvmlite 0.44.0 (numpy >=1.24,<2.3) for the compiled solver, on every platform but
windows-arm64 (no cp311 wheel there: that zip runs the numpy solver). Each zip stays under 100 MB
(linux-x64 is the largest, ~84 MB).

The extension build needs Blender's extension CLI; it is taken from the ``bpy`` module on PyPI
(``pip install bpy==5.0.1``, see requirements-dev.txt) or from ``--blender-ext PATH``. Without it
the extension is skipped with a message, and the exit status is non-zero only with
``--require-extension``. Wheels are downloaded with ``pip download`` into ``wheels/`` (not
committed) and reused from there; the ``wheels = [...]`` list is written into the manifest of a
temporary copy of the source tree, never into the committed manifest.
"""

from __future__ import annotations

import argparse
import fnmatch
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = "blender_manifest.toml"
PACKAGE = "stiff_rods"

PYTHON_VERSION = "3.11"  # Blender 4.2-5.0

# Blender platform -> (scipy version, pip --platform tag, glob of the wheel file's platform tag).
# scipy 1.15.3 is the newest release whose wheels accept numpy>=1.23.5 (1.16 needs >=1.25.2, 1.17
# >=1.26.4); it is built against numpy 2, so it also runs with numpy 2.x (<2.5). windows-arm64 has
# no 1.15.3 wheel: 1.16.3 (numpy>=1.25.2,<2.6) is the newest there that runs with numpy 1.26.0.
# pip also accepts older compatible tags of the same family; in the glob, the oldest macOS tag
# sorts first.
SCIPY_WHEELS = {
    "linux-x64": ("1.15.3", "manylinux_2_17_x86_64", "manylinux*x86_64"),
    "linux-arm64": ("1.15.3", "manylinux_2_17_aarch64", "manylinux*aarch64"),
    "macos-x64": ("1.15.3", "macosx_10_13_x86_64", "macosx_*_x86_64"),
    "macos-arm64": ("1.15.3", "macosx_12_0_arm64", "macosx_*_arm64"),
    "windows-x64": ("1.15.3", "win_amd64", "win_amd64"),
    "windows-arm64": ("1.16.3", "win_arm64", "win_arm64"),
}
# numba and llvmlite, the compiled solver (solver/core/compiled.py): Blender platform -> (pip --platform tag, glob of
# the wheel's platform tag), or None where PyPI has no cp311 wheel (windows-arm64: the numpy solver runs there).
# numba 0.61.2 takes numpy >=1.24,<2.3 (Blender's 1.26.x); its llvmlite 0.44.0 wheels keep every zip under 100 MB
# with scipy (linux-x64 the largest: scipy 37.7 + llvmlite 42.4 + numba 3.8 MB; llvmlite 0.50's is 59.7 MB).
NUMBA_VERSIONS = {"numba": "0.61.2", "llvmlite": "0.44.0"}
NUMBA_WHEELS = {
    "linux-x64": ("manylinux2014_x86_64", "manylinux*x86_64"),
    "linux-arm64": ("manylinux_2_28_aarch64", "manylinux*aarch64"),
    "macos-x64": ("macosx_10_15_x86_64", "macosx_*_x86_64"),
    "macos-arm64": ("macosx_12_0_arm64", "macosx_*_arm64"),
    "windows-x64": ("win_amd64", "win_amd64"),
    "windows-arm64": None,
}
PLATFORMS = tuple(SCIPY_WHEELS)
DEFAULT_PLATFORMS = PLATFORMS

# What the legacy zip holds (the extension build uses [build] paths_exclude_pattern of the manifest;
# tests/test_install.py checks both zips hold the same add-on files).
LEGACY_ROOT_FILES = ("__init__.py", MANIFEST, "LICENSE", "LICENSE.txt")
LEGACY_PACKAGES = ("addon", "solver")
SKIP_DIRS = {"__pycache__"}
SKIP_FILES = ("*.pyc", "*.pyo", ".*", "*.blend[1-9]", "*.orig", "*.rej", "*~")

# Top-level entries never copied into the temporary extension source tree (saves time; the manifest
# excludes them from the package anyway, and tests/ benchmarks/ tools/ are left to the manifest).
STAGE_SKIP_TOP = {"dist", "build", "wheels", "sample_blends", "docs", "__pycache__"}


class BuildError(RuntimeError):
    pass


def log(msg: str) -> None:
    print(f"build_extension: {msg}", flush=True)


def read_manifest(root: Path = ROOT) -> dict:
    with open(root / MANIFEST, "rb") as fh:
        return tomllib.load(fh)


def package_version(root: Path = ROOT) -> str:
    return read_manifest(root)["version"]


# --------------------------------------------------------------------------------------------------
# Legacy add-on zip (Blender 3.4)


def _skip_file(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in SKIP_FILES)


def legacy_files(root: Path = ROOT) -> list[tuple[Path, str]]:
    """(absolute path, path relative to the add-on folder) of every file in the legacy zip."""
    files = [(root / name, name) for name in LEGACY_ROOT_FILES if (root / name).is_file()]
    for package in LEGACY_PACKAGES:
        if not (root / package / "__init__.py").is_file():
            raise BuildError(f"{root / package} is not a Python package")
        for dirpath, dirnames, filenames in os.walk(root / package):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
            for name in sorted(filenames):
                if not _skip_file(name):
                    path = Path(dirpath) / name
                    files.append((path, path.relative_to(root).as_posix()))
    return files


def build_legacy_zip(out_dir: Path | str, root: Path = ROOT) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{PACKAGE}-{package_version(root)}-legacy.zip"
    tmp = out.with_name("." + out.name + f".{os.getpid()}.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for path, rel in legacy_files(root):
            zf.write(path, f"{PACKAGE}/{rel}")
    os.replace(tmp, out)
    log(f"legacy add-on: {out} ({out.stat().st_size / 1e6:.2f} MB)")
    return out


# --------------------------------------------------------------------------------------------------
# Blender 4.2+ extension zip


def find_blender_ext(explicit: str | None = None) -> tuple[Path, Path] | None:
    """(blender_ext.py, tags.py) of Blender's extension CLI, or None if not available.

    Looks at ``explicit`` (path to blender_ext.py), $STIFF_RODS_BLENDER_EXT, then the ``bpy``
    module of this Python (located with importlib, not imported: importing it is slow).
    """
    candidates = []
    if explicit or os.environ.get("STIFF_RODS_BLENDER_EXT"):
        candidates.append(Path(explicit or os.environ["STIFF_RODS_BLENDER_EXT"]))
    else:
        try:
            spec = importlib.util.find_spec("bpy")
        except (ImportError, ValueError):
            spec = None
        if spec is not None:
            bases = list(spec.submodule_search_locations or [])
            if spec.origin and spec.origin not in ("namespace", "built-in"):
                bases.append(os.path.dirname(spec.origin))
            for base in dict.fromkeys(bases):
                found = glob.glob(os.path.join(base, "*", "scripts", "addons_core", "bl_pkg", "cli", "blender_ext.py"))
                candidates.extend(Path(p) for p in sorted(found, reverse=True))
    for cli in candidates:
        if not cli.is_file():
            continue
        scripts = cli.parents[3]  # .../scripts/addons_core/bl_pkg/cli/blender_ext.py
        tags = scripts / "modules" / "_bpy_internal" / "extensions" / "tags.py"
        return cli, tags if tags.is_file() else None
    return None


def _wheel_glob(package: str, version: str, platform_glob: str) -> str:
    py = "cp" + PYTHON_VERSION.replace(".", "")
    return f"{package}-{version}-{py}-{py}-{platform_glob}.whl"


def check_platforms(platforms) -> list[str]:
    platforms = list(dict.fromkeys(platforms))
    if not platforms:
        raise BuildError(f"no platform given, known: {', '.join(PLATFORMS)}")
    for platform in platforms:
        if platform not in SCIPY_WHEELS:
            raise BuildError(f"unknown platform {platform!r}, known: {', '.join(PLATFORMS)}")
    return platforms


def _fetch(package: str, version: str, pip_platform: str, platform_glob: str, wheel_dir: Path) -> Path:
    """The cp311 wheel of ``package``==``version`` for one platform, from ``wheel_dir`` or PyPI."""
    pattern = str(wheel_dir / _wheel_glob(package, version, platform_glob))
    found = sorted(glob.glob(pattern))
    if not found:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            f"{package}=={version}",
            "--only-binary=:all:",
            "--no-deps",
            "--python-version",
            PYTHON_VERSION,
            "--platform",
            pip_platform,
            "-d",
            str(wheel_dir),
            "--disable-pip-version-check",
            "-q",
        ]
        log("$ " + " ".join(cmd))
        done = subprocess.run(cmd, timeout=600)
        if done.returncode != 0:
            raise BuildError(f"pip download of {package} {version} for {pip_platform} failed")
        found = sorted(glob.glob(pattern))
    if not found:
        raise BuildError(f"no {package} {version} wheel for {pip_platform} in {wheel_dir}")
    return Path(found[0])


def fetch_wheels(platforms, wheel_dir: Path | str = ROOT / "wheels") -> list[list[Path]]:
    """Per platform (Blender platform names): its scipy wheel and, where PyPI has them, its numba and
    llvmlite wheels; from ``wheel_dir`` or PyPI."""
    wheel_dir = Path(wheel_dir)
    wheel_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for platform in check_platforms(platforms):
        version, pip_platform, platform_glob = SCIPY_WHEELS[platform]
        wheels = [_fetch("scipy", version, pip_platform, platform_glob, wheel_dir)]
        numba_tags = NUMBA_WHEELS[platform]
        if numba_tags is not None:
            wheels += [_fetch(name, v, *numba_tags, wheel_dir) for name, v in NUMBA_VERSIONS.items()]
        log(f"{platform}: " + ", ".join(w.name for w in wheels))
        out.append(wheels)
    return out


def _manifest_with_wheels(text: str, wheels: list[str], platforms: list[str]) -> str:
    """Insert ``platforms`` and ``wheels`` as top-level keys, before the first table header."""
    lines = "".join(
        [
            "\n# Generated by tools/build_extension.py for this build only.\n",
            "platforms = [" + ", ".join(f'"{p}"' for p in platforms) + "]\n",
            "wheels = [\n" + "".join(f'  "./wheels/{w}",\n' for w in wheels) + "]\n\n",
        ]
    )
    match = re.search(r"^\[", text, flags=re.MULTILINE)
    if match is None:
        return text + lines
    return text[: match.start()] + lines + text[match.start() :]


def stage_source(root: Path, stage: Path, wheels: list[Path], platforms: list[str]) -> Path:
    """Copy the source tree to ``stage`` with the wheels and a manifest that lists them."""

    def ignore(directory, names):
        top = Path(directory).resolve() == root.resolve()
        return {
            n
            for n in names
            if n.startswith(".") or n == "__pycache__" or n.endswith((".pyc", ".zip")) or (top and n in STAGE_SKIP_TOP)
        }

    shutil.copytree(root, stage, ignore=ignore)
    stage_wheels(root, stage, wheels, platforms)
    return stage


def stage_wheels(root: Path, stage: Path, wheels: list[Path], platforms: list[str]) -> None:
    """Put exactly ``wheels`` into ``stage/wheels/`` and write the manifest that lists them."""
    shutil.rmtree(stage / "wheels", ignore_errors=True)
    (stage / "wheels").mkdir()
    for wheel in wheels:
        shutil.copy2(wheel, stage / "wheels" / wheel.name)
    text = (root / MANIFEST).read_text(encoding="utf-8")
    if re.search(r"^\s*(wheels|platforms)\s*=", text, flags=re.MULTILINE):
        raise BuildError(f"{MANIFEST} already sets wheels/platforms; the build script writes them")
    new_text = _manifest_with_wheels(text, [w.name for w in wheels], platforms)
    parsed = tomllib.loads(new_text)
    assert parsed["wheels"] == [f"./wheels/{w.name}" for w in wheels], parsed.get("wheels")
    (stage / MANIFEST).write_text(new_text, encoding="utf-8")


def build_extension_zip(
    out_dir: Path | str,
    *,
    platforms=DEFAULT_PLATFORMS,
    split_platforms: bool = True,
    wheel_dir: Path | str | None = None,
    blender_ext: str | None = None,
    root: Path = ROOT,
) -> list[Path]:
    """Build the extension with Blender's CLI. Returns the zip(s); raises BuildError on failure.

    With ``split_platforms`` the CLI runs once per platform, on a manifest that lists only that
    platform and its wheel, with ``--split-platforms`` (which names the zip after the platform):
    so the zip's manifest names that platform alone, in its top-level ``platforms``/``wheels``
    as well as in the ``[build.generated]`` table the CLI appends.
    """
    cli = find_blender_ext(blender_ext)
    if cli is None:
        raise BuildError(
            "Blender's extension CLI (blender_ext.py) not found: install the bpy module "
            "(python3 -m pip install -r requirements-dev.txt) or pass --blender-ext PATH"
        )
    cli_path, tags = cli
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    platforms = check_platforms(platforms)
    wheels = fetch_wheels(platforms, wheel_dir or root / "wheels")
    version = package_version(root)
    if split_platforms:
        builds = [
            (platform_wheels, [p], out_dir / f"{PACKAGE}-{version}-{p.replace('-', '_')}.zip")
            for platform_wheels, p in zip(wheels, platforms, strict=True)
        ]
    else:
        builds = [([w for ws in wheels for w in ws], platforms, out_dir / f"{PACKAGE}-{version}.zip")]
    outs = []
    with tempfile.TemporaryDirectory(prefix="stiff_rods_build_") as tmp:
        stage = stage_source(root, Path(tmp) / PACKAGE, [], platforms)
        for build_wheels, build_platforms, out in builds:
            stage_wheels(root, stage, build_wheels, build_platforms)
            cmd = [
                sys.executable,
                str(cli_path),
                "build",
                "--source-dir",
                str(stage),
                "--output-dir",
                str(out_dir),
                "--valid-tags",
                str(tags) if tags else "",
            ]
            if split_platforms:
                cmd.append("--split-platforms")
            log("$ " + " ".join(cmd))
            done = subprocess.run(cmd, timeout=900, capture_output=True, text=True)
            sys.stdout.write(done.stdout)
            sys.stderr.write(done.stderr)
            if done.returncode != 0:
                raise BuildError(f"blender_ext.py build failed (exit {done.returncode})")
            if not out.is_file():
                raise BuildError(f"expected {out} after the build")
            log(f"extension: {out} ({out.stat().st_size / 1e6:.1f} MB)")
            outs.append(out)
    return outs


def validate(path: Path | str, blender_ext: str | None = None) -> subprocess.CompletedProcess:
    """Run ``blender_ext.py validate`` on a source tree or a built zip."""
    cli = find_blender_ext(blender_ext)
    if cli is None:
        raise BuildError("Blender's extension CLI (blender_ext.py) not found")
    cli_path, tags = cli
    cmd = [sys.executable, str(cli_path), "validate", "--valid-tags", str(tags) if tags else "", str(path)]
    return subprocess.run(cmd, timeout=300, capture_output=True, text=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "dist"), help="output folder (default: dist/)")
    parser.add_argument(
        "--platforms",
        default=",".join(DEFAULT_PLATFORMS),
        help="comma-separated Blender platforms to build (default: all, " + ", ".join(DEFAULT_PLATFORMS) + ")",
    )
    parser.add_argument(
        "--split-platforms",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="one extension zip per platform (default); --no-split-platforms: one zip for all listed platforms",
    )
    parser.add_argument(
        "--wheel-dir",
        default=str(ROOT / "wheels"),
        help="where the wheels are downloaded and reused (default: wheels/)",
    )
    parser.add_argument(
        "--blender-ext", default=None, help="path to Blender's blender_ext.py (default: from the bpy module)"
    )
    parser.add_argument(
        "--require-extension",
        action="store_true",
        help="fail if the extension cannot be built (e.g. bpy not installed)",
    )
    parser.add_argument("--legacy-only", action="store_true", help="only build the legacy zip")
    args = parser.parse_args(argv)
    platforms = [p.strip() for p in args.platforms.split(",") if p.strip()]
    try:
        check_platforms(platforms)
    except BuildError as ex:
        parser.error(f"--platforms: {ex}")

    try:
        build_legacy_zip(args.out)
    except BuildError as ex:
        log(f"ERROR: {ex}")
        return 1
    if args.legacy_only:
        return 0
    if find_blender_ext(args.blender_ext) is None:
        log(
            "SKIPPED the Blender 4.2+ extension: Blender's extension CLI was not found (the bpy "
            f"module is not installed for {sys.executable}; python3 -m pip install -r "
            "requirements-dev.txt, or pass --blender-ext PATH/TO/blender_ext.py)"
        )
        return 1 if args.require_extension else 0
    try:
        build_extension_zip(
            args.out,
            platforms=platforms,
            split_platforms=args.split_platforms,
            wheel_dir=args.wheel_dir,
            blender_ext=args.blender_ext,
        )
    except BuildError as ex:
        log(f"ERROR: {ex}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
