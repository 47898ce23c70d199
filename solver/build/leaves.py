"""Leaf geometry: which polygons make one leaf, the frame and size of every leaf, and the branch span
it hangs from.

A leaf is a connected piece of the leaves mesh: polygons that share a vertex belong to the same leaf
(Sapling's hex leaf is two quads sharing its midrib; a rect leaf is one quad; a user's merged or
subdivided leaves stay one piece). A leaf segment (a thin plate, see :class:`RodModel`) needs its stem
point, its stem → tip axis, its normal, its length and width, and the branch span whose segment it is
jointed to. All of it is computed here, vectorised over leaves; every vertex of a leaf is carried by
that leaf's segment, so a leaf moves as the rigid plate it is simulated as.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree


def leaf_islands(loop_start, loop_total, loop_vertex, n_vertices) -> tuple[np.ndarray, np.ndarray]:
    """``(leaf_of_vertex (V,), leaf_of_polygon (P,))``: the leaf (connected piece of the mesh) of each
    vertex, −1 for a vertex no polygon uses, and of each polygon. Leaves are numbered in the order of
    their first polygon."""
    start, total = np.asarray(loop_start, np.int64), np.asarray(loop_total, np.int64)
    vert = np.asarray(loop_vertex, np.int64)
    first = vert[np.repeat(start, total)]  # every corner linked to its polygon's first
    graph = coo_matrix((np.ones(vert.size), (vert, first)), shape=(n_vertices, n_vertices))
    _, label = connected_components(graph, directed=False)
    poly_label = label[vert[start]]
    uniq, first_poly = np.unique(poly_label, return_index=True)
    order = np.argsort(first_poly)
    leaf_of_label = np.full(label.max() + 1, -1, np.int64)
    leaf_of_label[uniq[order]] = np.arange(uniq.size)
    used = np.zeros(n_vertices, bool)
    used[vert] = True
    leaf_of_vertex = np.where(used, leaf_of_label[label], -1)
    return leaf_of_vertex, leaf_of_label[poly_label]


def _polygon_newell(co, start, total, vert):
    """Per polygon: the Newell vector (twice the vector area) and the area [m²]."""
    k = int(total.max())
    corner = np.arange(k)[None, :]
    idx = start[:, None] + np.minimum(corner, total[:, None] - 1)  # pad by repeating the last corner
    corners = co[vert[idx]]  # (P, k, 3)
    valid = corner < total[:, None]
    nxt = np.roll(corners, -1, axis=1)
    nxt[np.arange(total.size), total - 1] = corners[:, 0]
    nsum = (np.cross(corners, nxt) * valid[..., None]).sum(1)
    return nsum, 0.5 * np.linalg.norm(nsum, axis=1)


def nearest_spans(points, branches, curves=None, candidates: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """``(distance (P,) [m], (branch, span) (P, 2))`` of the branch span nearest to each point; exact
    among the pieces of the ``candidates`` nearest piece midpoints. ``branches``: list of ``(points
    (K, 3), radii)``, whose spans are the segments between consecutive points; ``curves``: optional
    list of ``(points (M, 3), span (M − 1,))`` per branch, the branch as drawn (a dense polyline of a
    Bézier spline) with the span each piece belongs to, measured instead of the straight spans."""
    if curves is None:
        curves = [(p, np.arange(len(p) - 1)) for p, _ in branches]
    a = np.concatenate([np.asarray(p, float)[:-1] for p, _ in curves])
    b = np.concatenate([np.asarray(p, float)[1:] for p, _ in curves])
    owner = np.concatenate([np.stack((np.full(len(span), i), span), 1) for i, (_, span) in enumerate(curves)])
    k = min(candidates, a.shape[0])
    _, cand = cKDTree(0.5 * (a + b)).query(points, k=k)
    cand = cand.reshape(len(points), k)
    ab = b[cand] - a[cand]
    t = np.clip(
        np.einsum("pki,pki->pk", points[:, None] - a[cand], ab) / np.maximum(np.einsum("pki,pki->pk", ab, ab), 1e-300),
        0.0,
        1.0,
    )
    dist = np.linalg.norm(a[cand] + t[..., None] * ab - points[:, None], axis=2)
    pick = np.argmin(dist, axis=1)
    rows = np.arange(len(points))
    return dist[rows, pick], owner[cand[rows, pick]]


def leaf_frames(co, loop_start, loop_total, loop_vertex, branches, curves=None) -> dict:
    """Per-leaf frames from a polygon mesh and the branch polylines.

    ``co`` (V, 3) vertex positions [m] (same space as ``branches``); ``loop_start``/``loop_total`` (P,)
    each polygon's first loop and corner count; ``loop_vertex`` (loops,) vertex of each loop;
    ``branches`` list of ``(points (K, 3), radii)``; ``curves`` optional, the branches as drawn (see
    :func:`nearest_spans`), where the stems are looked for. Leaves are the mesh's connected pieces
    (:func:`leaf_islands`), L of them. Returns arrays ``leaf_center`` (L, 3) (mean of the leaf's
    vertices), ``leaf_normal`` (L, 3) unit (area-weighted Newell normal, each polygon turned to the
    side of the leaf's largest one), ``leaf_axis`` (L, 3) unit, in the leaf plane, stem → tip (the
    principal in-plane direction, pointing away from the nearest branch), ``leaf_length`` and
    ``leaf_width`` (L,) [m] (extents along and across the axis), ``leaf_area`` (L,) [m²],
    ``leaf_stem`` (L, 3) the end of the leaf nearest to a branch, ``leaf_parent`` (L, 2) int
    (branch, span) of the branch span nearest to that stem, ``leaf_of_vertex`` (V,) and
    ``leaf_of_polygon`` (P,) (see :func:`leaf_islands`)."""
    co = np.asarray(co, float)
    start, total = np.asarray(loop_start, np.int64), np.asarray(loop_total, np.int64)
    vert = np.asarray(loop_vertex, np.int64)
    if start.size == 0:
        raise ValueError("no leaf polygons")
    if np.any(total < 3):
        raise ValueError(f"leaf polygon {int(np.argmax(total < 3))} has fewer than 3 corners")
    leaf_of_vertex, leaf_of_polygon = leaf_islands(start, total, vert, co.shape[0])
    n = int(leaf_of_polygon.max()) + 1
    nsum, poly_area = _polygon_newell(co, start, total, vert)
    # each leaf's largest polygon sets the side its normal points to
    by_size = np.lexsort((-poly_area, leaf_of_polygon))
    largest = by_size[np.r_[True, np.diff(leaf_of_polygon[by_size]) != 0]]
    side = np.sign(np.einsum("pi,pi->p", nsum, nsum[largest][leaf_of_polygon]))
    nleaf = np.zeros((n, 3))
    np.add.at(nleaf, leaf_of_polygon, np.where(side[:, None] < 0, -nsum, nsum))
    area = np.bincount(leaf_of_polygon, poly_area, minlength=n)
    flat = (area <= 0) | (np.linalg.norm(nleaf, axis=1) <= 0)
    if np.any(flat):
        raise ValueError(f"leaf polygon {int(largest[np.argmax(flat)])} has zero area")
    normal = nleaf / np.linalg.norm(nleaf, axis=1, keepdims=True)
    used = np.flatnonzero(leaf_of_vertex >= 0)
    owner_v = leaf_of_vertex[used]
    count = np.bincount(owner_v, minlength=n)
    center = np.stack([np.bincount(owner_v, co[used, i], minlength=n) for i in range(3)], 1) / count[:, None]
    d = co[used] - center[owner_v]
    cov = np.zeros((n, 3, 3))
    np.add.at(cov, owner_v, np.einsum("vi,vj->vij", d, d))
    _, vecs = np.linalg.eigh(cov)
    major = vecs[:, :, 2] - np.einsum("li,li->l", vecs[:, :, 2], normal)[:, None] * normal
    major /= np.linalg.norm(major, axis=1, keepdims=True)
    directions = np.stack((major, np.cross(normal, major)), 1)  # (L, 2, 3) in the leaf plane
    s = np.einsum("vi,vki->vk", d, directions[owner_v])
    hi, lo = np.full((n, 2), -np.inf), np.full((n, 2), np.inf)
    np.maximum.at(hi, owner_v, s)
    np.minimum.at(lo, owner_v, s)
    # the stem is the end of the major direction nearest to a branch, or of the minor one where that is
    # nearer by the leaf's aspect ratio (1–2): a round leaf (Sapling's hex leaf at leafScaleX 1 is wider
    # than long by its second moment) hangs from its nearest end, an elongated one is not tipped over by
    # the chord error of a branch polyline
    reach = np.stack((hi, lo), 2)  # (L, direction, end)
    ends = center[:, None, None, :] + reach[..., None] * directions[:, :, None, :]
    dist, span = nearest_spans(ends.reshape(-1, 3), branches, curves)
    aspect = np.clip((hi[:, 0] - lo[:, 0]) / (hi[:, 1] - lo[:, 1]), 1.0, 2.0)
    best = np.argmin(dist.reshape(n, 4) * np.stack((np.ones(n), np.ones(n), aspect, aspect), 1), axis=1)
    k, end = best // 2, best % 2
    rows = np.arange(n)
    sign = np.where(end == 0, -1.0, 1.0)  # from the stem end inwards
    axis = sign[:, None] * directions[rows, k]
    length = hi[rows, k] - lo[rows, k]
    width = hi[rows, 1 - k] - lo[rows, 1 - k]
    stem = ends[rows, k, end]
    parent = span.reshape(n, 4, 2)[rows, best]
    return dict(
        leaf_center=center,
        leaf_normal=normal,
        leaf_axis=axis,
        leaf_length=length,
        leaf_width=width,
        leaf_area=area,
        leaf_parent=parent,
        leaf_stem=stem,
        leaf_of_vertex=leaf_of_vertex,
        leaf_of_polygon=leaf_of_polygon,
    )
