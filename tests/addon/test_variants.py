"""addon/variants.py without Blender: the position hash, the phase shifts, the NLA layout and the assignment."""

from __future__ import annotations

import math

import numpy as np
import pytest


@pytest.fixture(scope="module")
def v(addon):
    return addon("variants")


def _grid(n=12, spacing=4.0, seed=3):
    rng = np.random.default_rng(seed)
    g = np.stack(np.meshgrid(np.arange(n), np.arange(n)), axis=-1).reshape(-1, 2) * spacing
    return np.column_stack((g + rng.uniform(-1, 1, g.shape), np.zeros(len(g))))


def test_position_hash_is_deterministic_and_ignores_float32_noise(v):
    p = (12.345678, -3.25, 0.5)
    assert v.position_hash(p) == v.position_hash(p)
    assert v.position_hash(p) == v.position_hash(np.float32(p))  # a file saved in float32: same mm cell
    assert v.position_hash(p) != v.position_hash((12.345678 + 2e-3, -3.25, 0.5))
    # well spread: the low 3 bits (variant of 8) of a 40 × 40 grid are near-uniform
    counts = np.bincount([v.position_hash((x, y, 0.0)) % 8 for x in range(40) for y in range(40)], minlength=8)
    assert counts.min() > 0.8 * 200 and counts.max() < 1.2 * 200


def test_phase_offsets_are_k_evenly_spaced_shifts(v):
    assert v.phase_offsets(24, 8) == [0, 3, 6, 9, 12, 15, 18, 21]
    assert v.phase_offsets(10, 4) == [0, 2, 5, 8]  # round(2.5) = 2, round(7.5) = 8 (banker's rounding, stable)
    assert v.phase_offsets(120, 1) == [0]
    with pytest.raises(ValueError):
        v.phase_offsets(0, 8)


@pytest.mark.parametrize("shift", [0, 3, 11])
def test_the_nla_strip_plays_the_shifted_loop_over_the_whole_range(v, shift):
    """A strip from ``first`` repeating the action's frames start..start + L shows loop frame
    start + (f − first) mod L; it must equal :func:`loop_frame` at every scene frame and cover the range."""
    start, end, n = 1, 100, 24
    first, repeats = v.strip_layout(start, end, n, shift)
    assert first <= start and first + repeats * n >= end + 1
    for f in range(start, end + 1):
        shown = start + (f - first) % n
        assert shown == v.loop_frame(f, start, n, shift)
    assert v.loop_frame(start, start, n, shift) == start + shift


def test_shift_correlation_of_a_sine_is_the_cosine_of_the_phase(v):
    n, k = 48, 8
    t = np.arange(n + 1) / n
    motion = np.sin(2 * math.pi * t)[:, None] * np.array([[1.0, 0.5, 0.0]])
    shifts = v.phase_offsets(n, k)
    c = v.shift_correlation(motion, shifts)
    expected = np.cos(2 * math.pi * (np.subtract.outer(shifts, shifts)) / n)
    np.testing.assert_allclose(c, expected, atol=1e-12)


def test_nearest_matches_brute_force(v):
    p = _grid(6)
    near = v.nearest(p, 3, block=7)
    d = np.linalg.norm(p[:, None] - p[None], axis=-1)
    np.fill_diagonal(d, np.inf)
    np.testing.assert_array_equal(near[:, 0], d.argmin(axis=1))
    assert (v.nearest(p[:2], 3)[:, 1:] == -1).all()


def test_assignment_is_deterministic_and_order_free(v):
    p = _grid()
    a = v.assign_variants(p, 8)
    perm = np.random.default_rng(0).permutation(len(p))
    np.testing.assert_array_equal(v.assign_variants(p[perm], 8), a[perm])
    assert set(a.tolist()) == set(range(8))


def test_nearest_neighbours_never_share_a_variant(v):
    p = _grid()
    a = v.assign_variants(p, 8)
    nn = v.nearest(p, 1)[:, 0]
    assert not np.any(a == a[nn])
    # a plain hash mod 8 shares with about 1/8 of the neighbours: the assignment does better than chance
    plain = np.array([v.position_hash(q) % 8 for q in p])
    assert np.mean(plain == plain[nn]) > 0.05


def test_alike_variants_are_avoided_between_neighbours(v):
    """A sway of period L/2 makes variants an even number of L/8 apart alike (|correlation| 1), odd ones unrelated
    (0): a plain hash gives about half the neighbours alike variants, the assignment few (a greedy two-colouring
    of the nearest-neighbour graph, not always possible)."""
    n, k = 48, 8
    t = np.arange(n + 1) / n
    shifts = v.phase_offsets(n, k)
    alike = np.abs(v.shift_correlation(np.sin(4 * math.pi * t)[:, None], shifts))
    p = _grid()
    a = v.assign_variants(p, k, alike)
    nn = v.nearest(p, 1)[:, 0]
    pair = alike[a, a[nn]]
    plain = np.array([v.position_hash(q) % k for q in p])
    assert np.mean(alike[plain, plain[nn]] > 0.5) > 0.35
    assert np.mean(pair > 0.5) < 0.15  # measured 0.11


def test_cross_correlation_couples_assets(v):
    n = 24
    t = np.arange(n + 1) / n
    a = np.sin(2 * math.pi * t)[:, None]
    b = 2.0 * np.sin(2 * math.pi * (t + 0.25))[:, None]  # asset b a quarter loop ahead
    c = v.cross_correlation([a, b], v.phase_offsets(n, 4))
    assert c.shape == (2, 2, 4, 4)
    assert c[0, 1, 1, 0] == pytest.approx(1.0)  # a shifted by L/4 is b
    assert c[0, 1, 0, 0] == pytest.approx(0.0, abs=1e-12)
    labels = np.arange(len(_grid())) % 2
    out = v.assign_variants(_grid(), 4, np.abs(c), labels)
    assert out.min() >= 0 and out.max() <= 3


def test_float_hash_spreads_the_node_groups_index(v):
    p = _grid(20, spacing=3.0)
    idx = np.floor(v.float_hash(p) * v.PICK_RANGE).astype(int) % 8
    counts = np.bincount(idx, minlength=8)
    assert counts.min() > 0.6 * len(p) / 8
    h32 = np.float32(np.sin(np.float32(p @ np.array(v.FLOAT_HASH_AXES)))) * np.float32(v.FLOAT_HASH_SCALE)
    idx32 = np.floor((h32 - np.floor(h32)) * v.PICK_RANGE).astype(int) % 8  # Blender computes in float32
    assert np.bincount(idx32, minlength=8).min() > 0.6 * len(p) / 8


def test_memory_estimate(v):
    m = v.memory_bytes(bones=10, keys_per_curve=25, leaf_points=100, loop_samples=25)
    assert m["keys"] == 4 * 10 * 25 * 40 and m["pc2"] == 32 + 12 * 100 * 25
    assert m["total"] == m["keys"] + m["pc2"]
