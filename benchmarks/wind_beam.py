"""Steady uniform wind on a clamped beam: static deflection vs the uniform-load formula w L⁴ / (8 E I).

A horizontal beam along +x (L = 2 m, r = 1 cm, E = 10 GPa, 50 segments, clamped at x = 0, no gravity) in a
uniform wind of 5 m/s along +y. The cross-flow drag per unit length of a segment at rest is
w = ½ ρ_air C_d (2r) u² (solver/air/drag.py), so Euler–Bernoulli gives the tip deflection w L⁴ / (8 E I).
The deflection is small (δ/L ≈ 0.4 %, tip slope ≈ 0.006 rad) so the flow stays normal to the beam.

Two solves: kinetic damping (velocities cleared after every step: the drag then sees the full wind, as
the beam at rest does) until the pose no longer changes, and an honest dynamic run in which the beam
swings with drag on its own relative velocity (plus mass damping to settle it in a few seconds).

    python3 benchmarks/wind_beam.py --json      # last stdout line: one JSON object
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common  # noqa: E402
from _wind_common import kinetic_damping  # noqa: E402

from solver import Simulator  # noqa: E402
from solver.air.drag import CD_BRANCH, RHO_AIR, AerodynamicDrag  # noqa: E402
from solver.air.wind import WindField  # noqa: E402
from solver.build.scenes import cantilever  # noqa: E402
from solver.core.model import cross_section_moments  # noqa: E402

LENGTH, RADIUS, YOUNGS, DENSITY, WIND = 2.0, 0.01, 10e9, 800.0, 5.0


def beam_in_wind(n: int, dt: float, damping: float) -> Simulator:
    model = cantilever(n, length=LENGTH, radius=RADIUS, youngs_modulus=YOUNGS, density=DENSITY)
    sim = Simulator(model, dt=dt, gravity=(0.0, 0.0, 0.0), damping=damping, max_iterations=20, tolerance=1e-13)
    sim.force_fields.append(AerodynamicDrag(model, WindField(WIND, (0.0, 1.0, 0.0))))
    return sim


def kinetic_damping_solve(n: int) -> tuple[float, int, float]:
    """Step with velocities cleared after each step until nothing moves; (deflection [m], steps, ms/step)."""
    sim = beam_in_wind(n, dt=1.0 / 60.0, damping=0.0)
    t0 = time.perf_counter()
    steps = kinetic_damping(sim, tol=1e-15, max_steps=5000)
    return float(sim.tip()[1]), steps, 1e3 * (time.perf_counter() - t0) / steps


def dynamic_solve(n: int, seconds: float) -> tuple[float, float]:
    """Free dynamics from rest under the wind (drag on the relative velocity, 2/s mass damping)."""
    sim = beam_in_wind(n, dt=1.0 / 100.0, damping=2.0)
    sim.run(int(round(seconds / sim.dt)))
    return float(sim.tip()[1]), sim.kinetic_energy()


def main() -> None:
    ap = _common.arguments(__doc__)
    ap.add_argument("--segments", type=int, default=50)
    args = ap.parse_args()

    w = 0.5 * RHO_AIR * CD_BRANCH * 2.0 * RADIUS * WIND**2  # N/m
    i1, _, _ = cross_section_moments(np.array([RADIUS, RADIUS]))
    analytic = w * LENGTH**4 / (8.0 * YOUNGS * i1)
    deflection, steps, ms = kinetic_damping_solve(args.segments)
    dynamic, ke_end = dynamic_solve(args.segments, seconds=12.0)
    rel = (deflection - analytic) / analytic
    result = {
        "segments": args.segments,
        "wind_mps": WIND,
        "load_N_per_m": w,
        "tip_deflection_m": deflection,
        "analytic_m": analytic,
        "rel_error": abs(rel),
        "rel_error_signed": rel,
        "static_steps": steps,
        "ms_per_step": ms,
        "dynamic_tip_deflection_m": dynamic,
        "dynamic_rel_error": abs(dynamic - analytic) / analytic,
        "dynamic_final_kinetic_energy_J": ke_end,
        "target_rel_error_le": 0.01,
        "target_met": bool(abs(rel) <= 0.01 and abs(dynamic - analytic) / analytic <= 0.01),
    }
    _common.report(result, args.json, "{:>32}: {}")


if __name__ == "__main__":
    main()
