"""A forest baked into caches that scale, the worker's side: every worker bakes its tree and writes its cache.

:func:`bake_export` bakes the tree as Bake bakes it (forest_pool.bake_guarded), keys it into the worker's own open
copy of the scene (``bake.write_bake``; the leaves' PC2 point cache in a temporary folder, never next to the scene)
and exports it with Export Cache (addon/cache_export.py: Blender's USD or Alembic exporter, the branches through a
PC2 stand-in mesh) into one file per tree, written under a temporary name and renamed when complete. What comes
back is small: the status, the bake's and the export's seconds, the file's name (and the record's bytes only when
a keyed .blend is wanted too). The parent writes no keyframes, only the root layer or index (addon/forest_layers.py).

The worker keeps its copy of the scene open from tree to tree (opening a 120-tree forest takes 9-10 s), with every
tree but the one it bakes disabled in viewports (:func:`isolate`), so Blender evaluates one tree at each frame the
bake and the export step to, whatever the forest's size; a keyed tree is disabled again after its export. The
bake's arrays are those of a bake in the untouched scene (difference 0, three Sapling trees).
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import replace

import bpy

from . import cache_export, point_cache
from .bake import write_bake
from .forest import resolve
from .forest_pool import bake_guarded, open_blend, reopen_blend
from .settings import pin_settings

FORMATS = {"usd": "USD", "abc": "ALEMBIC"}  # --usd / --abc: cache_export's format


# ------------------------------------------------------------------ the worker's side
def key_tree(record, objects, folder: str) -> None:
    """Key ``record``'s tree into the open scene with Bake's writer; the leaves' point cache goes into ``folder``
    (the scene's own folder is not written: it is the user's input)."""
    write_bake(replace(record, leaf_frames=None), objects)
    if record.leaf_frames is not None:
        leaves = objects.get(record.leaves)
        path = os.path.join(folder, bpy.path.clean_name(f"{leaves.name}_stiff_rods") + ".pc2")
        point_cache.write_pc2(path, record.leaf_frames, record.start)
        point_cache.add_mesh_cache(leaves, path, record.start)


def _tree_objects(owner) -> set:
    """``owner`` (armature or curve) and every object below it: the tree's parts."""
    parts, stack = set(), [owner]
    while stack:
        obj = stack.pop()
        parts.add(obj.name)
        stack.extend(obj.children)
    return parts


def _other_trees(scene) -> set:
    """The parts of every tree of ``scene`` (forest.resolve, unchecked), less colliders and Pin To targets: the
    objects a bake of another tree does not read."""
    parts = {p for t in resolve(scene.objects, check=False).trees for p in t.parts}
    pins = {pin.name for o in scene.objects if (pin := pin_settings(o)[0]) is not None}
    colliders = {o.name for o in scene.objects if any(m.type == "COLLISION" for m in o.modifiers)}
    return parts - pins - colliders


def isolate(scene, name: str) -> None:
    """Disable in viewports every other tree of the worker's copy of the scene, enable tree ``name``: Blender
    then evaluates this tree only at every frame the bake and the export step to. Measured in a 120-tree forest:
    0.30 s instead of 0.76 s per frame of the export, and no re-evaluation of the whole forest (8.8 s) as
    enabling them all again would cost. Other objects (force fields, colliders, Pin To targets, the ground) stay
    as they are."""
    keep = _tree_objects(bpy.data.objects[name])
    for part in _other_trees(scene) - keep:
        bpy.data.objects[part].hide_viewport = True
    for part in keep:
        bpy.data.objects[part].hide_viewport = False


# the worker's copy of the scene: the key of the open file when it was isolated, the trees keyed in it since
_keyed: dict = {"file": None, "names": set()}


def prepare(blend: str, name: str) -> None:
    """The worker's copy of ``blend`` open with tree ``name`` not keyed in it (else the file is opened again: a
    task Dask runs a second time) and the only tree enabled in viewports (:func:`isolate` once per opening, then
    the tree's own parts)."""
    open_blend(blend)
    if name in _keyed["names"]:
        reopen_blend(blend)
    if bpy.data.objects.get(name) is None:
        return  # the bake says so, naming it
    if _keyed["file"] != open_blend.key:  # type: ignore[attr-defined]
        isolate(bpy.context.scene, name)
        _keyed.update(file=open_blend.key, names=set())  # type: ignore[attr-defined]
        return
    for part in _tree_objects(bpy.data.objects[name]):
        bpy.data.objects[part].hide_viewport = False


def export_tree(rec, paths: dict) -> dict:
    """Key ``rec``'s tree in the open scene and write it to ``paths`` (``"usd"``/``"abc"`` → file): key → bytes.
    The tree is disabled in viewports afterwards, so its keys cost nothing at the next tree's frames."""
    written = {}
    owner = bpy.data.objects[rec.name]
    _keyed["names"].add(rec.name)
    try:
        with tempfile.TemporaryDirectory(prefix="stiff_rods_tree_") as tmp:
            key_tree(rec, bpy.data.objects, tmp)
            for key, path in paths.items():
                written[key] = cache_export.export_cache(bpy.context, owner, path, FORMATS[key])["bytes"]
    finally:
        for part in _tree_objects(owner):
            bpy.data.objects[part].hide_viewport = True
    return written


def bake_export(blend: str, name: str, start: int, end: int, paths: dict, settings=None, record=False) -> dict:
    """Bake tree ``name`` of ``blend`` and export it to ``paths`` (``"usd"``/``"abc"`` → file). ``{"tree", "error"
    (a message naming the tree's problem) or None, "seconds" (bake + export), "bake_s", "export_s" (keying and
    exporting), "segments", "files" (key → file name), "bytes", "record" (its bytes when ``record``, else None),
    "pid"}``. A failed export leaves no file (cache_export's temp + rename)."""
    prepare(blend, name)
    rec, out = bake_guarded(blend, name, start, end, settings=settings)
    out.update(bake_s=out["seconds"], export_s=None, files={}, bytes=0)
    if rec is None:
        return out
    t0 = time.perf_counter()
    try:
        out["bytes"] = sum(export_tree(rec, paths).values())
        out["files"] = {key: os.path.basename(path) for key, path in paths.items()}
    except (cache_export.CacheExportError, ValueError) as exc:
        out["error"] = f"export: {exc}"
    except (OSError, RuntimeError) as exc:  # a full disk, an exporter that raised
        out["error"] = f"export: {type(exc).__name__}: {exc}"
    out["export_s"] = time.perf_counter() - t0
    out["seconds"] = out["bake_s"] + out["export_s"]
    if record and out["error"] is None:
        out["record"] = rec.to_bytes()
    return out
