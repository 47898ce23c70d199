"""Simulator(integrator="bdf2"): second order in Δt, energy kept, stiffness independent of Δt and iterations.

References are independent of the integrator: the elliptic-integral period of a physical pendulum, the
convergence order read from a log-log fit of errors over Δt (the reference run at a 4× smaller Δt than the
smallest fitted one), and Euler–Bernoulli's FL³/3EI for statics."""

import numpy as np
import pytest
from scipy.optimize import curve_fit
from scipy.special import ellipk

from solver import Simulator, rod_from_polyline
from solver.build.scenes import cantilever, cantilever_period, cantilever_tip_deflection

LENGTH, RADIUS, G = 1.0, 0.01, 9.81
L_EFF = (LENGTH**2 / 3 + RADIUS**2 / 4) / (LENGTH / 2)  # physical pendulum: I / (m d)


def pendulum_angles(integrator: str, seconds: float, dt: float = 1 / 240) -> np.ndarray:
    """Angle from the vertical of a rod on a ball joint released at rest at 90°, after every step."""
    model = rod_from_polyline([[-0.05, 0, 0], [0, 0, 0], [LENGTH, 0, 0]], RADIUS, 1e9, start="ball")
    sim = Simulator(model, dt=dt, max_iterations=20, tolerance=1e-10, integrator=integrator)
    angles = np.empty(int(round(seconds / dt)))
    for k in range(angles.size):
        sim.step()
        x, _, z = sim.positions[1]
        angles[k] = np.arctan2(x, -z)
    return angles


def test_pendulum_keeps_its_amplitude_and_elliptic_period():
    """25 periods at Δt = 1/240 s: bdf2 keeps ≥ 99.75 % of the 90° amplitude (the 100-period figure is in
    benchmarks/pendulum.py), Euler keeps < 70 %; bdf2's mean period within 1e-3 of 4√(L/g)K(sin²45°)."""
    t90 = 4.0 * np.sqrt(L_EFF / G) * ellipk(0.5)
    dt = 1 / 240
    angles = pendulum_angles("bdf2", 25.2 * t90, dt)
    last_swing = np.max(np.abs(angles[-int(t90 / dt) :]))
    assert last_swing / (np.pi / 2) >= 0.9975
    times = dt * np.arange(1, angles.size + 1)
    up = np.flatnonzero((angles[:-1] < 0) & (angles[1:] >= 0))
    crossing = times[up] - angles[up] * dt / (angles[up + 1] - angles[up])
    mean_period = (crossing[-1] - crossing[0]) / (crossing.size - 1)
    assert mean_period == pytest.approx(t90, rel=1e-3)
    euler = pendulum_angles("euler", 25.2 * t90, dt)
    assert np.max(np.abs(euler[-int(t90 / dt) :])) / (np.pi / 2) < 0.7


def beam_tip_history(integrator: str, dt: float, seconds: float = 2.2) -> tuple[np.ndarray, np.ndarray]:
    """Deul's 10 m cantilever, 10 segments, no gravity, released straight with the transverse velocity
    0.05 u²(3 − u)/2 m/s, u = x/L (the static tip-load shape, close to the first mode): times and tip
    deflection after every step."""
    model = cantilever(10)
    sim = Simulator(model, dt=dt, gravity=(0, 0, 0), max_iterations=20, tolerance=1e-12, integrator=integrator)
    u = (model.positions[:, 0] - model.positions[0, 0]) / 9.0  # the beam lies along x from its clamped root
    sim.velocities[:, 2] = 0.05 * u**2 * (3.0 - u) / 2.0
    steps = int(round(seconds / dt))
    tip = np.empty(steps)
    for k in range(steps):
        sim.step()
        tip[k] = sim.tip()[2]
    return dt * np.arange(1, steps + 1), tip


def convergence(integrator: str, dts) -> tuple[float, float]:
    """Log-log slopes of (the tip deflection at t = 2.2 s, the mean period between upward zero crossings)
    against a run at Δt/4 of the smallest."""

    def measures(dt):
        t, tip = beam_tip_history(integrator, dt)
        crossings = []
        for k in np.flatnonzero((tip[:-1] < 0) & (tip[1:] >= 0)):
            s = slice(k - 1, k + 3)  # cubic through 4 samples: the crossing's own error is O(Δt⁴)
            roots = np.roots(np.polyfit(t[s] - t[k], tip[s], 3)).real + t[k]
            crossings.append(roots[np.argmin(np.abs(roots - t[k]))])
        return tip[-1], (crossings[-1] - crossings[0]) / (len(crossings) - 1)

    ref = measures(min(dts) / 4)
    errs = np.array([np.abs(np.subtract(measures(dt), ref)) for dt in dts])
    return tuple(float(np.polyfit(np.log(dts), np.log(errs[:, i]), 1)[0]) for i in range(2))


def test_cantilever_error_shrinks_as_dt_squared_with_bdf2():
    """Δt = 1/60, 1/120, 1/240 s (the first mode's period is 0.72 s): bdf2's error in the state and in the
    period shrink as Δt² (measured slopes 1.73, 1.76; 2 asymptotically). Euler's period error is second order
    too (backward Euler's phase error is (ωΔt)²/3), but its state error is first order, its amplitude decaying
    by ωΔt/2 per radian (measured slope 0.87)."""
    dts = [1 / 60, 1 / 120, 1 / 240]
    bdf2_state, bdf2_period = convergence("bdf2", dts)
    euler_state, _ = convergence("euler", dts)
    assert 1.6 <= bdf2_state <= 2.3
    assert 1.6 <= bdf2_period <= 2.3
    assert euler_state <= 1.2


@pytest.mark.parametrize("dt", [1 / 240, 1 / 60, 1 / 24])
@pytest.mark.parametrize("iterations", [2, 10])
def test_static_deflection_is_FL3_over_3EI_at_every_dt_and_iteration_count(dt, iterations):
    """Damped dynamics under a tip load to rest: the deflection equals FL³/3EI (to the rod's spatial
    discretisation error, 6.3e-4 at 50 segments, Deul §5) at every Δt and iteration cap."""
    model = cantilever(20, stretch_compliance=1e-14)
    sim = Simulator(model, dt=dt, gravity=(0, 0, 0), damping=6.0, tolerance=0.0, max_iterations=iterations,
                    integrator="bdf2")  # fmt: skip
    tip = model.n_segments - 1
    sim.add_point_load(tip, [0, 0, 0.5 * model.lengths[tip]], [0, 0, -1000.0])
    for _ in range(int(round(5.0 / dt))):
        sim.step()
    analytic = cantilever_tip_deflection(1000.0)
    # 20 segments: the midpoint-rule bending discretisation adds 1/(2n²) = 1.25e-3 (test_dynamics)
    assert -sim.tip()[2] == pytest.approx(analytic * (1 + 1 / (2 * 20**2)), rel=2e-4)


def test_bdf2_falls_back_to_an_euler_step_when_the_state_is_changed_between_steps():
    """History is dropped when the caller sets the state (kinetic damping zeroes the velocities): the step
    after is an Euler step (stage Δt), not BDF2 with a stale previous step (stage 2Δt/3)."""
    sim = Simulator(cantilever(5), dt=0.01, integrator="bdf2")
    assert sim.stage_dt == 0.01
    sim.step()
    assert sim.stage_dt == pytest.approx(0.02 / 3)
    sim.velocities[:] = 0.0
    assert sim.stage_dt == 0.01
    sim.step()
    sim.dt = 0.02
    assert sim.stage_dt == 0.02


def test_integrator_name_is_checked():
    with pytest.raises(ValueError, match="integrator must be one of"):
        Simulator(cantilever(3), integrator="rk4")


def damped_cosine_fit(t: np.ndarray, y: np.ndarray, zeta0: float, f0: float) -> tuple[float, float]:
    """ζ and the undamped frequency [Hz] of c + A e^(−ζωt) cos(ω√(1−ζ²)t + φ) fitted to (t, y)."""

    def shape(t, c, a, zeta, omega, phase):
        return c + a * np.exp(-zeta * omega * t) * np.cos(omega * np.sqrt(1 - zeta * zeta) * t + phase)

    p, _ = curve_fit(shape, t, y, p0=[0.0, np.max(y), zeta0, 2 * np.pi * f0, -np.pi / 2])
    return p[2], p[3] / (2 * np.pi)


@pytest.mark.parametrize("dt", [1 / 240, 1 / 60, 1 / 24])
def test_damping_ratio_set_at_the_first_mode_is_the_measured_one_at_every_dt(dt):
    """set_damping_ratio(0.05, f₁) with f₁ the continuum first mode (1.399 Hz; the 10-segment rod's own is
    1.391 Hz): the damping ratio fitted to 4 s of the tip's motion is 0.05 within 2 % at Δt = 1/240, 1/60 and
    1/24 s (measured 0.0503, 0.0503, 0.0501); c/(2ω₁) alone would be the ratio only as Δt → 0."""
    f1 = 1.0 / cantilever_period()
    model = cantilever(10)
    sim = Simulator(model, dt=dt, gravity=(0, 0, 0), max_iterations=20, tolerance=1e-12, integrator="bdf2")
    sim.set_damping_ratio(0.05, f1)
    u = (model.positions[:, 0] - model.positions[0, 0]) / 9.0
    sim.velocities[:, 2] = 0.05 * u**2 * (3.0 - u) / 2.0
    tip = np.empty(int(round(4.0 / dt)))
    for k in range(tip.size):
        sim.step()
        tip[k] = sim.tip()[2]
    zeta, f = damped_cosine_fit(dt * np.arange(1, tip.size + 1), tip, 0.05, f1)
    assert zeta == pytest.approx(0.05, rel=0.02)
    assert f == pytest.approx(f1, rel=0.04)  # BDF2's period error at Δt = 1/24 s: 3.5 %


def test_damping_ratio_is_refused_where_euler_alone_damps_more():
    """Euler at Δt = 1/24 s damps a 1.4 Hz mode by ζ = 0.18 by itself: a ratio of 0.05 cannot be had."""
    sim = Simulator(cantilever(3), dt=1 / 24)
    with pytest.raises(ValueError, match="alone damps"):
        sim.set_damping_ratio(0.05, 1.4)
    sim.integrator = "bdf2"
    sim.set_damping_ratio(0.05, 1.4)
    c = sim.damping
    sim.dt = 1 / 240  # the coefficient follows Δt
    assert sim.damping != c
    sim.damping = 0.3  # a coefficient set directly drops the ratio
    sim.dt = 1 / 24
    assert sim.damping == 0.3
