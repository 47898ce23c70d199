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
* ``dist/stiff_rods-<version>-blender<range>-<platform>.zip``, two per platform: the Blender 4.2+ extension
  (Get Extensions > Install from Disk), built by Blender's own ``blender_ext.py build --split-platforms``,
  one zip per Blender range:

  - ``blender4.2-5.0``: Python 3.11 (cp311) wheels; manifest ``blender_version_min = "4.2.0"``,
    ``blender_version_max = "5.1.0"`` (exclusive);
  - ``blender5.1+``: Python 3.13 (cp313) wheels; ``blender_version_min = "5.1.0"``, no maximum.

  Each holds the scipy, numba and llvmlite wheels of its Python and platform (Blender bundles numpy, not
  scipy; tools/bundled_wheels.py lists the versions and the numpy each admits) and a manifest naming only that
  platform. ``<platform>`` is written as Blender's CLI writes it: linux_x64, linux_arm64, macos_x64, macos_arm64,
  windows_x64, windows_arm64. ``--platforms linux-x64`` and ``--blender-ranges 5.1+`` build only the listed ones;
  ``--no-split-platforms`` puts all listed platforms into one ``stiff_rods-<version>-blender<range>.zip`` per range.
* ``dist/zips.json``: one record per zip in ``dist/`` built by this script (name, blender_range, platform, python,
  size_bytes, wheels, compiled: whether numba is bundled). ``--readme-table`` prints them as a markdown table,
  ``--update-readme README.md`` writes that table between ``<!-- zip-table:start -->`` and
  ``<!-- zip-table:end -->`` (neither builds anything).

Why one zip per range rather than one zip with both Pythons' wheels: size (llvmlite 0.50's linux wheel alone is
60 MB, so both Pythons' wheels would make the linux-x64 zip ~180 MB), and Blender refuses the wrong zip itself,
from the manifest's version range, with its own message ("This Blender version (5.2.3) must be less than the
maximum version (5.1.0)", "... doesn't meet the minimum supported version (5.1.0)"), where a zip holding only the
other Python's wheels would install and then lack scipy.

The extension build needs Blender's extension CLI; it is taken from the ``bpy`` module on PyPI
(``pip install bpy==5.0.1``, see requirements-dev.txt) or from ``--blender-ext PATH``. Without it
the extension is skipped with a message, and the exit status is non-zero only with
``--require-extension``. Wheels are downloaded with ``pip download`` into ``wheels/`` (not
committed) and reused from there; the ``wheels = [...]`` list and the Blender range are written into the
manifest of a temporary copy of the source tree, never into the committed manifest.
"""

from __future__ import annotations

import argparse
import fnmatch
import glob
import importlib.util
import json
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

if str(ROOT / "tools") not in sys.path:
    sys.path.insert(0, str(ROOT / "tools"))
import bundled_wheels  # noqa: E402 - tools/bundled_wheels.py, next to this script

RANGES = bundled_wheels.RANGES  # Blender range ("4.2-5.0", "5.1+") -> its Python and wheels
PLATFORMS = bundled_wheels.PLATFORMS
DEFAULT_PLATFORMS = PLATFORMS
DEFAULT_RANGES = tuple(RANGES)
ZIPS_JSON = "zips.json"
TABLE_START, TABLE_END = "<!-- zip-table:start -->", "<!-- zip-table:end -->"

# What the legacy zip holds (the extension build uses [build] paths_exclude_pattern of the manifest;
# tests/blender/test_install.py checks both zips hold the same add-on files).
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


def _check_names(names, known, what: str) -> list[str]:
    """``names`` without repeats, each one of ``known``; a BuildError naming ``what`` otherwise."""
    names = list(dict.fromkeys(names))
    if not names:
        raise BuildError(f"no {what} given, known: {', '.join(known)}")
    for name in names:
        if name not in known:
            raise BuildError(f"unknown {what} {name!r}, known: {', '.join(known)}")
    return names


def check_platforms(platforms) -> list[str]:
    return _check_names(platforms, PLATFORMS, "platform")


def check_ranges(ranges) -> list[str]:
    return _check_names(ranges, RANGES, "Blender range")


def fetch_wheels(
    platforms, wheel_dir: Path | str = ROOT / "wheels", blender_range: str = "4.2-5.0"
) -> list[list[Path]]:
    """Per platform (Blender platform names): the wheels of its zip for ``blender_range``, from ``wheel_dir``
    or PyPI."""
    out = []
    for platform in check_platforms(platforms):
        try:
            wheels = bundled_wheels.fetch_wheels(RANGES[blender_range], platform, wheel_dir)
        except bundled_wheels.WheelError as ex:
            raise BuildError(str(ex)) from ex
        log(f"{blender_range} {platform}: " + ", ".join(w.name for w in wheels))
        out.append(wheels)
    return out


def zip_name(version: str, blender_range: str, platform: str | None) -> str:
    """stiff_rods-<version>-blender<range>-<platform>.zip (tools/blender_matrix.Blender.zip_name); without a
    platform (all platforms in one zip) stiff_rods-<version>-blender<range>.zip."""
    tail = "" if platform is None else "-" + platform.replace("-", "_")
    return f"{PACKAGE}-{version}-blender{blender_range}{tail}.zip"


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


def _manifest_for_range(text: str, blender_range: str) -> str:
    """Set blender_version_min (and blender_version_max, exclusive, where the range has one) to ``blender_range``'s."""
    r = RANGES[blender_range]
    text = re.sub(r"^blender_version_max\s*=.*\n", "", text, flags=re.MULTILINE)
    lines = f'blender_version_min = "{r.blender_min}"\n'
    if r.blender_max is not None:
        lines += f'blender_version_max = "{r.blender_max}"\n'
    text, count = re.subn(r"^blender_version_min\s*=.*\n", lines, text, count=1, flags=re.MULTILINE)
    if count != 1:
        raise BuildError(f"{MANIFEST} has no blender_version_min line")
    return text


def stage_source(root: Path, stage: Path) -> Path:
    """Copy the source tree to ``stage`` (without development folders; :func:`stage_wheels` adds the wheels)."""

    def ignore(directory, names):
        top = Path(directory).resolve() == root.resolve()
        return {
            n
            for n in names
            if n.startswith(".") or n == "__pycache__" or n.endswith((".pyc", ".zip")) or (top and n in STAGE_SKIP_TOP)
        }

    shutil.copytree(root, stage, ignore=ignore)
    return stage


def stage_wheels(root: Path, stage: Path, wheels: list[Path], platforms: list[str], blender_range: str) -> None:
    """Put exactly ``wheels`` into ``stage/wheels/`` and write the manifest that lists them, with the platforms
    and the Blender versions of ``blender_range``."""
    shutil.rmtree(stage / "wheels", ignore_errors=True)
    (stage / "wheels").mkdir()
    for wheel in wheels:
        shutil.copy2(wheel, stage / "wheels" / wheel.name)
    text = (root / MANIFEST).read_text(encoding="utf-8")
    if re.search(r"^\s*(wheels|platforms)\s*=", text, flags=re.MULTILINE):
        raise BuildError(f"{MANIFEST} already sets wheels/platforms; the build script writes them")
    new_text = _manifest_with_wheels(_manifest_for_range(text, blender_range), [w.name for w in wheels], platforms)
    parsed = tomllib.loads(new_text)
    assert parsed["wheels"] == [f"./wheels/{w.name}" for w in wheels], parsed.get("wheels")
    assert parsed["blender_version_min"] == RANGES[blender_range].blender_min
    (stage / MANIFEST).write_text(new_text, encoding="utf-8")


def _run_cli(cli_path: Path, tags: Path | None, stage: Path, out_dir: Path, split_platforms: bool) -> None:
    cmd = [sys.executable, str(cli_path), "build", "--source-dir", str(stage), "--output-dir", str(out_dir)]
    cmd += ["--valid-tags", str(tags) if tags else ""]
    if split_platforms:
        cmd.append("--split-platforms")
    log("$ " + " ".join(cmd))
    done = subprocess.run(cmd, timeout=900, capture_output=True, text=True)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    if done.returncode != 0:
        raise BuildError(f"blender_ext.py build failed (exit {done.returncode})")


def _plan(version: str, ranges: list[str], platforms: list[str], wheel_dir, split_platforms: bool) -> list[dict]:
    """One record per zip to build: name, blender_range, platform(s), python and the wheel files."""
    plan = []
    for name in ranges:
        per_platform = fetch_wheels(platforms, wheel_dir, name)
        base = {"blender_range": name, "python": RANGES[name].python}
        if split_platforms:
            for platform, wheels in zip(platforms, per_platform, strict=True):
                plan.append({"name": zip_name(version, name, platform), **base, "platform": platform, "files": wheels})
        else:
            wheels = [w for ws in per_platform for w in ws]
            plan.append(
                {"name": zip_name(version, name, None), **base, "platform": ",".join(platforms), "files": wheels}
            )
    return plan


def build_extension_zip(
    out_dir: Path | str,
    *,
    platforms=DEFAULT_PLATFORMS,
    ranges=DEFAULT_RANGES,
    split_platforms: bool = True,
    wheel_dir: Path | str | None = None,
    blender_ext: str | None = None,
    root: Path = ROOT,
) -> list[Path]:
    """Build the extension with Blender's CLI, one zip per Blender range and platform; record them in
    ``out_dir/zips.json``. Returns the zips; raises BuildError on failure.

    With ``split_platforms`` the CLI runs once per range and platform, on a manifest that lists only that
    platform, its wheels and the range's Blender versions, with ``--split-platforms``: so the zip's manifest names
    that platform alone, in its top-level ``platforms``/``wheels`` as well as in the ``[build.generated]`` table
    the CLI appends. The CLI names the zip after the platform only; it is renamed to :func:`zip_name`.
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
    platforms, ranges = check_platforms(platforms), check_ranges(ranges)
    plan = _plan(package_version(root), ranges, platforms, wheel_dir or root / "wheels", split_platforms)
    outs = []
    with tempfile.TemporaryDirectory(prefix="stiff_rods_build_") as tmp:
        stage = stage_source(root, Path(tmp) / PACKAGE)
        for item in plan:
            build_platforms = item["platform"].split(",")
            stage_wheels(root, stage, item["files"], build_platforms, item["blender_range"])
            cli_out = Path(tmp) / "out"
            shutil.rmtree(cli_out, ignore_errors=True)
            cli_out.mkdir()
            _run_cli(cli_path, tags, stage, cli_out, split_platforms)
            built = list(cli_out.glob("*.zip"))
            if len(built) != 1:
                raise BuildError(f"blender_ext.py build wrote {len(built)} zips for {item['name']}, not one")
            out = out_dir / item["name"]
            shutil.move(built[0], out)
            log(f"extension: {out} ({out.stat().st_size / 1e6:.1f} MB)")
            outs.append(out)
    write_records(out_dir, [_record(item, out_dir) for item in plan])
    return outs


# --------------------------------------------------------------------------------------------------
# dist/zips.json and the README's table of zips


def _record(item: dict, out_dir: Path) -> dict:
    wheels = [w.name for w in item["files"]]
    record = {k: item[k] for k in ("name", "blender_range", "platform", "python")}
    size = (out_dir / item["name"]).stat().st_size
    return {**record, "size_bytes": size, "wheels": wheels, "compiled": any(w.startswith("numba-") for w in wheels)}


def legacy_record(path: Path) -> dict:
    return {
        "name": path.name,
        "blender_range": "legacy",
        "platform": "any",
        "python": "Blender's",
        "size_bytes": path.stat().st_size,
        "wheels": [],
        "compiled": False,
    }


def read_records(out_dir: Path | str) -> list[dict]:
    """The records of ``out_dir/zips.json`` whose zip is still there with the recorded size."""
    path = Path(out_dir) / ZIPS_JSON
    records = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []
    return [r for r in records if (z := Path(out_dir) / r["name"]).is_file() and z.stat().st_size == r["size_bytes"]]


def write_records(out_dir: Path | str, records: list[dict]) -> Path:
    """Add ``records`` to ``out_dir/zips.json`` (replacing those of the same zips); sorted by range and name."""
    new = {r["name"]: r for r in records}
    kept = [r for r in read_records(out_dir) if r["name"] not in new]
    order = {"legacy": 0, **{name: i + 1 for i, name in enumerate(RANGES)}}
    merged = sorted([*kept, *new.values()], key=lambda r: (order.get(r["blender_range"], 9), r["name"]))
    path = Path(out_dir) / ZIPS_JSON
    path.write_text(json.dumps(merged, indent=1) + "\n", encoding="utf-8")
    return path


def readme_table(records: list[dict]) -> str:
    """Markdown table of the zips: zip | Blender | Python | platform | compiled solver | size."""
    rows = ["| zip | Blender | Python | platform | compiled solver | size |", "|---|---|---|---|---|---:|"]
    for r in records:
        if r["blender_range"] == "legacy":
            blender, compiled = "3.4–4.1 (legacy add-on)", "if Blender's Python has numba"
        else:
            blender = r["blender_range"].replace("-", "–")
            numba = [w.split("-")[1] for w in r["wheels"] if w.startswith("numba-")]
            compiled = f"numba {numba[0]}" if numba else "no (numpy solver)"
        rows.append(
            f"| `{r['name']}` | {blender} | {r['python']} | {r['platform']} | {compiled} | "
            f"{r['size_bytes'] / 1e6:.1f} MB |"
        )
    return "\n".join(rows) + "\n"


def update_readme(readme: Path | str, table: str) -> None:
    """Replace what is between the zip-table markers of ``readme`` with ``table``."""
    readme = Path(readme)
    text = readme.read_text(encoding="utf-8")
    start, end = text.find(TABLE_START), text.find(TABLE_END)
    if start < 0 or end < start:
        raise BuildError(f"{readme} has no {TABLE_START} ... {TABLE_END} markers")
    start += len(TABLE_START)
    readme.write_text(text[:start] + "\n" + table + text[end:], encoding="utf-8")


def validate(path: Path | str, blender_ext: str | None = None) -> subprocess.CompletedProcess:
    """Run ``blender_ext.py validate`` on a source tree or a built zip."""
    cli = find_blender_ext(blender_ext)
    if cli is None:
        raise BuildError("Blender's extension CLI (blender_ext.py) not found")
    cli_path, tags = cli
    cmd = [sys.executable, str(cli_path), "validate", "--valid-tags", str(tags) if tags else "", str(path)]
    return subprocess.run(cmd, timeout=300, capture_output=True, text=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--out", default=str(ROOT / "dist"), help="output folder (default: dist/)")
    add("--platforms", default=",".join(DEFAULT_PLATFORMS), help="comma-separated Blender platforms (default: all)")
    add("--blender-ranges", default=",".join(DEFAULT_RANGES), help="comma-separated Blender ranges (default: all)")
    add(
        "--split-platforms",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="one extension zip per platform (default); --no-split-platforms: one zip per range for all platforms",
    )
    add("--wheel-dir", default=str(ROOT / "wheels"), help="where wheels are downloaded and reused (default: wheels/)")
    add("--blender-ext", default=None, help="path to Blender's blender_ext.py (default: from the bpy module)")
    add("--require-extension", action="store_true", help="fail if the extension cannot be built (no bpy module)")
    add("--legacy-only", action="store_true", help="only build the legacy zip")
    add("--readme-table", action="store_true", help="print the table of OUT/zips.json as markdown; build nothing")
    add("--update-readme", metavar="README", help="write that table between the README's zip-table markers")
    return parser


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _build(args, platforms: list[str], ranges: list[str]) -> int:
    legacy = build_legacy_zip(args.out)
    write_records(args.out, [legacy_record(legacy)])
    if args.legacy_only:
        return 0
    if find_blender_ext(args.blender_ext) is None:
        log(
            "SKIPPED the Blender 4.2+ extension: Blender's extension CLI was not found (the bpy "
            f"module is not installed for {sys.executable}; python3 -m pip install -r "
            "requirements-dev.txt, or pass --blender-ext PATH/TO/blender_ext.py)"
        )
        return 1 if args.require_extension else 0
    build_extension_zip(
        args.out,
        platforms=platforms,
        ranges=ranges,
        split_platforms=args.split_platforms,
        wheel_dir=args.wheel_dir,
        blender_ext=args.blender_ext,
    )
    return 0


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        platforms, ranges = check_platforms(_split(args.platforms)), check_ranges(_split(args.blender_ranges))
    except BuildError as ex:
        parser.error(str(ex))
    try:
        if args.readme_table or args.update_readme:
            table = readme_table(read_records(args.out))
            if args.update_readme:
                update_readme(args.update_readme, table)
            else:
                sys.stdout.write(table)
            return 0
        return _build(args, platforms, ranges)
    except BuildError as ex:
        log(f"ERROR: {ex}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
