"""Points bound to segments follow them rigidly and come back exactly at rest."""

import numpy as np
import pytest

from solver.build.binding import bind_points, carried_points, nearest_segments
from solver.core import quaternion as quat
from solver.core.model import rod_from_polyline


def _rod():
    pts = np.stack([np.linspace(0, 1, 11), np.zeros(11), np.zeros(11)], axis=1)
    return rod_from_polyline(pts, radius=0.01, youngs_modulus=1e9, density=1000.0)


def test_nearest_segment_is_the_one_under_the_point():
    m = _rod()
    x = np.array([[0.05, 0.02, 0.0], [0.55, 0.0, -0.03], [0.999, 0.0, 0.0], [-0.2, 0.0, 0.0], [1.3, 0.1, 0.0]])
    seg = nearest_segments(x, m.positions, m.orientations, m.lengths)
    assert seg.tolist() == [0, 5, 9, 0, 9]


def test_candidates_restrict_the_choice():
    m = _rod()
    seg = nearest_segments([[0.05, 0.0, 0.0]], m.positions, m.orientations, m.lengths, candidates=[4, 7])
    assert seg.tolist() == [4]


def test_bound_points_move_rigidly_with_their_segment():
    m = _rod()
    rng = np.random.default_rng(3)
    x = rng.uniform([0, -0.05, -0.05], [1, 0.05, 0.05], size=(40, 3))
    seg, local = bind_points(x, m.positions, m.orientations, m.lengths)
    np.testing.assert_allclose(carried_points(m.positions, m.orientations, seg, local), x, atol=1e-14)
    # a rigid motion of the whole rod moves every bound point by the same rigid motion
    q = quat.normalize(np.array([0.9, 0.1, -0.3, 0.2]))
    t = np.array([0.3, -2.0, 5.0])
    pos = quat.rotate(np.broadcast_to(q, m.positions.shape[:1] + (4,)), m.positions) + t
    ori = quat.multiply(np.broadcast_to(q, m.orientations.shape), m.orientations)
    moved = carried_points(pos, ori, seg, local)
    expected = quat.rotate(np.broadcast_to(q, x.shape[:1] + (4,)), x) + t
    np.testing.assert_allclose(moved, expected, atol=1e-12)
    # distances to the owning segment centre are preserved
    np.testing.assert_allclose(np.linalg.norm(moved - pos[seg], axis=1), np.linalg.norm(local, axis=1), atol=1e-12)


def test_bad_points_raise():
    m = _rod()
    with pytest.raises(ValueError, match="finite"):
        nearest_segments([[np.nan, 0, 0]], m.positions, m.orientations, m.lengths)
    with pytest.raises(ValueError, match="candidate"):
        nearest_segments([[0, 0, 0]], m.positions, m.orientations, m.lengths, candidates=[])
