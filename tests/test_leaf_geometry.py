"""Leaf polygon frames: analytic rectangles placed next to a branch."""
import numpy as np
import pytest

from solver.build.leaves import leaf_frames


def _rect(stem, axis, across, length, width):
    a, c = np.asarray(axis, float), np.asarray(across, float)
    s = np.asarray(stem, float)
    return np.array([s - 0.5 * width * c, s - 0.5 * width * c + length * a,
                     s + 0.5 * width * c + length * a, s + 0.5 * width * c])


def test_rectangles_give_stem_axis_normal_size_and_parent_span():
    branch = (np.array([[0, 0, 0], [0, 0, 1.0], [0, 0, 2.0]]), np.array([0.05, 0.04, 0.03]))
    other = (np.array([[5, 0, 0], [5, 0, 1.0]]), np.array([0.02, 0.02]))
    rng = np.random.default_rng(0)
    quads, truth = [], []
    for i in range(30):
        z = rng.uniform(0.05, 1.95)
        phi = rng.uniform(0, 2 * np.pi)
        out = np.array([np.cos(phi), np.sin(phi), 0.0])             # the leaf points away from the trunk
        roll = rng.uniform(-1.0, 1.0)                              # leaf plane turned about its axis
        normal = np.cos(roll) * np.array([0, 0, 1.0]) + np.sin(roll) * np.cross(out, [0, 0, 1.0])
        across = np.cross(normal, out)
        length, width = rng.uniform(0.05, 0.2), rng.uniform(0.02, 0.04)
        stem = np.array([0, 0, z]) + 0.06 * out
        if width > length:
            width, length = length, width
        quads.append(_rect(stem, out, across, length, width)[::-1 if i % 2 else 1])
        truth.append((stem, out, normal, length, width, int(z >= 1.0)))
    co = np.concatenate(quads)
    f = leaf_frames(co, np.arange(30) * 4, np.full(30, 4), np.arange(120), [other, branch])
    for i, (stem, out, normal, length, width, span) in enumerate(truth):
        np.testing.assert_allclose(f["leaf_stem"][i], stem, atol=1e-12)
        np.testing.assert_allclose(f["leaf_axis"][i], out, atol=1e-12)
        assert abs(f["leaf_length"][i] - length) < 1e-12 and abs(f["leaf_width"][i] - width) < 1e-12
        assert abs(f["leaf_area"][i] - length * width) < 1e-12
        assert abs(abs(f["leaf_normal"][i] @ normal) - 1) < 1e-12
        assert tuple(f["leaf_parent"][i]) == (1, span)


def test_degenerate_polygons_are_named():
    branch = (np.array([[0, 0, 0], [0, 0, 1.0]]), np.array([0.05, 0.04]))
    co = np.array([[0.1, 0, 0.5], [0.2, 0, 0.5], [0.3, 0, 0.5]])
    with pytest.raises(ValueError, match="leaf polygon 0 has zero area"):
        leaf_frames(co, [0], [3], [0, 1, 2], [branch])
    with pytest.raises(ValueError, match="fewer than 3"):
        leaf_frames(co, [0], [2], [0, 1], [branch])
