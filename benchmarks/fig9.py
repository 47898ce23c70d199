"""Deul §5, Fig. 9: residual vs iterations (log-log) of the direct KKT solver and Gauss–Seidel for the
cantilever with 8, 50 and 1000 segments — the runs of benchmarks/convergence.py (same rest state,
same stopping rules), drawn as the paper's figure into docs/fig9.png.

    python3 benchmarks/fig9.py --json             # last stdout line: one JSON object
    python3 benchmarks/fig9.py --gs-budget 60     # seconds of GS per size (default 120)
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from convergence import run_size  # noqa: E402
from plotting import pyplot, save  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--sizes", type=int, nargs="+", default=[8, 50, 1000])
    ap.add_argument("--gs-cap", type=int, default=100000)
    ap.add_argument("--gs-budget", type=float, default=120.0)
    args = ap.parse_args()
    # the convergence benchmark's defaults for everything else
    run_args = argparse.Namespace(gs_cap=args.gs_cap, gs_budget=args.gs_budget, floor_level=1e-12, floor_patience=5000,
                                  damping=2.0, ke_tol=1e-12, max_rest_time=120.0, kkt_iterations=5, repeats=5)
    t0 = time.perf_counter()
    results = {str(n): run_size(n, run_args) for n in args.sizes}
    plt, plot_path = pyplot(), None
    if plt is not None:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for n, r in results.items():
            gs = np.array(r["gs_trace"])
            line, = ax.loglog(gs[:, 0], gs[:, 1], label=f"GS {n}")
            kkt = np.maximum(np.array(r["kkt_trace"]), 1e-20)
            ax.loglog(np.arange(1, kkt.size + 1), kkt, "o--", color=line.get_color(), label=f"KKT {n}")
        ax.set_xlabel("iterations")
        ax.set_ylabel("‖C + α̃λ‖∞")
        ax.set_title("Deul Fig. 9: cantilever, one step from rest")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, ncol=2)
        plot_path = save(fig, "fig9.png")
    summary = {n: {k: r[k] for k in ("kkt_residual_1", "kkt_residual_3", "gs_residual_1", "gs_residual_4",
                                     "gs_iters_to_match", "gs_iterations_run", "gs_best_residual",
                                     "kkt_ms_per_iteration", "gs_ms_per_iteration")} for n, r in results.items()}
    out = {"benchmark": "fig9", "sizes": summary, "gs_budget_s": args.gs_budget,
           "paper": {"kkt_residual_1": {"8": 4.4e-18, "50": 2.8e-16, "1000": 2.2e-13},
                     "gs_residual_1": {"8": 3.5e-4, "50": 5e-3, "1000": 1e-1}},
           "plot": plot_path, "wall_s": time.perf_counter() - t0}
    if not args.json:
        print(json.dumps(summary, indent=1))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
