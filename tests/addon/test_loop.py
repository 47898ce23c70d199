"""addon/loop.py without Blender: the warm-up from the damping, the seam's measure and its blend."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from solver import quaternion as quat


@pytest.fixture(scope="module")
def loop(addon):
    return addon("loop")


def _rotation(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    angle = np.asarray(angle, float)[..., None]
    return np.concatenate((np.cos(angle / 2), np.sin(angle / 2) * axis), axis=-1)


def _periodic(n=48, segments=5, seed=0):
    """Orientations (n + 1, S, 4) of a sway with period n frames: frame n equals frame 0."""
    rng = np.random.default_rng(seed)
    phase = 2 * np.pi * np.arange(n + 1)[:, None] / n + rng.uniform(0, 2 * np.pi, segments)
    base = quat.normalize(rng.normal(size=(segments, 4)))
    return quat.multiply(
        _rotation(rng.normal(size=3), 0.2 * np.sin(phase)), np.broadcast_to(base, (n + 1, segments, 4))
    )


def test_the_warm_up_is_the_whole_loops_that_bring_the_transient_under_one_percent(loop):
    rate = loop.decay_rate(0.5)  # the default Damping: e^(−0.25 t)
    assert rate == 0.25
    assert loop.warmup_loops(rate, 5.0, fraction=0.01) == 4  # e^(-0.25 · 20 s) = 0.0067
    k = loop.warmup_loops(rate, 5.0)  # to 0.1 %
    assert k == 6
    assert math.exp(-rate * k * 5.0) <= 1e-3 < math.exp(-rate * (k - 1) * 5.0)
    assert loop.warmup_loops(10.0, 5.0) == 1
    assert loop.decay_rate(0.5, (0.05, 2.0)) == pytest.approx(2 * math.pi * 2.0 * 0.05)
    with pytest.raises(ValueError, match="'Pine' has no damping"):
        loop.warmup_loops(0.0, 5.0, owner="Pine")


def test_a_periodic_sway_has_no_seam_and_a_drift_is_measured_and_blended_away(loop):
    n = 48
    p = _periodic(n)
    assert loop.rotation_seam(p) < 1e-6
    drift = 0.004  # rad over the loop, about the z axis, growing linearly
    q = quat.multiply(_rotation((0, 0, 1), drift * np.arange(n + 1)[:, None] / n), p)
    steps = 2 * np.arccos(np.clip(np.abs(np.sum(q[1:] * q[:-1], -1)), 0, 1))  # (N, S) rad
    rms_steps = np.sqrt(np.mean(steps**2, axis=1))
    assert loop.rotation_seam(q) == pytest.approx(drift / np.median(rms_steps), rel=1e-6)
    blended, correction = loop.blend_rotations(q)
    assert correction == pytest.approx(drift, rel=1e-6)
    # the drift came in from the left, linearly: the blend takes exactly it away
    np.testing.assert_allclose(np.abs(np.sum(blended * p, -1)), 1.0, atol=1e-12)
    np.testing.assert_array_equal(blended[-1], q[0])


def test_close_seam_blends_a_settled_loop_and_leaves_an_unsettled_one_as_simulated(loop):
    n = 48
    p = _periodic(n)
    small = quat.multiply(_rotation((1, 0, 0), 1e-4 * np.arange(n + 1)[:, None] / n), p)
    x = np.random.default_rng(1).normal(size=(n + 1, 7, 3)).astype(np.float32)
    rec = SimpleNamespace(kind="armature", q_seg=small.copy(), leaf_frames=x.copy())
    seam = loop.close_seam(rec)
    assert seam.blended and seam.ratio < 1.0 and seam.correction == pytest.approx(1e-4, rel=1e-4)
    np.testing.assert_array_equal(rec.q_seg[-1], rec.q_seg[0])
    np.testing.assert_array_equal(rec.leaf_frames[-1], x[0])
    assert rec.leaf_frames.dtype == np.float32
    big = quat.multiply(_rotation((1, 0, 0), 0.5 * np.arange(n + 1)[:, None] / n), p)
    rec = SimpleNamespace(kind="armature", q_seg=big.copy(), leaf_frames=None)
    seam = loop.close_seam(rec)
    assert not seam.blended and seam.ratio > 1.0 and seam.correction == 0.0
    np.testing.assert_array_equal(rec.q_seg, big)
    # Blend Seam off: measured, never blended
    rec = SimpleNamespace(kind="armature", q_seg=small.copy(), leaf_frames=None)
    assert not loop.close_seam(rec, limit=-1.0).blended
    np.testing.assert_array_equal(rec.q_seg, small)


def test_curve_points_blend_linearly_and_absent_handles_stay_absent(loop):
    n = 30
    t = np.arange(n + 1)[:, None, None] / n
    sway = np.sin(2 * np.pi * t) * np.array([0.1, 0.0, 0.02]) + np.arange(4)[None, :, None]
    drift = np.array([0.0, 1e-3, 0.0])
    co = sway + t * drift
    rest = co[:1] * 0
    nan = np.full_like(co, np.nan)
    rec = SimpleNamespace(
        kind="curve",
        co=np.concatenate((rest, co)),
        handle_left=np.concatenate((rest, nan)),
        handle_right=np.concatenate((rest, co + 0.05)),
    )
    seam = loop.close_seam(rec)
    assert seam.blended and seam.correction == pytest.approx(1e-3)
    np.testing.assert_allclose(rec.co[1:], sway, atol=1e-15)
    np.testing.assert_array_equal(rec.co[0], rest[0])
    assert np.isnan(rec.handle_left[1:]).all()


def test_the_warm_up_stops_at_the_first_loop_that_repeats_itself(loop):
    """A sway of period N frames plus a transient decaying as e^(-λ t): the warm-up ends at the first whole loop
    whose seam is under a tenth of a frame's motion, here the loop the decay predicts."""
    n, lam, dt = 24, 0.25, 1.0 / 24.0
    t = np.arange(40 * n + 1) * dt
    sway = 0.1 * np.sin(2 * np.pi * t / (n * dt))[:, None, None] * np.array([1.0, 0.5, 0.0])
    x = sway + 0.05 * np.exp(-lam * t)[:, None, None] * np.array([0.3, 0.0, 1.0])
    seams = [loop.point_seam(x[k * n : (k + 1) * n + 1]) for k in range(39)]
    expected = 1 + next(k for k, r in enumerate(seams) if r <= loop.SETTLED_SEAM)
    assert 2 < expected < 39 and seams[expected - 2] > loop.SETTLED_SEAM
    w = loop.Warmup(n, least=1, most=100)
    stop = next(i for i, xi in enumerate(x) if w.add(xi))
    assert (stop, w.loops) == (expected * n, expected) and w.ratio <= loop.SETTLED_SEAM
    # at most `most` loops, at least `least`
    capped = loop.Warmup(n, least=1, most=2)
    assert next(i for i, xi in enumerate(x) if capped.add(xi)) == 2 * n
    fixed = loop.Warmup(n, least=expected + 3, most=expected + 3)
    assert next(i for i, xi in enumerate(x) if fixed.add(xi)) == (expected + 3) * n
