"""Kinematic points make no contact rows: a pinned segment, and a free segment's joint point held by a pinned one (a
trunk's base on its anchor), against a collider. Nothing could move to satisfy such a row; a ground plane through a
trunk's base would keep one unsolvable row in every step. So a clamped trunk whose anchor reaches below the ground
and whose base touches it steps exactly as without the plane."""

import numpy as np
import pytest

from solver import Contacts, Plane, Simulator, rod_from_polyline

R = 0.02


def trunk(pinned):
    """A vertical rod of radius R: its first edge from 10 cm underground to the ground (the anchor when pinned), then
    five 20 cm segments; the base's capsule cap reaches R below the ground."""
    z = np.concatenate(([-0.1], np.linspace(0.0, 1.0, 6)))
    pts = np.stack([np.zeros(7), np.zeros(7), z], 1)
    return rod_from_polyline(pts, R, 1e9, pinned=pinned)


def sway(model, colliders, method):
    sim = Simulator(model, dt=0.01, max_iterations=20, tolerance=1e-8)
    contacts = Contacts(model, colliders, friction=0.5, method=method)
    sim.gs_constraints.append(contacts)
    sim.angular_velocities[~model.pinned, 0] = 0.5
    for _ in range(20):
        sim.step()
    return sim, contacts


@pytest.mark.parametrize("method", ["schur", "gauss_seidel"])
def test_a_clamped_trunk_base_under_the_ground_makes_no_row_and_moves_nothing(method):
    model = trunk(["start"])
    assert model.pinned[0] and not model.pinned[1:].any()
    sim, contacts = sway(model, [Plane()], method)
    assert all(r.rows == 0 for r in contacts.reports)
    free, _ = sway(model, [], method)
    np.testing.assert_array_equal(sim.positions, free.positions)


@pytest.mark.parametrize("method", ["schur", "gauss_seidel"])
def test_the_same_base_unclamped_collides(method):
    # the first segment free: its rows are made and push it out of the ground
    _, contacts = sway(trunk(()), [Plane()], method)
    assert contacts.reports[0].rows > 0
