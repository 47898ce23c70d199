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
"""

from __future__ import annotations

import argparse
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


def parse(argv):
    ap = argparse.ArgumentParser(
        prog="bake_forest.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("blend", help="the scene (.blend); it is opened, never written")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="LocalCluster worker processes")
    ap.add_argument(
        "--scheduler", help="address of a running Dask scheduler (tcp://HOST:8786) instead of a LocalCluster"
    )
    ap.add_argument("--out", help="where to save the baked scene (default: <scene>_baked.blend beside it)")
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
    stem = os.path.splitext(args.blend)[0]
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


def bake(args, client, forest, trees, start, end, folder, on_result=None) -> dict:
    """Run the tasks; each tree's result into ``folder`` (manifest and records). Returns tree -> manifest entry."""
    from distributed import as_completed

    manifest = forest.new_manifest(args.blend, trees, start, end)
    entry = {e["name"]: e for e in manifest["trees"]}
    forest.write_manifest(folder, manifest)
    blend = args.blend
    if args.send:
        with open(args.blend, "rb") as fh:
            blend = client.scatter(fh.read(), broadcast=True, hash=False)
    ordered = sorted(trees, key=lambda t: -t.weight)  # biggest first
    futures = {}
    for i in range(0, len(ordered), args.chunk):
        chunk = ordered[i : i + args.chunk]
        names = [t.name for t in chunk]
        fut = client.submit(
            bake_task,
            args.addon,
            blend,
            names,
            start,
            end,
            _bake_options.scene_settings(args),
            key=f"stiff-rods-bake-{i:05d}",
            retries=args.retries,
            priority=chunk[0].weight,
            pure=False,
        )
        futures[fut] = names
    t0, done = time.perf_counter(), 0
    for fut in as_completed(futures):
        try:
            results = fut.result()
        except Exception as exc:  # retried and still raising, or its workers kept dying (KilledWorker)
            results = [dict(tree=n, record=None, error=f"{type(exc).__name__}: {exc}") for n in futures[fut]]
        for r in results:
            e = entry[r["tree"]]
            if r["error"] is None:
                forest.save_record(os.path.join(folder, e["file"]), r["record"])
                e.update(status="done", seconds=r["seconds"], segments=r["segments"], worker=r["pid"])
            else:
                e.update(status="failed", error=r["error"])
            done += 1
            elapsed = time.perf_counter() - t0
            eta = elapsed / done * (len(entry) - done)
            what = f"baked in {e['seconds']:.1f} s" if e["status"] == "done" else f"FAILED: {e['error']}"
            print(f"[{done}/{len(entry)}] {r['tree']}: {what} (ETA {eta:.0f} s)", file=sys.stderr, flush=True)
            if on_result is not None:
                on_result(client, r)
        forest.write_manifest(folder, manifest)
    return entry


def save_out(bpy, args):
    """Save the open scene as --out (relative paths remapped); no .blend1 backups."""
    bpy.context.preferences.filepaths.save_version = 0
    bpy.ops.wm.save_as_mainfile(filepath=args.out)


def summary(args, forest_result, refused, seconds, write) -> dict:
    entries = list(forest_result.values())
    done = [e for e in entries if e["status"] == "done"]
    failed = {e["name"]: e["error"] for e in entries if e["status"] == "failed"}
    per_tree = {e["name"]: round(e["seconds"], 3) for e in done}
    return {
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
        "out": args.out if done else None,
    }


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
        print(f"  written:  {s['fcurves']} F-curves, {s['keys']} keys in {s['write_seconds']:.2f} s")
        print(f"  saved:    {s['out']}")
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


def run(args, client, t0, on_result) -> int:
    forest = load_forest(args.addon)
    import bpy

    bpy.ops.wm.open_mainfile(filepath=args.blend, load_ui=False)
    scene = bpy.context.scene
    start, end = args.frames or (scene.frame_start, scene.frame_end)
    for key, value in _bake_options.scene_settings(args).items():  # saved with --out, as the workers bake
        setattr(scene.stiff_rods, key, value)
    if args.loop:
        end = start + args.loop
    found = forest.resolve(candidates(bpy, args))
    if args.objects:  # named on the command line: each one that is no tree is a refusal too
        found.refused += found.ignored
    for r in found.refused:
        print(f"bake_forest: not baking {r.name}: {r.reason}", file=sys.stderr, flush=True)
    folder = forest.cache_folder(args.out)
    os.makedirs(folder, exist_ok=True)
    write = None
    try:
        result = bake(args, client, forest, found.trees, start, end, folder, on_result) if found.trees else {}
        if any(e["status"] == "done" for e in result.values()):
            save_out(bpy, args)
            write = forest.write_forest(folder, skip_failed=True)
            bpy.ops.wm.save_mainfile()
    finally:
        if not args.keep_cache:
            shutil.rmtree(folder, ignore_errors=True)
    s = summary(args, result, found.refused, time.perf_counter() - t0, write)
    if args.json:
        print(json.dumps(s))
    else:
        print_summary(s, (start, end))
    bad = {**s["refused"], **s["failed"]}
    if bad:
        print(f"bake_forest: {len(bad)} not baked: {', '.join(bad)}", file=sys.stderr)
        return 1
    if not found.trees:
        print(f"bake_forest: no tree or curve to bake in {args.blend}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
