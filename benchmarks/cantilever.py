"""Deul §5 cantilever: L = 10 m, r = 0.5 m, E = 1 GPa, 50 segments, tip force 1000 N, root clamped.

Static tip deflection vs Euler–Bernoulli FL³/3EI (target rel_error ≤ 1e-3), and the period of the
first bending mode vs the continuum value 0.7148 s (ρ = 1000 kg/m³).

    python3 benchmarks/cantilever.py --json      # last stdout line: one JSON object
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _common  # noqa: E402

from solver import Simulator  # noqa: E402
from solver.build.scenes import cantilever, cantilever_period, cantilever_tip_deflection  # noqa: E402
from solver.core.model import DEFAULT_STRETCH_COMPLIANCE  # noqa: E402

FORCE_N = 1000.0


def loaded_beam(n: int, dt: float, damping: float, stretch_compliance: float = DEFAULT_STRETCH_COMPLIANCE) -> Simulator:
    model = cantilever(n, stretch_compliance=stretch_compliance)
    sim = Simulator(model, dt=dt, gravity=(0.0, 0.0, 0.0), damping=damping, max_iterations=10, tolerance=1e-12)
    tip = model.n_segments - 1
    sim.add_point_load(tip, [0.0, 0.0, 0.5 * model.lengths[tip]], [0.0, 0.0, -FORCE_N])
    return sim


def static_deflection(n: int, stretch_compliance: float = DEFAULT_STRETCH_COMPLIANCE) -> tuple[float, float]:
    """Damped dynamics until the tip is at rest; returns (deflection [m], ms per step)."""
    sim = loaded_beam(n, dt=1.0 / 60.0, damping=8.0, stretch_compliance=stretch_compliance)
    t0 = time.perf_counter()
    steps = 0
    previous = np.inf
    while steps < 3000:
        sim.run(30)
        steps += 30
        z = -sim.tip()[2]
        if abs(z - previous) < 1e-12 and sim.kinetic_energy() < 1e-14:
            break
        previous = z
    return -sim.tip()[2], 1e3 * (time.perf_counter() - t0) / steps


def first_period(n: int, dt: float, duration: float) -> float:
    """Undamped free vibration about the static deflection (load applied suddenly at t = 0): the mean
    spacing of upward zero crossings of the tip's z about its mean."""
    sim = loaded_beam(n, dt=dt, damping=0.0)
    steps = int(round(duration / dt))
    z = np.empty(steps)
    for k in range(steps):
        sim.step()
        z[k] = sim.tip()[2]
    t = dt * np.arange(1, steps + 1)
    y = z - 0.5 * (z.max() + z.min())
    up = np.flatnonzero((y[:-1] < 0.0) & (y[1:] >= 0.0))
    crossings = t[up] - y[up] * dt / (y[up + 1] - y[up])  # linear interpolation
    return float(np.mean(np.diff(crossings)))


def main() -> None:
    ap = _common.arguments(__doc__)
    ap.add_argument("--segments", type=int, default=50)
    ap.add_argument("--period-dt", type=float, default=1.0 / 1000.0, help="time step for the period run [s]")
    args = ap.parse_args()

    analytic = cantilever_tip_deflection(FORCE_N)
    deflection, ms_per_step = static_deflection(args.segments)
    rel = (deflection - analytic) / analytic
    # The zero-stretch compliance adds a shear-like slip of σ⁻¹·F per joint; with it ~0 only the
    # discretisation error is left (expected 1/(2n²) for the midpoint clamp).
    deflection_stiff, _ = static_deflection(args.segments, stretch_compliance=1e-14)
    rel_stiff = (deflection_stiff - analytic) / analytic
    period = first_period(args.segments, args.period_dt, duration=4.0)
    period_ref = cantilever_period()
    result = {
        "segments": args.segments,
        "force_N": FORCE_N,
        "tip_deflection_m": deflection,
        "analytic_m": analytic,
        "rel_error": abs(rel),
        "rel_error_signed": rel,
        "stretch_compliance_m_per_N": DEFAULT_STRETCH_COMPLIANCE,
        "rel_error_without_stretch_compliance": abs(rel_stiff),
        "discretisation_error_expected": 1.0 / (2.0 * args.segments**2),
        "ms_per_step_static": ms_per_step,
        "period_s": period,
        "period_continuum_s": period_ref,
        "period_rel_diff": (period - period_ref) / period_ref,
        "period_dt_s": args.period_dt,
        "target_rel_error_le": 1e-3,
        "target_met": bool(abs(rel) <= 1e-3),
    }
    _common.report(result, args.json, "{:>40}: {}")


if __name__ == "__main__":
    main()
