"""The parent's side of a forest baked into per-tree caches (addon/forest_cache.py): names, the root USD layer,
the Alembic index. No bpy: tools/bake_forest.py loads this file alone, so the parent of a ``--usd``/``--abc``
bake neither imports Blender nor opens the scene.

* USD: a root layer in plain text (``.usda``) with one Xform per tree under ``/Forest`` that references the
  tree's file (its ``/root`` prim, where Blender's USD exporter writes everything), so prims of different trees
  never collide whatever the objects are called; the stage's frame range, ``timeCodesPerSecond``,
  ``metersPerUnit`` 1 and ``upAxis`` Z are those of the per-tree files (Blender's USD export in metres, Z up).
* Alembic: the folder of per-tree ``.abc`` files and its ``index.json``.
"""

from __future__ import annotations

import json
import os
import re
import time

EXTENSIONS = {"usd": ".usdc", "abc": ".abc"}  # --usd / --abc: the per-tree file's extension
INDEX_FORMAT, INDEX_VERSION = "stiff_rods_forest_alembic", 1
ROOT_PRIM = "Forest"
TREE_ROOT = "/root"  # the prim Blender's USD exporter writes everything under (its root_prim_path)


def prim_name(name: str) -> str:
    """``name`` as a USD prim name and a file stem: letters, digits and ``_``, never starting with a digit."""
    clean = re.sub(r"[^A-Za-z0-9_]", "_", name) or "_"
    return "_" + clean if clean[0].isdigit() else clean


def tree_files(names: list[str], ext: str) -> dict[str, str]:
    """tree name → its cache file's name (``<prim name><ext>``), unique: ``tree.001`` and ``tree_001`` differ
    by a suffix ``_2``."""
    files, used = {}, set()
    for name in names:
        stem, k = prim_name(name), 1
        while (stem if k == 1 else f"{stem}_{k}").lower() in used:
            k += 1
        stem = stem if k == 1 else f"{stem}_{k}"
        used.add(stem.lower())
        files[name] = stem + ext
    return files


def trees_folder(root_layer: str) -> str:
    """The folder of the per-tree USD files of ``root_layer``: ``<FOREST>_trees`` beside it."""
    return os.path.splitext(os.path.abspath(root_layer))[0] + "_trees"


# ------------------------------------------------------------------ the parent's side
def _atomic_text(path: str, text: str) -> None:
    tmp = f"{path}.{os.getpid()}.part"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def root_layer_text(trees: list[tuple[str, str]], frames: tuple[int, int], fps: float, rel_folder: str) -> str:
    """The root layer (usda) composing ``trees`` ((tree name, file name) pairs, files in ``rel_folder`` relative
    to the layer): one Xform per tree under ``/Forest`` referencing the file's ``/root``."""
    head = (
        "#usda 1.0\n(\n"
        f'    defaultPrim = "{ROOT_PRIM}"\n'
        f'    doc = "Stiff Rods forest: {len(trees)} trees, frames {frames[0]}-{frames[1]}"\n'
        f"    endTimeCode = {int(frames[1])}\n    framesPerSecond = {fps:g}\n    metersPerUnit = 1\n"
        f"    startTimeCode = {int(frames[0])}\n    timeCodesPerSecond = {fps:g}\n"
        '    upAxis = "Z"\n)\n\n'
        f'def Xform "{ROOT_PRIM}"\n{{\n'
    )
    body = "".join(
        f'    def Xform "{os.path.splitext(file)[0]}" (\n'
        f'        customData = {{string stiffRodsTree = "{name.replace(chr(34), "")}"}}\n'
        f"        prepend references = @./{rel_folder}/{file}@<{TREE_ROOT}>\n"
        "    )\n    {\n    }\n"
        for name, file in trees
    )
    return head + body + "}\n"


def write_root_layer(path: str, trees: list[tuple[str, str]], frames: tuple[int, int], fps: float) -> float:
    """Write :func:`root_layer_text` to ``path`` (temp + rename) for trees in :func:`trees_folder`; seconds taken."""
    t0 = time.perf_counter()
    folder = os.path.basename(trees_folder(path))
    _atomic_text(path, root_layer_text(trees, frames, fps, folder))
    return time.perf_counter() - t0


def write_alembic_index(folder: str, blend: str, entries: list[dict], frames: tuple[int, int], fps: float) -> float:
    """``folder/index.json``: ``{"format", "version", "blend", "frames", "fps", "trees": [{"name", "file", "status",
    "error", "seconds", "bake_s", "export_s", "segments", "bytes"}]}``; seconds taken."""
    t0 = time.perf_counter()
    index = dict(format=INDEX_FORMAT, version=INDEX_VERSION, blend=blend, frames=list(frames), fps=fps, trees=entries)
    _atomic_text(os.path.join(folder, "index.json"), json.dumps(index, indent=1))
    return time.perf_counter() - t0
