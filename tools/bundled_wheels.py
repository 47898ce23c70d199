# SPDX-License-Identifier: GPL-3.0-or-later
"""The Python wheels bundled into the Blender 4.2+ extension zips (tools/build_extension.py), per Blender range.

Blender 4.2-5.0 run Python 3.11 with numpy 1.26.x; Blender 5.1+ run Python 3.13 with numpy 2.x (5.2 and 5.3:
2.5.5). A wheel is compiled for one Python (cp311, cp313) and its METADATA names the numpy it takes, so each range
gets wheels of its own Python whose ``Requires-Dist: numpy`` admits that range's numpy:

  4.2-5.0 (cp311)  scipy 1.15.3 (numpy >=1.23.5,<2.5); windows-arm64: scipy 1.16.3 (numpy >=1.25.2,<2.6)
                   numba 0.61.2 + llvmlite 0.44.0 (numpy >=1.24,<2.3); none on windows-arm64 (no cp311 wheel)
  5.1+    (cp313)  scipy 1.18.1 (numpy >=2.0.0,<2.8), every platform
                   numba 0.68.1 + llvmlite 0.50.0 (numpy >=1.22,<2.6); none on macos-x64 (no cp313 wheel)

scipy 1.15.3 is the newest release whose cp311 wheels accept numpy 1.26.0 (1.16 needs >=1.25.2, 1.17 >=1.26.4);
it has no win_arm64 wheel (the first cp311 ones are 1.16.2) and 1.16.3 is the newest there that accepts every
numpy 1.26.x. For cp313, scipy 1.18.1 admits the widest numpy 2.x range (1.16.3: <2.6, 1.17.1: <2.7), and numba
0.68 is the first release admitting numpy 2.5 (0.66: <2.5; 0.67.0 and 0.68.x: <2.6, 0.68.1 the newest, with
its llvmlite 0.50). A platform without numba runs the numpy solver.
"""

from __future__ import annotations

import glob
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

# Blender platform -> (pip --platform tags in order of preference, glob of the wheel file's platform tag). pip
# expands a macOS tag to the older macOS versions of its architecture, not a manylinux_2_28 tag to older glibc:
# both manylinux spellings are given. The oldest macOS tag is preferred (Blender runs on macOS 11.2+).
PLATFORM_TAGS = {
    "linux-x64": (("manylinux2014_x86_64", "manylinux_2_28_x86_64"), "manylinux*x86_64"),
    "linux-arm64": (("manylinux2014_aarch64", "manylinux_2_28_aarch64"), "manylinux*aarch64"),
    "macos-x64": (("macosx_10_13_x86_64", "macosx_11_0_x86_64"), "macosx_*_x86_64"),
    "macos-arm64": (("macosx_11_0_arm64", "macosx_12_0_arm64"), "macosx_*_arm64"),
    "windows-x64": (("win_amd64",), "win_amd64"),
    "windows-arm64": (("win_arm64",), "win_arm64"),
}
PLATFORMS = tuple(PLATFORM_TAGS)


@dataclass(frozen=True)
class BlenderRange:
    """The Blenders one extension zip is built for, the Python they run and the wheels bundled for them."""

    name: str  # "4.2-5.0", as in the zip's name stiff_rods-<version>-blender<name>-<platform>.zip
    python: str  # the Python of these Blenders, "3.11"
    blender_min: str  # the manifest's blender_version_min
    blender_max: str | None  # the manifest's blender_version_max (exclusive), None: no upper bound
    scipy: dict[str, str]  # Blender platform -> scipy version
    numba: dict[str, str]  # {"numba": version, "llvmlite": version}
    numba_platforms: tuple[str, ...] = field(default=())  # the platforms with numba/llvmlite wheels

    @property
    def python_tag(self) -> str:
        return "cp" + self.python.replace(".", "")

    def packages(self, platform: str) -> list[tuple[str, str]]:
        """(package, version) of the wheels of ``platform``'s zip: scipy, then numba and llvmlite where they exist."""
        out = [("scipy", self.scipy[platform])]
        if platform in self.numba_platforms:
            out += list(self.numba.items())
        return out


RANGES = {
    r.name: r
    for r in (
        BlenderRange(
            "4.2-5.0",
            "3.11",
            "4.2.0",
            "5.1.0",
            scipy={p: "1.16.3" if p == "windows-arm64" else "1.15.3" for p in PLATFORMS},
            numba={"numba": "0.61.2", "llvmlite": "0.44.0"},
            numba_platforms=tuple(p for p in PLATFORMS if p != "windows-arm64"),
        ),
        BlenderRange(
            "5.1+",
            "3.13",
            "5.1.0",
            None,
            scipy=dict.fromkeys(PLATFORMS, "1.18.1"),
            numba={"numba": "0.68.1", "llvmlite": "0.50.0"},
            numba_platforms=tuple(p for p in PLATFORMS if p != "macos-x64"),
        ),
    )
}


class WheelError(RuntimeError):
    pass


def _pip_download(package: str, version: str, python: str, pip_platforms, wheel_dir: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "download", f"{package}=={version}", "--only-binary=:all:", "--no-deps"]
    cmd += ["--python-version", python, "-d", str(wheel_dir), "--disable-pip-version-check", "-q"]
    for tag in pip_platforms:
        cmd += ["--platform", tag]
    print("wheels: $ " + " ".join(cmd), flush=True)
    if subprocess.run(cmd, timeout=600).returncode != 0:
        raise WheelError(f"pip download of {package} {version} (Python {python}, {', '.join(pip_platforms)}) failed")


def fetch(package: str, version: str, blender_range: BlenderRange, platform: str, wheel_dir: Path) -> Path:
    """The wheel of ``package``==``version`` for ``blender_range``'s Python and ``platform``, from ``wheel_dir``
    or, when not there yet, downloaded into it from PyPI."""
    pip_platforms, platform_glob = PLATFORM_TAGS[platform]
    py = blender_range.python_tag
    pattern = str(wheel_dir / f"{package}-{version}-{py}-{py}-{platform_glob}.whl")
    if not glob.glob(pattern):
        _pip_download(package, version, blender_range.python, pip_platforms, wheel_dir)
    found = sorted(glob.glob(pattern))
    if not found:
        raise WheelError(f"no {package} {version} {py} wheel for {platform} in {wheel_dir}")
    return Path(found[0])


def fetch_wheels(blender_range: BlenderRange, platform: str, wheel_dir: Path | str) -> list[Path]:
    """The wheels of ``platform``'s zip for ``blender_range`` (scipy, numba, llvmlite), fetched into ``wheel_dir``."""
    wheel_dir = Path(wheel_dir)
    wheel_dir.mkdir(parents=True, exist_ok=True)
    return [
        fetch(name, version, blender_range, platform, wheel_dir) for name, version in blender_range.packages(platform)
    ]
