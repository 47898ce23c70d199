"""Fracture (solver/core/fracture.py) and Simulator.remove_joints: a joint breaks where the bending strain passes
the rupture strain, and what hung on it falls freely."""

import numpy as np
import pytest

from solver import Simulator
from solver.build.prestress import gravity_prestress
from solver.core.fracture import Fracture, attached
from solver.core.model import rod_from_polyline

G = np.array([0.0, 0.0, -9.81])


def rod(n=20, length=1.0, radius=0.005, e=1e9):
    pts = np.zeros((n + 1, 3))
    pts[:, 0] = np.linspace(0.0, length, n + 1)
    return rod_from_polyline(pts, radius=radius, youngs_modulus=e, density=1000.0, pinned=("start",))


def test_cantilever_breaks_at_the_root_when_the_moment_reaches_rupture():
    """A horizontal cantilever under a growing tip load breaks at its clamp joint (largest moment) when
    r·F·L/(EI) reaches the rupture strain: F_break = ε EI / (r L_arm), within 3 % (small deflection, slow load)."""
    r, e, eps = 0.02, 1e9, 0.002  # small deflection at the break: ε L / 3r ≈ 0.03
    model = gravity_prestress(rod(radius=r, e=e), np.zeros(3))
    sim = Simulator(model, dt=1 / 240, max_iterations=5, gravity=(0, 0, 0), damping=20.0)
    frac = Fracture(rupture_strain=eps)
    sim.post_step.append(frac)
    tip = model.n_segments - 1
    ei = e * np.pi * r**4 / 4
    rate = 4.0  # N/s: quasi-static (≈ 13 N over 3 s; first period 0.18 s)
    force = 0.0
    while not frac.broken and force < 50.0:
        force += rate * sim.dt
        sim.clear_point_loads()
        sim.add_point_load(tip, [0.0, 0.0, 0.025], [0.0, 0.0, -force])
        sim.step()
    assert frac.broken, "never broke"
    joint_index = frac.broken[0][1]
    m = sim.model
    # the first break is the joint nearest the clamp
    assert joint_index == 0
    # the clamp joint sits where the pinned first segment meets the next one (x = 0.05 m); the load acts at
    # the tip (x = 1 m)
    lever = 1.0 - 0.05
    f_break = eps * ei / (r * lever)
    assert force == pytest.approx(f_break, rel=0.03)
    assert m.n_joints == model.n_joints - 1


def test_broken_piece_falls_freely_and_is_no_longer_attached():
    model = rod()
    sim = Simulator(model, dt=1 / 120, max_iterations=5, gravity=G)
    sim.remove_joints([10])
    assert sim.model.n_joints == model.n_joints - 1
    att = attached(sim.model)
    assert att.sum() == 11 and not att[-1]
    z0 = sim.positions[-5:, 2].mean()
    sim.run(60)  # 0.5 s
    drop = z0 - sim.positions[-5:, 2].mean()
    assert drop == pytest.approx(0.5 * 9.81 * 0.5**2, rel=0.02)  # free fall of the detached piece
    # the rest of the rod still hangs from the clamp: its root segment barely moved
    assert np.linalg.norm(sim.positions[1] - model.positions[1]) < 0.01


def test_prestress_survives_removing_other_joints():
    """The kept joints keep their pre-stressed rest Darboux vectors, so the stump, relieved of the weight
    that broke off, springs up (it no longer carries that load)."""
    model = gravity_prestress(rod(e=1e8), G)
    sim = Simulator(model, dt=1 / 120, max_iterations=5, gravity=G, damping=5.0)
    sim.remove_joints([15])
    keep = np.arange(model.n_joints) != 15
    np.testing.assert_array_equal(sim.model.rest_darboux, model.rest_darboux[keep])
    sim.run(120)
    assert sim.positions[15, 2] > model.positions[15, 2] + 0.01


def test_leaves_are_not_watched_and_bad_input_is_refused():
    with pytest.raises(ValueError, match="rupture_strain"):
        Fracture(rupture_strain=0.0)
    sim = Simulator(rod(), dt=1 / 60)
    with pytest.raises(ValueError, match="joint indices"):
        sim.remove_joints([99])


def test_joints_keep_their_original_numbers_through_several_breaks():
    model = rod()
    sim = Simulator(model, dt=1 / 120, gravity=G)
    sim.remove_joints([5])
    sim.remove_joints([10])  # tree joint 10 of the reduced model is original joint 11
    idx = sim.model.joint_input_index
    assert 5 not in idx and 11 not in idx and idx.size == model.n_joints - 2
    np.testing.assert_array_equal(sim.model.joint_child, model.joint_child[idx])
    np.testing.assert_array_equal(sim.model.rest_darboux, model.rest_darboux[idx])
    sim.run(5)
    assert np.all(np.isfinite(sim.positions))
