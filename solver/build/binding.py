"""Points carried rigidly by rod segments: how curve control points, Bézier handles (and mesh
vertices) follow a simulation.

A point is bound once, at rest, to the nearest segment among candidates (distance to the segment's
axis, a line segment of length l along its local +z) and stored in that segment's local frame; at
any later pose it is ``x = c + R(q) p_local`` (:meth:`Simulator.segment_points`).
"""

from __future__ import annotations

import numpy as np

from ..core import quaternion as quat


def nearest_segments(points, positions, orientations, lengths, candidates=None) -> np.ndarray:
    """Index of the segment whose axis is nearest to each point, shape (P,).

    ``points`` (P, 3) [m]; segment ``positions`` (n, 3) [m], ``orientations`` (n, 4),
    ``lengths`` (n,) [m]; ``candidates``: optional segment indices to choose from (e.g. the segments
    of one branch). Memory is O(P · candidates): bind one branch (spline) at a time."""
    points = np.asarray(points, float).reshape(-1, 3)
    cand = np.arange(len(lengths)) if candidates is None else np.asarray(candidates, np.int64).ravel()
    if cand.size == 0:
        raise ValueError("no candidate segments to bind to")
    if not np.all(np.isfinite(points)):
        raise ValueError("points to bind must be finite")
    axis = quat.rotate(orientations[cand], np.array([0.0, 0.0, 1.0]))
    half = 0.5 * np.asarray(lengths, float)[cand]
    rel = points[:, None, :] - positions[cand][None, :, :]
    s = np.clip(np.einsum("pci,ci->pc", rel, axis), -half, half)
    dist2 = np.sum((rel - s[..., None] * axis[None]) ** 2, axis=2)
    return cand[np.argmin(dist2, axis=1)]


def bind_points(points, positions, orientations, lengths, candidates=None):
    """``(segments (P,), local (P, 3))``: each point's nearest segment and its coordinates in that
    segment's frame at the given (rest) pose."""
    points = np.asarray(points, float).reshape(-1, 3)
    seg = nearest_segments(points, positions, orientations, lengths, candidates)
    local = quat.rotate_inverse(orientations[seg], points - positions[seg])
    return seg, local


def carried_points(positions, orientations, segments, local) -> np.ndarray:
    """World positions (P, 3) of bound points at the pose ``positions``/``orientations``."""
    return positions[segments] + quat.rotate(orientations[segments], local)
