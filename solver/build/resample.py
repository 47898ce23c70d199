"""Curve geometry for building rods from Blender curves: Bézier evaluation and arc-length resampling."""

from __future__ import annotations

import numpy as np


def bezier_polyline(co, handle_left, handle_right, radius, samples_per_span: int = 16, cyclic: bool = False):
    """Dense polyline (and interpolated radii) of a cubic Bézier spline given its control points
    ``co`` (K, 3), handles (K, 3) each and point radii (K,)."""
    co, hl, hr = (np.asarray(a, float) for a in (co, handle_left, handle_right))
    radius = np.asarray(radius, float)
    if cyclic:
        co, hl, hr, radius = (np.concatenate((a, a[:1])) for a in (co, hl, hr, radius))
    t = np.linspace(0.0, 1.0, samples_per_span, endpoint=False)[:, None]
    p0, p1, p2, p3 = co[:-1, None], hr[:-1, None], hl[1:, None], co[1:, None]
    pts = ((1 - t) ** 3 * p0 + 3 * (1 - t) ** 2 * t * p1 + 3 * (1 - t) * t**2 * p2 + t**3 * p3).reshape(-1, 3)
    rad = (radius[:-1, None] * (1 - t[:, 0]) + radius[1:, None] * t[:, 0]).ravel()
    return np.vstack((pts, co[-1:])), np.concatenate((rad, radius[-1:]))


def resample_polyline(points, radii, segment_length: float):
    """Points at equal arc length (≈ ``segment_length`` [m], at least one segment) along a polyline,
    with linearly interpolated radii. Ends are kept exactly."""
    points = np.asarray(points, float)
    radii = np.asarray(radii, float)
    if not segment_length > 0:
        raise ValueError(f"segment_length must be > 0 m, got {segment_length}")
    d = np.linalg.norm(np.diff(points, axis=0), axis=1)
    s = np.concatenate(([0.0], np.cumsum(d)))
    total = s[-1]
    if total <= 0:
        raise ValueError("the curve has zero length")
    n = max(1, int(round(total / segment_length)))
    target = np.linspace(0.0, total, n + 1)
    out = np.stack([np.interp(target, s, points[:, k]) for k in range(3)], axis=1)
    return out, np.interp(target, s, radii)
