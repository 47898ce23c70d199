"""A pole on a carrier that stops: the sway vs a clamped beam's analytic response to the same base motion.

A vertical wooden pole (L = 2 m, r = 1 cm, E = 12.5 GPa, ρ = 1000 kg/m³: the add-on's Wood; 0.1 m segments,
no gravity, no damping) is clamped at its foot to a carrier that moves along +x: at rest, then up to
v₀ = 0.5 m/s with a raised-cosine velocity ramp over 1 s, at v₀ until t = 1.5 s, then stopped within two frames
(24 fps). The carrier's position is sampled at every frame and interpolated linearly in between, as the
add-on does with an animated armature or curve; the root's anchor segment is driven through
``Simulator(kinematic=...)``, 32 substeps per frame.

Analytic (Euler–Bernoulli, uniform clamped-free beam, relative coordinates): the deflection relative to the
base w(x, t) obeys m ẅ + EI w'''' = −m a_b(t), so each mode n (βₙL = 1.8751, 4.6941, 7.8548, …: cos βL cosh βL
= −1; ωₙ = (βₙL)² √(EI / m L⁴)) obeys q̈ₙ + ωₙ² qₙ = −Γₙ a_b with the participation factor
Γₙ = ∫φₙ dx / ∫φₙ² dx = 2σₙ/(βₙL) and φₙ(L) = 2(−1)ⁿ⁺¹ (φₙ = cosh βx − cos βx − σₙ(sinh βx − sin βx),
σₙ = (cosh βL + cos βL)/(sinh βL + sin βL); Blevins, *Formulas for Natural Frequency and Mode Shape*,
table 8-1; Chopra, *Dynamics of Structures*, base excitation of distributed-mass systems). A piecewise-linear
base position has the acceleration Σₖ Δvₖ δ(t − tₖ) (Δvₖ: the velocity change at frame k), so the Duhamel
integral is a sum of impulse responses: w(L, t) = −Σₙ φₙ(L) Γₙ Σₖ Δvₖ sin ωₙ(t − tₖ)/ωₙ over tₖ < t.

Reported: the largest tip deflection relative to the carrier after the stop, simulated and analytic (and
their ratio; target within 10 %), the same for the first swing alone, and the RMS difference of the two
histories over the whole run.

    python3 benchmarks/carrier.py --json      # last stdout line: one JSON object
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import brentq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common  # noqa: E402

from solver import Simulator  # noqa: E402
from solver.build.tree_builder import tree_from_branches  # noqa: E402

LENGTH, RADIUS, YOUNGS, TORSION, DENSITY = 2.0, 0.01, 12.5e9, 6.5e9, 1000.0
SEGMENT = 0.1
FPS, SUBSTEPS = 24, 32
SPEED, RAMP, STOP, STOP_FRAMES, DURATION = 0.5, 1.0, 1.5, 2, 3.5  # m/s, s, s, frames, s


def carrier_positions(
    fps: float = FPS,
    speed: float = SPEED,
    ramp: float = RAMP,
    stop: float = STOP,
    stop_frames: int = STOP_FRAMES,
    duration: float = DURATION,
) -> np.ndarray:
    """The carrier's displacement [m] at frames 0, 1, … (frame k at t = k/fps): the integral of a velocity
    that rises as ½ v₀ (1 − cos πt/ramp), stays at v₀, and falls linearly to 0 over ``stop_frames`` from ``stop``."""
    t = np.arange(int(round(duration * fps)) + 1) / fps
    fine = np.linspace(0.0, t[-1], 200 * t.size)
    v = np.where(fine < ramp, 0.5 * speed * (1.0 - np.cos(np.pi * fine / ramp)), speed)
    v *= np.clip(1.0 - (fine - stop) * fps / stop_frames, 0.0, 1.0)
    x = np.concatenate(([0.0], np.cumsum(0.5 * (v[1:] + v[:-1]) * np.diff(fine))))
    return np.interp(t, fine, x)


def clamped_free_modes(n_modes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """βₙL, Γₙ and φₙ(L) of the first ``n_modes`` modes of a uniform clamped-free beam (module docstring)."""
    beta = np.array(
        [
            brentq(lambda b: np.cos(b) * np.cosh(b) + 1.0, (k - 0.5) * np.pi - 0.5, (k - 0.5) * np.pi + 0.5)
            for k in range(1, n_modes + 1)
        ]
    )
    sigma = (np.cosh(beta) + np.cos(beta)) / (np.sinh(beta) + np.sin(beta))
    gamma = 2.0 * sigma / beta
    tip = 2.0 * (-1.0) ** np.arange(n_modes)
    return beta, gamma, tip


def analytic_tip(t, frame_positions, fps, length, radius, youngs, density, n_modes: int = 8) -> np.ndarray:
    """Tip deflection [m] relative to the base at times ``t`` for a base that moves through
    ``frame_positions`` (frame k at k/fps) linearly in between: the modal Duhamel sum of the module docstring."""
    beta, gamma, tip = clamped_free_modes(n_modes)
    ei = youngs * np.pi * radius**4 / 4.0
    m = density * np.pi * radius**2
    omega = beta**2 * np.sqrt(ei / (m * length**4))
    v = np.diff(frame_positions) * fps  # velocity over each frame interval
    dv = np.diff(np.concatenate(([0.0], v, [0.0])))  # velocity change at each frame
    tk = np.arange(dv.size) / fps
    t = np.asarray(t, dtype=float)
    tau = t[:, None] - tk[None, :]
    w = np.zeros(t.shape)
    for wn, g, phi in zip(omega, gamma, tip, strict=True):
        w -= phi * g * np.sum(np.where(tau > 0.0, dv * np.sin(wn * tau) / wn, 0.0), axis=1)
    return w


def first_frequency(length, radius, youngs, density) -> float:
    """The first bending frequency [Hz] of the uniform clamped-free beam."""
    beta = clamped_free_modes(1)[0][0]
    ei = youngs * np.pi * radius**4 / 4.0
    return float(beta**2 * np.sqrt(ei / (density * np.pi * radius**2 * length**4)) / (2.0 * np.pi))


def simulate(frame_positions, fps=FPS, substeps=SUBSTEPS) -> tuple[np.ndarray, np.ndarray, float]:
    """The pole on the carrier: (times [s], tip deflection relative to the carrier along x [m], ms per step)."""
    n = int(round(LENGTH / SEGMENT))
    pts = np.zeros((n + 1, 3))
    pts[:, 2] = np.linspace(0.0, LENGTH, n + 1)
    model, bmap = tree_from_branches(
        [(pts, np.full(n + 1, RADIUS))], youngs_modulus=YOUNGS, torsion_modulus=TORSION, density=DENSITY
    )
    anchor = bmap.anchors[0]
    rest_x, rest_q = model.positions[[anchor]].copy(), model.orientations[[anchor]].copy()
    frames_t = np.arange(len(frame_positions)) / fps

    def base(t):
        return float(np.interp(t, frames_t, frame_positions))

    def driver(t):
        return rest_x + [base(t), 0.0, 0.0], rest_q

    sim = Simulator(
        model,
        dt=1.0 / (fps * substeps),
        gravity=(0.0, 0.0, 0.0),
        damping=0.0,
        max_iterations=10,
        tolerance=1e-10,
        kinematic=driver,
    )
    tip_segment = bmap.span_segment[0][-1]
    steps = (len(frame_positions) - 1) * substeps
    t, w = np.empty(steps), np.empty(steps)
    t0 = time.perf_counter()
    for k in range(steps):
        sim.step()
        t[k] = sim.time
        w[k] = sim.tip(tip_segment)[0] - base(sim.time)
    return t, w, 1e3 * (time.perf_counter() - t0) / steps


def compare(t, w_sim, w_ref, stop: float, period: float) -> dict:
    """Amplitudes after ``stop`` (all, and the first swing: one ``period``) of two tip histories, and their RMS
    difference over the whole run."""
    after = t > stop
    first = after & (t < stop + period)
    return dict(
        amplitude_sim_m=float(np.max(np.abs(w_sim[after]))),
        amplitude_analytic_m=float(np.max(np.abs(w_ref[after]))),
        first_swing_sim_m=float(w_sim[first][np.argmax(np.abs(w_sim[first]))]),
        first_swing_analytic_m=float(w_ref[first][np.argmax(np.abs(w_ref[first]))]),
        rms_difference_m=float(np.sqrt(np.mean((w_sim - w_ref) ** 2))),
    )


def main() -> None:
    ap = _common.arguments(__doc__)
    ap.add_argument("--substeps", type=int, default=SUBSTEPS)
    args = ap.parse_args()
    x = carrier_positions()
    t, w_sim, ms = simulate(x, substeps=args.substeps)
    w_ref = analytic_tip(t, x, FPS, LENGTH, RADIUS, YOUNGS, DENSITY)
    f1 = first_frequency(LENGTH, RADIUS, YOUNGS, DENSITY)
    result = dict(first_frequency_hz=f1, speed_m_s=SPEED, stop_s=STOP)
    result.update(compare(t, w_sim, w_ref, STOP, 1.0 / f1))
    result["amplitude_ratio"] = result["amplitude_sim_m"] / result["amplitude_analytic_m"]
    result["first_swing_ratio"] = result["first_swing_sim_m"] / result["first_swing_analytic_m"]
    result["ms_per_step"] = ms
    _common.report(result, args.json)


if __name__ == "__main__":
    main()
