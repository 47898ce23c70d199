"""Curve sampling for rods from Blender curves."""

import numpy as np
import pytest

from solver.build.resample import bezier_polyline, resample_polyline


def test_bezier_with_aligned_handles_is_the_straight_line_and_hits_control_points():
    co = np.array([[0, 0, 0], [1, 0, 0], [3, 0, 0.0]])
    hl = co - [0.2, 0, 0]
    hr = co + [0.2, 0, 0]
    pts, rad = bezier_polyline(co, hl, hr, [1.0, 2.0, 4.0], samples_per_span=8)
    assert np.allclose(pts[:, 1:], 0.0)
    assert np.allclose(pts[[0, 8, 16]], co) and np.allclose(rad[[0, 8, 16]], [1, 2, 4])


def test_quarter_circle_bezier_has_the_arc_length():
    k = 0.5522847498  # handle length of the standard circular-arc Bézier
    co = np.array([[1.0, 0, 0], [0, 1.0, 0]])
    hr = np.array([[1.0, k, 0], [0, 1.0, 0]])
    hl = np.array([[1.0, 0, 0], [k, 1.0, 0]])
    pts, _ = bezier_polyline(co, hl, hr, [1.0, 1.0], samples_per_span=256)
    length = np.sum(np.linalg.norm(np.diff(pts, axis=0), axis=1))
    assert length == pytest.approx(np.pi / 2, rel=3e-4)  # the cubic arc itself is off by ≤ 2.7e-4 radially
    assert np.max(np.abs(np.linalg.norm(pts, axis=1) - 1.0)) < 3e-4


def test_resampling_gives_equal_segments_and_keeps_the_ends():
    x = np.array([0.0, 0.3, 1.0, 2.05])
    pts = np.stack((x, np.zeros(4), np.zeros(4)), 1)
    out, rad = resample_polyline(pts, [1.0, 1.0, 2.0, 3.0], 0.5)
    seg = np.linalg.norm(np.diff(out, axis=0), axis=1)
    assert out.shape[0] == 5 and np.allclose(seg, 2.05 / 4)
    assert np.allclose(out[[0, -1]], pts[[0, -1]]) and rad[0] == 1.0 and rad[-1] == 3.0
    with pytest.raises(ValueError, match="segment_length"):
        resample_polyline(pts, np.ones(4), 0.0)
