"""The rods' topology as contact sees it, computed once per model: segment pairs within ``exclude_hops`` joints
(never in contact), the chains' successors and predecessors, the table of joint points of the self-colliding
segments (each once, with its owner and neighbours), the permanent candidate pairs (``self_pairs``), and at a joint
point the chain's two axes, which bound its normal cone.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix, identity

from ..core import quaternion as quat


def near_pairs(model, hops: int) -> np.ndarray:
    """Keys ``i·n + j`` (i < j) of segment pairs within ``hops`` joints: (A + I)^hops, sparse."""
    n = model.n_segments
    a = coo_matrix((np.ones(model.n_joints), (model.joint_parent, model.joint_child)), shape=(n, n)).tocsr()
    a = ((a + a.T + identity(n, format="csr")) > 0).astype(np.int8)
    reach = identity(n, dtype=np.int8, format="csr")
    for _ in range(max(hops, 0)):
        reach = ((reach @ a) > 0).astype(np.int8)
    i, j = reach.nonzero()
    keep = i < j
    return np.unique(i[keep].astype(np.int64) * n + j[keep])


def end_to_end_joints(model) -> np.ndarray:
    """Joints (m,) bool that join a parent's +z end to a child's −z end (a chain's joints)."""
    m = model
    half_p, half_c = 0.5 * m.lengths[m.joint_parent], 0.5 * m.lengths[m.joint_child]
    tol = 1e-9 * np.maximum(half_p, half_c)
    at_end = (np.abs(m.joint_point_parent[:, 2] - half_p) < tol) & (np.abs(m.joint_point_child[:, 2] + half_c) < tol)
    at_end &= np.all(np.abs(m.joint_point_parent[:, :2]) < tol[:, None], axis=1)
    at_end &= np.all(np.abs(m.joint_point_child[:, :2]) < tol[:, None], axis=1)
    return at_end


def member(keys: np.ndarray, of: np.ndarray, size: int) -> np.ndarray:
    """``np.isin(keys, of)`` for non-negative integer keys below ``size``, by a marker array: the contact rows'
    key sets are a few hundred keys, where isin's sorting cost ~0.1 ms a call, eight calls per step."""
    mark = np.zeros(size, bool)
    mark[of] = True
    return mark[keys]


class ContactTopology:
    """What contact needs of a model's topology (computed once): ``self_segments`` (the self-colliding segments),
    ``excluded`` (keys of the pairs within ``exclude_hops`` joints), ``succ``/``pred`` (n,): the self-colliding
    segment across a segment's +z / −z end (−1 if none), the vertex table (``v_seg``, ``v_z``, ``v_other``: owner,
    axis coordinate and the other segment of each joint point; ``vid_lo``/``vid_hi`` (n,): vertex ids of each
    segment's ends), the permanent candidates ``perm_v``/``perm_b`` (``self_pairs``) and ``succ_all``: the
    successor across every chain joint. ``smooth``: segment pairs meet on the rods' smooth centrelines
    (:mod:`solver.contact.centreline`; set by the detector for ``self_contacts="pairs"``)."""

    smooth = False

    def __init__(self, model, self_segments: np.ndarray, exclude_hops: int, self_pairs, points: bool, radius):
        self.model = model
        self.radius = radius
        self.self_segments = self_segments
        self.exclude_hops = int(exclude_hops)
        self.excluded = near_pairs(model, self.exclude_hops) if self_segments.size > 1 else np.zeros(0, np.int64)
        self._vertex_table()
        self._permanent_candidates(self_pairs, points)
        succ = np.full(model.n_segments, -1, np.int64)
        at_end = end_to_end_joints(model)
        succ[model.joint_parent[at_end]] = model.joint_child[at_end]
        self.succ_all = succ

    def _vertex_table(self) -> None:
        """Joint points of the self-colliding segments, each once: a segment's −z end, and its +z end where no
        successor's −z end is jointed to it."""
        m, n = self.model, self.model.n_segments
        succ, pred = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
        at_end = end_to_end_joints(m)
        member = np.zeros(n, bool)
        member[self.self_segments] = True
        at_end &= member[m.joint_parent] & member[m.joint_child]
        succ[m.joint_parent[at_end]] = m.joint_child[at_end]
        pred[m.joint_child[at_end]] = m.joint_parent[at_end]
        segs = self.self_segments
        hi_own = segs[succ[segs] < 0]
        self.v_seg = np.concatenate((segs, hi_own))  # owner segment of each vertex
        self.v_z = np.concatenate((-0.5 * m.lengths[segs], 0.5 * m.lengths[hi_own]))
        self.v_other = np.concatenate((np.where(pred[segs] >= 0, pred[segs], segs), hi_own))
        self.vid_lo = np.full(n, -1, np.int64)
        self.vid_lo[segs] = np.arange(segs.size)
        self.vid_hi = np.full(n, -1, np.int64)
        self.vid_hi[hi_own] = segs.size + np.arange(hi_own.size)
        has = succ >= 0
        self.vid_hi[has] = self.vid_lo[succ[has]]
        self.succ, self.pred = succ, pred

    def _permanent_candidates(self, self_pairs, points: bool) -> None:
        """``perm_v``/``perm_b``: every joint point of one segment of a ``self_pairs`` row against the other
        segment's axis (both ways), candidates of every step."""
        self.perm_v = self.perm_b = np.zeros(0, np.int64)
        if self_pairs is None:
            return
        pairs = np.asarray(self_pairs)
        n = self.model.n_segments
        if pairs.ndim != 2 or pairs.shape[1] != 2 or not np.issubdtype(pairs.dtype, np.integer):
            raise ValueError(f"self_pairs must be a (k, 2) integer array of segment pairs, got shape {pairs.shape}")
        if not points:
            raise ValueError("self_pairs needs self_contacts='points' (its rows are joint point against axis)")
        bad = np.flatnonzero((pairs < 0).any(axis=1) | (pairs >= n).any(axis=1) | (pairs[:, 0] == pairs[:, 1]))
        if bad.size:
            raise ValueError(
                f"self_pairs[{bad[0]}] = {pairs[bad[0]].tolist()} is not a pair of two segments of 0..{n - 1}"
            )
        member = np.zeros(n, bool)
        member[self.self_segments] = True
        bad = np.flatnonzero(~member[pairs].all(axis=1))
        if bad.size:
            raise ValueError(f"self_pairs[{bad[0]}] = {pairs[bad[0]].tolist()} names a segment without self collision")
        a, b = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
        v = np.concatenate((self.vid_lo[a], self.vid_hi[a], self.vid_lo[b], self.vid_hi[b]))
        seg = np.concatenate((b, b, a, a))
        ok = v >= 0
        key = np.unique(v[ok] * n + seg[ok])
        self.perm_v, self.perm_b = key // n, key % n

    def joint_twins(self, seg, z, which) -> np.ndarray:
        """Collider rows (segment, axis coordinate z, collider index) that repeat another: a joint point is the
        +z end of one segment and the −z end of the next, so both ends' rows against the same collider are one
        material point with one normal. Returns the mask of the +z ones (the −z ones stay)."""
        m, succ_all = self.model, self.succ_all
        half = 0.5 * m.lengths[seg]
        hi = (np.abs(z - half) <= 1e-9 * half) & (succ_all[seg] >= 0)
        lo = np.abs(z + half) <= 1e-9 * half
        nc = int(which.max(initial=0)) + 1
        lo_keys = (seg[lo] * nc + which[lo]).astype(np.int64)
        twin = np.zeros(seg.size, bool)
        twin[hi] = member(succ_all[seg[hi]] * nc + which[hi], lo_keys, m.n_segments * nc)
        return twin

    def near_joint_rows(self, seg, z, which) -> np.ndarray:
        """Collider rows at an interior point of a segment within its radius of an end whose joint point has a row
        against the same collider (its own or the next segment's): a straight rope end leaving a cylinder touches
        it just beside the joint point where it leaves, and the two nearly coincident rows made the joint-and-contact
        solve of the semismooth method ill-conditioned (the capstan's rope diverged within a step). Returns the mask
        of those rows."""
        m, succ = self.model, self.succ_all
        half = 0.5 * m.lengths[seg]
        tol = 1e-9 * half
        lo, hi = np.abs(z + half) <= tol, np.abs(z - half) <= tol
        nc = int(which.max(initial=0)) + 1
        # a joint point by its −z side: (segment, collider) of the lower end, or of the upper end with no successor
        nxt = np.where(succ[seg] >= 0, succ[seg], seg)
        up = np.where(succ[seg] >= 0, 0, 1)
        key_lo = (seg * 2) * nc + which
        key_hi = (nxt * 2 + up) * nc + which
        keys = np.concatenate((key_lo[lo], key_hi[hi]))
        size = 2 * m.n_segments * nc
        inner = ~(lo | hi)
        near_lo = inner & (z + half <= self.radius[seg]) & member(key_lo, keys, size)
        near_hi = inner & (half - z <= self.radius[seg]) & member(key_hi, keys, size)
        return near_lo | near_hi

    def joint_axes(self, q, seg, z):
        """At the joint point z = ±l/2 of each segment: t_in, its axis toward the joint, t_out, the next
        segment's axis away from it (k, 3), and whether there is a next segment (a free end has none)."""
        s = np.sign(z)
        nxt = np.where(s > 0, self.succ[seg], self.pred[seg])
        ez = np.tile([0.0, 0.0, 1.0], (seg.size, 1))
        t_in = s[:, None] * quat.rotate(q[seg], ez)
        t_out = s[:, None] * quat.rotate(q[np.maximum(nxt, 0)], ez)
        return t_in, t_out, nxt >= 0

    def cone_excess(self, q, seg, z, n):
        """How far n (k, 3), pushing on ``seg`` at its joint point z, lies outside the chain's normal cone
        there (``RowGeometry.vertex_cone``): max(n·t_in, −n·t_out) (≤ 0 inside; up to 1)."""
        t_in, t_out, has = self.joint_axes(q, seg, z)
        return np.maximum(np.einsum("ij,ij->i", n, t_in), np.where(has, -np.einsum("ij,ij->i", n, t_out), -1.0))


def between_joint_rows(seg, z, which, half) -> np.ndarray:
    """Collider rows at an interior point of a segment both of whose ends have rows against the same collider.
    A chain of segments over a convex collider (a rope's polygon over a cylinder) cannot touch with its joint
    points and its segments' middles at once: held exactly, the two sets of rows fight with hundreds of
    times the load; held at the middles alone, the joints between them are free to zig-zag in and out
    (nothing but the bending stiffness holds them). Held at its joints the chain is determined and its
    middles sink by the sagitta R (1 − cos(Δφ/2)) only (0.02 r for 0.1 rad chords of a rope r over R = 17 r).
    Returns the mask of those interior rows."""
    end = np.abs(np.abs(z) - half) <= 1e-9 * half
    n = int(which.max(initial=0)) + 1
    key, size = seg * n + which, (int(seg.max(initial=0)) + 1) * n
    lo = member(key, key[end & (z < 0)], size)
    hi = member(key, key[end & (z > 0)], size)
    return ~end & lo & hi
