"""Deul §5, Fig. 10: residual vs iterations for PBER, PaOBCR, Gauss–Seidel (GS) and KKT on the
50-segment cantilever (L = 10 m, r = 0.5 m, E = 1 GPa, ρ = 1000 kg/m³, gravity, Δt = 1/60 s).

The beam is brought to rest with the direct solver (as benchmarks/convergence.py). Every method then
starts from that identical rest state: PaOBCR's particles are the segment ends and its quaternions
the segment orientations, PBER's ghosts sit at distance l along d1; masses lumped as Deul §5 (PaOBCR:
half of each adjacent segment per particle, w_q from I⊥; PBER: ⅓ per particle and ghost). One time
step is opened (prediction, λ ← 0) and the Chebyshev norm of C + α̃λ (m and 1/m rows, Deul's units)
is recorded after 1, 2, … iterations, until the iteration cap or the per-method time budget.
PaOBCR and PBER run in the papers' order (bilateral) and in the vectorised even/odd order (colored).

    python3 benchmarks/fig10.py --json        # last stdout line: one JSON object
    python3 benchmarks/fig10.py --plot docs/fig10.png   # also draw the figure (the one in docs/)
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import _common  # noqa: E402
from convergence import DENSITY, DT, E_MOD, LENGTH, RADIUS, G, bring_to_rest, restore_and_predict, snapshot  # noqa: E402
from plotting import add_plot_argument, pyplot, save  # noqa: E402

from solver.core import quaternion as quat  # noqa: E402
from solver.models.paobcr import PaOBCRRod  # noqa: E402
from solver.models.pber import PBERRod  # noqa: E402

N_SEGMENTS = 50
MARKS = (1, 10, 100, 1000, 10000, 100000)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def rest_centerline(sim) -> np.ndarray:
    lengths = sim.model.lengths
    half = np.zeros((lengths.size, 3))
    half[:, 2] = 0.5 * lengths
    start = sim.positions - quat.rotate(sim.orientations, half)
    end = sim.positions + quat.rotate(sim.orientations, half)
    return np.concatenate((start[:1], 0.5 * (end[:-1] + start[1:]), end[-1:]))


def particle_rod(cls, sim, ordering: str):
    """A PaOBCR/PBER cantilever identical in geometry and material, put into the KKT rest state."""
    n = N_SEGMENTS
    seg = LENGTH / n
    pts = np.zeros((n + 2, 3))
    pts[:, 0] = np.linspace(-seg, LENGTH, n + 2)
    rod = cls(pts, RADIUS, E_MOD, None, DENSITY, ordering=ordering, gravity=(0.0, 0.0, -G), iterations=1)
    k = rod.n_points
    rod.x[:k] = rest_centerline(sim)
    if cls is PaOBCRRod:
        rod.q[:] = sim.orientations
    else:
        mid = 0.5 * (rod.x[: k - 1] + rod.x[1:k])
        rod.x[k:] = mid + rod.ghost_distance[:, None] * quat.rotate(sim.orientations, np.array([1.0, 0.0, 0.0]))
    return rod


def trace(open_step, iterate, residual, cap: int, budget: float) -> dict:
    """Residual after log-spaced iteration counts; ms per iteration from the iterate() calls alone."""
    open_step()
    marks = set(np.unique(np.round(np.logspace(0, math.log10(cap), 80)).astype(int)).tolist()) | set(MARKS)
    its, res, spent = [], [], 0.0
    k = 0
    for k in range(1, cap + 1):
        t0 = time.perf_counter()
        iterate()
        spent += time.perf_counter() - t0
        if k in marks:
            r = residual()
            its.append(k)
            res.append(r)
            if not math.isfinite(r):
                break
        if spent > budget:
            r = residual()
            if not its or its[-1] != k:
                its.append(k)
                res.append(r)
            break
    at = dict(zip(its, res, strict=True))
    out = {f"residual_{m}": at.get(m) for m in MARKS if m <= cap}
    out.update(
        {
            "iterations_run": k,
            "ms_per_iteration": 1e3 * spent / k,
            "best_residual": float(np.nanmin(res)),
            "final_residual": res[-1],
            "trace": [[i, r] for i, r in zip(its, res, strict=True)],
        }
    )
    return out


def summary(results: dict, shape: dict):
    """The report's lines: residuals after 1, 10, 100, 1000 iterations and the cost of one, per method."""
    for key, r in results.items():
        yield (
            f"{key:>15}: r1 {r['residual_1']:.3e}  r10 {r.get('residual_10')}  r100 {r.get('residual_100')}  "
            f"r1000 {r.get('residual_1000')}  {r['ms_per_iteration']:.3f} ms/it  ({r['iterations_run']} its)"
        )
    yield str(shape)


def draw(results: dict, path: str | None) -> str | None:
    """Deul Fig. 10 from the residual traces of ``results``, written to ``path``; returns the path, or None
    without ``path`` or matplotlib."""
    plt = pyplot(path)
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, style in (
        ("PBER", "-"),
        ("PBER_colored", ":"),
        ("PaOBCR", "-"),
        ("PaOBCR_colored", ":"),
        ("GS", "-"),
        ("KKT", "-o"),
    ):
        tr = np.array(results[key]["trace"])
        ax.loglog(tr[:, 0], np.maximum(tr[:, 1], 1e-20), style, label=key.replace("_colored", " (even/odd)"))
    ax.set_xlabel("iterations")
    ax.set_ylabel("‖C + α̃λ‖∞")
    ax.set_title("Deul Fig. 10: 50-segment cantilever, one step from rest")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, path)


def main() -> None:
    ap = _common.arguments(__doc__)
    ap.add_argument("--cap", type=int, default=100000, help="iteration cap per method (default 100000)")
    ap.add_argument("--budget", type=float, default=150.0, help="seconds of iterations per method (default 150)")
    ap.add_argument("--quick", action="store_true", help="cap 1000, budget 20 s")
    add_plot_argument(ap, "Deul Fig. 10")
    args = ap.parse_args()
    if args.quick:
        args.cap, args.budget = 1000, 20.0
    t_start = time.perf_counter()
    sim, info = bring_to_rest(N_SEGMENTS, damping=2.0, ke_tol=1e-12, max_time=120.0)
    state = snapshot(sim)
    results = {}
    results["KKT"] = trace(
        lambda: restore_and_predict(sim, state), lambda: sim.iterate("kkt"), sim.residual, min(args.cap, 5), args.budget
    )
    log(f"KKT: {results['KKT']['trace']}")
    results["GS"] = trace(
        lambda: restore_and_predict(sim, state), lambda: sim.iterate("gs"), sim.residual, args.cap, args.budget
    )
    log(f"GS: {results['GS']['iterations_run']} iterations, best {results['GS']['best_residual']:.3g}")
    for name, cls in (("PaOBCR", PaOBCRRod), ("PBER", PBERRod)):
        for ordering in ("bilateral", "colored"):
            rod = particle_rod(cls, sim, ordering)
            key = name if ordering == "bilateral" else f"{name}_colored"
            results[key] = trace(lambda rod=rod: rod.begin_step(DT), rod.iterate, rod.residual, args.cap, args.budget)
            log(
                f"{key}: {results[key]['iterations_run']} iterations, {results[key]['ms_per_iteration']:.3f} ms/it, "
                f"r1 {results[key]['residual_1']:.3g}, best {results[key]['best_residual']:.3g}"
            )
    kkt1 = results["KKT"]["residual_1"]
    pa_best = min(results["PaOBCR"]["best_residual"], results["PaOBCR_colored"]["best_residual"])
    pa_iters = max(results["PaOBCR"]["iterations_run"], results["PaOBCR_colored"]["iterations_run"])
    shape = {
        "kkt_residual_1": kkt1,
        "paobcr_best_residual": pa_best,
        "paobcr_iterations": pa_iters,
        "kkt1_below_paobcr_best": bool(kkt1 < pa_best),
        "cost_ratio_gs_to_paobcr_colored": results["GS"]["ms_per_iteration"]
        / results["PaOBCR_colored"]["ms_per_iteration"],
    }
    plot_path = draw(results, args.plot)
    out = {
        "benchmark": "fig10",
        "segments": N_SEGMENTS,
        "dt": DT,
        "cap": args.cap,
        "budget_s": args.budget,
        **{k: v for k, v in results.items()},
        "shape": shape,
        "rest": info,
        "paper": {
            "paobcr_iterations_to_kkt1_order": ">100000",
            "gs_cost_vs_paobcr": 13.9,
            "paobcr_cost_vs_kkt_to_same_error": 5890,
        },
        "plot": plot_path,
        "wall_s": time.perf_counter() - t_start,
    }
    _common.report(out, args.json, summary=summary(results, shape))


if __name__ == "__main__":
    main()
