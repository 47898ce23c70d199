"""Wind fields (solver/wind.py), aerodynamic drag (solver/drag.py) and tree materials (solver/materials.py)."""

import math

import numpy as np
import pytest

from solver import RodModel, Simulator, rod_from_polyline
from solver.air.drag import CD_BRANCH, CD_LEAF_NORMAL, CD_LEAF_TANGENTIAL, RHO_AIR, AerodynamicDrag
from solver.air.wind import WindField, WindSum, storm
from solver.build.materials import PRESETS, material
from solver.build.tree_builder import tree_from_branches
from solver.core import quaternion as quat
from solver.core.model import cross_section_moments

Z = np.array([0.0, 0.0, 1.0])


def vertical_rod(n=4, length=1.0, radius=0.02, density=800.0):
    """A vertical rod over z ∈ [0, length] clamped at the bottom (segment 0 pinned)."""
    pts = np.zeros((n + 1, 3))
    pts[:, 2] = np.linspace(0.0, length, n + 1)
    return rod_from_polyline(pts, radius, 1e9, density=density, pinned=["start"])


def still_sim(model, **kw):
    return Simulator(model, gravity=(0, 0, 0), **kw)


def leaf_pair(normal_world=(0.0, 1.0, 0.0), length=0.1, half_width=0.025, half_thickness=2.5e-4):
    """A pinned stem segment along +z with one leaf plate above it (leaf along +z, normal = ``normal_world``)."""
    n = np.asarray(normal_world, float) / np.linalg.norm(normal_world)
    x_axis = np.cross(n, Z)
    rot = np.stack((x_axis, n, Z), axis=1)  # columns: local x, y (normal), z in world
    q_leaf = quat.from_matrix(rot)
    pos = np.array([[0.0, 0.0, -0.05], [0.0, 0.0, 0.5 * length]])
    return RodModel.from_arrays(
        pos,
        np.stack((np.array([1.0, 0, 0, 0]), q_leaf)),
        [0.1, length],
        np.array([[0.003, 0.003], [half_width, half_thickness]]),
        [800.0, 700.0],
        joint_parent=[0],
        joint_child=[1],
        youngs_modulus=1.2e9,
        torsion_modulus=0.6e9,
        joint_radii=[[1e-3, 1e-3]],
        joint_lengths=[0.05],  # a petiole, 1 mm × 5 cm
        pinned=[True, False],
        leaf=[False, True],
    )


# ---------------------------------------------------------------------------- drag on segments
def test_zero_wind_gives_zero_force():
    model = vertical_rod()
    sim = still_sim(model)
    for wind in (WindField(0.0), WindSum([]), WindField(0.0, turbulence_intensity=0.5, gust_intensity=0.5)):
        f, t = AerodynamicDrag(model, wind)(sim)
        assert np.all(f == 0.0) and np.all(t == 0.0)


def test_cross_flow_drag_matches_formula_and_axial_flow_gives_none():
    """A segment at rest across a uniform wind u: F = ½ ρ C_d (2r l) u², along the wind; along its axis: 0."""
    model = vertical_rod(n=2, length=1.0, radius=0.02)
    sim = still_sim(model)
    u = 7.0
    f, t = AerodynamicDrag(model, WindField(u, (1, 0, 0)))(sim)
    expected = 0.5 * RHO_AIR * CD_BRANCH * (2 * 0.02 * 0.5) * u**2
    np.testing.assert_allclose(f[1:], [[expected, 0, 0]], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(t[1:], 0.0, atol=1e-12)  # uniform load: no torque about the centre
    assert np.all(f[0] == 0.0)  # pinned segments get no load
    f_axial, _ = AerodynamicDrag(model, WindField(u, Z))(sim)
    np.testing.assert_allclose(f_axial, 0.0, atol=1e-12)


def test_drag_reverses_with_relative_velocity():
    """Wind u on a segment at rest, and still air on the segment moving at u: equal and opposite drag."""
    model = vertical_rod(n=3)
    rng = np.random.default_rng(4)
    u = rng.normal(size=3) * 5.0
    sim = still_sim(model)
    f_wind, t_wind = AerodynamicDrag(model, WindField(float(np.linalg.norm(u)), u))(sim)
    sim.velocities[:] = u
    f_move, t_move = AerodynamicDrag(model, WindField(0.0))(sim)
    np.testing.assert_allclose(f_move[1:], -f_wind[1:], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(t_move, -t_wind, atol=1e-14)
    assert np.linalg.norm(f_wind[1:]) > 0


def test_drag_in_still_air_only_dissipates_and_rotation_gives_torque():
    """Still air: drag power Σ F·v + τ·ω ≤ 0 for any motion; a segment spinning about its centre feels an
    opposing torque of the 2-point Gauss value (l⁴/(24√3) ρ C_d r ω²) and no net force."""
    model = vertical_rod(n=3)
    drag = AerodynamicDrag(model, WindField(0.0))
    rng = np.random.default_rng(0)
    sim = still_sim(model)
    for _ in range(20):
        sim.velocities = rng.normal(size=sim.velocities.shape)
        sim.angular_velocities = rng.normal(size=sim.angular_velocities.shape) * 3
        f, t = drag(sim)
        omega_world = quat.rotate(sim.orientations, sim.angular_velocities)
        power = np.sum(f * sim.velocities) + np.sum(t * omega_world)
        assert power < 0
    sim.velocities[:] = 0.0
    sim.angular_velocities[:] = [2.0, 0.0, 0.0]  # about local x (⊥ axis)
    f, t = drag(sim)
    length, r = model.lengths[1], 0.02
    expected = RHO_AIR * CD_BRANCH * r * 4.0 * length**4 / (24 * math.sqrt(3))
    np.testing.assert_allclose(f[1:], 0.0, atol=1e-14)
    np.testing.assert_allclose(t[1:, 0], -expected, rtol=1e-12)


def test_still_air_damps_a_swinging_beam():
    """A plucked thin cantilever in still air: the peak kinetic energy over its last swings is well below that of
    the same run without drag (the solver's own numerical damping is in both)."""

    def late_peak_energy(with_drag):
        model = vertical_rod(n=6, length=1.5, radius=0.005, density=300.0)
        sim = still_sim(model, dt=1 / 200)
        if with_drag:
            sim.force_fields.append(AerodynamicDrag(model, WindField(0.0)))
        sim.velocities[1:, 0] = 3.0 * (model.positions[1:, 2] / 1.5) ** 2  # a first-mode-like swing
        ke = []
        for _ in range(400):
            sim.step()
            ke.append(sim.kinetic_energy())
        return max(ke[-150:])

    assert late_peak_energy(True) < 0.7 * late_peak_energy(False)


def test_steady_wind_bends_a_cantilever_like_a_uniform_load():
    """Static deflection of a horizontal clamped beam in a uniform cross wind vs w L⁴/(8 E I), w from the drag
    formula (small deflection, kinetic damping; the benchmark wind_beam.py does this to ≤ 1 %)."""
    n, length, r, e_mod, u = 20, 1.0, 0.005, 2e9, 4.0
    pts = np.zeros((n + 2, 3))
    pts[:, 0] = np.linspace(-length / n, length, n + 2)
    model = rod_from_polyline(pts, r, e_mod, density=500.0, pinned=["start"])
    jl = model.joint_lengths.copy()
    jl[0] = 0.5 * length / n
    model = model.copy_with(joint_lengths=jl)
    sim = still_sim(model, dt=1 / 100, max_iterations=20, tolerance=1e-12)
    sim.force_fields.append(AerodynamicDrag(model, WindField(u, (0, 1, 0))))
    for _ in range(400):
        sim.step()
        sim.velocities[:] = 0.0
        sim.angular_velocities[:] = 0.0
    w = 0.5 * RHO_AIR * CD_BRANCH * 2 * r * u**2
    i1, _, _ = cross_section_moments(np.array([r, r]))
    analytic = w * length**4 / (8 * e_mod * i1)
    assert abs(sim.tip()[1] - analytic) / analytic < 0.02


def test_implicit_drag_lets_a_light_plate_reach_the_wind_without_overshoot():
    """Two free leaf plates in a 30 m/s wind at Δt = 40 ms: explicit drag (rate ≫ 1/Δt) would overshoot and
    blow up; the implicit mass term makes the speed rise monotonically to the wind speed."""
    q = [1.0, 0.0, 0.0, 0.0]  # leaves along z, normals along +y
    model = RodModel.from_arrays(
        [[0, 0, 0], [0, 0, 0.1]],
        [q, q],
        0.1,
        [[0.025, 2.5e-4]] * 2,
        700.0,
        joint_parent=[0],
        joint_child=[1],
        leaf=[True, True],
    )
    sim = still_sim(model, dt=0.04, max_iterations=3)
    drag = AerodynamicDrag(model, WindField(30.0, (0, 1, 0)))
    sim.force_fields.append(drag)
    speeds = []
    for _ in range(60):
        sim.step()
        speeds.append(sim.velocities[:, 1].mean())
    speeds = np.array(speeds)
    rate = 2 * 0.5 * RHO_AIR * CD_LEAF_NORMAL * 0.05 * 0.1 * 30.0 / model.masses[0]
    assert rate * sim.dt > 2.0  # the explicit update would be unstable
    assert np.all(np.diff(speeds) > 0) and speeds[-1] < 30.0 and speeds[-1] > 27.0


# ---------------------------------------------------------------------------- leaf plates
def test_leaf_plate_drag_normal_and_tangential():
    """Face-on wind: F = ½ ρ C_n A u² along the normal; wind in the plate across the leaf: ½ ρ C_t A u²."""
    model = leaf_pair(normal_world=(0, 1, 0))
    sim = still_sim(model)
    u = 6.0
    area = model.plate_area[1]
    assert area == pytest.approx(2 * 0.025 * 0.1)
    f, t = AerodynamicDrag(model, WindField(u, (0, 1, 0)))(sim)
    np.testing.assert_allclose(f[1], [0, 0.5 * RHO_AIR * CD_LEAF_NORMAL * area * u**2, 0], rtol=1e-12, atol=1e-14)
    f, _ = AerodynamicDrag(model, WindField(u, (1, 0, 0)))(sim)
    np.testing.assert_allclose(f[1], [0.5 * RHO_AIR * CD_LEAF_TANGENTIAL * area * u**2, 0, 0], rtol=1e-12, atol=1e-14)
    f, _ = AerodynamicDrag(model, WindField(u, (1, 1, 0)))(sim)
    c = u / math.sqrt(2)
    np.testing.assert_allclose(
        f[1], 0.5 * RHO_AIR * area * c**2 * np.array([CD_LEAF_TANGENTIAL, CD_LEAF_NORMAL, 0]), rtol=1e-12, atol=1e-14
    )


def test_leaf_drag_reconfigures_above_its_speed_like_vogel():
    """Face-on plate: F = ½ ρ C_n A u² up to U_R = 10 m/s, then ∝ u^(2+B) (B = −0.7): F(40)/F(20) = 2^1.3,
    F(20) = full × 2^−0.7; B = 0 gives the flat plate at every speed."""
    model = leaf_pair(normal_world=(0, 1, 0))
    sim = Simulator(model, dt=0.001, gravity=(0, 0, 0))
    area = model.plate_area[1]
    force = {u: AerodynamicDrag(model, WindField(u, (0, 1, 0)))(sim)[0][1, 1] for u in (8.0, 10.0, 20.0, 40.0)}
    full = {u: 0.5 * RHO_AIR * CD_LEAF_NORMAL * area * u**2 for u in force}
    assert force[8.0] == pytest.approx(full[8.0], rel=1e-12) and force[10.0] == pytest.approx(full[10.0], rel=1e-12)
    assert force[20.0] == pytest.approx(full[20.0] * 2.0**-0.7, rel=1e-12)
    assert force[40.0] / force[20.0] == pytest.approx(2.0**1.3, rel=1e-12)
    flat = AerodynamicDrag(model, WindField(40.0, (0, 1, 0)), leaf_vogel_exponent=0.0)(sim)[0][1, 1]
    assert flat == pytest.approx(full[40.0], rel=1e-12)
    with pytest.raises(ValueError, match="leaf_vogel_exponent"):
        AerodynamicDrag(model, WindField(1.0, (0, 1, 0)), leaf_vogel_exponent=0.5)


def test_leaf_bends_away_from_a_steady_wind():
    """A face-on leaf on its petiole bends downstream in a steady wind and comes to rest there, presenting less
    area: its drag falls below 80 % of the face-on value (reconfiguration)."""
    model = leaf_pair(normal_world=(0, 1, 0))
    sim = Simulator(model, dt=0.02, gravity=(0, 0, 0), max_iterations=5)
    drag = AerodynamicDrag(model, WindField(10.0, (0, 1, 0)))
    sim.force_fields.append(drag)
    f0, _ = drag(sim)
    sim.run(150)
    f1, _ = drag(sim)
    assert np.linalg.norm(f1[1]) < 0.8 * np.linalg.norm(f0[1])
    assert sim.tip()[1] > 0.02 and sim.kinetic_energy() < 1e-12


def test_leaf_drag_is_limited_only_where_its_time_scale_is_below_the_step():
    """Face-on at 30 m/s with Δt = 40 ms the drag would throw the leaf metres: it is scaled so that the step
    moves it by half its length; at 3 m/s (or Δt = 1 ms) it is the full formula."""
    model = leaf_pair(normal_world=(0, 1, 0))
    area, length = model.plate_area[1], model.lengths[1]
    for u, dt, limited in ((30.0, 0.04, True), (3.0, 0.04, False), (30.0, 0.001, False)):
        sim = Simulator(model, dt=dt, gravity=(0, 0, 0))
        drag = AerodynamicDrag(model, WindField(u, (0, 1, 0)), leaf_vogel_exponent=0.0)
        f, _ = drag(sim)
        full = 0.5 * RHO_AIR * CD_LEAF_NORMAL * area * u**2
        shift = dt**2 * f[1, 1] / (model.masses[1] + dt * drag.implicit_damping[1, 0])
        if limited:
            assert f[1, 1] < 0.2 * full and shift == pytest.approx(0.5 * length)
        else:
            assert f[1, 1] == pytest.approx(full, rel=1e-12)


# ---------------------------------------------------------------------------- wind fields
def test_same_seed_same_field_different_seed_different():
    kw = dict(gust_intensity=0.3, turbulence_intensity=0.4, turbulence_length=2.0)
    pts = np.random.default_rng(1).uniform(-5, 5, (50, 3))
    a = WindField(8.0, (1, 1, 0), seed=3, **kw).velocity(pts, 2.5)
    b = WindField(8.0, (1, 1, 0), seed=3, **kw).velocity(pts, 2.5)
    c = WindField(8.0, (1, 1, 0), seed=4, **kw).velocity(pts, 2.5)
    np.testing.assert_array_equal(a, b)
    assert np.max(np.abs(a - c)) > 0.5


def test_time_varying_wind_does_not_depend_on_call_order():
    kw = dict(
        speed=lambda t: 3.0 + t,
        direction=lambda t: (math.cos(0.1 * t), math.sin(0.1 * t), 0.0),
        turbulence_intensity=0.3,
        seed=2,
    )
    pts = np.random.default_rng(2).uniform(-5, 5, (20, 3))
    w1 = WindField(**kw)
    w1.velocity(pts, 7.3)
    np.testing.assert_allclose(w1.velocity(pts, 1.234), WindField(**kw).velocity(pts, 1.234), rtol=1e-12)
    # the advection integral D(t) = ∫ speed·direction dt, against the closed form for constant direction
    w2 = WindField(lambda t: 2.0 * t, (0, 1, 0))
    np.testing.assert_allclose(w2.advection(3.0), [0, 9.0, 0], rtol=1e-12)


def test_turbulence_correlation_follows_length_scale():
    """Ensemble correlation E[u(x)·u(x+r)]/E[|u|²] ≈ exp(−r²/2L²): ≈ 1 at r ≪ L, ≈ 0 at r ≫ L."""
    L = 2.0

    def corr(r):
        num = den = 0.0
        for seed in range(6):
            f = WindField(0.0, turbulence_speed=1.0, turbulence_length=L, seed=seed)
            rng = np.random.default_rng(seed + 50)
            x0 = rng.uniform(-500, 500, (3000, 3))
            d = rng.normal(size=(3000, 3))
            d /= np.linalg.norm(d, axis=1, keepdims=True)
            a, b = f.velocity(x0, 0.0), f.velocity(x0 + r * d, 0.0)
            num += np.sum(a * b)
            den += 0.5 * np.sum(a * a + b * b)
        return num / den

    assert corr(0.1 * L) > 0.97
    assert abs(corr(L) - math.exp(-0.5)) < 0.1
    assert abs(corr(6 * L)) < 0.1
    # the standard deviation per component is turbulence_speed (on average over components)
    u = WindField(0.0, turbulence_speed=2.0, seed=1).velocity(
        np.random.default_rng(3).uniform(-1e3, 1e3, (20000, 3)), 0.0
    )
    assert np.sqrt(np.mean(u**2)) == pytest.approx(2.0, rel=0.1)


def test_turbulence_moves_in_time_and_is_carried_by_the_mean_wind():
    p = np.array([[0.0, 0.0, 0.0]])
    calm = WindField(0.0, turbulence_speed=1.0, seed=5)
    assert np.linalg.norm(calm.velocity(p, 0.0) - calm.velocity(p, 2.0)) > 0.05
    # frozen pattern check: with eddy evolution removed, u(x + U t d, t) = u(x, 0)
    w = WindField(5.0, (1, 0, 0), turbulence_intensity=0.2, seed=5)
    w._omega[:] = 0.0
    np.testing.assert_allclose(w.velocity(p + [[10.0, 0, 0]], 2.0), w.velocity(p, 0.0), atol=1e-12)


def test_gusts_have_the_requested_intensity():
    w = WindField(10.0, gust_intensity=0.2, gust_frequency=0.5, seed=1)
    g = np.array([w.gust_factor(t) for t in np.linspace(0, 4000, 40001)])
    assert g.mean() == pytest.approx(1.0, abs=0.01)
    assert g.std() == pytest.approx(0.2, rel=0.05)
    assert WindField(10.0).gust_factor(3.0) == 1.0


def test_power_and_log_profiles():
    z = np.array([-1.0, 0.0, 0.05, 1.0, 10.0, 20.0, 40.0])
    power = WindField(10.0, profile="power", reference_height=10.0, power_exponent=0.143)
    np.testing.assert_allclose(power.profile_factor(z), np.maximum(z, 0) ** 0.143 / 10.0**0.143, rtol=1e-12)
    assert power.profile_factor(20.0) == pytest.approx(2.0**0.143)
    log = WindField(10.0, profile="log", reference_height=10.0, roughness_length=0.1)
    expect = np.log(np.maximum(z, 0.1) / 0.1) / math.log(100.0)
    np.testing.assert_allclose(log.profile_factor(z), expect, rtol=1e-12)
    assert log.profile_factor(10.0) == pytest.approx(1.0) and log.profile_factor(0.05) == 0.0
    shifted = WindField(10.0, profile="power", ground_height=5.0)
    u = shifted.velocity([[0, 0, 15.0], [0, 0, 25.0], [0, 0, 4.0]], 0.0)
    np.testing.assert_allclose(u[:, 0], [10.0, 10.0 * 2.0**0.143, 0.0], rtol=1e-12)


def test_storm_ramp_shape():
    args = (2.0, 6.0, 10.0, 16.0, 30.0)
    t = np.linspace(0, 20, 2001)
    v = storm(t, *args)
    assert np.all(v[t <= 2.0] == 0) and np.all(v[t >= 16.0] == 0)
    assert np.all(v[(t >= 6.0) & (t <= 10.0)] == 30.0)
    assert storm(4.0, *args) == pytest.approx(15.0) and storm(13.0, *args) == pytest.approx(15.0)
    rise, fall = (t > 2) & (t < 6), (t > 10) & (t < 16)
    assert np.all(np.diff(v[rise]) > 0) and np.all(np.diff(v[fall]) < 0)
    h = 1e-6  # C¹: zero slope where the ramps meet
    for edge in (2.0, 6.0, 10.0, 16.0):
        assert abs(storm(edge + h, *args) - storm(edge - h, *args)) / (2 * h) < 1e-3
    assert storm(5.0, 1, 1, 1, 1, 9.0) == 0.0 and storm(1.0, 1, 1, 3, 3, 9.0) == 9.0
    with pytest.raises(ValueError, match="ordered"):
        storm(1.0, 5, 4, 6, 7, 10)
    field = WindField(lambda s: storm(s, *args), (0, 1, 0))
    np.testing.assert_allclose(field.velocity([[0, 0, 3.0]], 8.0), [[0, 30.0, 0]])


def test_falloff_shapes():
    o = np.array([1.0, 2.0, 3.0])
    d = np.array([0.0, 0.0, 1.0])
    sphere = WindField(10.0, d, origin=o, falloff="sphere", falloff_power=2.0, min_distance=1.0, max_distance=6.0)
    r = np.array([0.5, 1.0, 2.0, 5.0, 7.0])
    pts = o + r[:, None] * np.array([0.6, 0.8, 0.0])
    np.testing.assert_allclose(sphere.falloff_factor(pts), [1.0, 1.0, 1 / 4, 1 / 25, 0.0], rtol=1e-12)
    np.testing.assert_allclose(sphere.velocity(pts, 0.0)[:, 2], 10.0 * np.array([1.0, 1.0, 1 / 4, 1 / 25, 0.0]))
    tube = WindField(10.0, d, origin=o, falloff="tube", falloff_power=1.0)
    along_axis = o + np.outer([-50.0, 0.0, 80.0], d)
    np.testing.assert_allclose(tube.falloff_factor(along_axis), 1.0)
    np.testing.assert_allclose(tube.falloff_factor(o + [[3.0, 0.0, 40.0]]), [1 / 4])
    plane = WindField(10.0, d, origin=o, falloff="plane", falloff_power=1.0, max_distance=5.0)
    np.testing.assert_allclose(
        plane.falloff_factor(o + [[100.0, -70.0, 0.0], [3.0, 3.0, -3.0], [0, 0, 6.0]]), [1.0, 1 / 4, 0.0]
    )
    assert np.all(WindField(10.0, falloff="none", falloff_power=3.0).falloff_factor(pts) == 1.0)


def test_direction_callable_follows_a_rotation():
    """A field whose direction is its object's rotating +Z axis: wind and drag turn with it."""
    omega = 0.7

    def axis(t):  # +Z of an object turning about world y
        return quat.rotate(np.array([math.cos(0.5 * omega * t), 0.0, math.sin(0.5 * omega * t), 0.0]), Z)

    field = WindField(5.0, axis)
    model = vertical_rod(n=2)
    sim = still_sim(model)
    drag = AerodynamicDrag(model, field)
    for t in (0.5, 1.0, 2.0, 3.0):
        expect = np.array([math.sin(omega * t), 0.0, math.cos(omega * t)])
        np.testing.assert_allclose(field.velocity([[0, 0, 1.0]], t)[0], 5.0 * expect, atol=1e-12)
        sim.time = t
        f, _ = drag(sim)
        horizontal = expect * [1, 1, 0]
        np.testing.assert_allclose(f[1] / np.linalg.norm(f[1]), horizontal / np.linalg.norm(horizontal), atol=1e-12)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(profile="cubic"), "profile"),
        (dict(falloff="cone"), "falloff"),
        (dict(direction=(0, 0, 0)), "zero vector"),
        (dict(gust_intensity=-0.1), "gust_intensity"),
        (dict(turbulence_length=0.0), "turbulence_length"),
        (dict(seed=-1), "seed"),
        (dict(speed=float("nan")), "speed"),
        (dict(profile="log", roughness_length=20.0), "roughness_length"),
        (dict(min_distance=5.0, max_distance=2.0), "max_distance"),
    ],
)
def test_bad_wind_input_names_the_item(kwargs, message):
    with pytest.raises(ValueError, match=message):
        WindField(**kwargs)


def test_bad_evaluation_input_names_the_item():
    with pytest.raises(ValueError, match=r"points\[1\]"):
        WindField(1.0).velocity([[0, 0, 0], [np.nan, 0, 0]], 0.0)
    with pytest.raises(ValueError, match=r"speed\(2.0\)"):
        WindField(lambda t: float("inf")).velocity([[0, 0, 0]], 2.0)
    with pytest.raises(ValueError, match="winds\\[0\\]"):
        WindSum([object()])
    with pytest.raises(ValueError, match="rho_air"):
        AerodynamicDrag(vertical_rod(), WindField(1.0), rho_air=0.0)
    with pytest.raises(ValueError, match="cd_branch"):
        AerodynamicDrag(vertical_rod(), WindField(1.0), cd_branch=-1.0)


def test_wind_sum_adds_winds():
    a, b = WindField(3.0, (1, 0, 0)), WindField(4.0, (0, 1, 0), turbulence_speed=1.0)
    pts = np.random.default_rng(0).normal(size=(5, 3))
    np.testing.assert_allclose(WindSum([a, b]).velocity(pts, 1.5), a.velocity(pts, 1.5) + b.velocity(pts, 1.5))


# ---------------------------------------------------------------------------- materials
def test_material_presets_and_stiffness_follows_radius_to_the_fourth():
    """One preset for a whole tree: every joint's E I is E π r⁴/4 of its own radius (Deul Eq. 5)."""
    assert (PRESETS["wood"].youngs_modulus, PRESETS["wood"].torsion_modulus, PRESETS["wood"].density) == (
        12.5e9,
        6.5e9,
        1000.0,
    )
    assert (PRESETS["leaf"].youngs_modulus, PRESETS["leaf"].torsion_modulus) == (1.2e9, 0.6e9)
    for name in ("birch", "willow", "pine"):
        m = material(name)
        assert 4e9 < m.youngs_modulus < 12e9 and 600 < m.density < 1000 and m.source
    with pytest.raises(ValueError, match="unknown material 'oak'"):
        material("oak")
    birch = material("birch")
    trunk = (np.array([[0, 0, 0], [0, 0, 1.0], [0, 0, 2.0], [0, 0, 3.0]]), np.array([0.1, 0.08, 0.06, 0.04]))
    twig = (np.array([[0, 0, 1.0], [0.5, 0, 1.2], [1.0, 0, 1.4]]), np.array([0.02, 0.01, 0.005]))
    model, _ = tree_from_branches([trunk, twig], **birch.rod_kwargs())
    r = model.joint_radii[:, 0]
    np.testing.assert_allclose(model.bend_twist_stiffness[:, 0], birch.youngs_modulus * math.pi * r**4 / 4, rtol=1e-12)
    np.testing.assert_allclose(model.bend_twist_stiffness[:, 2], birch.torsion_modulus * math.pi * r**4 / 2, rtol=1e-12)
    thick, thin = np.argmax(r), np.argmin(r)
    ratio = model.bend_twist_stiffness[thick, 0] / model.bend_twist_stiffness[thin, 0]
    assert ratio == pytest.approx((r[thick] / r[thin]) ** 4) and ratio > 1e3
