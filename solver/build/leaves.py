"""Leaf geometry: the frame and size of every leaf polygon, and the branch span it hangs from.

Sapling's leaves are planar polygons (quads); a leaf segment (a thin plate, see
:class:`RodModel`) needs its stem point, its stem → tip axis, its normal, its length and width, and
the branch span whose segment it is jointed to. All of it is computed here, vectorised over leaves.
"""
from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree


def leaf_frames(co, loop_start, loop_total, loop_vertex, branches) -> dict:
    """Per-leaf frames from a polygon mesh and the branch polylines.

    ``co`` (V, 3) vertex positions [m] (same space as ``branches``); ``loop_start``/``loop_total`` (L,)
    each polygon's first loop and corner count; ``loop_vertex`` (loops,) vertex of each loop;
    ``branches`` list of ``(points (K, 3), radii)``. Returns arrays ``leaf_center`` (L, 3),
    ``leaf_normal`` (L, 3) unit (Newell), ``leaf_axis`` (L, 3) unit, in the leaf plane, stem → tip
    (the principal in-plane direction, pointing away from the nearest branch), ``leaf_length`` and
    ``leaf_width`` (L,) [m] (extents along and across the axis), ``leaf_area`` (L,) [m²],
    ``leaf_stem`` (L, 3) the end of the leaf nearest to a branch, and ``leaf_parent`` (L, 2) int
    (branch, span) of the branch span nearest to that stem."""
    co = np.asarray(co, float)
    start, total = np.asarray(loop_start, np.int64), np.asarray(loop_total, np.int64)
    vert = np.asarray(loop_vertex, np.int64)
    if start.size == 0:
        raise ValueError("no leaf polygons")
    if np.any(total < 3):
        raise ValueError(f"leaf polygon {int(np.argmax(total < 3))} has fewer than 3 corners")
    k = int(total.max())
    corner = np.arange(k)[None, :]
    idx = start[:, None] + np.minimum(corner, total[:, None] - 1)     # pad by repeating the last corner
    corners = co[vert[idx]]                                            # (L, k, 3)
    valid = corner < total[:, None]
    center = (corners * valid[..., None]).sum(1) / total[:, None]
    nxt = np.roll(corners, -1, axis=1)
    nxt[np.arange(total.size), total - 1] = corners[:, 0]
    nsum = (np.cross(corners, nxt) * valid[..., None]).sum(1)
    area = 0.5 * np.linalg.norm(nsum, axis=1)
    if np.any(area <= 0):
        raise ValueError(f"leaf polygon {int(np.argmax(area <= 0))} has zero area")
    normal = nsum / (2.0 * area[:, None])
    d = (corners - center[:, None]) * valid[..., None]
    _, vecs = np.linalg.eigh(np.einsum("lki,lkj->lij", d, d))
    axis = vecs[:, :, 2]
    axis -= np.einsum("li,li->l", axis, normal)[:, None] * normal
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)

    def extent(direction):
        s = np.einsum("lki,li->lk", d, direction)
        return np.where(valid, s, -np.inf).max(1) - np.where(valid, s, np.inf).min(1)

    length, width = extent(axis), extent(np.cross(normal, axis))
    # the nearest branch span to either end of the leaf: that end is the stem
    t = (np.arange(4) + 0.5) / 4
    samples, owner = [], []
    for b, (p, _) in enumerate(branches):
        p = np.asarray(p, float)
        s = p[:-1, None, :] + t[None, :, None] * (p[1:] - p[:-1])[:, None, :]
        samples.append(s.reshape(-1, 3))
        owner.append(np.stack((np.full(s.shape[0] * t.size, b), np.repeat(np.arange(s.shape[0]), t.size)), 1))
    owner = np.concatenate(owner)
    ends = np.stack((center + 0.5 * length[:, None] * axis, center - 0.5 * length[:, None] * axis), 1)
    dist, hit = cKDTree(np.concatenate(samples)).query(ends.reshape(-1, 3))
    dist, hit = dist.reshape(-1, 2), hit.reshape(-1, 2)
    minus = dist[:, 1] < dist[:, 0]
    axis = np.where(minus[:, None], axis, -axis)                       # stem → tip
    stem = center - 0.5 * length[:, None] * axis
    parent = owner[np.where(minus, hit[:, 1], hit[:, 0])]
    return dict(leaf_center=center, leaf_normal=normal, leaf_axis=axis, leaf_length=length,
                leaf_width=width, leaf_area=area, leaf_parent=parent, leaf_stem=stem)
