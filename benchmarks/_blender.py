"""Shared by the Blender benchmarks: run this repository's add-on inside Debian's Blender.

Outside Blender, :func:`relaunch` starts ``blender -b FILE --python SCRIPT -- ARGS`` and relays its
last JSON line; inside, :func:`load_addon` imports the add-on from the source tree (as package
``stiff_rods``) and registers it. With ``python=`` (an interpreter that has the ``bpy`` module, e.g.
``pip install bpy``) it starts ``PYTHON SCRIPT --bpy-module FILE -- ARGS`` instead, and
:func:`blender_args` opens FILE there with ``bpy.ops.wm.open_mainfile``.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def inside_blender() -> bool:
    try:
        import bpy  # noqa: F401

        return bool(getattr(bpy.app, "binary_path", "")) and "--" in sys.argv
    except ImportError:
        return False


BPY_MODULE = "--bpy-module"


def in_bpy_module() -> bool:
    """Started by :func:`relaunch` with ``python=``: ``SCRIPT --bpy-module FILE -- ARGS``."""
    return sys.argv[1:2] == [BPY_MODULE] and "--" in sys.argv


def blender_args() -> list | None:
    """The ARGS after ``--`` inside Blender or in a relaunched bpy module (whose blend file is opened
    first), None outside both."""
    if in_bpy_module():
        import bpy

        bpy.ops.wm.open_mainfile(filepath=sys.argv[2])
    elif not inside_blender():
        return None
    return sys.argv[sys.argv.index("--") + 1 :]


def blender_env() -> dict:
    """Environment for Debian's Blender, which finds its Python (with apt's numpy/scipy) through the
    first python3 on PATH: ours (pyenv, a venv) is left out and the system's comes first."""
    own_bin = os.path.realpath(os.path.dirname(sys.executable))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PATH"] = os.pathsep.join(
        ["/usr/bin", "/bin"]
        + [p for p in env.get("PATH", "").split(os.pathsep) if p and os.path.realpath(p) != own_bin]
    )
    return env


def relaunch(script: str, blend: str, args: list, python: str | None = None) -> dict:
    """Run ``script`` on ``blend`` in Debian's Blender, or with ``python`` in its bpy module; its last JSON line."""
    if python:
        cmd = [python, script, BPY_MODULE, blend, "--"] + args
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    else:
        cmd = ["blender", "-b", "--factory-startup", blend, "--python", script, "--"] + args
        env = blender_env()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode or not lines:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"blender failed (exit {proc.returncode})")
    return json.loads(lines[-1])


def load_addon():
    tmp = Path(tempfile.mkdtemp())
    (tmp / "stiff_rods").symlink_to(ROOT)
    sys.path.insert(0, str(tmp))
    import stiff_rods

    stiff_rods.register()
    return stiff_rods


def add_wind_field(speed_mps: float) -> None:
    """A Wind force field blowing along +X (its +Z axis turned there) at ``speed_mps`` [m/s] with the default
    Field Speed of 1 m/s per unit of strength; nothing for a speed ≤ 0."""
    import math

    import bpy

    if speed_mps > 0:
        bpy.ops.object.effector_add(type="WIND", location=(-8.0, 0.0, 4.0), rotation=(0.0, math.pi / 2, 0.0))
        bpy.context.object.field.strength = speed_mps
