"""Joint kinds (ball, hinge, rail), physical stretch and a rest shape apart from the initial pose, against
analytic references written out here: the physical pendulum's elliptic-integral period, free sliding under a
constant force, the catenary of a hanging chain, the stretch of a bar under its own weight."""

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import ellipk

from solver import RodModel, Simulator, compiled_status, rod_from_polyline
from solver.core import joint_constraint

G = 9.81


def physical_pendulum(length=1.0, radius=0.01, dt=1 / 240):
    """A rigid rod (one segment) on a ball pivot at its end, released at rest horizontally (90° from the
    vertical). Returns the simulator and the rod's moment of inertia about the pivot over m·d."""
    model = rod_from_polyline([[-0.05, 0, 0], [0, 0, 0], [length, 0, 0]], radius, 1e9, start="ball")
    sim = Simulator(model, dt=dt, max_iterations=20, tolerance=1e-10)
    # solid cylinder about an end, perpendicular to its axis: m (L²/3 + r²/4); pivot to centre d = L/2
    l_eff = (length**2 / 3 + radius**2 / 4) / (length / 2)
    return sim, l_eff


def swing(sim, seconds):
    """Angle from the downward vertical of the rod's centre, per step, and the step times."""
    angle, times = [], []
    for _ in range(int(round(seconds / sim.dt))):
        sim.step()
        x, _, z = sim.positions[1]
        angle.append(np.arctan2(x, -z))
        times.append(sim.time)
    return np.array(angle), np.array(times)


def elliptic_period(l_eff, amplitude):
    return 4.0 * np.sqrt(l_eff / G) * ellipk(np.sin(amplitude / 2) ** 2)  # scipy's ellipk takes m = k²


def test_pendulum_period_matches_elliptic_integral():
    sim, l_eff = physical_pendulum()
    angle, times = swing(sim, 3.2 * elliptic_period(l_eff, np.pi / 2))
    crossing = np.flatnonzero(np.sign(angle[:-1]) != np.sign(angle[1:]))
    t0 = times[crossing] - angle[crossing] * (times[crossing + 1] - times[crossing]) / (
        angle[crossing + 1] - angle[crossing]
    )
    assert crossing.size >= 6
    # first quarter: released at 90°
    assert t0[0] == pytest.approx(elliptic_period(l_eff, np.pi / 2) / 4, rel=0.01)
    # every half swing against the period at the amplitude it reached (the step's damping lowers it)
    for a, b, half in zip(crossing[:-1], crossing[1:], np.diff(t0), strict=True):
        amplitude = np.max(np.abs(angle[a : b + 1]))
        assert half == pytest.approx(elliptic_period(l_eff, amplitude) / 2, rel=2e-3)
    # the ball holds the pivot and carries no moment
    assert np.all(sim.lam[:, 3:] == 0.0)
    pivot = sim.segment_points(np.array([[0.0, 0.0, -0.5]]), np.array([1]))[0]
    assert np.linalg.norm(pivot) < 1e-8


def horizontal_rod(start, youngs_modulus=1e9, **kw):
    points = np.stack((np.linspace(-0.1, 1.0, 12), np.zeros(12), np.zeros(12)), axis=1)
    model = rod_from_polyline(points, 0.01, youngs_modulus, start=start, **kw)
    return Simulator(model, dt=1 / 120, max_iterations=20)


def test_ball_turns_freely_clamp_holds():
    ball, clamp = horizontal_rod("ball"), horizontal_rod("clamp")
    assert ball.compiled == (compiled_status()[0])  # dropped rows run compiled where numba works
    masked_lambda = 0.0
    for _ in range(36):  # 0.3 s
        ball.step()
        clamp.step()
        masked_lambda = max(masked_lambda, float(np.max(np.abs(ball.lam[0, 3:]))))
    assert masked_lambda == 0.0
    # falling freely about the pivot: the tip has dropped by tens of cm; a clamped cantilever sags
    # by about wL⁴/(8EI) = 0.05 m (at most twice that in motion)
    assert ball.tip()[2] < -0.3
    assert -0.12 < clamp.tip()[2] < -0.01
    assert np.max(np.abs(clamp.lam[0, 3:])) > 0.0
    for sim in (ball, clamp):  # the pivot stays put
        pivot = sim.segment_points(np.array([[0.0, 0.0, -0.05]]), np.array([1]))[0]
        assert np.linalg.norm(pivot) < 1e-6


def test_hinge_turns_about_its_axis_only():
    # axis d2 of the first free segment; a sideways load along it would swing a ball out of plane
    hinge = horizontal_rod("hinge", 1e11, start_axis=(0, 1, 0))
    ball = horizontal_rod("ball", 1e11)
    axis = hinge.segment_points(np.array([[0.0, 1.0, 0.0]]), np.array([1]))[0] - hinge.positions[1]
    for sim in (hinge, ball):
        sim.add_point_load(sim.model.n_segments - 1, [0, 0, 0.05], 2.0 * axis)
        sim.run(36)
    out_of_plane = [float(np.dot(sim.tip(), axis)) for sim in (hinge, ball)]
    assert abs(out_of_plane[0]) < 2e-3  # the rod's own bending under the load: 2 N · L³/(3 E I) = 8.5e-4 m
    assert out_of_plane[1] > 0.05
    assert hinge.tip()[2] < -0.3  # it falls about the axis freely
    turned = hinge.segment_points(np.array([[0.0, 1.0, 0.0]]), np.array([1]))[0] - hinge.positions[1]
    assert np.dot(turned, axis) == pytest.approx(1.0, abs=1e-4)
    assert hinge.lam[0, 4] == 0.0  # the dropped row (rotation about d2, the axis)
    assert np.max(np.abs(hinge.lam[0, [3, 5]])) > 0.0  # the kept rows carry the sideways load's moment


def test_rail_slides_along_axis_and_holds_sideways():
    points = np.stack((np.zeros(8), np.zeros(8), np.linspace(-0.05, 0.6, 8)), axis=1)
    model = rod_from_polyline(points, 0.01, 1e9, start="rail")
    sim = Simulator(model, dt=1 / 240, gravity=(0, 0, 0), max_iterations=20, tolerance=1e-10)
    mass = model.masses[~model.pinned].sum()
    axial, lateral = 0.5, 0.3
    sim.forces[3] = (lateral, 0.0, axial)
    steps = 240
    start = sim.positions[~model.pinned].copy()
    sim.run(steps)
    moved = sim.positions[~model.pinned] - start
    # the whole rod slides along the axis as a free body would: x = F t² / (2 M) (1.43 m here), stepped
    # as the integrator's velocity update does, v_k = k F Δt / M: x_N = (F / M) Δt² N (N + 1) / 2
    assert moved[:, 2] == pytest.approx(axial / mass * sim.dt**2 * steps * (steps + 1) / 2, rel=1e-6)
    assert moved[:, 2] == pytest.approx(axial * sim.time**2 / (2 * mass), rel=1 / steps + 1e-6)
    # sideways the joint holds: the child's end stays on the axis, the rod only bends a little
    end = sim.segment_points(np.array([[0.0, 0.0, -0.5 * model.lengths[1]]]), np.array([1]))[0]
    assert np.hypot(end[0], end[1]) < 1e-7
    assert np.max(np.abs(moved[:, :2])) < 1e-3
    assert np.all(sim.lam[0, 0] == 0.0)  # the sliding row carries no force


def catenary_sag(span, length):
    """Sag of the uniform catenary of this span and length: 2a sinh(D/2a) = L, sag = a (cosh(D/2a) − 1)."""
    a = brentq(lambda a: 2 * a * np.sinh(span / (2 * a)) - length, 0.01 * span, 100 * span)
    return a * (np.cosh(span / (2 * a)) - 1.0)


def test_catenary_from_an_arc_with_straight_rest_shape():
    span, n = 1.0, 40
    # a circular arc through the two pivots, its length 1.2 m, points evenly spaced along it
    phi = brentq(lambda p: 1.2 * 2 * np.sin(p / 2) / p - span, 1e-3, 2 * np.pi - 1e-3)
    radius = 1.2 / phi
    t = np.linspace(-phi / 2, phi / 2, n + 1)
    arc = np.stack((radius * np.sin(t), np.zeros_like(t), -radius * (np.cos(t) - np.cos(phi / 2))), axis=1)
    tangent = arc[1] - arc[0]
    anchor = 0.02 * tangent / np.linalg.norm(tangent)
    points = np.vstack((arc[0] - anchor, arc, arc[-1] + anchor * [-1, 1, 1]))
    model = rod_from_polyline(points, 0.002, 1e5, start="ball", end="ball", rest="straight")
    assert np.allclose(model.rest_darboux, [1, 0, 0, 0])  # straight at rest, though started bent
    sim = Simulator(model, dt=1 / 240, max_iterations=30, tolerance=1e-12, damping=3.0)
    sim.run(1200)
    # settled: what moves is a jitter of the soft segments' rotations (1e-6 of the rope's weight × sag in J)
    assert sim.kinetic_energy() < 1e-7
    rope_length = model.lengths[1:-1].sum()
    middle = sim.segment_points(np.array([[0.0, 0.0, 0.5 * model.lengths[n // 2]]]), np.array([n // 2]))[0]
    sag = -middle[2]
    assert sag == pytest.approx(catenary_sag(span, rope_length), rel=1e-3)  # 3.3e-4 at 40 segments (1.3e-3 at 20)
    assert np.all(sim.lam[[0, -1], 3:] == 0.0)


def test_rubber_cord_stretches_under_its_own_weight():
    length, n, e, rho = 1.0, 40, 2e6, 1100.0
    z = np.concatenate(([0.001], -np.linspace(0.0, length, n + 1)))  # a 1 mm anchor above the cord
    points = np.stack((np.zeros(n + 2), np.zeros(n + 2), z), axis=1)
    model = rod_from_polyline(points, 0.005, e, e / 3, rho, start="clamp", stretch="physical")
    sim = Simulator(model, dt=1 / 240, max_iterations=20, tolerance=1e-12, damping=5.0)
    sim.run(720)
    assert sim.kinetic_energy() < 1e-12
    stretch = -sim.tip()[2] - length
    # self-weighted bar: ρ g L² / 2E (measured +0.10 %: the 1 mm anchor holds the first joint's spring)
    assert stretch == pytest.approx(rho * G * length**2 / (2 * e), rel=2e-3)
    # the same cord inextensible does not stretch
    stiff = Simulator(rod_from_polyline(points, 0.005, e, e / 3, rho, start="clamp"), dt=1 / 240)
    stiff.run(240)
    assert abs(-stiff.tip()[2] - length) < 1e-6


def test_physical_compliance_rows():
    """Shear l/(κGA) across the parent's axis and stretch l/(EA) along it, in the solver's compliance."""
    e, g, r, kappa = 2e6, 7e5, 0.005, 0.95
    model = rod_from_polyline(
        [[0, 0, 0], [0, 0, 0.1], [0, 0, 0.3]], r, e, g, stretch="physical", shear_coefficient=kappa
    )
    area, span = np.pi * r * r, 0.15
    alpha = joint_constraint.compliance(model, 1.0)[0, :3]
    assert alpha == pytest.approx([span / (kappa * g * area)] * 2 + [span / (e * area)], rel=1e-12)


def test_rest_shape_points_and_errors():
    bent = [[0, 0, 0], [0, 0, 1], [0.5, 0, 1.5]]
    straight = [[0, 0, 0], [0, 0, 1], [0, 0, 2]]
    model = rod_from_polyline(straight, 0.01, 1e9, rest=bent)
    # the rest Darboux quaternion turns by the bend's 45°, the pose is straight
    angle = 2 * np.arccos(np.clip(abs(model.rest_darboux[0, 0]), 0, 1))
    assert angle == pytest.approx(np.pi / 4, rel=1e-12)
    assert np.allclose(model.positions[:, 0], 0.0)
    assert model.lengths == pytest.approx([1.0, np.sqrt(0.5)])
    # released, it bends towards its rest shape (no gravity)
    sim = Simulator(model, dt=1 / 120, gravity=(0, 0, 0), damping=5.0, max_iterations=20)
    sim.run(240)
    turned = 2 * np.arccos(np.clip(abs(np.dot(sim.orientations[0], sim.orientations[1])), 0, 1))
    assert turned == pytest.approx(np.pi / 4, abs=1e-3)
    with pytest.raises(ValueError, match="rest"):
        rod_from_polyline(straight, 0.01, 1e9, rest="curly")
    with pytest.raises(ValueError, match="rest"):
        rod_from_polyline(straight, 0.01, 1e9, rest=[[0, 0, 0], [0, 0, 1]])
    with pytest.raises(ValueError, match="start"):
        rod_from_polyline(straight, 0.01, 1e9, start="hook")
    with pytest.raises(ValueError, match="stretch"):
        rod_from_polyline(straight, 0.01, 1e9, stretch="rubbery")
    with pytest.raises(ValueError, match="hinge axis"):
        rod_from_polyline(straight, 0.01, 1e9, start="hinge", start_axis=(1, 1, 0))
    with pytest.raises(ValueError, match="joint_axis"):
        rod_from_polyline(straight, 0.01, 1e9, start="rail", start_axis=(0, 0, 0))


def test_copy_with_joint_kinds_keeps_arrays():
    model = rod_from_polyline([[0, 0, 0], [0, 0, 1], [0, 0, 2], [0, 0, 3]], 0.01, 1e9, pinned=["start"])
    assert isinstance(model, RodModel) and not model.has_masked_rows
    ball = model.copy_with(joint_kind=["ball", "clamp"])
    assert ball.has_masked_rows
    assert ball.row_mask.tolist() == [[1, 1, 1, 0, 0, 0], [1] * 6]
    again = ball.copy_with(youngs_modulus=2e9)  # the kinds survive a copy
    assert again.row_mask.tolist() == ball.row_mask.tolist()
    assert model.copy_with().row_mask.tolist() == [[1] * 6] * 2
    with pytest.raises(ValueError, match="joint_kind"):
        model.copy_with(joint_kind=["ball", "knot"])
