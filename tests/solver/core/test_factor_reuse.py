"""Simplified Newton (Simulator.factor_reuse): a reused KKT factorisation changes how fast a step converges,
not the static equilibrium, adds no energy, and is renewed when it stops converging."""

import numpy as np
import pytest

from solver import Simulator
from solver.build.scenes import cantilever, random_tree
from solver.core import quaternion as quat
from solver.core import timestep


def counting(sim):
    """Wrap the simulator's KKT factorisation (built in its first step) to count calls from now on."""
    kkt = sim._kkt
    count = [0]
    for name in ("factor", "factor_blocks"):
        original = getattr(kkt, name, None)
        if original is None:
            continue

        def wrapped(*a, _f=original, **k):
            count[0] += 1
            return _f(*a, **k)

        setattr(kkt, name, wrapped)
    return count


def test_static_equilibrium_does_not_depend_on_the_reused_matrix():
    """A random tree sagging under gravity, stepped to rest (velocities cleared every step): with the matrix
    reused for up to 3 iterations it comes to the same static pose as with exact Newton, to 1e-9 m. (At rest
    the accumulated constraint impulses balance the loads whatever Jacobians carried them there.)"""
    poses = []
    for reuse in (0, 3):
        sim = Simulator(random_tree(300, seed=3, radius=0.03), dt=1 / 30, max_iterations=20, tolerance=1e-12)
        sim.factor_reuse = reuse
        previous = None
        for _ in range(3000):
            sim.step()
            sim.velocities[:] = 0.0
            sim.angular_velocities[:] = 0.0
            pose = np.concatenate((sim.positions.ravel(), sim.orientations.ravel()))
            if previous is not None and np.max(np.abs(pose - previous)) < 1e-13:
                break
            previous = pose
        else:
            raise AssertionError("no static equilibrium")
        poses.append(sim.positions.copy())
    sag = np.max(np.abs(poses[0] - random_tree(300, seed=3, radius=0.03).positions))
    assert sag > 0.01
    assert np.max(np.abs(poses[1] - poses[0])) < 1e-9


def test_one_iteration_per_frame_follows_exact_newton():
    """The live preview's setting (one iteration per 1/24 s frame, the matrix reused for 2 more frames) on
    the Deul cantilever falling under gravity for 2 s: one factorisation every third step, and the motion
    within 0.1 % of the beam's motion under exact Newton."""
    runs = {}
    for reuse in (0, 2):
        sim = Simulator(cantilever(50), dt=1 / 24, max_iterations=1)
        sim.factor_reuse = reuse
        x0 = sim.positions.copy()
        sim.step()
        count = counting(sim)
        path = [sim.positions.copy()]
        for _ in range(48):
            sim.step()
            path.append(sim.positions.copy())
        runs[reuse] = (np.array(path), count[0])
    (exact, n_exact), (reused, n_reused) = runs[0], runs[2]
    assert n_exact == 48 and n_reused == 16
    motion = np.max(np.linalg.norm(exact - x0, axis=2))
    assert motion > 0.2  # m
    assert np.max(np.linalg.norm(reused - exact, axis=2)) < 1e-3 * motion


@pytest.mark.parametrize("reuse", [2, 3])
def test_reuse_adds_no_energy(reuse):
    """A limp random tree released straight into gravity, undamped, 1 iteration per 1/24 s step, for 20 s:
    its kinetic plus gravitational energy never exceeds the start (it starts at rest and stress-free, so
    elastic energy can only take from it), with the matrix reused as with exact Newton."""
    model = random_tree(400, seed=1, radius=0.03)
    free = ~model.pinned
    sim = Simulator(model, dt=1 / 24, max_iterations=1)
    sim.factor_reuse = reuse

    def energy():
        return sim.kinetic_energy() + 9.81 * np.sum(model.masses[free] * sim.positions[free, 2])

    e0 = energy()
    peak, drop = -np.inf, 0.0
    for _ in range(480):
        sim.step()
        e = energy() - e0
        peak, drop = max(peak, e), min(drop, e)
    assert drop < -100.0  # J: the tree does fall and swing
    assert peak <= 1e-9 * abs(drop)


def step_after_a_jump():
    """The free cantilever turned by 60° about its clamp after its matrix was factorised, then one step with
    reuse allowed for 100 iterations (never reached): (factorisations in that step, its report)."""
    model = cantilever(20, youngs_modulus=1e7)
    sim = Simulator(model, dt=1 / 30, max_iterations=40, tolerance=1e-9)
    sim.factor_reuse = 100
    sim.step()
    count = counting(sim)
    c, s = np.cos(np.pi / 6), np.sin(np.pi / 6)  # 60° about y
    rot = np.array([[1 - 2 * s * s, 0, 2 * s * c], [0, 1, 0], [-2 * s * c, 0, 1 - 2 * s * s]])
    free = ~model.pinned
    sim.positions[free] = sim.positions[free] @ rot.T
    sim.orientations[free] = quat.multiply(np.array([c, 0, s, 0]), sim.orientations[free])
    report = sim.step()
    return count[0], report


def test_stale_factorisation_is_renewed(monkeypatch):
    """A reusing iteration that does not contract the residual tenfold makes the next one factorise afresh;
    with that rule switched off, the same step reuses the stale matrix throughout and takes more iterations."""
    renewed, report = step_after_a_jump()
    assert renewed >= 1 and report.residual <= 1e-9
    monkeypatch.setattr(timestep, "REUSE_CONTRACTION", np.inf)
    stale, report_stale = step_after_a_jump()
    assert stale == 0 and report_stale.residual <= 1e-9
    assert report_stale.iterations > report.iterations


def test_factor_reuse_is_validated():
    sim = Simulator(cantilever(5))
    for bad in (-1, 1.5):
        with pytest.raises(ValueError, match="factor_reuse"):
            sim.factor_reuse = bad
