"""Time stepping (Deul Algorithm 1) against analytic statics, invariants and XPBD's Δt independence."""

import numpy as np
import pytest

from solver import Simulator, rod_from_polyline
from solver.build.scenes import cantilever, cantilever_tip_deflection
from solver.core import quaternion as quat
from statics import static_solve


def tip_loaded(model, force, gravity=(0, 0, 0), **kw):
    sim = Simulator(model, gravity=gravity, tolerance=1e-13, max_iterations=20, **kw)
    tip = model.n_segments - 1
    sim.add_point_load(tip, [0, 0, 0.5 * model.lengths[tip]], force)
    return sim


def test_cantilever_tip_deflection_matches_euler_bernoulli():
    """Deul §5: 50 segments, F = 1000 N: |δ − FL³/3EI| / (FL³/3EI) ≤ 1e-3 (paper: 6.3e-4)."""
    analytic = cantilever_tip_deflection(1000.0)
    sim = static_solve(tip_loaded(cantilever(50), [0, 0, -1000.0]))
    rel = (-sim.tip()[2] - analytic) / analytic
    assert 0 < rel <= 1e-3
    # With a (nearly) rigid zero-stretch constraint only the midpoint-rule discretisation error is
    # left, which is 1/(2n²) for this clamp: proves the bending compliance is (E I l)⁻¹ exactly.
    sim = static_solve(tip_loaded(cantilever(50, stretch_compliance=1e-14), [0, 0, -1000.0]))
    rel = (-sim.tip()[2] - analytic) / analytic
    assert rel == pytest.approx(1.0 / (2 * 50**2), rel=0.02)


def test_discretisation_error_converges_quadratically():
    analytic = cantilever_tip_deflection(1000.0)
    errs = []
    for n in (8, 16, 32):
        sim = static_solve(tip_loaded(cantilever(n, stretch_compliance=1e-14), [0, 0, -1000.0]))
        errs.append((-sim.tip()[2] - analytic) / analytic)
    ratios = np.array(errs[:-1]) / np.array(errs[1:])
    np.testing.assert_allclose(ratios, 4.0, rtol=0.05)


def test_torsion_angle_matches_TL_over_GJ():
    """A clamped rod twisted by an end torque T turns its tip by T·L/(G·J)."""
    model = cantilever(40, torsion_modulus=4e8, stretch_compliance=1e-14)
    sim = Simulator(model, gravity=(0, 0, 0), tolerance=1e-13, max_iterations=20)
    torque = 2e4
    sim.torques[-1] = [torque, 0, 0]  # about the rod axis (+x)
    static_solve(sim, dt=1 / 120)  # torsion is a stiff mode: keep XPBD's O(Δt²) bias small
    r = 0.5
    j = np.pi * r**4 / 2
    d = quat.multiply(quat.conjugate(model.orientations[-1]), sim.orientations[-1])
    angle = 2 * np.arctan2(np.linalg.norm(d[1:]), d[0])
    # the torque acts on the last segment's centre: the twisted length is L − l/2 (l = L/40)
    expected = torque * (10.0 - 0.5 * 10.0 / 40) / (4e8 * j)
    assert angle == pytest.approx(expected, rel=1e-3)


def test_anisotropic_cross_section_bends_by_its_two_moments():
    """Elliptic section (a, b) along (d1, d2): tip deflections along d1 and d2 are in the ratio I1/I2 = b²/a²."""
    a, b = 0.3, 0.6
    pts = np.zeros((22, 3))
    pts[:, 2] = np.linspace(-0.5, 10, 22)  # rod along +z: d1 = x, d2 = y
    model = rod_from_polyline(pts, 1.0, 1e9, None, 1000.0, pinned=["start"], stretch_compliance=1e-14)
    model = model.copy_with(
        radii=np.tile([a, b], (model.n_segments, 1)), joint_radii=np.tile([a, b], (model.n_joints, 1))
    )
    tips = []
    for direction in ([1.0, 0, 0], [0, 1.0, 0]):
        sim = static_solve(tip_loaded(model, 100.0 * np.array(direction)))
        tips.append(sim.tip() - Simulator(model).tip())
    along_d1, along_d2 = tips[0][0], tips[1][1]
    assert along_d1 / along_d2 == pytest.approx(b**2 / a**2, rel=1e-3)


def helix(n=30, pinned=()):
    t = np.linspace(0, 3 * np.pi, n + 1)
    pts = np.stack((0.5 * np.cos(t), 0.5 * np.sin(t), 0.2 * t), axis=1)
    return rod_from_polyline(pts, 0.02, 5e8, None, 1200.0, pinned=pinned, twist=0.4)


@pytest.mark.parametrize("pinned", [(), ("start",)])
def test_curved_rod_at_rest_stays_at_rest_for_1000_steps(pinned):
    model = helix(pinned=pinned)
    sim = Simulator(model, dt=1 / 60, gravity=(0, 0, 0), tolerance=0.0, max_iterations=2)
    for _ in range(1000):
        sim.step()
    assert np.max(np.abs(sim.positions - model.positions)) < 1e-9
    d = quat.multiply(quat.conjugate(model.orientations), sim.orientations)
    assert np.max(np.linalg.norm(d[:, 1:], axis=1)) < 1e-9
    assert sim.kinetic_energy() < 1e-20


def spinning_free_rod(dt):
    model = helix()
    sim = Simulator(model, dt=dt, gravity=(0, 0, 0), tolerance=1e-12, max_iterations=10)
    rng = np.random.default_rng(7)
    sim.velocities[:] = rng.normal(scale=0.5, size=sim.velocities.shape)
    sim.angular_velocities[:] = rng.normal(scale=2.0, size=sim.angular_velocities.shape)
    return model, sim


def test_free_rod_conserves_linear_and_angular_momentum():
    drift = []
    for dt in (1 / 120, 1 / 240):
        model, sim = spinning_free_rod(dt)
        p0, l0 = sim.momentum()
        ke0 = sim.kinetic_energy()
        for _ in range(int(round(2.5 / dt))):
            sim.step()
        p1, l1 = sim.momentum()
        # joint forces are equal and opposite: linear momentum to round-off
        assert np.linalg.norm(p1 - p0) <= 1e-12 * np.linalg.norm(p0)
        drift.append(np.linalg.norm(l1 - l0) / np.linalg.norm(l0))
        # implicit Euler dissipates, but never creates energy
        assert sim.kinetic_energy() <= ke0
        # and the rod really moved and deformed (the test is not vacuous)
        assert np.max(np.abs(sim.positions - model.positions)) > 0.5
    # angular momentum: bend/twist torques cancel exactly (see joint_constraint), what is left is the
    # time discretisation of rotations (measured 9.8e-4 at Δt = 1/120 s over 2.5 s), vanishing with Δt
    assert drift[0] <= 2e-3
    assert drift[1] <= 0.5 * drift[0]


def test_pinned_segment_driven_by_a_function_of_time_carries_the_rod():
    model = helix(pinned=("start",))
    v = np.array([0.3, -0.2, 0.1])
    p0, q0 = model.positions[:1].copy(), model.orientations[:1].copy()
    sim = Simulator(model, dt=1 / 60, gravity=(0, 0, 0), tolerance=1e-12, kinematic=lambda t: (p0 + v * t, q0))
    sim.velocities[:] = v  # start moving with the driver
    for _ in range(120):
        sim.step()
    np.testing.assert_allclose(sim.positions, model.positions + v * sim.time, atol=1e-7)


@pytest.mark.parametrize("dt", [1 / 240, 1 / 60, 1 / 25])
@pytest.mark.parametrize("iterations", [3, 10])
def test_steady_deflection_is_independent_of_time_step_and_iterations(dt, iterations):
    """XPBD's promise (Deul §4.1): stiffness does not depend on Δt or the iteration count."""
    model = cantilever(20, youngs_modulus=2e8)
    sim = Simulator(model, dt=dt, gravity=(0, 0, -9.81), damping=6.0, tolerance=0.0, max_iterations=iterations)
    for _ in range(int(round(4.0 / dt))):
        sim.step()
    reference = static_solve(Simulator(model, gravity=(0, 0, -9.81), tolerance=1e-13, max_iterations=20))
    deflection = model.positions[-1, 2] - sim.tip()[2]
    expected = model.positions[-1, 2] - reference.tip()[2]
    assert expected > 0.05  # a real, visible sag
    assert deflection == pytest.approx(expected, rel=0.01)


def test_quaternion_sign_of_the_input_pose_does_not_matter():
    model = helix(pinned=("start",))
    flipped = model.copy_with(
        orientations=model.orientations * np.where(np.arange(model.n_segments) % 3 == 0, -1.0, 1.0)[:, None]
    )
    a = Simulator(model, dt=1 / 60)
    b = Simulator(flipped, dt=1 / 60)
    for _ in range(30):
        a.step()
        b.step()
    np.testing.assert_allclose(a.positions, b.positions, atol=1e-10)


def test_gauss_seidel_converges_to_the_direct_solution():
    model = cantilever(10, youngs_modulus=1e8)
    a = Simulator(model, dt=1 / 60)
    b = Simulator(model, dt=1 / 60, solver="gs")
    a.begin_step()
    b.begin_step()
    r_kkt = [a.iterate() for _ in range(3)]
    residuals = [b.iterate() for _ in range(3000)]
    assert r_kkt[2] < 1e-13  # Newton: quadratic convergence
    assert residuals[-1] < residuals[0] * 1e-3  # GS converges …
    assert residuals[0] > 1e3 * r_kkt[0]  # … but far slower than one KKT iteration
    np.testing.assert_allclose(b.positions, a.positions, atol=1e-3 * np.ptp(a.positions[:, 2]) + 1e-9)
