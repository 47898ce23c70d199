"""Cioacă & Cărămizaru Table 1 on our deformable linear object (DLO), plus XPBD/KKT on the same scene and
the pendulum θ'' = −sin θ energy drift per integrator.

Scene: a soft thread (L = 0.5 m, 10 edges, r = 1 cm, E = 5 kPa, G = E/2.6, ρ = 1000 kg/m³, mass
damping 0.5 /s, spring dashpots β = 2 ms), clamped at one end, released horizontally under gravity. For
each integrator the largest stable Δt is found by bisection (stable = every state finite and the total
energy never more than 0.1·m g L above its start during 10 s), then the median time per step is
measured; score = max Δt / time per step (the seed's ratio). "pendulum_energy_drift_rel": θ'' = −sin θ
from θ = 1 rad at rest, 100 s, per Δt: max |ΔH|/|H0| and signed final ΔH/|H0| (H0 = −cos 1), and
whether it was pumped over the top. "symplectic_measured": det of the one-step map on the pendulum is 1
(to 1e-8) at h = 0.5. XPBD with the direct solver (3 iterations) runs the same thread at fixed Δt up
to 40 ms.

"tree_damping_ratio": the XPBD simulator's own integrators on a tree (the Sapling small pine of
benchmarks/tree_sway.py, no leaves, no drag), pulled at 2/3 of its trunk and released:
``Simulator(integrator="bdf2").set_damping_ratio(0.1, f1)`` with f1 fitted to an undamped BDF2 run at
Δt = 1/240 s, and the damping ratio fitted to 6 s of the pull point's sway at Δt = 1/240…1/24 s (target:
within 10 % of 0.1); beside it the damping implicit Euler adds with no damping set.
``--damping-only`` runs just this part.

    python3 benchmarks/integrators.py --json     # last stdout line: one JSON object
    python3 benchmarks/integrators.py --plot docs/integrators.png   # also draw the figure (the one in docs/)
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
from plotting import add_plot_argument, pyplot, save  # noqa: E402

from solver.core.timestep import NonFiniteStateError  # noqa: E402
from solver.models.dlo import DLORod  # noqa: E402
from solver.models.integrators import INTEGRATORS, get_integrator, step_map_jacobian_det  # noqa: E402
from solver.models.rod_models import StiffRod  # noqa: E402

LENGTH, EDGES, RADIUS, E_MOD, DENSITY, DAMPING, G = 0.5, 10, 0.01, 5e3, 1000.0, 0.5, 9.81
SPRING_DAMPING = (
    2e-3  # s: dashpots c = β k on the springs (a thread dissipates; without them explicit Euler has no stable Δt)
)
SEED_TABLE = {
    "explicit_euler": (0.0098, 8, False, 1.225),
    "symplectic_euler": (0.0294, 8, True, 3.675),
    "midpoint": (0.0153, 8, False, 1.9125),
    "half_step": (0.0168, 10, False, 1.68),
    "verlet": (0.023, 10, True, 2.3),
    "forest_ruth": (0.021, 12, True, 1.75),
    "symplectic_midpoint": (0.028, 8, True, 3.5),
    "rk4": (0.027, 14, False, 1.928),
    "modified_half_step": (0.0216, 10, False, 2.16),
}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def thread_points():
    pts = np.zeros((EDGES + 1, 3))
    pts[:, 0] = np.linspace(0.0, LENGTH, EDGES + 1)
    return pts


def energy_scale():
    return DENSITY * np.pi * RADIUS**2 * LENGTH * G * LENGTH


def dlo(integrator):
    return DLORod(
        thread_points(),
        RADIUS,
        E_MOD,
        None,
        DENSITY,
        integrator=integrator,
        damping=DAMPING,
        spring_damping=SPRING_DAMPING,
    )


def stable(integrator: str, dt: float, duration: float) -> bool:
    rod = dlo(integrator)
    e0 = rod.energy()
    bound = e0 + 0.1 * energy_scale()
    with np.errstate(all="ignore"):
        try:
            for k in range(int(math.ceil(duration / dt))):
                rod.step(dt)
                if k % 10 == 0 and not rod.energy() <= bound:
                    return False
        except NonFiniteStateError:
            return False
        return bool(rod.energy() <= bound)


def max_stable_dt(integrator: str, duration: float, rel_tol: float) -> float:
    # search downwards: unstable trials stop early, so only the stable ones near the limit are long
    hi = 0.128
    if stable(integrator, hi, duration):
        return hi
    lo = 0.5 * hi
    while not stable(integrator, lo, duration):
        lo, hi = 0.5 * lo, lo
        if lo < 1e-6:
            return 0.0
    while hi / lo > 1.0 + rel_tol:
        mid = math.sqrt(lo * hi)
        if stable(integrator, mid, duration):
            lo = mid
        else:
            hi = mid
    return lo


def time_per_step(integrator: str, dt: float, steps: int = 300) -> float:
    rod = dlo(integrator)
    samples = []
    for _ in range(steps):
        t0 = time.perf_counter()
        rod.step(dt)
        samples.append(time.perf_counter() - t0)
    return float(np.median(samples))


def xpbd_same_scene(dts, duration: float) -> dict:
    out = {}
    for dt in dts:
        rod = StiffRod(thread_points(), RADIUS, E_MOD, None, DENSITY, solver="kkt", iterations=3, damping=DAMPING)
        m = rod.model.masses

        def energy(rod=rod, m=m):
            return rod.kinetic_energy() - float(np.sum(m * (rod.sim.positions @ rod.gravity)))

        e0, worst, ok = energy(), -np.inf, True
        try:
            for _ in range(int(round(duration / dt))):
                rod.step(dt)
                worst = max(worst, energy() - e0)
        except NonFiniteStateError:
            ok = False
        out[f"{dt * 1e3:g}ms"] = {
            "stable": bool(ok and worst <= 0.1 * energy_scale()),
            "max_energy_rise_J": float(worst),
            "final_tip_z_m": float(rod.centerline()[-1, 2]),
        }
    return out


def pendulum(name: str, h: float, t_end: float, theta0: float = 1.0):
    """θ'' = −sin θ from (θ0, 0) for ``t_end`` [s] with step h: energy H = θ'²/2 − cos θ relative to |H0|
    (max deviation and signed final change), and whether the pendulum was pumped over the top (|θ| > π)."""
    step = get_integrator(name).step
    acc = lambda x, v: -np.sin(x)  # noqa: E731
    x, v, mem = np.array([theta0]), np.array([0.0]), {}
    h0 = 0.5 * v[0] ** 2 - math.cos(x[0])
    xs, vs, drift, energy = [x[0]], [v[0]], 0.0, h0
    for _ in range(int(round(t_end / h))):
        x, v = step(x, v, h, acc, mem)
        if not (np.isfinite(x[0]) and np.isfinite(v[0]) and abs(x[0]) < 1e3):
            return {"max_rel": math.inf, "final_rel": math.inf, "over_the_top": True}, np.array(xs), np.array(vs)
        xs.append(x[0])
        vs.append(v[0])
        energy = 0.5 * v[0] ** 2 - math.cos(x[0])
        drift = max(drift, abs(energy - h0))
    stats = {
        "max_rel": drift / abs(h0),
        "final_rel": (energy - h0) / abs(h0),
        "over_the_top": bool(np.max(np.abs(xs)) > math.pi),
    }
    return stats, np.array(xs), np.array(vs)


def summary(table: dict, ranking: list, targets: dict):
    """The report's lines: largest stable Δt, cost per step and score per integrator, best first."""
    for n in ranking:
        r = table[n]
        yield (
            f"{n:>20} {r['max_dt_s'] * 1e3:8.3f} ms {r['ms_per_step']:7.3f} ms/step score {r['score']:8.2f} "
            f"symplectic {r['symplectic_measured']}"
        )
    yield str(targets)


def tree_damping_ratio(zeta: float = 0.1, dts=(1 / 240, 1 / 120, 1 / 60, 1 / 24)) -> dict:
    """The "tree_damping_ratio" part (module docstring)."""
    from tree_sway import build, fit_decay, pulled_rest

    from solver import Simulator

    model, trunk, _, info = build("small_pine", False)
    seg = int(trunk[int(round(2 / 3 * (len(trunk) - 1)))])
    pose = pulled_rest(model, seg, info["height_m"])

    def decay(dt: float, integrator: str, seconds: float, f1: float | None = None) -> tuple[float, float]:
        sim = Simulator(model, dt=dt, max_iterations=10, tolerance=1e-9, integrator=integrator)
        sim.positions, sim.orientations = pose[0].copy(), pose[1].copy()
        if f1 is not None:
            sim.set_damping_ratio(zeta, f1)
        x = np.empty(int(round(seconds / dt)))
        for k in range(x.size):
            sim.step()
            x[k] = sim.positions[seg, 0]
        return fit_decay(dt * np.arange(1, x.size + 1), x)

    f1, zeta_undamped = decay(1 / 240, "bdf2", 4.0)
    rows = {}
    for dt in dts:
        f, z = decay(dt, "bdf2", 6.0, f1)
        rows[f"dt_1/{round(1 / dt)}"] = {
            "bdf2_zeta": z,
            "bdf2_f_hz": f,
            "bdf2_rel_error": z / zeta - 1.0,
            "euler_zeta_no_damping_set": decay(dt, "euler", 6.0)[1],
        }
        log(f"tree damping dt 1/{round(1 / dt)}: {rows[f'dt_1/{round(1 / dt)}']}")
    return {
        "tree": "small_pine",
        "segments": model.n_segments,
        "set_zeta": zeta,
        "f1_hz": f1,
        "bdf2_zeta_undamped_dt_1/240": zeta_undamped,
        "by_dt": rows,
        "within_10_percent": all(abs(r["bdf2_rel_error"]) <= 0.1 for r in rows.values()),
    }


def integrator_table(duration: float, rel_tol: float) -> dict:
    """Per integrator: the largest stable Δt (bisection to ``rel_tol``, ``duration`` s trials), the time per
    step, the score, the step map's area determinant and the pendulum's energy drift, beside the seed's row."""
    acc = lambda x, v: -np.sin(x)  # noqa: E731
    table = {}
    for name in INTEGRATORS:
        dt_max = max_stable_dt(name, duration, rel_tol)
        tps = time_per_step(name, dt_max if dt_max > 0 else 1e-4)
        det = step_map_jacobian_det(name, acc, 1.0, 0.3, 0.5)
        drift = {f"dt_{h:g}": pendulum(name, h, 100.0)[0] for h in (0.1, 0.3, 0.9)}  # 100 s
        table[name] = {
            "max_dt_s": dt_max,
            "ms_per_step": 1e3 * tps,
            "score": dt_max / tps,
            "symplectic_claimed": INTEGRATORS[name].symplectic_claimed,
            "symplectic_measured": bool(abs(det - 1.0) < 1e-8),
            "area_det_h0.5": det,
            "force_evaluations": INTEGRATORS[name].evaluations,
            "pendulum_energy_drift_rel": drift,
            "seed": dict(zip(("max_dt_s", "ms", "symplectic", "score"), SEED_TABLE[name], strict=True)),
        }
        log(
            f"{name:>20}: max dt {dt_max * 1e3:7.3f} ms, {tps * 1e3:.3f} ms/step, score {dt_max / tps:8.2f}, "
            f"det {det:.8f}, pendulum drift {drift}"
        )
    ref = table["explicit_euler"]["score"]
    for name, r in table.items():
        r["score_rel_explicit_euler"] = r["score"] / ref if ref > 0 else None
        r["seed"]["score_rel_explicit_euler"] = SEED_TABLE[name][3] / SEED_TABLE["explicit_euler"][3]
    return table


def draw(table: dict, ranking: list, duration: float, path: str | None) -> str | None:
    """The scores relative to explicit Euler beside the seed's, and pendulum phase portraits, written to
    ``path``; returns the path, or None without ``path`` or matplotlib."""
    plt = pyplot(path)
    if plt is None:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    names = ranking
    pos = np.arange(len(names))
    ours = [table[n]["score_rel_explicit_euler"] for n in names]
    seed = [SEED_TABLE[n][3] / SEED_TABLE["explicit_euler"][3] for n in names]
    axes[0].bar(
        pos - 0.2,
        ours,
        0.4,
        label="ours (DLO thread)",
        color=["tab:green" if table[n]["symplectic_measured"] else "tab:gray" for n in names],
    )
    axes[0].bar(pos + 0.2, seed, 0.4, label="seed Table 1", color="tab:blue", alpha=0.6)
    axes[0].set_xticks(pos, [n.replace("_", "\n") for n in names], fontsize=7)
    axes[0].set_yscale("log")
    axes[0].set_ylabel("score / score of explicit Euler")
    axes[0].set_title(f"score = max Δt / time per step ({duration:g} s trials; green: symplectic)", fontsize=9)
    axes[0].legend(fontsize=7)
    for name in ("explicit_euler", "midpoint", "symplectic_euler", "symplectic_midpoint", "forest_ruth", "rk4"):
        _, xs, vs = pendulum(name, 0.3, 30.0)
        axes[1].plot(xs, vs, lw=0.8, label=name)
    axes[1].set_xlim(-3.5, 3.5)
    axes[1].set_ylim(-3, 3)
    axes[1].set_xlabel("θ")
    axes[1].set_ylabel("θ'")
    axes[1].set_title("pendulum θ'' = −sin θ, Δt = 0.3, 30 s")
    axes[1].legend(fontsize=7)
    return save(fig, path)


def main() -> None:
    ap = _common.arguments(__doc__)
    ap.add_argument("--duration", type=float, default=10.0, help="simulated seconds per stability trial")
    ap.add_argument("--rel-tol", type=float, default=0.05, help="bisection stops at hi/lo ≤ 1 + this")
    ap.add_argument("--quick", action="store_true", help="2 s trials, 15 %% bisection tolerance")
    ap.add_argument("--damping-only", action="store_true", help="only the tree_damping_ratio part")
    add_plot_argument(ap, "the scores and the pendulum's phase portraits")
    args = ap.parse_args()
    if args.damping_only:
        _common.report({"benchmark": "integrators", "tree_damping_ratio": tree_damping_ratio()}, args.json)
        return
    if args.quick:
        args.duration, args.rel_tol = 2.0, 0.15
    t_start = time.perf_counter()
    table = integrator_table(args.duration, args.rel_tol)
    ranking = sorted(table, key=lambda k: -table[k]["score"])
    seed_ranking = sorted(SEED_TABLE, key=lambda k: -SEED_TABLE[k][3])
    targets = {
        "symplectic_euler_ahead_of_explicit_euler": table["symplectic_euler"]["score"]
        > table["explicit_euler"]["score"],
        "explicit_euler_least_stable": all(
            table["explicit_euler"]["max_dt_s"] <= r["max_dt_s"] for r in table.values()
        ),
    }
    xpbd = xpbd_same_scene((0.001, 0.005, 0.01, 0.02, 0.04), args.duration)
    targets["xpbd_kkt_stable_up_to_40ms"] = all(v["stable"] for v in xpbd.values())
    plot_path = draw(table, ranking, args.duration, args.plot)
    out = {
        "benchmark": "integrators",
        "scene": {
            "length_m": LENGTH,
            "edges": EDGES,
            "radius_m": RADIUS,
            "youngs_modulus_Pa": E_MOD,
            "density": DENSITY,
            "damping_per_s": DAMPING,
            "spring_damping_s": SPRING_DAMPING,
            "trial_s": args.duration,
        },
        "table": table,
        "ranking_by_score": ranking,
        "seed_ranking_by_score": seed_ranking,
        "xpbd_kkt": xpbd,
        "tree_damping_ratio": tree_damping_ratio(),
        "targets_met": targets,
        "plot": plot_path,
        "wall_s": time.perf_counter() - t_start,
    }
    _common.report(out, args.json, summary=summary(table, ranking, targets))


if __name__ == "__main__":
    main()
