"""One wind for the whole forest: every process sees the same air, and a gust front travels downwind.

The wind (solver/air/wind.py) is drawn from its seed when it is built and is then a function of (world
position, time) only, so two worker processes that build it from the same settings (as addon/wind.py
does from the scene) agree bit for bit. Two poles 20 m apart along a 10 m/s turbulent wind, each
simulated in its own process: the downwind pole's sway repeats the upwind one's 2 s later (Taylor's
frozen turbulence), so the cross-correlation of their sway peaks at lag = distance / mean speed.
"""

import concurrent.futures
import multiprocessing

import numpy as np

from solver import AerodynamicDrag, Simulator, WindField, tree_from_branches

SPEED, DISTANCE = 10.0, 20.0  # m/s along +X, m between the poles along the wind
FPS, SECONDS = 30, 20.0


def make_wind():
    # eddies that barely evolve while they cross the 20 m (gust frequency 0.02 Hz): frozen turbulence
    return WindField(
        SPEED, (1.0, 0.0, 0.0), turbulence_intensity=0.4, turbulence_length=4.0, gust_frequency=0.02, seed=3
    )


def sample_wind(_=None):
    """The wind at fixed points and times, built in the calling process."""
    rng = np.random.default_rng(0)
    points = rng.uniform(-30.0, 30.0, (50, 3))
    wind = make_wind()
    return np.array([wind.velocity(points, t) for t in (0.0, 0.7, 5.3, 19.9)])


def sway(x0):
    """The along-wind displacement [m] of the top of a 4 m wooden pole standing at x = ``x0``, per frame."""
    z = np.linspace(0.0, 4.0, 9)
    points = np.column_stack((np.full_like(z, x0), np.zeros_like(z), z))
    model, _ = tree_from_branches([(points, np.full(z.size, 0.04))], youngs_modulus=1e9, density=600.0)
    top = int(np.argmax(model.positions[:, 2]))
    sim = Simulator(model, dt=1.0 / FPS)
    sim.force_fields.append(AerodynamicDrag(model, make_wind()))
    out = []
    for _ in range(int(SECONDS * FPS)):
        sim.step()
        out.append(sim.positions[top, 0] - x0)
    return np.array(out)


def in_two_processes(fn, args):
    ctx = multiprocessing.get_context("spawn")  # fresh interpreters: nothing shared with this one
    with concurrent.futures.ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
        return list(pool.map(fn, args))


def test_every_process_sees_the_same_air():
    here = sample_wind()
    for there in in_two_processes(sample_wind, [0, 1]):
        assert np.array_equal(there, here)
    assert np.std(here[..., 1]) > 0.5  # the air is turbulent: equality is not trivial


def test_sway_of_a_downwind_tree_lags_by_distance_over_mean_speed():
    upwind, downwind = in_two_processes(sway, [0.0, DISTANCE])
    skip = upwind.size // 8  # the start, while the poles bend into the mean wind
    a = upwind[skip:] - upwind[skip:].mean()
    b = downwind[skip:] - downwind[skip:].mean()
    assert a.std() > 1e-2 and b.std() > 1e-2  # both sway
    lags = np.arange(0, 5 * FPS)  # 0 .. 5 s
    corr = np.array([np.dot(a[: a.size - k], b[k:]) / (a.size - k) for k in lags])
    lag = lags[int(np.argmax(corr))] / FPS
    expected = DISTANCE / SPEED
    assert abs(lag - expected) <= 0.2 * expected, (lag, expected)
    assert corr.max() > 0.5 * a.std() * b.std()  # a clear peak: the same gusts pass both
