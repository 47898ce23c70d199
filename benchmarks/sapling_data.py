"""Real Sapling Tree Gen trees as plain numpy arrays, for benchmarks that run outside Blender.

    from sapling_data import load
    tree = load("white_birch")      # dict of arrays, cached in ~/.cache/stiff-rods/sapling/

The first call per preset runs Debian's Blender (3.4 ships Sapling): it generates the tree from
the preset with an armature and leaves (tools/make_sapling_tree.py) and reads it with the
add-on's own reader (world space, radius = point radius × bevel depth × scale, parents from the bone
hierarchy). Keys of the returned dict:

* ``branches``: list of ``(points (K, 3) [m], radii (K,) [m])``, one per spline (Sapling: one
  segment per bone span), ready for :func:`solver.build.tree_builder.tree_from_branches`;
* ``parents``: list of ``(parent branch, parent span)`` or ``None`` per branch (``None``: let
  :func:`find_parent_spans` decide, as the add-on does for branches without bones);
* leaves, one row per leaf (a connected piece of Sapling's ``leaves`` mesh): ``leaf_center`` (L, 3) [m],
  ``leaf_normal`` (L, 3) unit, ``leaf_axis`` (L, 3) unit (stem → tip, in the leaf plane),
  ``leaf_length`` (L,) and ``leaf_width`` (L,) [m] (extents along the axis and across it),
  ``leaf_area`` (L,) [m²] (sum of its polygons), ``leaf_parent`` (L, 2) int (branch, span) of the branch
  span nearest to the leaf's stem point, and ``leaf_stem`` (L, 3) [m] that stem point.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from itertools import pairwise
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
import _blender  # noqa: E402

from solver.build.leaves import leaf_frames  # noqa: E402

CACHE = Path(os.environ.get("STIFF_RODS_CACHE", Path.home() / ".cache" / "stiff-rods")) / "sapling"
PRESETS = ("quaking_aspen", "small_pine", "white_birch", "weeping_willow")

_INSIDE = r"""
import sys, numpy as np, bpy
sys.path[:0] = [{bench!r}, {tools!r}]
import _blender, make_sapling_tree
make_sapling_tree.make_tree({preset!r})
_blender.load_addon()
from stiff_rods.addon import reader
arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
src = reader.read_tree(arm)
pts = [b[0] for b in src.branches]; rad = [b[1] for b in src.branches]
offsets = np.cumsum([0] + [len(p) for p in pts])
parents = np.array([p if p is not None else (-1, -1) for p in src.parents], dtype=np.int64)
out = dict(points=np.concatenate(pts), radii=np.concatenate(rad), offsets=offsets, parents=parents)
lm = reader.read_leaf_mesh(src.leaves, src.bone_names) if src.leaves is not None else None
if lm is not None:
    out.update(leaf_co=lm.co, leaf_loop_start=lm.loop_start, leaf_loop_total=lm.loop_total, leaf_vertex=lm.loop_vertex)
np.savez_compressed({out!r}, **out)
print("SAPLING_DATA_OK")
"""


def _export(preset: str, raw: Path) -> None:
    raw.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "export_sapling.py"
        script.write_text(
            _INSIDE.format(bench=str(ROOT / "benchmarks"), tools=str(ROOT / "tools"), preset=preset, out=str(raw))
        )
        proc = subprocess.run(
            ["blender", "-b", "--factory-startup", "--python", str(script)],
            capture_output=True,
            text=True,
            env=_blender.blender_env(),
            cwd=tmp,
            timeout=900,
        )
        if "SAPLING_DATA_OK" not in proc.stdout:
            raise RuntimeError(
                f"Blender failed to export Sapling preset {preset!r} (exit {proc.returncode}):\n"
                f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
            )


def load(preset: str = "white_birch") -> dict:
    """The Sapling tree of ``preset`` as arrays (see the module docstring); exported once, then cached."""
    raw_path = CACHE / f"{preset}.npz"
    if not raw_path.exists():
        _export(preset, raw_path)
    raw = np.load(raw_path)
    off = raw["offsets"]
    branches = [(raw["points"][a:b], raw["radii"][a:b]) for a, b in pairwise(off)]
    parents = [None if p[0] < 0 else (int(p[0]), int(p[1])) for p in raw["parents"]]
    out = dict(branches=branches, parents=parents)
    if "leaf_co" in raw:
        out.update(
            leaf_frames(raw["leaf_co"], raw["leaf_loop_start"], raw["leaf_loop_total"], raw["leaf_vertex"], branches)
        )
    return out


if __name__ == "__main__":
    for name in sys.argv[1:] or PRESETS:
        t = load(name)
        n_spans = sum(len(p) - 1 for p, _ in t["branches"])
        print(
            name,
            "branches",
            len(t["branches"]),
            "spans",
            n_spans,
            "leaves",
            len(t.get("leaf_area", [])),
            "median leaf length/width [m]",
            np.median(t.get("leaf_length", [np.nan])),
            np.median(t.get("leaf_width", [np.nan])),
        )
