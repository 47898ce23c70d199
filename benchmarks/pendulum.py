"""Physical pendulum on a ball joint: a rigid rod (one segment, L = 1 m, r = 1 cm) pivoting about its end,
released at rest 90° from the vertical, Δt = 1/240 s, no damping set.

Reports the period of every half swing against the elliptic-integral value at the amplitude that swing
reached, T = 4 sqrt(L_eff/g) K(sin(θ0/2)) with L_eff = I/(m d) = (L²/3 + r²/4)/(L/2) (worst relative error),
and the amplitude kept after 1, 10 and 100 periods, with ``Simulator(integrator="bdf2")`` (second order; target
≥ 99 % after 100 periods) and, beside it, with XPBD's implicit Euler step (``"euler"``), whose damping grows
with Δt.

    python3 benchmarks/pendulum.py --json      # last stdout line: one JSON object
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from scipy.special import ellipk

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _common  # noqa: E402

from solver import Simulator, rod_from_polyline  # noqa: E402

LENGTH, RADIUS, G, DT = 1.0, 0.01, 9.81, 1.0 / 240.0
L_EFF = (LENGTH**2 / 3 + RADIUS**2 / 4) / (LENGTH / 2)


def period(amplitude: float) -> float:
    return 4.0 * np.sqrt(L_EFF / G) * ellipk(np.sin(amplitude / 2) ** 2)


def swing(integrator: str) -> dict:
    """Run the pendulum for 100.5 periods with ``integrator``; the period and amplitude figures."""
    model = rod_from_polyline([[-0.05, 0, 0], [0, 0, 0], [LENGTH, 0, 0]], RADIUS, 1e9, start="ball")
    sim = Simulator(model, dt=DT, max_iterations=20, tolerance=1e-10, integrator=integrator)
    t0 = period(np.pi / 2)
    steps = int(np.ceil(100.5 * t0 / DT))
    angle = np.empty(steps)
    start = time.process_time()
    for k in range(steps):
        sim.step()
        x, _, z = sim.positions[1]
        angle[k] = np.arctan2(x, -z)
    cpu = time.process_time() - start
    times = DT * np.arange(1, steps + 1)
    cross = np.flatnonzero(np.sign(angle[:-1]) != np.sign(angle[1:]))
    tc = times[cross] - angle[cross] * DT / (angle[cross + 1] - angle[cross])
    amplitude = np.array([np.max(np.abs(angle[a : b + 1])) for a, b in zip(cross[:-1], cross[1:], strict=True)])
    half = np.diff(tc)
    error = half / (np.array([period(a) for a in amplitude]) / 2) - 1.0

    def kept(periods: int) -> float:  # amplitude of the half swing after that many periods, over 90°
        return float(amplitude[min(2 * periods, amplitude.size) - 1] / (np.pi / 2))

    return {
        "first_quarter_rel_error": float(tc[0] / (t0 / 4) - 1.0),
        "half_period_max_rel_error": float(np.max(np.abs(error))),
        "amplitude_kept_1_period": kept(1),
        "amplitude_kept_10_periods": kept(10),
        "amplitude_kept_100_periods": kept(100),
        "masked_lambda_max": float(np.max(np.abs(sim.lam[:, 3:]))),
        "cpu_ms_per_step": 1e3 * cpu / steps,
    }


def main() -> None:
    args = _common.arguments(__doc__).parse_args()
    result: dict = {"dt_s": DT, "period_90deg_s": float(period(np.pi / 2)), "target_amplitude_kept_100_periods": 0.99}
    for integrator in ("bdf2", "euler"):
        result[integrator] = swing(integrator)
    _common.report(result, args.json)


if __name__ == "__main__":
    main()
