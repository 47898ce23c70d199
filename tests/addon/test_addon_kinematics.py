"""Pins and the carrier as numbers (addon/kinematics.py), checked against hand-computed rotations."""

import numpy as np
import pytest

S = np.sqrt(0.5)
Q_Z90 = np.array([S, 0.0, 0.0, S])  # 90° about +Z: x → y, y → −x


def _matrix(rotation_3x3, translation):
    m = np.eye(4)
    m[:3, :3], m[:3, 3] = rotation_3x3, translation
    return m


RZ90 = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])


def test_pin_axis_rail_hinge_and_along_the_rod(addon):
    k = addon("kinematics")
    ident = np.array([1.0, 0.0, 0.0, 0.0])
    # a rail along world X seen from a parent turned 90° about Z: its local −Y
    np.testing.assert_allclose(k.pin_axis("RAIL", (1.0, 0.0, 0.0), Q_Z90, ident), [0.0, -1.0, 0.0], atol=1e-15)
    # a hinge about world X on a child turned 90° about Z: the child's section axis Y (sign dropped)
    np.testing.assert_array_equal(k.pin_axis("HINGE", (1.0, 0.0, 0.0), ident, Q_Z90), [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(k.pin_axis("HINGE", None, ident, Q_Z90), [0.0, 0.0, 1.0])  # Along Rod
    np.testing.assert_array_equal(k.pin_axis("BALL", (1.0, 0.0, 0.0), ident, ident), [0.0, 0.0, 1.0])
    # 30° about Z from X: 30° from every section axis of an unturned child, more than the 5° allowed
    a = np.radians(30.0)
    tilted = np.array([np.cos(a / 2), 0.0, 0.0, np.sin(a / 2)])
    with pytest.raises(ValueError, match="Pin Joint 'Hinge': the world axis is 30°"):
        k.pin_axis("HINGE", (1.0, 0.0, 0.0), ident, tilted)


def test_pin_joints_make_the_held_segments_joints_of_the_pin_kind(addon):
    from solver import JOINT_KINDS, rod_from_polyline

    k = addon("kinematics")
    points = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 2.0], [0.0, 0.0, 3.0], [0.0, 0.0, 4.0]])
    model = rod_from_polyline(points, radius=0.01, youngs_modulus=1e9, density=1000.0)
    pinned = model.pinned.copy()
    pinned[2] = True
    new = k.pin_joints(model, pinned, [2], "BALL", "ROD")
    at = np.flatnonzero((new.joint_parent == 2) | (new.joint_child == 2))
    assert at.size == 2 and all(JOINT_KINDS[int(kind)] == "ball" for kind in new.joint_kind[at])
    assert list(np.flatnonzero(new.pinned)) == [2]
    np.testing.assert_array_equal(new.rest_darboux, model.rest_darboux)
    clamp = k.pin_joints(model, pinned, [2], "CLAMP", "ROD")
    np.testing.assert_array_equal(clamp.joint_kind, model.joint_kind)


def test_carrier_motion_is_the_rigid_motion_since_the_model_was_read(addon):
    k = addon("kinematics")
    rest = _matrix(np.eye(3), [1.0, 2.0, 3.0])
    assert k.carrier_motion(rest.copy(), rest, "treeArm") is None
    now = _matrix(RZ90, [0.5, 0.0, 0.0])  # turned 90° about Z and moved
    t, r = k.carrier_motion(now, rest, "treeArm")
    # rel = now rest⁻¹: x ↦ R (x − (1, 2, 3)) + (0.5, 0, 0), so t = (0.5, 0, 0) − R (1, 2, 3) = (2.5, −1, −3)
    np.testing.assert_allclose(t, [2.5, -1.0, -3.0], atol=1e-15)
    np.testing.assert_allclose(r * np.sign(r[0]), Q_Z90, atol=1e-15)
    with pytest.raises(ValueError, match="'treeArm' changes its scale"):
        k.carrier_motion(_matrix(1.01 * np.eye(3), [0.0, 0.0, 0.0]), rest, "treeArm")
    with pytest.raises(ValueError, match="mirrors"):
        k.carrier_motion(_matrix(np.diag([1.0, 1.0, -1.0]), [0.0, 0.0, 0.0]), rest, "treeArm")


def test_kinematic_poses_follow_the_carrier_and_the_pin_objects(addon):
    k = addon("kinematics")
    rest_x = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 2.0]])
    rest_q = np.tile([1.0, 0.0, 0.0, 0.0], (2, 1))
    motion = (np.array([0.0, 0.0, 1.0]), Q_Z90)
    # no pins: both segments turned 90° about Z, then lifted 1 m
    x, q = k.kinematic_poses(rest_x, rest_q, motion, [], [], [])
    np.testing.assert_allclose(x, [[0.0, 1.0, 1.0], [0.0, 0.0, 3.0]], atol=1e-15)
    np.testing.assert_allclose(q, [Q_Z90, Q_Z90], atol=1e-15)
    # pin object of segment 1 moved by +2 m along X since the start: its motion instead of the carrier's
    start, now = np.eye(4), _matrix(np.eye(3), [2.0, 0.0, 0.0])
    x, q = k.kinematic_poses(rest_x, rest_q, motion, [1], [now], [start])
    np.testing.assert_allclose(x[1], [2.0, 0.0, 2.0], atol=1e-15)
    np.testing.assert_allclose(q[1], [1.0, 0.0, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(x[0], [0.0, 1.0, 1.0], atol=1e-15)
    # seen from the carrier, the carried segment is back at rest
    back_x, back_q = k.seen_from_carrier(*k.kinematic_poses(rest_x, rest_q, motion, [], [], []), motion)
    np.testing.assert_allclose(back_x, rest_x, atol=1e-15)
    np.testing.assert_allclose(back_q, rest_q, atol=1e-15)
    assert k.seen_from_carrier(rest_x, rest_q, None)[0] is rest_x
