"""Leaf polygon frames: analytic rectangles placed next to a branch."""

import numpy as np
import pytest

from solver.build.leaves import leaf_frames


def _rect(stem, axis, across, length, width):
    a, c = np.asarray(axis, float), np.asarray(across, float)
    s = np.asarray(stem, float)
    return np.array(
        [s - 0.5 * width * c, s - 0.5 * width * c + length * a, s + 0.5 * width * c + length * a, s + 0.5 * width * c]
    )


def test_rectangles_give_stem_axis_normal_size_and_parent_span():
    branch = (np.array([[0, 0, 0], [0, 0, 1.0], [0, 0, 2.0]]), np.array([0.05, 0.04, 0.03]))
    other = (np.array([[5, 0, 0], [5, 0, 1.0]]), np.array([0.02, 0.02]))
    rng = np.random.default_rng(0)
    quads, truth = [], []
    for i in range(30):
        z = rng.uniform(0.05, 1.95)
        phi = rng.uniform(0, 2 * np.pi)
        out = np.array([np.cos(phi), np.sin(phi), 0.0])  # the leaf points away from the trunk
        roll = rng.uniform(-1.0, 1.0)  # leaf plane turned about its axis
        normal = np.cos(roll) * np.array([0, 0, 1.0]) + np.sin(roll) * np.cross(out, [0, 0, 1.0])
        across = np.cross(normal, out)
        length, width = rng.uniform(0.05, 0.2), rng.uniform(0.02, 0.04)
        stem = np.array([0, 0, z]) + 0.06 * out
        if width > length:
            width, length = length, width
        quads.append(_rect(stem, out, across, length, width)[:: -1 if i % 2 else 1])
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


def _hex_leaf(stem, axis, across, scale, scale_x):
    """Sapling's hex leaf (add_curve_sapling genLeafMesh): six corners, two quads sharing the midrib."""
    unit = np.array([[0, 0], [0.5, 1 / 3], [0.5, 2 / 3], [0, 1], [-0.5, 2 / 3], [-0.5, 1 / 3]])
    a, c = np.asarray(axis, float), np.asarray(across, float)
    return np.asarray(stem, float) + scale * (scale_x * unit[:, :1] * c + unit[:, 1:] * a)


@pytest.mark.parametrize("scale_x", [0.2, 0.5, 1.0, 1.3])
def test_a_hex_leaf_is_one_leaf_with_its_stem_at_the_base(scale_x):
    """Two quads sharing an edge are one leaf; its stem is the hex's base corner and its axis runs to
    the tip even where the leaf's second moment across is larger (scale_x 1: 1/6 across, 0.10 along)."""
    branch = (np.array([[0, 0, 0], [0, 0, 1.0], [0, 0, 2.0]]), np.array([0.05, 0.04, 0.03]))
    rng = np.random.default_rng(1)
    co, truth = [], []
    for _ in range(20):
        z, phi = rng.uniform(0.1, 1.9), rng.uniform(0, 2 * np.pi)
        out = np.array([np.cos(phi), np.sin(phi), 0.0])
        roll = rng.uniform(-1.0, 1.0)
        normal = np.cos(roll) * np.array([0, 0, 1.0]) + np.sin(roll) * np.cross(out, [0, 0, 1.0])
        across = np.cross(normal, out)
        scale = rng.uniform(0.1, 0.2)
        stem = np.array([0, 0, z])
        co.append(_hex_leaf(stem, out, across, scale, scale_x))
        truth.append((stem, out, normal, scale))
    co = np.concatenate(co)
    faces = np.array([[0, 1, 2, 3], [0, 3, 4, 5]])
    loops = np.concatenate([faces.ravel() + 6 * i for i in range(20)])
    f = leaf_frames(co, np.arange(40) * 4, np.full(40, 4), loops, [branch])
    assert f["leaf_stem"].shape == (20, 3)
    np.testing.assert_array_equal(f["leaf_of_polygon"], np.repeat(np.arange(20), 2))
    np.testing.assert_array_equal(f["leaf_of_vertex"], np.repeat(np.arange(20), 6))
    for i, (stem, out, normal, scale) in enumerate(truth):
        np.testing.assert_allclose(f["leaf_stem"][i], stem, atol=1e-12)
        np.testing.assert_allclose(f["leaf_axis"][i], out, atol=1e-12)
        assert abs(f["leaf_length"][i] - scale) < 1e-12
        assert abs(f["leaf_width"][i] - scale_x * scale) < 1e-12
        assert abs(f["leaf_area"][i] - 2 / 3 * scale_x * scale**2) < 1e-12
        assert abs(abs(f["leaf_normal"][i] @ normal) - 1) < 1e-12


def test_leaves_are_the_connected_pieces_of_the_mesh():
    """A corner shared by two leaves joins them into one piece; a vertex of no polygon belongs to no
    leaf; a flipped polygon does not cancel its leaf's normal."""
    branch = (np.array([[0, 0, 0], [0, 0, 1.0]]), np.array([0.05, 0.04]))
    quad = np.array([[0.1, 0, 0], [0.3, 0, 0], [0.3, 0.1, 0], [0.1, 0.1, 0]])
    co = np.concatenate([quad + [0, 0, 0.2], quad + [0, 0, 0.5], quad + [0.2, 0, 0.5], [[9.0, 9, 9]]])
    loops = [
        0,
        1,
        2,
        3,  # leaf 0
        4,
        5,
        6,
        7,  # leaf 1 ...
        5,
        9,
        10,
        6,
    ]  # ... shares corners 5 and 6 with the third quad (flipped: 5, 9, 10, 6)
    f = leaf_frames(co, [0, 4, 8], [4, 4, 4], loops, [branch])
    np.testing.assert_array_equal(f["leaf_of_polygon"], [0, 1, 1])
    np.testing.assert_array_equal(f["leaf_of_vertex"], [0, 0, 0, 0, 1, 1, 1, 1, -1, 1, 1, -1, -1])
    np.testing.assert_allclose(abs(f["leaf_normal"][1] @ [0, 0, 1.0]), 1, atol=1e-12)
    np.testing.assert_allclose(f["leaf_area"], [0.02, 0.04], atol=1e-12)
    np.testing.assert_allclose(f["leaf_length"][1], 0.4, atol=1e-12)  # 0.1 → 0.5 m out from the trunk
    np.testing.assert_allclose(f["leaf_stem"][1], [0.1, 0.05, 0.5], atol=1e-12)


def test_stems_are_found_on_the_branch_as_drawn():
    """A round hex leaf (leafScaleX 1) grows from a bowed branch toward its chord: measured to the straight
    span its side edge is nearer than its base (0.035 m against 0.05 m), measured to the curve as drawn
    its base is on the branch, so the base is the stem."""
    t = np.linspace(0.0, 1.0, 33)
    drawn = np.stack((0.2 * t * (1 - t), np.zeros_like(t), t), 1)  # bows 5 cm off its chord at z = 0.5
    branch = (drawn[[0, -1]], np.array([0.02, 0.02]))  # one span, the chord
    base = drawn[16]
    co = _hex_leaf(base, [-1.0, 0, 0], [0, 0, 1.0], 0.17, 1.0)  # pointing at the chord, blade in the xz-plane
    loops = np.array([0, 1, 2, 3, 0, 3, 4, 5])
    chord = leaf_frames(co, [0, 4], [4, 4], loops, [branch])
    assert np.linalg.norm(chord["leaf_stem"][0] - base) > 0.08  # a side of the leaf
    curved = leaf_frames(co, [0, 4], [4, 4], loops, [branch], [(drawn, np.zeros(32, np.int64))])
    np.testing.assert_allclose(curved["leaf_stem"][0], base, atol=1e-12)
    np.testing.assert_allclose(curved["leaf_axis"][0], [-1.0, 0, 0], atol=1e-12)
    assert tuple(curved["leaf_parent"][0]) == (0, 0)
