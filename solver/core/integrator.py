"""The time integrators of :class:`~solver.core.timestep.Simulator` on the linear oscillator x'' = −ω²x:
their one-step maps exactly as the simulator applies them (the implicit stage, the velocities read back from
the positions, the mass-proportional damping as a decay e^(−c h) of the stage's velocity), the numerical
damping ratio and frequency these give, and the damping coefficient that makes a mode's damping ratio a
chosen one at a given Δt.

Each mode of a linearised rod model with mass-proportional damping c is such an oscillator with modal damping
c/(2ω) (Rayleigh damping, α term), so the ratio set at the first mode holds at any Δt for that mode; higher
modes get less of the set damping (c/(2ω)) and more of the integrator's own."""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

INTEGRATORS = ("euler", "bdf2")


def check_integrator(name: str, value) -> str:
    """``value`` if it names an integrator, else ValueError naming ``name``."""
    if value not in INTEGRATORS:
        raise ValueError(f"{name} must be one of {INTEGRATORS}, got {value!r}")
    return value


def step_matrix(integrator: str, omega: float, dt: float, damping: float = 0.0) -> np.ndarray:
    """The simulator's step on x'' = −ω²x as a matrix on the state: (x, v) for ``"euler"``, (x_n, v_n, x_{n−1},
    v_{n−1}) for ``"bdf2"``. ``damping``: the mass-proportional coefficient c [1/s]."""
    check_integrator("integrator", integrator)
    if integrator == "euler":
        h = dt
        start = np.eye(2)  # the stage starts from (x_n, v_n)
    else:
        h = 2.0 * dt / 3.0
        start = np.array([[4.0, 0.0, -1.0, 0.0], [0.0, 4.0, 0.0, -1.0]]) / 3.0  # (x̂, v̂)
    # stage: x_{n+1} = x̂ + h v̂ − h² ω² x_{n+1}; velocity (x_{n+1} − x̂)/h, then decayed by e^(−c h)
    x_new = (start[0] + h * start[1]) / (1.0 + (h * omega) ** 2)
    v_new = math.exp(-damping * h) * (x_new - start[0]) / h
    if integrator == "euler":
        return np.array([x_new, v_new])
    return np.array([x_new, v_new, [1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])


def discrete_mode(integrator: str, omega: float, dt: float, damping: float = 0.0) -> tuple[float, float]:
    """Damping ratio ζ and undamped angular frequency ω [rad/s] that a fit of c + A e^(−ζωt) cos(ω√(1−ζ²)t + φ)
    to the sampled motion reports: from the step map's oscillating eigenvalue z, σ = −ln|z|/Δt,
    ω_d = arg z/Δt, ζ = σ/√(σ² + ω_d²), ω = √(σ² + ω_d²)."""
    eig = np.linalg.eigvals(step_matrix(integrator, omega, dt, damping))
    turning = eig[eig.imag > 1e-14]  # BDF2's parasitic root is real (≈ 1/3 at small ωΔt)
    if turning.size == 0:
        return 1.0, omega  # the discrete motion does not oscillate: overdamped
    z = turning[np.argmax(np.abs(turning))]
    sigma, omega_d = -math.log(abs(z)) / dt, abs(math.atan2(z.imag, z.real)) / dt
    w = math.hypot(sigma, omega_d)
    return sigma / w, w


def mass_damping_for_ratio(zeta: float, frequency_hz: float, dt: float, integrator: str) -> float:
    """The mass-proportional damping c [1/s] under which a mode of ``frequency_hz`` stepped with ``integrator``
    at ``dt`` decays with damping ratio ``zeta`` (the integrator's own damping included); ValueError when the
    integrator alone already damps that mode more."""
    if not (np.isfinite(zeta) and 0.0 <= zeta < 1.0):
        raise ValueError(f"damping ratio must be in [0, 1), got {zeta}")
    if not (np.isfinite(frequency_hz) and frequency_hz > 0.0):
        raise ValueError(f"damping frequency must be > 0 Hz, got {frequency_hz}")
    omega = 2.0 * math.pi * frequency_hz
    own = discrete_mode(integrator, omega, dt)[0]
    if own > zeta:
        hint = "a smaller Δt" + (" or integrator='bdf2'" if integrator == "euler" else "")
        raise ValueError(
            f"the {integrator!r} integrator alone damps {frequency_hz:g} Hz by ζ = {own:.3g} at Δt = {dt:g} s, "
            f"more than the damping ratio {zeta:g} asked for: use {hint}"
        )
    if own == zeta:
        return 0.0
    high = 2.0 * zeta * omega + 1.0
    while discrete_mode(integrator, omega, dt, high)[0] < zeta:
        high *= 2.0
    return float(brentq(lambda c: discrete_mode(integrator, omega, dt, c)[0] - zeta, 0.0, high, xtol=1e-12))
