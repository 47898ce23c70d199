"""A forest bake's cache folder (manifest and one BakeRecord file per tree) and the parent's writing.

* ``manifest.json``: ``{"format": "stiff_rods_forest", "version": 1, "blend": path, "frames": [start, end],
  "trees": [{"name", "kind", "file", "status" ("pending", "running", "done", "failed"), "error", "seconds",
  "segments", "worker"}]}``, written by the parent only;
* one ``tree_<k>.npz`` per tree: its :class:`BakeRecord` (addon/bake_record.py for the arrays).

:func:`write_forest` checks every tree's record against its objects first, then writes all keyframes and leaf
point caches in one pass with Bake's own writer (``bake.write_bake``), so a forest bake is what Bake gives each
tree: Free Bake frees it.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass

import bpy

from .bake import baked_action, write_bake
from .bake_record import FORMAT, VERSION, BakeRecord, save_bytes


# ------------------------------------------------------------------ records
def record_bytes(rec: BakeRecord) -> bytes:
    """The record as the bytes of an ``.npz`` file."""
    return rec.to_bytes()


def save_record(path: str, rec_or_bytes) -> None:
    """Write a record (or its :func:`record_bytes`) to ``path`` atomically: a reader never sees half a file."""
    save_bytes(path, rec_or_bytes if isinstance(rec_or_bytes, bytes) else rec_or_bytes.to_bytes())


def load_record(path: str) -> BakeRecord:
    """A record saved by :func:`save_record`; ValueError naming the file when it is not one."""
    return BakeRecord.load(path)


def _armature_changed(rec: BakeRecord, owner, objects) -> str | None:
    if owner.type != "ARMATURE":
        return f"'{owner.name}' is no longer an armature"
    missing = [b for b in rec.bone_names if b not in owner.data.bones]
    if missing:
        return f"'{owner.name}' has lost bone '{missing[0]}' since the bake started"
    if rec.leaf_frames is not None and objects.get(rec.leaves) is None:
        return f"The leaves '{rec.leaves}' of '{owner.name}' are no longer in the scene"
    return None


def _curve_changed(rec: BakeRecord, owner) -> str | None:
    if owner.type != "CURVE":
        return f"'{owner.name}' is no longer a curve"
    splines = owner.data.splines
    for spline, count in zip(rec.spline, rec.count, strict=True):
        sp = splines[int(spline)] if int(spline) < len(splines) else None
        pts = None if sp is None else (sp.bezier_points if sp.type == "BEZIER" else sp.points)
        if pts is None or len(pts) != int(count):
            return f"Curve '{owner.name}', spline {int(spline)} changed since the bake started"
    return None


def check_record(rec: BakeRecord, objects) -> str | None:
    """Why the record cannot be written into the open file (its objects changed or went away), or None."""
    owner = objects.get(rec.name)
    if owner is None:
        return f"'{rec.name}' is no longer in the scene"
    if rec.kind == "armature":
        reason, holder = _armature_changed(rec, owner, objects), owner
    else:
        reason, holder = _curve_changed(rec, owner), owner.data
    if reason is not None:
        return reason
    if baked_action(holder) is not None:
        return f"'{owner.name}' already has a Stiff Rods bake: Free Bake first"
    return None


def write_record(rec: BakeRecord, objects=None) -> int:
    """Key one tree from its record with Bake's writer; returns the F-curves written."""
    return write_bake(rec, bpy.data.objects if objects is None else objects)


@dataclass
class WriteReport:
    trees: list[str]
    fcurves: int
    keys: int
    seconds: float


def write_forest(folder: str, objects=None, skip_failed: bool = False) -> WriteReport:
    """Write every tree of the finished bake in ``folder`` into the open file, in one pass. All records are
    read and checked first: when one is missing or failed (unless ``skip_failed``: then only the baked
    trees are written) or no longer fits its objects, ValueError naming it, and nothing is written."""
    objects = bpy.data.objects if objects is None else objects
    t0 = time.perf_counter()
    manifest = read_manifest(folder)
    entries = manifest["trees"]
    undone = [t["name"] for t in entries if t["status"] != "done"]
    if undone and not skip_failed:
        raise ValueError(f"The forest bake is not complete: {', '.join(undone)} not baked")
    records = [load_record(os.path.join(folder, t["file"])) for t in entries if t["status"] == "done"]
    for rec in records:
        reason = check_record(rec, objects)
        if reason is not None:
            raise ValueError(reason)
    fcurves = write_records(records, objects)
    keys = sum(n * (r.end - r.start + 1) for n, r in zip(fcurves, records, strict=True))
    return WriteReport([r.name for r in records], sum(fcurves), keys, time.perf_counter() - t0)


def write_records(records, objects=None) -> list[int]:
    """Key every record (:func:`write_record`); the F-curves written per record."""
    return [write_record(rec, objects) for rec in records]


# ------------------------------------------------------------------ cache folder and manifest
def cache_folder(blend_path: str) -> str:
    """``<folder of the .blend>/<its name>_stiff_rods_forest``; for an unsaved file, a new temporary folder."""
    if not blend_path:
        return tempfile.mkdtemp(prefix="stiff_rods_forest_")
    stem = os.path.splitext(os.path.basename(blend_path))[0]
    return os.path.join(os.path.dirname(os.path.abspath(blend_path)), bpy.path.clean_name(stem) + "_stiff_rods_forest")


def new_manifest(blend: str, trees: list, start: int, end: int) -> dict:
    """A manifest of ``trees`` (addon/forest.py:Tree), every one pending."""
    return dict(
        format=FORMAT,
        version=VERSION,
        blend=blend,
        frames=[start, end],
        trees=[
            dict(name=t.name, kind=t.kind, file=f"tree_{k:05d}.npz", status="pending", error=None, seconds=None)
            | dict(segments=None, worker=None)
            for k, t in enumerate(trees)
        ],
    )


def write_manifest(folder: str, manifest: dict) -> None:
    tmp = os.path.join(folder, "manifest.json.part")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1)
    os.replace(tmp, os.path.join(folder, "manifest.json"))


def read_manifest(folder: str) -> dict:
    path = os.path.join(folder, "manifest.json")
    try:
        with open(path, encoding="utf-8") as fh:
            manifest = json.load(fh)
    except (OSError, ValueError) as exc:
        raise ValueError(f"No forest bake in '{folder}': {exc}") from None
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise ValueError(f"'{path}' is not a {FORMAT} version {VERSION} manifest")
    return manifest


def save_snapshot(folder: str) -> str:
    """The open file as it is now (unsaved changes included) copied to ``folder/scene.blend``, for the
    workers to open; the user's file and its path are left alone."""
    path = os.path.join(folder, "scene.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path, copy=True, compress=False)
    return path


def new_cache_folder(blend_path: str) -> str:
    """A new, empty :func:`cache_folder` (another name next to it when one is there already: a bake the
    command line kept, or another bake running)."""
    folder = cache_folder(blend_path)
    if not blend_path:
        return folder
    try:
        os.makedirs(folder)
    except FileExistsError:
        folder = tempfile.mkdtemp(prefix=os.path.basename(folder) + "_", dir=os.path.dirname(folder))
    return folder
