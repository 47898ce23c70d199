"""Deul §5, Fig. 9: residual vs iterations (log-log) of the direct KKT solver and Gauss–Seidel for the
cantilever with 8, 50 and 1000 segments — the runs of benchmarks/convergence.py (same rest state,
same stopping rules), drawn as the paper's figure with ``--plot PATH``. Budget: Gauss–Seidel runs until
it matches the 1-iteration KKT residual or reaches --gs-cap iterations (100000) for 8 and 50 segments,
--gs-cap-large (10000, ~2–3 min here) for 1000 segments (the paper ran 500000). The rest state's tip
deflection is checked against Euler–Bernoulli plus the joints' stretch compliance.

    python3 benchmarks/fig9.py --json             # last stdout line: one JSON object
    python3 benchmarks/fig9.py --plot docs/fig9.png   # also draw the figure (the one in docs/)
    python3 benchmarks/fig9.py --gs-cap-large 2000   # fewer GS iterations for 1000 segments
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import _common  # noqa: E402
from convergence import DENSITY, LENGTH, RADIUS, G, run_size  # noqa: E402
from plotting import add_plot_argument, pyplot, save  # noqa: E402

from solver.core.model import DEFAULT_STRETCH_COMPLIANCE  # noqa: E402


def joint_compliance_deflection(n: int, euler_bernoulli: float) -> float:
    """Euler–Bernoulli tip deflection [m] plus the shear give of the n zero-stretch joints: joint j at
    x = j l carries the weight outboard of it, w (L − j l), through compliance σ⁻¹, so the tip drops by
    another σ⁻¹ Σ_j w (L − j l) = σ⁻¹ W (n + 1) / 2 (W the beam's weight)."""
    weight = DENSITY * math.pi * RADIUS**2 * LENGTH * G
    return euler_bernoulli + DEFAULT_STRETCH_COMPLIANCE * weight * (n + 1) / 2.0


def draw(results: dict, path: str | None) -> str | None:
    """Deul Fig. 9 from the runs ``results`` (per size: GS and KKT residual traces), written to ``path``;
    returns the path, or None without ``path`` or matplotlib."""
    plt = pyplot(path)
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for n, r in results.items():
        gs = np.array(r["gs_trace"])
        (line,) = ax.loglog(gs[:, 0], gs[:, 1], label=f"GS {n}")
        kkt = np.maximum(np.array(r["kkt_trace"]), 1e-20)
        ax.loglog(np.arange(1, kkt.size + 1), kkt, "o--", color=line.get_color(), label=f"KKT {n}")
    ax.set_xlabel("iterations")
    ax.set_ylabel("‖C + α̃λ‖∞")
    ax.set_title("Deul Fig. 9: cantilever, one step from rest")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    return save(fig, path)


def main() -> None:
    ap = _common.arguments(__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[8, 50, 1000])
    ap.add_argument("--gs-cap", type=int, default=100000, help="GS iterations at most per size")
    ap.add_argument("--gs-cap-large", type=int, default=10000, help="GS iterations at most for sizes > 100")
    add_plot_argument(ap, "Deul Fig. 9")
    args = ap.parse_args()
    t0 = time.perf_counter()
    results = {}
    for n in args.sizes:
        # fixed iteration budgets (not seconds), so that the curves do not depend on the machine's load;
        # the convergence benchmark's defaults for everything else
        cap = args.gs_cap if n <= 100 else args.gs_cap_large
        run_args = argparse.Namespace(
            gs_cap=cap,
            gs_budget=math.inf,
            floor_level=1e-12,
            floor_patience=5000,
            damping=2.0,
            ke_tol=1e-12,
            max_rest_time=120.0,
            kkt_iterations=5,
            repeats=5,
        )
        results[str(n)] = run_size(n, run_args)
    plot_path = draw(results, args.plot)
    summary = {
        n: {
            k: r[k]
            for k in (
                "residual_at_prediction",
                "kkt_residual_1",
                "kkt_residual_3",
                "gs_residual_1",
                "gs_residual_4",
                "gs_iters_to_match",
                "gs_iterations_run",
                "gs_stop_reason",
                "gs_best_residual",
                "gs_iters_to_match_extrapolated",
                "kkt_ms_per_iteration",
                "gs_ms_per_iteration",
                "rest_converged",
                "tip_deflection_m",
                "tip_deflection_euler_bernoulli_m",
            )
        }
        for n, r in results.items()
    }
    for n, r in summary.items():
        r["tip_deflection_with_joint_compliance_m"] = joint_compliance_deflection(
            int(n), r["tip_deflection_euler_bernoulli_m"]
        )
    out = {
        "benchmark": "fig9",
        "sizes": summary,
        "gs_cap": args.gs_cap,
        "gs_cap_large": args.gs_cap_large,
        "paper": {
            "kkt_residual_1": {"8": 4.4e-18, "50": 2.8e-16, "1000": 2.2e-13},
            "gs_residual_1": {"8": 3.5e-4, "50": 5e-3, "1000": 1e-1},
        },
        "plot": plot_path,
        "wall_s": time.perf_counter() - t0,
    }
    _common.report(out, args.json, summary=[json.dumps(summary, indent=1)])


if __name__ == "__main__":
    main()
