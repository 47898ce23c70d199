"""Scaling of one Newton (KKT) iteration with the number of segments: chains and random trees.

For each scene (``scenes.chain(n)``, ``scenes.random_tree(n, seed=0)``) and size: build
``Simulator(model, dt=1/60)``, ``begin_step()``, one warm-up ``iterate("kkt")`` (it builds the
symbolic elimination schedule once per topology; timed as ``symbolic_s``, which includes that
first numeric iteration), then the median time of 15 further ``iterate("kkt")`` calls
(factor + solve + update + residual). Times are process CPU times (``time.process_time``, with
OMP_NUM_THREADS=1: single-threaded), so other processes on a shared machine do not count. The
linear-time claim is checked by the least-squares slope of log(ms) against log(segments).

With numba (``compiled`` in the JSON) chains and trees are solved by the compiled Newton iteration
(solver/core/compiled.py); without it chains by the banded joint-space Cholesky (solver/core/kkt_chain.py) and
trees by tree contraction (solver/core/kkt_tree.py), as the Simulator chooses. Memory: each scene is built
and stepped once in a fresh process at 10 000 and 100 000 segments; ``memory_bytes_per_segment`` is the
growth of the peak resident set between the two, divided by the 90 000 extra segments (interpreter and
imports cancel). Targets: slope ≤ 1.1, ≤ 40 ms per iteration at 100 000 segments, ≤ 3 kB per segment.

Measured on the 2-core development machine, shared with other jobs (numba 0.61.2): at 100 000 segments the
medians of 15 iterations in five runs within one quiet half hour were 38.1, 38.4, 38.5, 38.5 and 38.7 ms (chain)
and 36.5–38.6 ms (random tree), slopes 1.02–1.04, peak memory 2.80 (chain) and 2.94 (tree) kB per segment; in
hours when the other jobs loaded the memory bus, 41–78 ms (slopes 0.96–1.13 accordingly).

    python3 benchmarks/scaling.py --json      # last stdout line: one JSON object
    python3 benchmarks/scaling.py --quick     # smoke run (1000 and 10000 segments, no memory runs)
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"  # before numpy loads its BLAS thread pool

import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _common  # noqa: E402

from solver import Simulator, compiled_status  # noqa: E402
from solver.build.scenes import chain, random_tree  # noqa: E402

TARGET_SLOPE = 1.1
TARGET_MS_AT_100K = 40.0  # ms per iteration at 100 000 segments
TARGET_BYTES_PER_SEGMENT = 3000.0
TARGET_US_PER_SEGMENT = 0.6  # µs per segment and iteration, at every size
SCENES = {"chain": lambda n: chain(n), "tree": lambda n: random_tree(n, seed=0)}


def log(*args) -> None:
    print(*args, file=sys.stderr, flush=True)


def peak_rss_kib() -> int:
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)  # KiB on Linux


def measure(scene: str, n: int, repeats: int) -> dict:
    t0 = time.process_time()
    model = SCENES[scene](n)
    build_s = time.process_time() - t0
    sim = Simulator(model, dt=1.0 / 60.0)
    sim.begin_step()
    t0 = time.process_time()
    r_first = sim.iterate("kkt")
    symbolic_s = time.process_time() - t0
    samples, residuals = [], []
    for _ in range(repeats):
        t0 = time.process_time()
        residuals.append(sim.iterate("kkt"))
        samples.append(time.process_time() - t0)
    ms = 1e3 * float(np.median(samples))
    out = {
        "segments": model.n_segments,
        "joints": model.n_joints,
        "scene_build_s": build_s,
        "symbolic_s": symbolic_s,
        "symbolic_minus_one_iteration_s": symbolic_s - 1e-3 * ms,
        "elimination_rounds": sim.step_context.joints.elimination_rounds,
        "ms_per_iteration": ms,
        "samples_ms": [1e3 * s for s in samples],
        "residual_after_warmup": r_first,
        "residual_last": residuals[-1],
        "peak_rss_kib": peak_rss_kib(),
    }
    log(
        f"{scene:>5} n={n:>7}: build {build_s:.2f} s, symbolic+first iteration {symbolic_s:.2f} s, "
        f"{ms:.2f} ms/iteration (median of {repeats}), residual {r_first:.2e} → {residuals[-1]:.2e}, "
        f"peak RSS {out['peak_rss_kib'] / 1024:.0f} MiB"
    )
    return out


def own_peak_rss_kib() -> int:
    """This process's own peak RSS [KiB] (VmHWM; ru_maxrss would include the parent's peak before exec)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


def peak_rss_after_step(scene: str, n: int) -> int:
    """Peak RSS [KiB] of a fresh process that builds the scene and takes one time step."""
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); import scaling; "
        f"from solver import Simulator; sim = Simulator(scaling.SCENES[{scene!r}]({n}), dt=1/60, max_iterations=3, "
        f"tolerance=0.0); sim.step(); print(scaling.own_peak_rss_kib())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def memory_per_segment(scene: str, small: int = 10000, large: int = 100000) -> dict:
    rss = {n: peak_rss_after_step(scene, n) for n in (small, large)}
    per = 1024.0 * (rss[large] - rss[small]) / (large - small)
    log(
        f"{scene:>5}: peak RSS {rss[small] / 1024:.0f} MiB at {small}, {rss[large] / 1024:.0f} MiB at {large} "
        f"segments: {per:.0f} bytes per segment"
    )
    return {"peak_rss_kib": {str(k): v for k, v in rss.items()}, "bytes_per_segment": per}


def loglog_slope(sizes, ms) -> float | None:
    if len(sizes) < 2:
        return None
    return float(np.polyfit(np.log(np.asarray(sizes, float)), np.log(np.asarray(ms, float)), 1)[0])


def summary(scenes: list, detail: dict, slopes: dict, met: dict):
    """The report's lines: cost per iteration per size and scene, then each scene's log-log slope."""
    yield f"{'scene':>6} {'segments':>9} {'ms/iter':>10} {'symbolic s':>11} {'rounds':>7}"
    for s in scenes:
        for d in detail[s]:
            yield (
                f"{s:>6} {d['segments']:>9} {d['ms_per_iteration']:10.2f} {d['symbolic_s']:11.2f} "
                f"{d['elimination_rounds']:>7}"
            )
        if slopes[s] is not None:
            yield f"{s:>6} log-log slope {slopes[s]:.3f} (target ≤ {TARGET_SLOPE}): {'met' if met[s] else 'NOT met'}"


def main() -> None:
    ap = _common.arguments(__doc__)
    ap.add_argument("--quick", action="store_true", help="smoke run: 1000 and 10000 segments, 3 repeats")
    ap.add_argument(
        "--sizes", type=int, nargs="+", default=None, help="segment counts (default 1000 3000 10000 30000 100000)"
    )
    ap.add_argument("--repeats", type=int, default=None, help="timed iterations per size (default 15; 3 with --quick)")
    ap.add_argument("--scenes", nargs="+", default=list(SCENES), choices=list(SCENES))
    args = ap.parse_args()
    sizes = args.sizes or ([1000, 10000] if args.quick else [1000, 3000, 10000, 30000, 100000])

    t_all = time.perf_counter()
    detail = {s: [] for s in args.scenes}
    for n in sizes:
        reps = args.repeats or (3 if args.quick else 15)
        for scene in args.scenes:
            detail[scene].append(measure(scene, n, reps))
    ms = {s: [d["ms_per_iteration"] for d in detail[s]] for s in args.scenes}
    slopes = {s: loglog_slope(sizes, ms[s]) for s in args.scenes}
    met = {s: (slopes[s] is not None and slopes[s] <= TARGET_SLOPE) for s in args.scenes}
    memory = {} if args.quick else {s: memory_per_segment(s) for s in args.scenes}
    at_100k = {s: d["ms_per_iteration"] for s in args.scenes for d in detail[s] if d["segments"] >= 100000}
    per_segment = {s: [1e3 * d["ms_per_iteration"] / d["segments"] for d in detail[s]] for s in args.scenes}
    out = {
        "benchmark": "scaling",
        "sizes": sizes,
        "ms_per_iteration": ms,
        "memory_bytes_per_segment": {s: m["bytes_per_segment"] for s, m in memory.items()},
        "memory_detail": memory,
        "symbolic_s": {s: [d["symbolic_s"] for d in detail[s]] for s in args.scenes},
        "loglog_slope": slopes,
        "target_slope_le": TARGET_SLOPE,
        "targets_met": met,
        "compiled": compiled_status()[1],
        "ms_per_iteration_at_100k": at_100k,
        "target_ms_at_100k_le": TARGET_MS_AT_100K,
        "target_ms_at_100k_met": bool(at_100k) and all(v <= TARGET_MS_AT_100K for v in at_100k.values()),
        "us_per_segment_iteration": per_segment,
        "target_us_per_segment_le": TARGET_US_PER_SEGMENT,
        "target_us_per_segment_met": all(v <= TARGET_US_PER_SEGMENT for u in per_segment.values() for v in u),
        "target_bytes_per_segment_le": TARGET_BYTES_PER_SEGMENT,
        "target_bytes_per_segment_met": bool(memory)
        and all(m["bytes_per_segment"] <= TARGET_BYTES_PER_SEGMENT for m in memory.values()),
        "peak_rss_kib": peak_rss_kib(),
        "detail": detail,
        "wall_s": time.perf_counter() - t_all,
    }
    _common.report(out, args.json, summary=summary(args.scenes, detail, slopes, met))


if __name__ == "__main__":
    main()
