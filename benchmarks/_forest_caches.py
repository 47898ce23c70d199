"""benchmarks/forest.py's part on writing that scales: tools/bake_forest.py --usd, and the parent's share.

``usd_run`` bakes a forest with ``--usd`` on a 2-worker LocalCluster in this process and gives the tool's JSON
summary (per tree: the bake and the export in the worker; ``parent_s``: the parent's own time, everything but
waiting for the workers: submitting, receiving, the root layer; ``parent_resolve_wait_s``: the worker that opened
the scene and found its trees). ``project_parent`` fits the parent's time as a + b·trees through its 12- and
120-tree measurements and projects 1000 trees on 64 cores.
"""

import contextlib
import io
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def usd_run(blend: str, work: str, workers: int = 2) -> dict:
    """tools/bake_forest.py ``blend --usd work/usd/forest.usda --workers N --json`` in this process: its summary."""
    sys.path.insert(0, str(ROOT / "tools"))
    import bake_forest

    out = os.path.join(work, "usd")
    os.makedirs(out, exist_ok=True)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = bake_forest.main([blend, "--workers", str(workers), "--json", "--usd", os.path.join(out, "forest.usda")])
    lines = [line for line in buf.getvalue().splitlines() if line.startswith("{")]
    assert rc == 0 and lines, buf.getvalue()[-3000:]
    return json.loads(lines[-1])


def spec(presets, seeds, frames: int) -> dict:
    """A forest of every preset × seed, 8 m apart, in a gusty, turbulent 10 m/s wind."""
    trees = [
        {"preset": name, "seed": seed, "location": [8.0 * i, 8.0 * seed, 0.0], "overrides": overrides}
        for seed in seeds
        for i, (name, overrides) in enumerate(presets)
    ]
    return {"trees": trees, "frames": [1, frames], "wind": {"speed": 10.0, "gusts": 0.2, "turbulence": 2.0}}


def project_parent(per_tree: list, start_s: float, resolve_s: float, parents: dict, n: int, cores: int) -> dict:
    """Wall time [s] of ``n`` trees (``per_tree``: bake + export in a worker, repeated) on ``cores`` workers: the
    worker that opens the scene and finds its trees (``resolve_s``), the larger of the total over the cores and
    the largest tree plus a worker's start, and the parent's own time, fitted as a + b·trees through ``parents``
    ({trees: seconds}); the parent's share of that wall time."""
    (n1, p1), (n2, p2) = sorted((int(k), v) for k, v in parents.items())
    b = max((p2 - p1) / (n2 - n1), 0.0)
    a = max(p1 - b * n1, 0.0)
    parent = a + b * n
    times = [per_tree[i % len(per_tree)] for i in range(n)]
    compute = max(sum(times) / cores, max(times)) + start_s
    total = resolve_s + compute + parent
    return {
        "resolve_s": round(resolve_s, 1),
        "compute_s": round(compute, 1),
        "parent_s": round(parent, 2),
        "parent_fit_s": [round(a, 4), round(b, 6)],
        "total_s": round(total, 1),
        "parent_share": round(parent / total, 4),
    }
