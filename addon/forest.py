"""A forest: many trees and curves of one scene baked together, in parallel worker processes.

* **Which objects** (:func:`resolve`): the selected objects, or every object of a collection
  (:func:`collection_objects`). Each Sapling tree or curve is found through its parts
  (``reader.find_parts``: armature, curve or leaves selected all count as the tree) and baked once; every
  object that is refused gets its reason (the same messages as the serial Bake), every object that is no
  tree or curve at all is listed as ignored.
* **One tree in a worker** (:func:`bake_tree`): the serial Bake's simulation (``Session`` and ``BakeRun``
  of addon/operators.py) over the frame range, kept as a *record* of arrays, saved as one ``.npz``.
* **The parent** (:func:`write_forest`) checks every tree's objects first, then writes all keyframes and
  leaf point caches in one pass with the serial Bake's own writers (``STIFF_RODS_OT_bake._write_bones``,
  ``_write_leaves``, ``_write_curve``), so a forest bake is what Bake gives each tree: Free Bake frees it.
* **The process pool** (:class:`ForestPool`): N worker processes, each a headless Blender (``blender -b
  FILE --python-expr ...``) or a Python with the ``bpy`` module, opening the saved .blend read-only and
  baking one tree after the other, biggest first, as the parent hands them out; ``poll()`` (trees done /
  total, frames per second, ETA) and ``cancel()`` for a modal operator. The scene is not touched until every
  tree is done; a cancelled or failed bake removes its cache folder.

Every tree of one bake shares the frame range, so all of them see the scene's wind at the same times:
the wind is a deterministic function of (world position, time since the start frame), drawn from its
seeds (solver/air/wind.py), the same in every process.

Cache format (a folder next to the .blend, :func:`cache_folder`):

* ``manifest.json``: ``{"format": "stiff_rods_forest", "version": 1, "blend": path, "frames": [start,
  end], "trees": [{"name", "kind", "file", "status" ("pending", "running", "done", "failed"), "error",
  "seconds", "segments", "worker"}]}``, written by the parent only.
* one ``tree_<k>.npz`` per tree (``numpy.savez``, no pickled objects), keys: ``format``, ``version``,
  ``name``, ``kind`` ("armature" or "curve"), ``start``, ``end``, ``segments``, ``seconds``, and

  - armature: ``q_seg`` (F, S, 4) float64, the world orientations (w, x, y, z) of the segments the bones
    follow per frame (S = the bones, then the bones the bake adds); ``q_rest`` (S, 4) their rest
    orientations; ``bone_names`` (B,), ``bone_parent`` (B,) index or −1, ``bone_rest`` (B, 4) the bones'
    rest rotations (``Bone.matrix_local``), ``armature_rotation`` (4,); the added bones ``plan_names``,
    ``plan_parents`` ("" for none), ``plan_head``, ``plan_tail`` (P, 3) armature space, ``plan_radius``
    (P, 2); with leaves ``leaves`` (name), ``leaf_count`` and ``leaf_frames`` (F, V, 3) float32, the leaves
    mesh's base coordinates (Session.leaf_base_coordinates);
  - curve: ``spline``, ``bezier``, ``count`` (C,) per spline, ``w`` (K,) weights (NaN for Bézier), and the
    object-local control points ``co``, ``handle_left``, ``handle_right`` (F + 1, K, 3): the rest points
    first, then one row per frame (NaN handles for non-Bézier splines).
"""

from __future__ import annotations

import io
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from types import SimpleNamespace

import bpy
import numpy as np

from . import bones, reader, wind
from .operators import BakeRun, STIFF_RODS_OT_bake, _baked_action, check_bake
from .session import Session

FORMAT, VERSION = "stiff_rods_forest", 1
MARKER = "STIFF_RODS_FOREST"  # prefix of the worker's protocol lines on its stdout
ADDON_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the folder with the package's __init__.py
PROGRESS_INTERVAL = 0.25  # s between a worker's frame reports


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
    """(why ``owner`` cannot be baked or None, its weight). Bake's own checks (operators.check_bake), then the
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


# ------------------------------------------------------------------ one tree (worker side)
def bake_tree(scene, name: str, start: int, end: int, progress=None) -> dict:
    """Simulate the tree or curve ``name`` of ``scene`` over frames ``start``..``end`` exactly as Bake does
    (its per-object settings, the scene's wind and colliders) and return its record (module docstring);
    nothing in the scene changes. ``progress(frames done)`` is called after every frame."""
    obj = bpy.data.objects.get(name)
    if obj is None:
        raise reader.ReadError(f"No object '{name}' in the scene")
    t0 = time.perf_counter()
    s = Session(obj, scene)
    s.set_wind(wind.SceneWind.from_scene(scene))
    plan = bones.plan_missing_bones(s) if s.source.armature is not None and s.add_bones else None
    run = BakeRun(scene, s, start, end, None if plan is None else plan.segments)
    try:
        while not run.done:
            run.step()
            if progress is not None:
                progress(len(run.frames) - 1)
    finally:
        run.close()
    rec: dict = dict(format=FORMAT, version=VERSION, name=name, start=start, end=end, segments=s.model.n_segments)
    if s.source.armature is not None:
        rec.update(_armature_record(s, run, plan))
    else:
        rec.update(_curve_record(s, run))
    rec["seconds"] = time.perf_counter() - t0
    return rec


def _armature_record(s, run, plan) -> dict:
    src = s.source
    seg = s.bone_segment if plan is None else np.concatenate((s.bone_segment, plan.segments))
    rec = dict(
        kind="armature",
        q_seg=np.array(run.frames),
        q_rest=s.model.orientations[seg],
        bone_names=np.array(src.bone_names, dtype=str),
        bone_parent=np.asarray(src.bone_parent, dtype=np.int64),
        bone_rest=np.asarray(s.bone_rest, dtype=float),
        armature_rotation=np.asarray(s.armature_rotation, dtype=float),
        plan_names=np.array(plan.names if plan else [], dtype=str),
        plan_parents=np.array([p or "" for p in plan.parents] if plan else [], dtype=str),
        plan_head=plan.head if plan else np.zeros((0, 3)),
        plan_tail=plan.tail if plan else np.zeros((0, 3)),
        plan_radius=plan.radius if plan else np.zeros((0, 2)),
    )
    if run.leaf_frames:
        rec.update(leaves=src.leaves.name, leaf_count=int(s.leaf_segments.size), leaf_frames=np.array(run.leaf_frames))
    return rec


def _curve_record(s, run) -> dict:
    rest = s.source.control_points

    def stack(points, attr):  # NaN where a spline has no such points (handles of a poly or NURBS spline)
        return np.concatenate(
            [np.full_like(c.co, np.nan) if getattr(c, attr) is None else getattr(c, attr) for c in points]
        )

    rows = [rest] + list(run.frames)
    return dict(
        kind="curve",
        spline=np.array([c.spline for c in rest], dtype=np.int64),
        bezier=np.array([c.bezier for c in rest], dtype=bool),
        count=np.array([c.co.shape[0] for c in rest], dtype=np.int64),
        w=np.concatenate([c.w if c.w is not None else np.full(c.co.shape[0], np.nan) for c in rest]),
        co=np.array([stack(r, "co") for r in rows]),
        handle_left=np.array([stack(r, "handle_left") for r in rows]),
        handle_right=np.array([stack(r, "handle_right") for r in rows]),
    )


def record_bytes(rec: dict) -> bytes:
    """The record as the bytes of an ``.npz`` file."""
    buf = io.BytesIO()
    np.savez(buf, **rec)
    return buf.getvalue()


def save_record(path: str, rec_or_bytes) -> None:
    """Write a record (or its :func:`record_bytes`) to ``path`` atomically: a reader never sees half a file."""
    data = rec_or_bytes if isinstance(rec_or_bytes, bytes) else record_bytes(rec_or_bytes)
    tmp = path + ".part"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def load_record(path: str) -> dict:
    """A record saved by :func:`save_record`; ValueError naming the file when it is not one."""
    try:
        with np.load(path, allow_pickle=False) as z:
            rec = {k: z[k] for k in z.files}
    except (OSError, ValueError) as exc:
        raise ValueError(f"Forest cache '{path}' cannot be read: {exc}") from None
    if str(rec.get("format", "")) != FORMAT or int(rec.get("version", -1)) != VERSION:
        raise ValueError(f"Forest cache '{path}' is not a {FORMAT} version {VERSION} file")
    for key in ("name", "kind", "leaves"):
        if key in rec:
            rec[key] = str(rec[key])
    for key in ("start", "end", "segments", "leaf_count"):
        if key in rec:
            rec[key] = int(rec[key])
    return rec


# ------------------------------------------------------------------ the parent: keyframes from the records
def _as_session(rec: dict, objects) -> SimpleNamespace:
    """What the serial Bake's writers read of a Session, from a record: the bones' segments renumbered
    0..S−1 (``q_rest`` holds exactly those rows of the model's orientations)."""
    arm = objects.get(rec["name"]) if rec["kind"] == "armature" else None
    curve = objects.get(rec["name"]) if rec["kind"] == "curve" else None
    if rec["kind"] == "curve":
        return SimpleNamespace(source=SimpleNamespace(armature=None, curve=curve, control_points=_points(rec, 0)))
    n = len(rec["bone_names"])
    return SimpleNamespace(
        source=SimpleNamespace(
            armature=arm,
            curve=None,
            leaves=objects.get(rec["leaves"]) if "leaves" in rec else None,
            bone_names=[str(b) for b in rec["bone_names"]],
            bone_parent=rec["bone_parent"],
        ),
        bone_segment=np.arange(n),
        bone_rest=rec["bone_rest"],
        model=SimpleNamespace(orientations=rec["q_rest"]),
        armature_rotation=rec["armature_rotation"],
        leaf_segments=np.zeros(rec.get("leaf_count", 0), np.int64),
    )


def _points(rec: dict, row: int) -> list:
    """The curve's ControlPoints of row ``row`` of the record (0: at rest, f + 1: frame f)."""
    out, k = [], 0
    for spline, bezier, count in zip(rec["spline"], rec["bezier"], rec["count"], strict=True):
        sl = slice(k, k + int(count))
        out.append(
            reader.ControlPoints(
                int(spline),
                bool(bezier),
                rec["co"][row, sl].copy(),
                rec["handle_left"][row, sl].copy() if bezier else None,
                rec["handle_right"][row, sl].copy() if bezier else None,
                None if bezier else rec["w"][sl].copy(),
            )
        )
        k += int(count)
    return out


def _plan(rec: dict):
    if len(rec["plan_names"]) == 0:
        return None
    n, p = len(rec["bone_names"]), len(rec["plan_names"])
    return bones.BonePlan(
        [str(x) for x in rec["plan_names"]],
        [str(x) or None for x in rec["plan_parents"]],
        rec["plan_head"],
        rec["plan_tail"],
        rec["plan_radius"],
        np.arange(n, n + p),
    )


def check_record(rec: dict, objects) -> str | None:
    """Why the record cannot be written into the open file (its objects changed or went away), or None."""
    owner = objects.get(rec["name"])
    if owner is None:
        return f"'{rec['name']}' is no longer in the scene"
    if rec["kind"] == "armature":
        if owner.type != "ARMATURE":
            return f"'{owner.name}' is no longer an armature"
        missing = [str(b) for b in rec["bone_names"] if str(b) not in owner.data.bones]
        if missing:
            return f"'{owner.name}' has lost bone '{missing[0]}' since the bake started"
        if "leaves" in rec and objects.get(rec["leaves"]) is None:
            return f"The leaves '{rec['leaves']}' of '{owner.name}' are no longer in the scene"
        holder = owner
    else:
        if owner.type != "CURVE":
            return f"'{owner.name}' is no longer a curve"
        splines = owner.data.splines
        for spline, count in zip(rec["spline"], rec["count"], strict=True):
            sp = splines[int(spline)] if int(spline) < len(splines) else None
            pts = None if sp is None else (sp.bezier_points if sp.type == "BEZIER" else sp.points)
            if pts is None or len(pts) != int(count):
                return f"Curve '{owner.name}', spline {int(spline)} changed since the bake started"
        holder = owner.data
    if _baked_action(holder) is not None:
        return f"'{owner.name}' already has a Stiff Rods bake: Free Bake first"
    return None


def write_record(rec: dict, objects=None) -> int:
    """Key one tree from its record with the serial Bake's writers; returns the F-curves written."""
    objects = bpy.data.objects if objects is None else objects
    s = _as_session(rec, objects)
    start, end = rec["start"], rec["end"]
    if rec["kind"] == "curve":
        frames = [_points(rec, row) for row in range(1, rec["co"].shape[0])]
        return STIFF_RODS_OT_bake._write_curve(s, frames, start, end)
    arm = s.source.armature
    written, _ = STIFF_RODS_OT_bake._write_bones(arm, s, rec["q_seg"], start, end, _plan(rec))
    if "leaf_frames" in rec:
        STIFF_RODS_OT_bake._write_leaves(arm, s, rec["leaf_frames"], start)
    return written


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
    keys = sum(n * (r["end"] - r["start"] + 1) for n, r in zip(fcurves, records, strict=True))
    return WriteReport([r["name"] for r in records], sum(fcurves), keys, time.perf_counter() - t0)


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


def new_manifest(blend: str, trees: list[Tree], start: int, end: int) -> dict:
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


# ------------------------------------------------------------------ worker processes
def open_blend(path: str) -> None:
    """Open ``path`` unless it is the open file, unchanged since it was opened (a worker keeps it open
    between trees: a bake leaves the scene as it found it)."""
    path = os.path.abspath(path)
    st = os.stat(path)
    key = (path, st.st_mtime_ns, st.st_size)
    if bpy.data.filepath and os.path.abspath(bpy.data.filepath) == path and getattr(open_blend, "key", None) == key:
        return
    bpy.ops.wm.open_mainfile(filepath=path, load_ui=False)
    open_blend.key = key  # type: ignore[attr-defined]


def bake_one(blend: str, name: str, start: int, end: int, progress=None) -> dict:
    """Open ``blend`` (if needed) and bake tree ``name``: ``{"tree", "record" (bytes of the .npz) or None,
    "error" (a message) or None, "seconds", "segments", "pid"}``. Bad input and solver failures come back as
    ``error``; anything else (a file that cannot be read) raises, so a scheduler may retry elsewhere."""
    open_blend(blend)
    out: dict = dict(tree=name, record=None, error=None, seconds=None, segments=None, pid=os.getpid())
    try:
        rec = bake_tree(bpy.context.scene, name, start, end, progress)
    except (OSError, MemoryError):
        raise
    except (reader.ReadError, ValueError) as exc:  # bad input: the same message as Bake's
        out["error"] = str(exc)
        return out
    except Exception as exc:  # the solver failed on this tree
        out["error"] = f"{type(exc).__name__}: {exc}"
        return out
    out.update(record=record_bytes(rec), seconds=rec["seconds"], segments=rec["segments"])
    return out


def _say(**msg) -> None:
    sys.stdout.write(MARKER + " " + json.dumps(msg) + "\n")
    sys.stdout.flush()


def worker_main(blend: str, folder: str, start: int, end: int) -> None:
    """The loop of one pool worker: a JSON line ``{"tree": name, "file": name.npz}`` on stdin per tree to
    bake into ``folder``; stops at end of input or ``{"quit": true}``. Answers on stdout (``MARKER`` lines):
    ``ready``, ``frame`` progress, then ``done`` or ``error`` per tree."""
    open_blend(blend)
    _say(ready=True, pid=os.getpid())
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("quit"):
            break
        name, last = msg["tree"], [0.0]

        def progress(frames, name=name, last=last):
            now = time.perf_counter()
            if now - last[0] >= PROGRESS_INTERVAL:
                last[0] = now
                _say(tree=name, frame=frames)

        try:
            out = bake_one(blend, name, start, end, progress)
        except Exception as exc:  # reported to the parent, which decides: the worker goes on
            _say(tree=name, error=f"{type(exc).__name__}: {exc}")
            continue
        if out["error"] is not None:
            _say(tree=name, error=out["error"])
            continue
        save_record(os.path.join(folder, msg["file"]), out["record"])
        _say(tree=name, done=True, seconds=out["seconds"], segments=out["segments"])


# Runs in the worker process: import the add-on from its folder (as package stiff_rods) and start the loop.
_WORKER_CODE = (
    "import importlib.util, sys\n"
    "sys.path += [p for p in {paths!r} if p not in sys.path]\n"
    "spec = importlib.util.spec_from_file_location('stiff_rods', {init!r}, submodule_search_locations=[{root!r}])\n"
    "pkg = importlib.util.module_from_spec(spec)\n"
    "sys.modules['stiff_rods'] = pkg\n"
    "spec.loader.exec_module(pkg)\n"
    "pkg.register()\n"
    "from stiff_rods.addon import forest\n"
    "forest.worker_main({blend!r}, {folder!r}, {start}, {end})\n"
)


def worker_command(blend: str, folder: str, start: int, end: int, kind: str = "blender", binary=None) -> list:
    """The command line of one worker: ``kind`` "blender" (a headless Blender, ``binary`` or this Blender's)
    or "python" (a Python with the ``bpy`` module, ``binary`` or this interpreter). Either imports this
    add-on from its folder, with this process's ``sys.path`` (site-packages, extension wheels) added."""
    code = _WORKER_CODE.format(
        paths=[p for p in sys.path if p],
        init=os.path.join(ADDON_ROOT, "__init__.py"),
        root=ADDON_ROOT,
        blend=os.path.abspath(blend),
        folder=os.path.abspath(folder),
        start=int(start),
        end=int(end),
    )
    if kind == "blender":
        exe = binary or bpy.app.binary_path
        return [exe, "-b", "--factory-startup", os.path.abspath(blend), "--python-expr", code]
    if kind == "python":
        return [binary or sys.executable, "-c", code]
    raise ValueError(f"worker kind must be 'blender' or 'python', got {kind!r}")


@dataclass
class Progress:
    trees_total: int
    trees_done: int
    trees_failed: int
    frames_total: int
    frames_done: int
    fps: float  # simulated frames per second, all workers together
    eta_s: float | None
    finished: bool
    failures: dict  # tree name -> message


class _Worker:
    def __init__(self, index, proc, log):
        self.index, self.proc, self.log = index, proc, log
        self.tree: str | None = None
        self.frames = 0
        self.ready = False  # it has opened the file and waits for trees
        self.alive = True


class ForestPool:
    """Bake ``trees`` over frames ``start``..``end`` in ``workers`` processes that open ``blend`` (a saved
    file: :func:`save_snapshot` for the open one). Results go to ``folder`` (:func:`cache_folder`).
    ``start()``, then ``poll()`` until ``progress.finished``; ``cancel()`` stops the workers and removes the
    folder. A tree whose worker died is handed to another worker ``retries`` times before it fails."""

    def __init__(self, blend, trees, start, end, folder, workers=2, kind="blender", binary=None, env=None, retries=1):
        if not trees:
            raise ValueError("No tree to bake")
        if end < start:
            raise ValueError(f"Bake range is empty: end frame {end} is before start frame {start}")
        if int(workers) < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.blend, self.start_frame, self.end_frame = os.path.abspath(blend), int(start), int(end)
        self.trees = sorted(trees, key=lambda t: -t.weight)  # biggest first: the last trees are short
        self.folder, self.n_workers, self.kind, self.binary = folder, int(workers), kind, binary
        self.env, self.retries = env, int(retries)
        self.frames_per_tree = self.end_frame - self.start_frame + 1
        self.manifest = new_manifest(self.blend, self.trees, self.start_frame, self.end_frame)
        self.entry = {t["name"]: t for t in self.manifest["trees"]}
        self.pending = [t.name for t in self.trees]
        self.attempts = {t.name: 0 for t in self.trees}
        self.events: queue.Queue = queue.Queue()
        self.lock = threading.Lock()
        self.workers: list[_Worker] = []
        self.t0: float | None = None
        self.cancelled = False

    # -- starting and stopping
    def start(self) -> None:
        os.makedirs(self.folder, exist_ok=True)
        write_manifest(self.folder, self.manifest)
        self.t0 = time.perf_counter()
        for i in range(min(self.n_workers, len(self.trees))):
            log = open(os.path.join(self.folder, f"worker_{i}.log"), "w", encoding="utf-8")
            proc = subprocess.Popen(
                worker_command(self.blend, self.folder, self.start_frame, self.end_frame, self.kind, self.binary),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=self.env,
            )
            w = _Worker(i, proc, log)
            self.workers.append(w)
            threading.Thread(target=self._read, args=(w,), daemon=True).start()

    def cancel(self) -> None:
        """Stop every worker now and remove the cache folder: nothing is left behind."""
        self.cancelled = True
        self._stop_workers(kill=True)
        shutil.rmtree(self.folder, ignore_errors=True)

    def close(self) -> None:
        """Let the workers quit (after :meth:`poll` says finished); the cache folder stays for :func:`write_forest`."""
        self._stop_workers(kill=False)

    def _stop_workers(self, kill: bool) -> None:
        for w in self.workers:
            try:
                if kill:
                    w.proc.kill()
                elif w.proc.poll() is None and w.proc.stdin:
                    w.proc.stdin.write(json.dumps({"quit": True}) + "\n")
                    w.proc.stdin.flush()
            except OSError:
                pass
        for w in self.workers:
            try:
                w.proc.wait(timeout=None if kill else 30)
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait()
            if w.proc.stdin:
                try:
                    w.proc.stdin.close()
                except OSError:
                    pass
            w.log.close()

    # -- the workers' side, one reader thread each
    def _send_next(self, w: _Worker) -> None:
        """Give ``w`` the next pending tree (under the lock), or nothing when none is left."""
        if self.cancelled or not self.pending:
            w.tree = None
            return
        name = self.pending.pop(0)
        w.tree, w.frames = name, 0
        self.attempts[name] += 1
        self.events.put(("running", name, w.proc.pid))
        try:
            assert w.proc.stdin is not None
            w.proc.stdin.write(json.dumps({"tree": name, "file": self.entry[name]["file"]}) + "\n")
            w.proc.stdin.flush()
        except OSError:
            pass  # the worker is gone: its reader sees the end of its output and hands the tree on

    def _read(self, w: _Worker) -> None:
        assert w.proc.stdout is not None
        for line in w.proc.stdout:
            if not line.startswith(MARKER + " "):
                w.log.write(line)
                continue
            msg = json.loads(line[len(MARKER) + 1 :])
            with self.lock:
                if msg.get("ready"):
                    w.ready = True
                    self._send_next(w)
                elif "frame" in msg:
                    w.frames = int(msg["frame"])
                elif msg.get("done") or "error" in msg:
                    self.events.put(("done" if msg.get("done") else "failed", msg["tree"], msg))
                    self._send_next(w)
        code = w.proc.wait()
        with self.lock:
            w.alive = False
            lost = w.tree
            w.tree = None
            if lost is not None and not self.cancelled:
                if self.attempts[lost] <= self.retries and any(x.alive for x in self.workers):
                    self.pending.insert(0, lost)
                    for other in self.workers:  # an idle worker takes it at once
                        if other.alive and other.ready and other.tree is None:
                            self._send_next(other)
                            break
                else:
                    self.events.put(("failed", lost, {"error": f"its worker process exited with code {code}"}))
            if not any(x.alive for x in self.workers):
                for name in self.pending:
                    self.events.put(("failed", name, {"error": "no worker process is left to bake it"}))
                self.pending.clear()
            self.events.put(("exit", w.index, code))

    # -- the parent's side
    def poll(self) -> Progress:
        """Take the workers' news (without waiting) and say where the bake is."""
        changed = False
        while True:
            try:
                kind, name, info = self.events.get_nowait()
            except queue.Empty:
                break
            if kind == "exit":
                continue
            e = self.entry[name]
            changed = True
            if kind == "running":
                e.update(status="running", worker=info)
            elif kind == "done":
                e.update(status="done", seconds=info["seconds"], segments=info["segments"], error=None)
            else:
                e.update(status="failed", error=info["error"])
        if changed:
            write_manifest(self.folder, self.manifest)
        return self.progress()

    def progress(self) -> Progress:
        entries = self.manifest["trees"]
        done = sum(e["status"] == "done" for e in entries)
        failed = {e["name"]: e["error"] for e in entries if e["status"] == "failed"}
        with self.lock:
            running = sum(w.frames for w in self.workers if w.tree is not None)
        frames_done = (done + len(failed)) * self.frames_per_tree + running
        frames_total = len(entries) * self.frames_per_tree
        elapsed = time.perf_counter() - (self.t0 or time.perf_counter())
        fps = frames_done / elapsed if elapsed > 0 else 0.0
        eta = (frames_total - frames_done) / fps if fps > 0 else None
        return Progress(
            len(entries),
            done,
            len(failed),
            frames_total,
            frames_done,
            fps,
            eta,
            done + len(failed) == len(entries),
            failed,
        )

    def run(self, on_progress=None, interval: float = 0.1) -> Progress:
        """Start, poll until every tree is done or failed (``on_progress(Progress)`` at each poll), close."""
        self.start()
        try:
            while True:
                p = self.poll()
                if on_progress is not None:
                    on_progress(p)
                if p.finished:
                    return p
                time.sleep(interval)
        finally:
            self.close()


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
