"""A forest: many trees and curves of one scene baked together, in parallel worker processes.

* **Which objects** (:func:`resolve`): the selected objects, or every object of a collection
  (:func:`collection_objects`). Each Sapling tree or curve is found through its parts
  (``reader.find_parts``: armature, curve or leaves selected all count as the tree) and baked once; every
  object that is refused gets its reason (the same messages as the serial Bake), every object that is no
  tree or curve at all is listed as ignored.
* **One tree in a worker** and **the process pool**: addon/forest_pool.py (``bake_tree``: Bake's
  ``bake.run_bake`` on the tree, its BakeRecord; ``ForestPool``).
* **The cache and the parent's writing**: addon/forest_records.py (``write_forest`` checks every tree's record
  against its objects, then writes them all in one pass with Bake's ``bake.write_bake``).
* **From the N-panel** (:class:`Background`): a snapshot of the open file baked by a pool, polled by the Bake
  operator's timer.

Every tree of one bake shares the frame range, so all of them see the scene's wind at the same times:
the wind is a deterministic function of (world position, time since the start frame), drawn from its
seeds (solver/air/wind.py), the same in every process. The record's arrays: addon/bake_record.py.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field

import bpy

from . import bones, reader
from .checks import check_bake
from .forest_pool import (  # noqa: F401  (the forest's API in one place: tools/bake_forest.py, tests, benchmarks)
    ADDON_ROOT,
    MARKER,
    ForestPool,
    Progress,
    WorkerOptions,
    bake_one,
    bake_tree,
    open_blend,
    worker_command,
    worker_main,
)
from .forest_records import (  # noqa: F401
    WriteReport,
    cache_folder,
    check_record,
    load_record,
    new_cache_folder,
    new_manifest,
    read_manifest,
    record_bytes,
    save_record,
    save_snapshot,
    write_forest,
    write_manifest,
    write_record,
    write_records,
)


# ------------------------------------------------------------------ which objects
@dataclass
class Tree:
    """One object to bake: ``name`` of its owner (the Sapling armature, or the curve), ``kind``
    ("armature" or "curve"), its ``parts`` (object names) and ``weight``, its expected cost (segments and
    leaves, or control points): the pool hands out the heaviest first."""

    name: str
    kind: str
    parts: list[str]
    weight: int = 0


@dataclass
class Refusal:
    name: str
    reason: str


@dataclass
class Forest:
    trees: list[Tree] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)  # trees and curves that cannot be baked, and why
    ignored: list[Refusal] = field(default_factory=list)  # objects that are no tree or curve


def collection_objects(collection) -> list:
    """Every object of ``collection`` and of its child collections."""
    return list(collection.all_objects)


def _tree_of_leaves(obj):
    """The Sapling armature whose leaves mesh ``obj`` is, or None."""
    curve = obj.parent if obj.type == "MESH" else None
    if curve is not None and curve.type == "CURVE" and reader.is_sapling_armature(curve.parent):
        return curve.parent
    return None


def _check(owner, curve, armature, leaves) -> tuple[str | None, int]:
    """(why ``owner`` cannot be baked or None, its weight). Bake's own checks (checks.check_bake), then the
    tree read as the solver will (transforms, bones against the curve, zero-length spans) without building
    the model."""
    settings = owner.stiff_rods  # registered by addon.properties
    try:
        check_bake(owner)
        src = reader.read_tree(owner, default_radius=settings.default_radius, segment_length=settings.segment_length)
    except reader.ReadError as exc:
        return str(exc), 0
    if armature is not None and settings.add_bones and len(set(src.bone_span[:, 0].tolist())) < len(src.branches):
        try:
            bones.check_editable(armature)
        except ValueError as exc:
            return str(exc), 0
    weight = sum(len(p) for p, _ in src.branches)
    if leaves is not None and settings.use_leaves and armature is not None:
        weight += len(leaves.data.polygons)
    return None, weight


def resolve(objects, check: bool = True) -> Forest:
    """The trees and curves among ``objects`` (the selection, or :func:`collection_objects`), each once,
    in the order first met; ``check``: also read each one (:func:`_check`) and refuse the ones the bake
    would refuse."""
    out = Forest()
    seen: set[str] = set()
    for obj in objects:
        target = obj
        if obj.type not in {"ARMATURE", "CURVE"}:
            target = _tree_of_leaves(obj)
            if target is None:
                out.ignored.append(Refusal(obj.name, f"'{obj.name}' ({obj.type.lower()}) is not a tree or curve"))
                continue
        try:
            curve, armature, leaves = reader.find_parts(target)
        except reader.ReadError as exc:
            if obj.name not in seen:
                seen.add(obj.name)
                out.refused.append(Refusal(obj.name, str(exc)))
            continue
        owner = armature or curve
        if owner.name in seen:
            continue
        seen.add(owner.name)
        reason, weight = _check(owner, curve, armature, leaves) if check else (None, 0)
        if reason is not None:
            out.refused.append(Refusal(owner.name, reason))
            continue
        parts = [p.name for p in (armature, curve, leaves) if p is not None]
        out.trees.append(Tree(owner.name, "armature" if armature is not None else "curve", parts, weight))
    return out


# ------------------------------------------------------------------ from the N-panel's operators
def chosen_objects(context) -> list | None:
    """The objects Convert, Simulate, Bake and Free Bake act on: every object of the scene's Forest Collection
    when one is set; else the selected objects when the active object is one of them (or none is active).
    None when the active object is not selected or nothing is: the operators act on the active object."""
    coll = context.scene.stiff_rods.forest_collection
    if coll is not None:
        return collection_objects(coll)
    selected = list(getattr(context, "selected_objects", None) or ())
    active = context.active_object
    if not selected or (active is not None and active not in selected):
        return None
    return selected


def chosen(context, check: bool) -> Forest | None:
    """The trees and curves the operators act on (:func:`chosen_objects`, :func:`resolve`); None for the one
    tree of the active object (no Forest Collection, and at most one tree or curve among the selection with
    the active object in it): exactly what the operators did before there were forests."""
    objects = chosen_objects(context)
    if objects is None:
        return None
    found = resolve(objects, check)
    one = len(found.trees) + len(found.refused) <= 1
    if one and context.scene.stiff_rods.forest_collection is None and context.active_object is not None:
        return None
    return found


def names_line(names: list[str], limit: int = 3) -> str:
    """``'a, b, c +2 more'``: the first ``limit`` names and how many more."""
    more = f" +{len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


STATUS: dict[str, str] = {}  # the panel's status line per scene while a forest bake runs in the background


class Background:
    """A forest bake of the open file in worker processes, polled by the Bake operator's timer: a snapshot of
    the file (unsaved changes included, :func:`save_snapshot`) in a new cache folder, a :class:`ForestPool`
    over it (headless copies of this Blender; where Blender is the ``bpy`` module, Pythons with it), then
    every tree's keys written in one pass (:meth:`finish`). A failed tree stops the bake; :meth:`cancel`
    and a failure leave nothing behind: the scene as it was, the cache folder removed."""

    def __init__(self, trees: list[Tree], start: int, end: int, workers: int, scene_name: str):
        self.folder = new_cache_folder(bpy.data.filepath)
        self.scene_name = scene_name
        self.t0 = time.perf_counter()
        try:
            blend = save_snapshot(self.folder)
            kind = "blender" if bpy.app.binary_path else "python"
            self.pool = ForestPool(blend, trees, start, end, self.folder, min(int(workers), len(trees)), kind)
            self.pool.start()
        except BaseException:
            if getattr(self, "pool", None) is not None:
                self.pool.cancel()
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        self.last: Progress = self.pool.progress()
        STATUS[self.scene_name] = f"Forest bake: starting {self.pool.n_workers} worker processes"

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.t0

    def poll(self) -> Progress:
        """The pool's progress; ``finished`` also as soon as one tree has failed (the others are stopped)."""
        p = self.pool.poll()
        if p.failures and not p.finished:
            self.pool.cancelled = True  # no more trees handed out; finish() stops the rest
            p.finished = True
        eta = "" if p.eta_s is None else f", ETA {p.eta_s:.0f} s"
        STATUS[self.scene_name] = (
            f"Forest bake: {p.trees_done}/{p.trees_total} trees, {p.fps:.1f} frames/s{eta} (Esc cancels)"
        )
        self.last = p
        return p

    def cancel(self) -> None:
        STATUS.pop(self.scene_name, None)
        self.pool.cancel()

    def finish(self) -> int:
        """After :meth:`poll` says finished: write every tree (the F-curves written), or ValueError naming the
        failed trees (or one that no longer fits its objects) with nothing written. The folder is removed."""
        STATUS.pop(self.scene_name, None)
        try:
            p = self.pool.poll()
            if p.failures:
                self.pool.cancel()
                raise ValueError(
                    "Bake failed: " + "; ".join(f"'{name}': {why}" for name, why in sorted(p.failures.items()))
                )
            self.pool.close()
            return write_forest(self.folder).fcurves
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
