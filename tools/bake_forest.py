r"""Bake every tree of a scene on a Dask cluster, one task per tree, and save the baked scene.

On this machine (a Dask LocalCluster of worker processes):
    python tools/bake_forest.py scene.blend --workers 4 --out baked.blend
On a farm (a running ``dask scheduler`` and ``dask worker tcp://HOST:8786`` on the nodes, each with the
``bpy`` module, numpy and scipy, this checkout and the scene on shared storage at the same paths):
    python tools/bake_forest.py /shared/scene.blend --scheduler tcp://HOST:8786 --out /shared/baked.blend
``--send`` sends the .blend to the workers instead (no shared storage needed for the scene).

Needs the ``bpy`` module, ``dask`` and ``distributed`` (requirements-dev.txt). The trees are the scene's
Sapling trees and curves (``--collection`` / ``--objects``: only those), each baked with its own Stiff Rods
settings over the scene's frame range (``--frames``) in the scene's wind (``--loop``, ``--preroll``: seamless
loops, frames simulated before the start), exactly as Bake would
(addon/bake.py's ``run_bake`` in each task, ``write_bake`` in this process; addon/forest.py). A task that
raises (the scene unreadable on a worker) is retried ``--retries`` times;
a task whose worker dies is run again on another worker by Dask. The results come back to this process,
which keeps them in a cache folder next to ``--out``, writes all keyframes in one pass into a copy of the
scene and saves it as ``--out`` (the input is never written; the leaves' point caches go next to
``--out``). Progress: one line per tree on stderr. At the end a summary (``--json``: one JSON line); the
exit status is 1 when a tree was refused or failed (each named with the reason), the others are baked.

Caches that scale (docs/forest.md, "Caches: writing that scales"):
    python tools/bake_forest.py scene.blend --usd shot/forest.usda     # shot/forest_trees/<tree>.usdc
    python tools/bake_forest.py scene.blend --abc shot/forest_abc      # shot/forest_abc/<tree>.abc, index.json
Each worker bakes its tree, keys it into its own copy of the scene and exports it with Export Cache
(addon/forest_cache.py); this process writes no keyframes and opens no scene: a worker finds the trees, and
this process writes the root layer (plain text, one reference per tree) or the index (addon/forest_layers.py).
With ``--out`` as well, the keyed .blend is written as above, from the same workers' records.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.util
import json
import logging
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this checkout: the add-on's folder
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the tools' shared options
import _bake_options  # noqa: E402

BPY_SCRIPTS = re.compile(r"[\\/]bpy[\\/]\d+\.\d+[\\/]scripts([\\/]|$)")


def load_forest(addon_root: str):
    """``stiff_rods.addon.forest`` of the add-on in ``addon_root``, imported (as package ``stiff_rods``) and
    registered once per process; runs in this process and in every Dask worker."""
    mod = sys.modules.get("stiff_rods.addon.forest")
    if mod is not None:
        return mod
    if "bpy" not in sys.modules:  # a process started by one that had imported bpy inherits the folders bpy
        # added to sys.path, whose scripts/modules/bpy would shadow the module: bpy adds them again
        sys.path[:] = [p for p in sys.path if not BPY_SCRIPTS.search(p)]
    import bpy  # noqa: F401  (the bpy module: before the add-on, which imports it)

    spec = importlib.util.spec_from_file_location(
        "stiff_rods", os.path.join(addon_root, "__init__.py"), submodule_search_locations=[addon_root]
    )
    assert spec is not None and spec.loader is not None
    pkg = importlib.util.module_from_spec(spec)
    sys.modules["stiff_rods"] = pkg
    spec.loader.exec_module(pkg)
    pkg.register()
    from stiff_rods.addon import forest

    return forest


def local_blend(blend) -> str:
    """A path to the scene on this worker: ``blend`` itself, or (sent as bytes) a file in the temporary
    folder named after its hash, written once per worker machine."""
    if isinstance(blend, str):
        return blend
    path = os.path.join(tempfile.gettempdir(), f"stiff_rods_forest_{hashlib.sha256(blend).hexdigest()[:20]}.blend")
    if not os.path.isfile(path):
        tmp = f"{path}.{os.getpid()}.part"
        with open(tmp, "wb") as fh:
            fh.write(blend)
        os.replace(tmp, path)
    return path


def bake_task(addon_root: str, blend, names: list, start: int, end: int, settings: dict | None = None) -> list:
    """One Dask task: bake the trees ``names`` (addon/forest_pool.py:bake_one each: a BakeRecord's bytes) with the
    scene's Stiff Rods ``settings`` (``--loop``, ``--preroll``) set first."""
    forest = load_forest(addon_root)
    path = local_blend(blend)
    return [forest.bake_one(path, name, start, end, settings=settings) for name in names]


def load_layers(addon_root: str):
    """addon/forest_layers.py (names, root layer, index) alone: no bpy, no add-on package."""
    mod = sys.modules.get("stiff_rods_forest_layers")
    if mod is None:
        path = os.path.join(addon_root, "addon", "forest_layers.py")
        spec = importlib.util.spec_from_file_location("stiff_rods_forest_layers", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
    return mod


@dataclasses.dataclass
class Refused:
    name: str
    reason: str


@dataclasses.dataclass
class Tree:
    name: str
    kind: str
    weight: int


def resolve_task(addon_root: str, blend, select: dict, settings: dict) -> dict:
    """A Dask task of ``--usd``/``--abc`` without ``--out``: open the scene in a worker (which then bakes with it
    open) and find its trees, so this process never opens it. {"trees": [(name, kind, weight)], "refused":
    [(name, reason)], "frames": [start, end], "fps", "error"}."""
    forest = load_forest(addon_root)
    import bpy
    from stiff_rods.addon import forest_pool

    forest_pool.open_blend(local_blend(blend))
    scene = bpy.context.scene
    forest_pool.set_scene_settings(scene, settings)
    try:
        found, start, end = resolve_scene(bpy, forest, argparse.Namespace(**select))
    except SystemExit as exc:  # a collection or object that is not there
        return {"error": str(exc)}
    trees = [(t.name, t.kind, t.weight) for t in found.trees]
    fps = scene.render.fps / scene.render.fps_base
    refused = [(r.name, r.reason) for r in found.refused]
    return {"trees": trees, "refused": refused, "frames": [start, end], "fps": fps, "error": None}


def cache_task(addon_root: str, blend, jobs: list, start: int, end: int, settings: dict | None, record: bool) -> list:
    """One Dask task of ``--usd``/``--abc``: bake and export each tree of ``jobs`` ((name, {"usd"/"abc": file})
    pairs) in this worker (addon/forest_cache.py:bake_export); the record's bytes only when ``record``."""
    load_forest(addon_root)
    from stiff_rods.addon import forest_cache

    path = local_blend(blend)
    return [forest_cache.bake_export(path, name, start, end, paths, settings, record) for name, paths in jobs]


def parse(argv):
    ap = argparse.ArgumentParser(
        prog="bake_forest.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("blend", help="the scene (.blend); it is opened, never written")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="LocalCluster worker processes")
    ap.add_argument(
        "--scheduler", help="address of a running Dask scheduler (tcp://HOST:8786) instead of a LocalCluster"
    )
    ap.add_argument(
        "--out", help="where to save the keyed scene (default: <scene>_baked.blend beside it; none with --usd/--abc)"
    )
    ap.add_argument(
        "--usd",
        metavar="FOREST.usda",
        help="each worker writes its tree's USD (FOREST_trees/<tree>.usdc), this process the root layer composing them",
    )
    ap.add_argument(
        "--abc", metavar="DIR", help="each worker writes its tree's Alembic (DIR/<tree>.abc); DIR/index.json"
    )
    ap.add_argument("--frames", nargs=2, type=int, metavar=("START", "END"), help="frame range (default: the scene's)")
    ap.add_argument("--collection", help="bake only the trees of this collection")
    ap.add_argument("--objects", nargs="+", metavar="NAME", help="bake only these trees (armature or curve names)")
    ap.add_argument("--send", action="store_true", help="send the .blend to the workers (no shared storage)")
    ap.add_argument("--addon", default=ROOT, help="the Stiff Rods add-on folder, at this path on every worker")
    ap.add_argument("--retries", type=int, default=2, help="times a task that raised is tried again (default 2)")
    ap.add_argument("--chunk", type=int, default=1, help="trees per task (default 1)")
    ap.add_argument("--keep-cache", action="store_true", help="keep the per-tree results next to --out")
    _bake_options.add_arguments(ap, "seamless loops")
    ap.add_argument("--json", action="store_true", help="print one JSON line instead of the summary")
    args = ap.parse_args(argv)
    if not os.path.isfile(args.blend):
        ap.error(f"{args.blend}: no such file")
    args.blend = os.path.abspath(args.blend)
    check_caches(ap, args)
    stem = os.path.splitext(args.blend)[0]
    if args.out or not (args.usd or args.abc):
        args.out = os.path.abspath(args.out or stem + "_baked.blend")
        if os.path.exists(args.out) and os.path.samefile(args.out, args.blend):
            ap.error(f"--out {args.out} is the input file: bake into another file")
        if not os.path.isdir(os.path.dirname(args.out)):
            ap.error(f"--out {args.out}: the folder {os.path.dirname(args.out)} does not exist")
    if args.frames and args.frames[1] < args.frames[0]:
        ap.error(f"--frames {args.frames[0]} {args.frames[1]}: the end frame is before the start frame")
    _bake_options.check(ap, args)
    if args.workers < 1 or args.chunk < 1 or args.retries < 0:
        ap.error("--workers and --chunk must be at least 1, --retries at least 0")
    if not os.path.isfile(os.path.join(args.addon, "addon", "forest.py")):
        ap.error(f"--addon {args.addon}: not a Stiff Rods add-on folder (no addon/forest.py)")
    return args


def check_caches(ap, args) -> None:
    """--usd: a .usda root layer in an existing folder; --abc: a folder whose parent exists (made if needed)."""
    if args.usd:
        args.usd = os.path.abspath(args.usd)
        if not args.usd.lower().endswith(".usda"):
            ap.error(f"--usd {args.usd}: the root layer is plain text, a .usda file")
        if not os.path.isdir(os.path.dirname(args.usd)):
            ap.error(f"--usd {args.usd}: the folder {os.path.dirname(args.usd)} does not exist")
    if args.abc:
        args.abc = os.path.abspath(args.abc)
        if os.path.exists(args.abc) and not os.path.isdir(args.abc):
            ap.error(f"--abc {args.abc}: not a folder")
        if not os.path.isdir(os.path.dirname(args.abc)):
            ap.error(f"--abc {args.abc}: the folder {os.path.dirname(args.abc)} does not exist")


def cache_jobs(args, names: list) -> dict:
    """tree name → {"usd"/"abc": its cache file} for --usd/--abc (folders made), or {} without them."""
    layers = load_layers(args.addon)
    jobs: dict = {n: {} for n in names} if (args.usd or args.abc) else {}
    for key, folder in (("usd", args.usd and layers.trees_folder(args.usd)), ("abc", args.abc)):
        if folder:
            os.makedirs(folder, exist_ok=True)
            for name, file in layers.tree_files(names, layers.EXTENSIONS[key]).items():
                jobs[name][key] = os.path.join(folder, file)
    return jobs


def candidates(bpy, args) -> list:
    scene = bpy.context.scene
    if args.collection:
        coll = bpy.data.collections.get(args.collection)
        if coll is None:
            raise SystemExit(f"bake_forest: no collection '{args.collection}' in {args.blend}")
        return list(coll.all_objects)
    if args.objects:
        missing = [n for n in args.objects if n not in scene.objects]
        if missing:
            raise SystemExit(f"bake_forest: no object {', '.join(repr(n) for n in missing)} in {args.blend}")
        return [scene.objects[n] for n in args.objects]
    return list(scene.objects)


def cluster(args):
    """A Dask client: of the scheduler at ``--scheduler``, or of a new LocalCluster (one thread per worker
    process: bpy runs one bake at a time)."""
    from distributed import Client, LocalCluster

    if args.scheduler:
        return Client(args.scheduler), None
    local = LocalCluster(
        n_workers=args.workers,
        threads_per_worker=1,
        processes=True,
        memory_limit=0,
        dashboard_address=None,
        silence_logs=logging.ERROR,
    )
    return Client(local), local


def scene_ref(args, client):
    """The scene as the tasks get it: its path, or with --send its bytes scattered to every worker (once)."""
    if not args.send:
        return args.blend
    if getattr(args, "sent", None) is None:
        with open(args.blend, "rb") as fh:
            args.sent = client.scatter(fh.read(), broadcast=True, hash=False)
    return args.sent


def submit(args, client, ordered, blend, start, end, jobs, keyed) -> dict:
    """One task per ``--chunk`` trees, the biggest first; future → tree names."""
    futures = {}
    settings = _bake_options.scene_settings(args)
    for i in range(0, len(ordered), args.chunk):
        chunk = ordered[i : i + args.chunk]
        names = [t.name for t in chunk]
        if jobs:
            task = (cache_task, args.addon, blend, [(n, jobs[n]) for n in names], start, end, settings, keyed)
        else:
            task = (bake_task, args.addon, blend, names, start, end, settings)
        key = f"stiff-rods-bake-{i:05d}"
        futures[client.submit(*task, key=key, retries=args.retries, priority=chunk[0].weight, pure=False)] = names
    return futures


def receive(fut, result, names) -> list:
    """The task's list of per-tree results, or one failure per tree of a task that raised."""
    if fut.status == "finished":
        return result
    # retried and still raising, or its workers kept dying (KilledWorker): (type, exception, traceback)
    exc = result[1] if isinstance(result, tuple) else result
    return [dict(tree=n, record=None, error=f"{type(exc).__name__}: {exc}") for n in names]


def progress_line(e: dict, r: dict) -> str:
    if e["status"] != "done":
        return f"FAILED: {e['error']}"
    if r.get("files"):
        return f"baked in {r['bake_s']:.1f} s, exported {', '.join(r['files'].values())} in {r['export_s']:.1f} s"
    return f"baked in {e['seconds']:.1f} s"


def bake(args, client, forest, trees, frames, folder, on_result=None, clock=None) -> dict:
    """Run the tasks; each tree's result into ``folder`` (manifest and records; None: no keyed .blend, no folder).
    Returns tree -> manifest entry. ``clock["waiting_s"]`` adds the time spent waiting for the workers."""
    from distributed import as_completed

    clock = {} if clock is None else clock
    start, end = frames
    if forest is not None:
        manifest = forest.new_manifest(args.blend, trees, start, end)
    else:  # --usd/--abc alone: no cache folder, no add-on in this process
        manifest = {"trees": [dict(name=t.name, kind=t.kind, status="pending", error=None) for t in trees]}
    entry = {e["name"]: e for e in manifest["trees"]}
    if folder:
        forest.write_manifest(folder, manifest)
    blend = scene_ref(args, client)
    ordered = sorted(trees, key=lambda t: -t.weight)  # biggest first
    jobs = cache_jobs(args, [t.name for t in ordered])
    ts = time.perf_counter()
    futures = submit(args, client, ordered, blend, start, end, jobs, keyed=folder is not None)
    clock["submit_s"] = time.perf_counter() - ts
    t0, done, waiting = time.perf_counter(), 0, 0.0
    # the client fetches each result as its task ends, in its own thread: no round trip per tree here
    pending = as_completed(futures, with_results=True, raise_errors=False)
    while True:
        tw = time.perf_counter()
        fut, value = next(pending, (None, None))
        waiting += time.perf_counter() - tw
        if fut is None:
            break
        for r in receive(fut, value, futures[fut]):
            e = entry[r["tree"]]
            if r["error"] is None:
                if folder and r["record"] is not None:
                    forest.save_record(os.path.join(folder, e["file"]), r["record"])
                e.update(status="done", seconds=r["seconds"], segments=r["segments"], worker=r["pid"])
                e.update({k: r[k] for k in ("bake_s", "export_s", "files", "bytes") if k in r})
            else:
                e.update(status="failed", error=r["error"])
            done += 1
            eta = (time.perf_counter() - t0) / done * (len(entry) - done)
            line = f"[{done}/{len(entry)}] {r['tree']}: {progress_line(e, r)} (ETA {eta:.0f} s)"
            print(line, file=sys.stderr, flush=True)
            if on_result is not None:
                on_result(client, r)
        if folder:
            forest.write_manifest(folder, manifest)
    clock["waiting_s"] = clock.get("waiting_s", 0.0) + waiting
    return entry


def write_caches(args, result: dict, frames, fps: float) -> dict:
    """The parent's part of --usd (the root layer) and --abc (index.json): what was written."""
    layers = load_layers(args.addon)
    done = [e for e in result.values() if e["status"] == "done"]
    out: dict = {}
    if args.usd and done:
        trees = [(e["name"], e["files"]["usd"]) for e in done]
        out["usd_root_s"] = layers.write_root_layer(args.usd, trees, frames, fps)
        out["usd"] = args.usd
    if args.abc:
        keys = ("name", "status", "error", "seconds", "bake_s", "export_s", "segments", "bytes")
        entries = [{k: e.get(k) for k in keys} | {"file": (e.get("files") or {}).get("abc")} for e in result.values()]
        out["abc_index_s"] = layers.write_alembic_index(args.abc, args.blend, entries, frames, fps)
        out["abc"] = args.abc
    return out


def save_out(bpy, args):
    """Save the open scene as --out (relative paths remapped); no .blend1 backups."""
    bpy.context.preferences.filepaths.save_version = 0
    bpy.ops.wm.save_as_mainfile(filepath=args.out)


def summary(args, forest_result, refused, seconds, write, caches=None) -> dict:
    entries = list(forest_result.values())
    done = [e for e in entries if e["status"] == "done"]
    failed = {e["name"]: e["error"] for e in entries if e["status"] == "failed"}
    per_tree = {e["name"]: round(e["seconds"], 3) for e in done}
    out = {
        "trees": len(entries) + len(refused),
        "baked": len(done),
        "refused": {r.name: r.reason for r in refused},
        "failed": failed,
        "segments": sum(e["segments"] for e in done),
        "seconds": round(seconds, 2),
        "bake_seconds": round(sum(per_tree.values()), 2),
        "per_tree_s": per_tree,
        "write_seconds": round(write.seconds, 3) if write else 0.0,
        "fcurves": write.fcurves if write else 0,
        "keys": write.keys if write else 0,
        "workers": "scheduler " + args.scheduler if args.scheduler else f"LocalCluster of {args.workers}",
        "out": args.out if done and args.out else None,
    }
    if caches is not None:  # --usd / --abc: each tree's bake and export apart, the parent's own time
        out["per_tree_bake_s"] = {e["name"]: round(e["bake_s"], 3) for e in done}
        out["per_tree_export_s"] = {e["name"]: round(e["export_s"], 3) for e in done}
        out.update(caches)
    return out


def print_summary(s, frames) -> None:
    print(
        f"Stiff Rods forest: {s['baked']} of {s['trees']} trees baked, frames {frames[0]}-{frames[1]}, "
        f"in {s['seconds']:.1f} s ({s['workers']})"
    )
    times = list(s["per_tree_s"].values())
    if times:
        print(f"  segments: {s['segments']}")
        print(
            f"  per tree: {min(times):.1f}-{max(times):.1f} s (median {statistics.median(times):.1f} s, "
            f"{s['bake_seconds']:.1f} s in all)"
        )
    if times and s["out"]:
        print(f"  written:  {s['fcurves']} F-curves, {s['keys']} keys in {s['write_seconds']:.2f} s")
        print(f"  saved:    {s['out']}")
    for key, label in (("usd", "USD root layer"), ("abc", "Alembic folder")):
        if s.get(key):
            print(f"  {label}: {s[key]}")
    if "parent_s" in s:
        print(f"  this process: {s['parent_s']:.3f} s besides waiting for the workers")
    for name, reason in {**s["refused"], **s["failed"]}.items():
        print(f"  not baked: {name}: {reason}")


def main(argv=None, on_result=None) -> int:
    """Run the tool; returns the exit status. ``on_result(client, result)`` is called as each tree's result
    arrives (for tests that stop a worker in the middle of a bake)."""
    args = parse(sys.argv[1:] if argv is None else argv)
    t0 = time.perf_counter()
    # the cluster first: LocalCluster's worker processes start with this process's sys.path, which must not
    # yet hold the paths bpy adds (its scripts/modules/bpy would shadow the bpy module there)
    client, local = cluster(args)
    try:
        return run(args, client, t0, on_result)
    finally:
        client.close()
        if local is not None:
            local.close()


def open_scene(bpy, forest, args):
    """Open the scene, set --loop/--preroll, find the trees: (found, start, end)."""
    bpy.ops.wm.open_mainfile(filepath=args.blend, load_ui=False)
    for key, value in _bake_options.scene_settings(args).items():  # saved with --out, as the workers bake
        setattr(bpy.context.scene.stiff_rods, key, value)
    found, start, end = resolve_scene(bpy, forest, args)
    for r in found.refused:
        print(f"bake_forest: not baking {r.name}: {r.reason}", file=sys.stderr, flush=True)
    return found, start, end


def resolve_scene(bpy, forest, args):
    """The open scene's trees (``args``: blend, frames, loop, collection, objects): (found, start, end)."""
    scene = bpy.context.scene
    start, end = args.frames or (scene.frame_start, scene.frame_end)
    if args.loop:
        end = start + args.loop
    found = forest.resolve(candidates(bpy, args))
    if args.objects:  # named on the command line: each one that is no tree is a refusal too
        found.refused += found.ignored
    return found, start, end


def run(args, client, t0, on_result) -> int:
    """The bake: in the cache mode (--usd/--abc without --out) without bpy in this process (:func:`run_caches`),
    else opening the scene here, the keyed .blend written from the workers' records (and the caches)."""
    if args.out is None:
        return run_caches(args, client, t0, on_result)
    forest = load_forest(args.addon)
    import bpy

    # the parent's own time: everything from opening the scene to the caches written, except waiting for the
    # workers (the keyed .blend of --out is write_seconds, apart)
    clock = {"waiting_s": 0.0, "cpu0": time.process_time()}
    tp = time.perf_counter()
    found, start, end = open_scene(bpy, forest, args)
    folder = forest.cache_folder(args.out)
    os.makedirs(folder, exist_ok=True)
    write, caches = None, None
    try:
        result = bake(args, client, forest, found.trees, (start, end), folder, on_result, clock) if found.trees else {}
        if args.usd or args.abc:
            fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
            caches = write_caches(args, result, (start, end), fps) | parent_clock(clock, tp)
        if any(e["status"] == "done" for e in result.values()):
            save_out(bpy, args)
            write = forest.write_forest(folder, skip_failed=True)
            bpy.ops.wm.save_mainfile()
    finally:
        if not args.keep_cache:
            shutil.rmtree(folder, ignore_errors=True)
    s = summary(args, result, found.refused, time.perf_counter() - t0, write, caches)
    return finish(args, s, found.trees, (start, end))


def parent_clock(clock: dict, since: float) -> dict:
    """This process's own time since ``since`` (its main thread's, all but the time it waited for the workers)
    and ``parent_cpu_s``: the CPU time of all its threads since then (Dask's client thread receiving included)."""
    clock["cpu_s"] = time.process_time() - clock.pop("cpu0")
    return {"parent_s": round(time.perf_counter() - since - clock["waiting_s"], 4)} | {
        f"parent_{k}": round(v, 4) for k, v in clock.items()
    }


def run_caches(args, client, t0, on_result) -> int:
    """--usd/--abc alone: a worker opens the scene and finds its trees, the workers bake and export them, this
    process writes the root layer or index. It never imports bpy nor opens the scene (opening a 120-tree forest
    takes 9-10 s)."""
    clock = {"waiting_s": 0.0, "cpu0": time.process_time()}
    tp = time.perf_counter()
    blend = scene_ref(args, client)
    select = {k: getattr(args, k) for k in ("blend", "frames", "loop", "collection", "objects")}
    fut = client.submit(resolve_task, args.addon, blend, select, _bake_options.scene_settings(args), pure=False)
    tw = time.perf_counter()
    found = fut.result()
    clock["waiting_s"] += time.perf_counter() - tw
    clock["resolve_wait_s"] = time.perf_counter() - tw
    if found["error"]:
        raise SystemExit(found["error"])
    refused = [Refused(n, r) for n, r in found["refused"]]
    for r in refused:
        print(f"bake_forest: not baking {r.name}: {r.reason}", file=sys.stderr, flush=True)
    trees = [Tree(*t) for t in found["trees"]]
    frames = tuple(found["frames"])
    result = bake(args, client, None, trees, frames, None, on_result, clock) if trees else {}
    caches = write_caches(args, result, frames, found["fps"]) | parent_clock(clock, tp)
    return finish(args, summary(args, result, refused, time.perf_counter() - t0, None, caches), trees, frames)


def finish(args, s: dict, trees, frames) -> int:
    """Print the summary; the exit status."""
    if args.json:
        print(json.dumps(s))
    else:
        print_summary(s, frames)
    bad = {**s["refused"], **s["failed"]}
    if bad:
        print(f"bake_forest: {len(bad)} not baked: {', '.join(bad)}", file=sys.stderr)
        return 1
    if not trees:
        print(f"bake_forest: no tree or curve to bake in {args.blend}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
