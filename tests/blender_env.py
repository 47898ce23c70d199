"""Running Blender from the tests: the add-on's zips built by tools/build_extension.py, Debian's Blender
with an isolated user profile, and the JSON result line that a script in tests/blender_scripts/ prints."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_module(path, name):
    """The module of the file ``path`` (a tool, not a package), imported as ``name``."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _bundled_wheels():
    """tools/bundled_wheels.py: the Blender ranges of the extension zips and the Python each runs."""
    return load_module(ROOT / "tools" / "bundled_wheels.py", "stiff_rods_bundled_wheels")


def extension_zip(zips, python_version=None):
    """The extension zip among ``zips`` (paths) that a Blender running Python ``python_version`` ("3.11"; default:
    this interpreter's) takes: ``...-blender4.2-5.0-<platform>.zip`` for 3.11, ``...-blender5.1+-<platform>.zip``
    for 3.13. None when ``zips`` has none (the extension was not built); an error when it has several."""
    python_version = python_version or "{}.{}".format(*sys.version_info[:2])
    ranges = [r.name for r in _bundled_wheels().RANGES.values() if r.python == python_version]
    assert ranges, f"no extension zip is built for Python {python_version}"
    found = [z for z in zips if any(f"-blender{r}-" in Path(z).name for r in ranges)]
    assert len(found) <= 1, f"several extension zips for Python {python_version}: {found}"
    return found[0] if found else None


def build_zips(out, *options, timeout=300):
    """Run ``tools/build_extension.py --out OUT OPTIONS...`` (a failed build fails the test); the zips in ``out``."""
    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "build_extension.py"), "--out", str(out), *options],
        check=True,
        cwd=ROOT,
        timeout=timeout,
    )
    return sorted(Path(out).glob("*.zip"))


def build_legacy_zip(out):
    """Build the legacy add-on zip (Blender 3.4) into ``out``; its path."""
    legacy = [z for z in build_zips(out, "--legacy-only") if z.name.endswith("-legacy.zip")]
    assert legacy, "the build produced no legacy zip"
    return str(legacy[0])


def blender_env(profile):
    """Environment for Debian's Blender with an isolated user profile in ``profile``.

    Debian's Blender finds its Python home through the ``python3`` on PATH; when pytest runs from
    another interpreter (pyenv, a venv), that one's bin folder comes first and Blender would lose the
    system site-packages (numpy, scipy from apt). So that folder is left out of PATH."""
    own_bin = os.path.dirname(sys.executable)
    path = os.pathsep.join(
        p
        for p in os.environ.get("PATH", "").split(os.pathsep)
        if p and os.path.realpath(p) != os.path.realpath(own_bin)
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(
        PATH=path,
        BLENDER_USER_SCRIPTS=str(profile / "scripts"),
        BLENDER_USER_CONFIG=str(profile / "config"),
        BLENDER_USER_RESOURCES=str(profile / "resources"),
    )
    return env


def result_line(proc, marker):
    """The JSON object after ``marker`` on the last stdout line of ``proc`` that starts with it."""
    lines = [line for line in proc.stdout.splitlines() if line.startswith(marker + " ")]
    assert lines, f"no result (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return json.loads(lines[-1][len(marker) + 1 :])


def run_blender(args, profile, marker, timeout, exit_zero=False):
    """Run the command ``args`` (it starts Blender) with :func:`blender_env` of ``profile``; the JSON result
    its script printed after ``marker``. With ``exit_zero`` the process must also have exited with 0."""
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=blender_env(profile))
    result = result_line(proc, marker)
    assert not exit_zero or proc.returncode == 0, proc.stderr[-3000:]
    return result
