"""A forest bake: serially, in 2 local worker processes, and on a 2-worker Dask LocalCluster.

    python3 benchmarks/forest.py --json [--frames 96]

The forest: 12 real Sapling trees with leaves, four presets (quaking aspen, callistemon, white birch and
small maple, the last two at two branching levels) with three seeds each, 8 m apart, in a gusty, turbulent
10 m/s wind, made by Blender 3.4 (tests/blender_scripts/forest_scene.py), baked over 96 frames (4 s at 24 fps:
a worker's start, importing bpy and opening the file, is paid once per worker, so a short bake measures it
rather than the baking). Then, with the bpy module:

* serial: Bake (the operator) on each tree in turn, in one process;
* parallel: addon/forest.py's ForestPool with 2 worker processes (the biggest trees first), then the parent's
  write_forest;
* dask: tools/bake_forest.py (LocalCluster of 2 workers: start, bake, write, save the baked file).

Keys: ``trees``, ``segments_total``, ``serial_s``, ``parallel_s``, ``dask_s``, ``speedup_2_workers``
(serial / parallel), ``speedup_dask``, ``max_rotation_diff_vs_serial`` (largest difference between the
keyframes the parent wrote and Bake's, all F-curves), ``per_tree_s`` (each tree's time in its worker,
biggest first), ``write_s`` (the parent's writing), ``write_fraction_of_serial``, ``write_keys_per_s``,
``worker_start_s`` (the pool's time beyond its busiest worker's trees) and ``projection_1000_trees``: the
wall time of a forest of 1000 such trees (the 12 measured times repeated) on 64 and 512 cores, the
largest tree as the floor, plus the parent's writing at the measured rate; ``write_bound_cores`` is the
core count from which the parent's writing takes longer than the trees' simulation.

Writing that scales (benchmarks/_forest_caches.py): the same 12-tree forest baked with ``tools/bake_forest.py
--usd`` (2-worker LocalCluster: each worker bakes and exports its tree, the parent writes the root layer), then a
120-tree forest (the same four presets with seeds 1-30, made the same way) baked with ``--usd`` over
``--frames-many`` frames (default 4: the parent's steps are the same for any frame count, the workers' export
is what a longer bake makes slower; 96 frames of 120 trees would take over half an hour on 2 cores). Keys:
``per_tree_cache_s`` / ``per_tree_export_s`` (12 trees, each tree's bake + export and its export alone in its
worker), ``usd_s``, ``parent_s`` and ``parent_s_per_tree`` ({"12": .., "120": ..}: the parent's own time,
everything but waiting for the workers: submitting, receiving, the root layer; it opens no scene, a worker
finds the trees: ``resolve_s_12`` / ``resolve_s_120``), ``parent_cpu_s`` (the parent process's CPU time, all
threads: Dask's client thread receiving the results included), ``projection_caches_1000_trees`` (the 12 trees'
bake + export repeated on 64 and 512 cores, the parent's time fitted as a + b·trees through 12 and 120 trees) and
``parent_share_64_cores`` (target <= 0.10; ``parent_cpu_share_64_cores`` with the CPU time instead).
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _blender  # noqa: E402
import _common  # noqa: E402
import _forest_caches  # noqa: E402

ROOT = _blender.ROOT
SCRIPTS = ROOT / "tests" / "blender_scripts"
PRESETS = [
    ("quaking_aspen", {"leaves": 15}),
    ("callistemon", {"leaves": 20}),
    ("white_birch", {"levels": 2, "leaves": 12}),
    ("small_maple", {"levels": 2, "leaves": 12}),
]


def make_forest(work: Path, frames: int, seeds=(1, 2, 3), name: str = "forest") -> Path:
    (work / f"{name}.json").write_text(json.dumps(_forest_caches.spec(PRESETS, seeds, frames)))
    blend = work / f"{name}.blend"
    cmd = ["blender", "-b", "--factory-startup", "--python", str(SCRIPTS / "forest_scene.py"), "--"]
    proc = subprocess.run(
        cmd + [str(blend), str(work / f"{name}.json")], capture_output=True, text=True, env=_blender.blender_env()
    )
    if proc.returncode or not blend.is_file():
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit("making the forest failed")
    return blend


def project(per_tree: list, write_per_tree: float, start_s: float, n: int, cores: int) -> dict:
    """Wall time [s] of ``n`` trees (the measured ones repeated) on ``cores`` workers: the larger of the total
    over the cores and the largest tree, plus a worker's start, plus the parent's writing."""
    times = [per_tree[i % len(per_tree)] for i in range(n)]
    compute = max(sum(times) / cores, max(times)) + start_s
    write = write_per_tree * n
    return {"compute_s": round(compute, 1), "write_s": round(write, 1), "total_s": round(compute + write, 1)}


def inner(blend: str, work: str) -> dict:
    sys.path.insert(0, str(ROOT / "tools"))
    sys.path.insert(0, str(SCRIPTS))
    import bake_forest
    from forest_bake import key_difference, scene_keys

    forest = bake_forest.load_forest(str(ROOT))
    import bpy

    bpy.ops.wm.open_mainfile(filepath=blend)
    scene = bpy.context.scene
    start, end = scene.frame_start, scene.frame_end
    found = forest.resolve(scene.objects)
    names = [t.name for t in found.trees]
    t0 = time.perf_counter()
    for name in names:
        bpy.context.view_layer.objects.active = bpy.data.objects[name]
        assert bpy.ops.stiff_rods.bake() == {"FINISHED"}, name
    serial_s = time.perf_counter() - t0
    serial_keys = scene_keys(bpy, names)

    bpy.ops.wm.open_mainfile(filepath=blend)
    folder = os.path.join(work, "pool")
    t0 = time.perf_counter()
    pool = forest.ForestPool(blend, found.trees, start, end, folder, workers=2, kind="python")
    final = pool.run()
    pool_s = time.perf_counter() - t0
    assert final.finished and not final.failures, final.failures
    write = forest.write_forest(folder)
    parallel_s = time.perf_counter() - t0
    diff = key_difference(scene_keys(bpy, names), serial_keys)
    entries = sorted(pool.manifest["trees"], key=lambda e: -e["seconds"])
    per_tree = [e["seconds"] for e in entries]
    busiest = max(sum(e["seconds"] for e in entries if e["worker"] == w) for w in {e["worker"] for e in entries})

    t0 = time.perf_counter()
    rc = bake_forest.main([blend, "--workers", "2", "--json", "--out", os.path.join(work, "dask_baked.blend")])
    dask_s = time.perf_counter() - t0
    assert rc == 0
    t0 = time.perf_counter()
    usd = _forest_caches.usd_run(blend, work)
    usd_s = time.perf_counter() - t0
    return cache_keys(usd, usd_s) | {
        "trees": len(names),
        "frames": end - start + 1,
        "segments_total": sum(e["segments"] for e in entries),
        "serial_s": round(serial_s, 2),
        "parallel_s": round(parallel_s, 2),
        "dask_s": round(dask_s, 2),
        "speedup_2_workers": round(serial_s / parallel_s, 3),
        "speedup_dask": round(serial_s / dask_s, 3),
        "max_rotation_diff_vs_serial": max(diff.values()),
        "per_tree_s": [round(t, 3) for t in per_tree],
        "write_s": round(write.seconds, 3),
        "write_fraction_of_serial": round(write.seconds / serial_s, 4),
        "write_keys_per_s": round(write.keys / write.seconds),
        "worker_start_s": round(pool_s - busiest, 2),
    }


def cache_keys(usd: dict, usd_s: float) -> dict:
    """The --usd run's numbers: per tree in the workers (bake + export, biggest first), the parent's own time."""
    order = sorted(usd["per_tree_s"], key=lambda n: -usd["per_tree_s"][n])
    return {
        "usd_s": round(usd_s, 2),
        "per_tree_cache_s": [usd["per_tree_s"][n] for n in order],
        "per_tree_export_s": [usd["per_tree_export_s"][n] for n in order],
        "parent_s_12": usd["parent_s"],
        "parent_cpu_s_12": usd["parent_cpu_s"],
        "resolve_s_12": round(usd["parent_resolve_wait_s"], 2),
        "usd_root_s_12": usd["usd_root_s"],
    }


def run_inner(flag: str, blend: Path, work: Path) -> dict:
    proc = subprocess.run([sys.executable, __file__, flag, str(blend), str(work)], capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode or not lines:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"the forest benchmark failed (exit {proc.returncode})")
    return json.loads(lines[-1])


def parent_keys(result: dict, many: dict) -> dict:
    """parent_s_per_tree at 12 and at ``many``'s tree count, the 1000-tree projection with caches on 64 and 512
    cores and the parent's share on 64 (target <= 0.10)."""
    n = many["trees"]
    parents = {"12": result.pop("parent_s_12"), str(n): many["parent_s"]}
    cpu = {"12": result.pop("parent_cpu_s_12"), str(n): many["parent_cpu_s"]}
    args = (result["per_tree_cache_s"], result["worker_start_s"], result["resolve_s_12"], parents, 1000)
    projection = {cores: _forest_caches.project_parent(*args, cores) for cores in (64, 512)}
    cpu_64 = _forest_caches.project_parent(*args[:3], cpu, 1000, 64)
    return {
        "parent_s": parents,
        "parent_s_per_tree": {k: round(v / int(k), 5) for k, v in parents.items()},
        "resolve_s_120": round(many["parent_resolve_wait_s"], 2),
        "usd_s_120": many["seconds"],
        "usd_root_s_120": many["usd_root_s"],
        "projection_caches_1000_trees": projection,
        "parent_share_64_cores": projection[64]["parent_share"],
        "parent_share_target_met": projection[64]["parent_share"] <= 0.10,
        "parent_cpu_s": cpu,
        "parent_cpu_share_64_cores": cpu_64["parent_share"],
    }


def main():
    for flag, run in (("--inner", inner), ("--inner-usd", _forest_caches.usd_run)):
        if flag in sys.argv:
            blend, work = sys.argv[sys.argv.index(flag) + 1 :][:2]
            print(json.dumps(run(blend, work)))
            return
    ap = _common.arguments(__doc__)
    ap.add_argument("--frames", type=int, default=96, help="frames baked per tree (default 96)")
    ap.add_argument("--frames-many", type=int, default=4, help="frames of the 120-tree --usd run (default 4)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="forest_bench_") as tmp:
        work = Path(tmp)
        result = run_inner("--inner", make_forest(work, args.frames), work)
        many = make_forest(work, args.frames_many, seeds=range(1, 31), name="forest120")
        (work / "many").mkdir()
        result.update(parent_keys(result, run_inner("--inner-usd", many, work / "many")))
    per_tree, n_trees = result["per_tree_s"], result["trees"]
    result["projection_1000_trees"] = {
        cores: project(per_tree, result["write_s"] / n_trees, result["worker_start_s"], 1000, cores)
        for cores in (64, 512)
    }
    result["write_bound_cores"] = round(sum(per_tree) / result["write_s"])
    _common.report(result, args.json, "{:>28}: {}")


if __name__ == "__main__":
    main()
