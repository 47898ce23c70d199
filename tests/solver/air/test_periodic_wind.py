"""A periodic wind (``WindField(period=T)``) repeats exactly with T and keeps the field's statistics."""

import math

import numpy as np
import pytest

from solver.air.wind import WindField

KW = dict(gust_intensity=0.3, gust_frequency=0.2, turbulence_intensity=0.3, turbulence_length=3.0, seed=7)


def _points(n=200, seed=0):
    return np.random.default_rng(seed).uniform(-20.0, 20.0, (n, 3)) + [0.0, 0.0, 20.0]


@pytest.mark.parametrize("period", [5.0, 7.3])
def test_the_wind_repeats_with_its_period_and_not_before(period):
    w = WindField(12.0, (1.0, 0.5, 0.0), profile="power", period=period, **KW)
    p = _points()
    for t in (0.0, 1.234, -3.7):
        u = w.velocity(p, t)
        for k in (1, 3, 40):
            np.testing.assert_allclose(w.velocity(p, t + k * period), u, rtol=0.0, atol=1e-9 * np.abs(u).max())
    # within the period it varies as much as the free field does
    u0 = w.velocity(p, 0.0)
    spread = max(np.abs(w.velocity(p, s) - u0).max() for s in np.linspace(0.2, 0.8, 7) * period)
    assert spread > 2.0


def test_the_free_wind_does_not_repeat():
    w = WindField(12.0, (1.0, 0.5, 0.0), **KW)
    p = _points()
    assert np.abs(w.velocity(p, 5.0) - w.velocity(p, 0.0)).max() > 1.0


def test_periodic_wind_keeps_the_spatial_pattern_and_the_statistics():
    free = WindField(10.0, (1.0, 0.0, 0.0), **KW)
    loop = WindField(10.0, (1.0, 0.0, 0.0), period=5.0, **KW)
    p = _points(2000, 1)
    # at t = 0 only the turbulence modes' phases are seen: the same pattern (same wavevectors and phases)
    np.testing.assert_allclose(loop.turbulence(p, 0.0), free.turbulence(p, 0.0), rtol=1e-12)
    ts = np.linspace(0.0, 5.0, 101)[:-1]
    u_loop = np.array([loop.velocity(p[:200], t) for t in ts])
    u_free = np.array([free.velocity(p[:200], t) for t in np.linspace(0.0, 200.0, 100)])
    assert u_loop.mean(axis=(0, 1))[0] == pytest.approx(u_free.mean(axis=(0, 1))[0], rel=0.1)
    assert u_loop.std(axis=(0, 1))[1] == pytest.approx(u_free.std(axis=(0, 1))[1], rel=0.2)


def test_periodic_gusts_are_harmonics_with_the_requested_intensity():
    T = 10.0
    w = WindField(10.0, gust_intensity=0.2, gust_frequency=0.5, seed=1, period=T)
    n = w._gust_freq * T
    np.testing.assert_allclose(n, np.arange(1, 21))  # the band [¼, 4] × 0.5 Hz: 0.125 to 2 Hz, in steps of 1/T
    g = np.array([w.gust_factor(t) for t in np.linspace(0.0, T, 4001)[:-1]])
    assert g.mean() == pytest.approx(1.0, abs=1e-9)  # no clipping at 0 here: exact over one period
    assert g.std() == pytest.approx(0.2, rel=1e-9)
    # a short loop: one harmonic carries all the variance of the band below it
    short = WindField(10.0, gust_intensity=0.2, gust_frequency=0.2, seed=1, period=5.0)
    np.testing.assert_allclose(short._gust_freq * 5.0, [1, 2, 3, 4])
    g = np.array([short.gust_factor(t) for t in np.linspace(0.0, 5.0, 4001)[:-1]])
    assert g.std() == pytest.approx(0.2, rel=1e-9)


def test_each_mode_moves_at_a_harmonic_within_half_a_harmonic_of_its_own():
    T, U = 4.0, 15.0
    free = WindField(U, (0.0, 1.0, 0.0), period=None, **KW)
    loop = WindField(U, (0.0, 1.0, 0.0), period=T, **KW)
    whole_free = U * free._k[:, 1] + free._omega
    whole_loop = U * loop._k[:, 1] + loop._omega
    m = whole_loop * T / (2.0 * math.pi)
    np.testing.assert_allclose(m, np.round(m), atol=1e-9)
    assert np.abs(whole_loop - whole_free).max() <= math.pi / T + 1e-12


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(speed=lambda t: 3.0), "constant speed and direction"),
        (dict(speed=3.0, direction=lambda t: (1, 0, 0)), "constant speed and direction"),
        (dict(speed=3.0, period=0.0), "period must be a finite number > 0"),
        (dict(speed=3.0, period=math.nan), "period must be a finite number > 0"),
    ],
)
def test_bad_periodic_wind_is_refused(kwargs, message):
    kwargs.setdefault("period", 5.0)
    with pytest.raises(ValueError, match=message):
        WindField(**kwargs)
