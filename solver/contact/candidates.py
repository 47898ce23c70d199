"""Contact candidates: which axis points of which segments may touch a collider, a collider's edge or
another segment in this step (the ``Contacts`` mixin that owns detection).

Topology is computed once per model: segment pairs within ``exclude_hops`` joints (never in contact),
the table of joint points of the self-colliding segments (each once, with its owner and neighbours) and
the permanent candidate pairs (``self_pairs``). Detection runs once per step on the pose at the start
of the step: a cKDTree broad phase on capsule centres or joint points, then the exact closest points of
two axes, of an axis and a collider's edge, or of an axis point and a collider's surface.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix, identity
from scipy.spatial import cKDTree

from ..core import quaternion as quat
from .colliders import closest_point_parameter, closest_points_on_segments, golden_section
from .state import ContactState

# How the two points of a contact are found in every sweep: both material points fixed for the step
# (a collider contact, two joint points), a fixed point of a against the closest point of b's axis, the
# closest points of both axes (crossing segments), or the closest points of a's axis and a collider's edge.
FIXED, SLIDE_B, SLIDE_BOTH, EDGE = 0, 1, 2, 3


class ContactCandidates(ContactState):
    """Contact detection for :class:`~solver.contact.contacts.Contacts` (reads the attributes its
    ``__init__`` sets: ``model``, ``radius``, ``colliders``, ``margin``, ``friction``, ...)."""

    # ------------------------------------------------------------------ topology (once)
    def _near_pairs(self, hops: int) -> np.ndarray:
        """Keys ``i·n + j`` (i < j) of segment pairs within ``hops`` joints: (A + I)^hops, sparse."""
        m, n = self.model, self.model.n_segments
        a = coo_matrix((np.ones(m.n_joints), (m.joint_parent, m.joint_child)), shape=(n, n)).tocsr()
        a = ((a + a.T + identity(n, format="csr")) > 0).astype(np.int8)
        reach = identity(n, dtype=np.int8, format="csr")
        for _ in range(max(hops, 0)):
            reach = ((reach @ a) > 0).astype(np.int8)
        i, j = reach.nonzero()
        keep = i < j
        return np.unique(i[keep].astype(np.int64) * n + j[keep])

    def _end_to_end_joints(self) -> np.ndarray:
        """Joints (m,) bool that join a parent's +z end to a child's −z end (a chain's joints)."""
        m = self.model
        half_p, half_c = 0.5 * m.lengths[m.joint_parent], 0.5 * m.lengths[m.joint_child]
        tol = 1e-9 * np.maximum(half_p, half_c)
        at_end = (np.abs(m.joint_point_parent[:, 2] - half_p) < tol) & (
            np.abs(m.joint_point_child[:, 2] + half_c) < tol
        )
        at_end &= np.all(np.abs(m.joint_point_parent[:, :2]) < tol[:, None], axis=1)
        at_end &= np.all(np.abs(m.joint_point_child[:, :2]) < tol[:, None], axis=1)
        return at_end

    def _vertex_table(self) -> None:
        """Joint points of the self-colliding segments, each once (topology, computed once): a segment's −z
        end, and its +z end where no successor's −z end is jointed to it. ``_succ``/``_pred`` (n,): the
        segment across a segment's +z / −z end (−1 if none), ``_vid_lo``/``_vid_hi`` (n,): vertex ids."""
        m, n = self.model, self.model.n_segments
        succ, pred = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
        at_end = self._end_to_end_joints()
        member = np.zeros(n, bool)
        member[self._self_segments] = True
        at_end &= member[m.joint_parent] & member[m.joint_child]
        succ[m.joint_parent[at_end]] = m.joint_child[at_end]
        pred[m.joint_child[at_end]] = m.joint_parent[at_end]
        segs = self._self_segments
        hi_own = segs[succ[segs] < 0]
        self._v_seg = np.concatenate((segs, hi_own))  # owner segment of each vertex
        self._v_z = np.concatenate((-0.5 * m.lengths[segs], 0.5 * m.lengths[hi_own]))
        self._v_other = np.concatenate((np.where(pred[segs] >= 0, pred[segs], segs), hi_own))
        self._vid_lo = np.full(n, -1, np.int64)
        self._vid_lo[segs] = np.arange(segs.size)
        self._vid_hi = np.full(n, -1, np.int64)
        self._vid_hi[hi_own] = segs.size + np.arange(hi_own.size)
        has = succ >= 0
        self._vid_hi[has] = self._vid_lo[succ[has]]
        self._succ, self._pred = succ, pred

    def _joint_twins(self, seg, z, which) -> np.ndarray:
        """Collider rows (segment, axis coordinate z, collider index) that repeat another: a joint point is the
        +z end of one segment and the −z end of the next, so both ends' rows against the same collider are one
        material point with one normal. Returns the mask of the +z ones (the −z ones stay)."""
        m = self.model
        succ_all = getattr(self, "_succ_all", None)
        if succ_all is None:
            succ = np.full(m.n_segments, -1, np.int64)
            at_end = self._end_to_end_joints()
            succ[m.joint_parent[at_end]] = m.joint_child[at_end]
            self._succ_all = succ_all = succ
        half = 0.5 * m.lengths[seg]
        hi = (np.abs(z - half) <= 1e-9 * half) & (succ_all[seg] >= 0)
        lo = np.abs(z + half) <= 1e-9 * half
        n = m.n_segments + 1
        lo_keys = (seg[lo] * n + which[lo]).astype(np.int64)
        twin = np.zeros(seg.size, bool)
        twin[hi] = np.isin(succ_all[seg[hi]] * n + which[hi], lo_keys)
        return twin

    def _near_joint_rows(self, seg, z, which) -> np.ndarray:
        """Collider rows at an interior point of a segment within its radius of an end whose joint point has a row
        against the same collider (its own or the next segment's): a straight rope end leaving a cylinder touches
        it just beside the joint point where it leaves, and the two nearly coincident rows made the joint-and-contact
        solve of the semismooth method ill-conditioned (the capstan's rope diverged within a step). Returns the mask
        of those rows."""
        m = self.model
        self._joint_twins(seg[:0], z[:0], which[:0])  # makes _succ_all
        succ = self._succ_all
        assert succ is not None  # made by _joint_twins
        half = 0.5 * m.lengths[seg]
        tol = 1e-9 * half
        lo, hi = np.abs(z + half) <= tol, np.abs(z - half) <= tol
        n = m.n_segments + 1
        # a joint point by its −z side: (segment, collider) of the lower end, or of the upper end with no successor
        nxt = np.where(succ[seg] >= 0, succ[seg], seg)
        up = np.where(succ[seg] >= 0, 0, 1)
        key_lo = (seg * 2) * n + which
        key_hi = (nxt * 2 + up) * n + which
        keys = np.concatenate((key_lo[lo], key_hi[hi]))
        inner = ~(lo | hi)
        near_lo = inner & (z + half <= self.radius[seg]) & np.isin(key_lo, keys)
        near_hi = inner & (half - z <= self.radius[seg]) & np.isin(key_hi, keys)
        return near_lo | near_hi

    @staticmethod
    def _between_joint_rows(seg, z, which, half) -> np.ndarray:
        """Collider rows at an interior point of a segment both of whose ends have rows against the same collider.
        A chain of segments over a convex collider (a rope's polygon over a cylinder) cannot touch with its joint
        points and its segments' middles at once: held exactly, the two sets of rows fight with hundreds of
        times the load; held at the middles alone, the joints between them are free to zig-zag in and out
        (nothing but the bending stiffness holds them). Held at its joints the chain is determined and its
        middles sink by the sagitta R (1 − cos(Δφ/2)) only (0.02 r for 0.1 rad chords of a rope r over R = 17 r).
        Returns the mask of those interior rows."""
        end = np.abs(np.abs(z) - half) <= 1e-9 * half
        n = int(which.max(initial=0)) + 1
        lo = np.isin(seg * n + which, seg[end & (z < 0)] * n + which[end & (z < 0)])
        hi = np.isin(seg * n + which, seg[end & (z > 0)] * n + which[end & (z > 0)])
        return ~end & lo & hi

    def _permanent_candidates(self, self_pairs) -> None:
        """``_perm_v``/``_perm_b``: every joint point of one segment of a ``self_pairs`` row against the
        other segment's axis (both ways), candidates of every step (topology, computed once)."""
        self._perm_v = self._perm_b = np.zeros(0, np.int64)
        if self_pairs is None:
            return
        pairs = np.asarray(self_pairs)
        n = self.model.n_segments
        if pairs.ndim != 2 or pairs.shape[1] != 2 or not np.issubdtype(pairs.dtype, np.integer):
            raise ValueError(f"self_pairs must be a (k, 2) integer array of segment pairs, got shape {pairs.shape}")
        if self.self_contacts != "points":
            raise ValueError("self_pairs needs self_contacts='points' (its rows are joint point against axis)")
        bad = np.flatnonzero((pairs < 0).any(axis=1) | (pairs >= n).any(axis=1) | (pairs[:, 0] == pairs[:, 1]))
        if bad.size:
            raise ValueError(
                f"self_pairs[{bad[0]}] = {pairs[bad[0]].tolist()} is not a pair of two segments of 0..{n - 1}"
            )
        member = np.zeros(n, bool)
        member[self._self_segments] = True
        bad = np.flatnonzero(~member[pairs].all(axis=1))
        if bad.size:
            raise ValueError(f"self_pairs[{bad[0]}] = {pairs[bad[0]].tolist()} names a segment without self collision")
        a, b = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
        v = np.concatenate((self._vid_lo[a], self._vid_hi[a], self._vid_lo[b], self._vid_hi[b]))
        seg = np.concatenate((b, b, a, a))
        ok = v >= 0
        key = np.unique(v[ok] * n + seg[ok])
        self._perm_v, self._perm_b = key // n, key % n

    def _material_shift(self, seg, z, x, q, x_pred, q_pred):
        """Predicted displacement [m] over the step of the axis points z of segments seg."""
        zz = np.zeros((seg.size, 3))
        zz[:, 2] = z
        return x_pred[seg] + quat.rotate(q_pred[seg], zz) - x[seg] - quat.rotate(q[seg], zz)

    def _point_contacts(self, x, q, x_pred, q_pred):
        """Self contacts, one per physical contact point (``self_contacts="points"``): i, j, z_i, z_j,
        normal (from j to i), r_i + r_j, mode (:data:`FIXED` joint point pair, :data:`SLIDE_B` joint point
        against an axis, :data:`SLIDE_BOTH` crossing segments)."""
        segs = self._self_segments
        if segs.size < 2:
            return None
        m, n = self.model, self.model.n_segments
        a_end, b_end = self._segment_ends(x, q)
        move = np.linalg.norm(x_pred - x, axis=1) + 0.5 * m.lengths * np.linalg.norm(
            quat.body_rotation_vector(q, q_pred), axis=1
        )
        base = 0.5 * self.radius if self.margin is None else np.full(n, self.margin)
        reach = self.radius + base + 2.0 * move
        rmax = reach[segs].max()
        vs, vz = self._v_seg, self._v_z
        vp = np.where((vz < 0)[:, None], a_end[vs], b_end[vs])
        found = cKDTree(vp).sparse_distance_matrix(
            cKDTree(x[segs]), 0.5 * m.lengths[segs].max() + 2.0 * rmax, output_type="ndarray"
        )
        v, b = found["i"].astype(np.int64), segs[found["j"]]
        perm = np.zeros(v.size, bool)
        if self._perm_v.size:
            # permanent candidates (``self_pairs``): kept however far apart, so no fast approach is missed;
            # one row per (vertex, axis), the detected duplicate dropped
            v, b = np.concatenate((self._perm_v, v)), np.concatenate((self._perm_b, b))
            perm = np.concatenate((np.ones(self._perm_v.size, bool), perm))
            _, first = np.unique(v * n + b, return_index=True)
            v, b, perm = v[first], b[first], perm[first]
        own, other = vs[v], self._v_other[v]
        keep = (own != b) & (other != b)
        keep &= ~np.isin(np.minimum(own, b) * n + np.maximum(own, b), self._excluded)
        keep &= ~np.isin(np.minimum(other, b) * n + np.maximum(other, b), self._excluded)
        v, b, perm = v[keep], b[keep], perm[keep]
        p = vp[v]
        ab = b_end[b] - a_end[b]
        lb2 = np.einsum("ij,ij->i", ab, ab)
        t_raw = np.einsum("ij,ij->i", p - a_end[b], ab) / lb2
        # A local minimum along b's rod: a point beyond b's +z end belongs to the successor; one before its
        # −z end is that joint point only if it is also beyond the predecessor's +z end (a convex corner).
        pr = self._pred[b]
        ab_pred = b_end[np.maximum(pr, 0)] - a_end[np.maximum(pr, 0)]
        beyond_pred = np.einsum("ij,ij->i", p - a_end[b], ab_pred) >= 0.0
        keep = ~((t_raw >= 1.0) & (self._succ[b] >= 0)) & ~((t_raw <= 0.0) & (pr >= 0) & ~beyond_pred)
        v, b, p, t_raw, lb, perm = v[keep], b[keep], p[keep], t_raw[keep], np.sqrt(lb2[keep]), perm[keep]
        t = np.clip(t_raw, 0.0, 1.0)
        d = p - a_end[b] - t[:, None] * (b_end[b] - a_end[b])
        dist = np.linalg.norm(d, axis=1)
        rest = self.radius[vs[v]] + self.radius[b]
        zv = vz[v]
        zb = (t - 0.5) * m.lengths[b]
        rel = np.linalg.norm(
            self._material_shift(vs[v], zv, x, q, x_pred, q_pred) - self._material_shift(b, zb, x, q, x_pred, q_pred),
            axis=1,
        )
        close = (dist - rest < 0.5 * (base[vs[v]] + base[b]) + rel) | perm
        v, b, t, lb, d, dist, rest, zb = (
            v[close],
            b[close],
            t[close],
            lb[close],
            d[close],
            dist[close],
            rest[close],
            zb[close],
        )
        # Within a tenth of a radius of a joint point of b the contact is that joint point's: one
        # vertex–vertex row, found once whichever side generated it ...
        snap = 0.1 * self.radius[b]
        # ... where the two rods run nearly parallel there (two balls are unstable where two crossing
        # cylinders are not: crossing rods keep a joint point against the other's axis, from both sides).
        own_axis = quat.rotate(q[vs[v]], np.tile([0.0, 0.0, 1.0], (v.size, 1)))
        parallel = np.linalg.norm(np.cross(own_axis, (b_end[b] - a_end[b]) / lb[:, None]), axis=1) < 0.2
        lo, hi = parallel & (t * lb < snap), parallel & ((1.0 - t) * lb < snap)
        w = np.where(lo, self._vid_lo[b], np.where(hi, self._vid_hi[b], -1))
        vv = w >= 0
        key = np.where(vv, np.minimum(v, w) * (self._v_seg.size + 1) + np.maximum(v, w), -1 - np.arange(v.size))
        _, first = np.unique(key, return_index=True)
        pick = np.zeros(v.size, bool)
        pick[first] = True
        v, b, w, vv, d, dist, rest, zb = v[pick], b[pick], w[pick], vv[pick], d[pick], dist[pick], rest[pick], zb[pick]
        seg_j = np.where(vv, self._v_seg[np.maximum(w, 0)], b)
        zj = np.where(vv, self._v_z[np.maximum(w, 0)], zb)
        seg_i, zi = vs[v], vz[v]
        pi = x[seg_i] + quat.rotate(q[seg_i], np.stack((0 * zi, 0 * zi, zi), 1))
        pj = x[seg_j] + quat.rotate(q[seg_j], np.stack((0 * zj, 0 * zj, zj), 1))
        d = pi - pj
        dist = np.linalg.norm(d, axis=1)
        mode = np.where(vv, FIXED, SLIDE_B)
        # A row belongs to a joint point only where that point is its chain's nearest feature to the other
        # side: the direction to it within 30° of the chain's normal cone (``_vertex_cone``). Elsewhere
        # (a permanent candidate far along a coil from the other rod's end) its normal, projected onto the
        # cone, measures the gap to the chain's tangent line, not to the other rod, and its row would hold that.
        dn = d / np.maximum(dist, 1e-300)[:, None]
        ok = self._cone_excess(q, seg_i, zi, dn) < 0.5
        ok &= ~vv | (self._cone_excess(q, seg_j, zj, -dn) < 0.5)
        seg_i, seg_j, zi, zj, d, dist, rest, mode = (
            seg_i[ok],
            seg_j[ok],
            zi[ok],
            zj[ok],
            d[ok],
            dist[ok],
            rest[ok],
            mode[ok],
        )
        # Crossing segments whose closest points are both inside (away from joint points by a tenth of a
        # radius) and not near-parallel (there the joint points' rows carry the contact).
        pairs = self._self_pairs(x, q, base + move, (x_pred, q_pred))
        if pairs is not None and pairs[0].size:
            i2, j2, s2, t2, d2, dist2, rest2, _, _ = pairs
            li, lj = m.lengths[i2], m.lengths[j2]
            inside = (
                (s2 * li > 0.1 * self.radius[i2])
                & ((1 - s2) * li > 0.1 * self.radius[i2])
                & (t2 * lj > 0.1 * self.radius[j2])
                & ((1 - t2) * lj > 0.1 * self.radius[j2])
            )
            ui, uj = (b_end[i2] - a_end[i2]) / li[:, None], (b_end[j2] - a_end[j2]) / lj[:, None]
            inside &= np.linalg.norm(np.cross(ui, uj), axis=1) > 0.2
            inside &= dist2 - rest2 < 0.5 * (base[i2] + base[j2]) + move[i2] + move[j2]
            seg_i, seg_j = np.concatenate((seg_i, i2[inside])), np.concatenate((seg_j, j2[inside]))
            zi = np.concatenate((zi, (s2[inside] - 0.5) * li[inside]))
            zj = np.concatenate((zj, (t2[inside] - 0.5) * lj[inside]))
            d, dist = np.vstack((d, d2[inside])), np.concatenate((dist, dist2[inside]))
            rest = np.concatenate((rest, rest2[inside]))
            mode = np.concatenate((mode, np.full(int(inside.sum()), SLIDE_BOTH)))
        if seg_i.size == 0:
            return None
        fallback = np.cross(b_end[seg_i] - a_end[seg_i], b_end[seg_j] - a_end[seg_j])
        fn = np.linalg.norm(fallback, axis=1)
        fallback = np.where(fn[:, None] > 1e-12, fallback / np.maximum(fn, 1e-300)[:, None], [0.0, 0.0, 1.0])
        normal = np.where(dist[:, None] > 1e-9 * rest[:, None], d / np.maximum(dist, 1e-300)[:, None], fallback)
        return seg_i, seg_j, zi, zj, normal, rest, mode

    # ------------------------------------------------------------------ contact generation
    def _segment_ends(self, x, q):
        half = np.zeros((x.shape[0], 3))
        half[:, 2] = 0.5 * self.model.lengths
        axis = quat.rotate(q, half)
        return x - axis, x + axis

    def _collider_points(self, x, q, margin, t):
        """Per collider: axis points of segments near it (both ends and the collider's closest axis
        point) with gap φ − r below ``margin`` (n,) [m]: (collider, segment, z, point, φ, normal)."""
        a_end, b_end = self._segment_ends(x, q)
        for col in self.colliders:
            segs = np.arange(x.shape[0])
            box = col.world_bounds(t)
            if box is not None:
                reach = (self.radius + margin)[:, None]
                lo, hi = np.minimum(a_end, b_end) - reach, np.maximum(a_end, b_end) + reach
                segs = np.flatnonzero(np.all((lo <= box[1]) & (hi >= box[0]), axis=1))
            if segs.size == 0:
                continue
            s_star = col.closest_parameter(a_end[segs], b_end[segs], t)
            interior = (s_star > 1e-6) & (s_star < 1 - 1e-6)
            seg = np.concatenate((segs, segs, segs[interior]))
            s = np.concatenate((np.zeros(segs.size), np.ones(segs.size), s_star[interior]))
            p = a_end[seg] + s[:, None] * (b_end[seg] - a_end[seg])
            phi, normal = col.distance(p, t)
            keep = phi < self.radius[seg] + margin[seg]
            yield col, seg[keep], (s[keep] - 0.5) * self.model.lengths[seg[keep]], p[keep], phi[keep], normal[keep]

    def _collider_candidates(self, x, q, margin, t0, t1, predicted=None):
        """Contacts with colliders (placed at t1): segment, z, surface point, normal, collider motion, μ, the
        collider's index in ``colliders``, and the normal part of the landing motion [m] (k, 3). ``predicted``
        (positions, orientations) of the step's prediction: the motion of a row's material point before it reaches
        the surface (:meth:`_approach`) is taken off the collider motion, so that friction holds the point from
        where it lands, not from the step's start; its part along the normal (``fall``) matters only to a row whose
        normal turns during the step (``ContactRows._follow_collider``)."""
        out = []
        for col, seg, z, p, phi, normal in self._collider_points(x, q, margin, t1):
            surface = p - phi[:, None] * normal
            mu = self.friction if col.friction is None else col.friction
            which = np.full(seg.size, self.colliders.index(col), np.int64)
            shift = col.displacement(surface, t0, t1)
            fall = np.zeros_like(shift)
            if predicted is not None:
                move = self._material_shift(seg, z, x, q, *predicted) - shift
                approach, fall = self._approach(move, phi - self.radius[seg], normal)
                # only where the approach is fast (farther than two radii along the surface): slower ones keep
                # the anchor at the step's start, which the draped rods of tests/test_collision.py are measured with
                fast = np.linalg.norm(approach, axis=1) > 2.0 * self.radius[seg]
                shift = shift + approach * fast[:, None]
                fall = fall * fast[:, None]
            out.append((seg, z, surface, normal, shift, np.full(seg.size, mu), which, fall))
        if not out:
            return None
        return [np.concatenate(parts) for parts in zip(*out, strict=True)]

    @staticmethod
    def _approach(move, gap, normal):
        """The tangential part [m] (k, 3) of a material point's free motion ``move`` (relative to the collider)
        before it closes its surface ``gap`` along ``normal``: the fraction τ = gap / (−move·n) of the step (0
        for a point already touching or moving away, 1 for one that stays clear). A row's friction holds its
        material point from the step's start: without this, a rope falling at 10 m/s onto a cylinder had 17 cm
        of fall inside the tangent planes of its rows tilted by 45°, their sticking friction pulled the rope
        back up along them, every normal row pulled and left, and the active set ended with no row: the rope
        fell through the cylinder in one step. Also returns the normal part of that motion [m] (k, 3)."""
        down = -np.einsum("ij,ij->i", move, normal)
        tau = np.where((gap > 0.0) & (down > 0.0), 1.0, 0.0)
        closing = (gap > 0.0) & (down > gap)  # divided only there: no overflow for a point barely moving
        tau[closing] = gap[closing] / down[closing]
        tangential = move + down[:, None] * normal
        return tau[:, None] * tangential, -(tau * down)[:, None] * normal

    def _edge_landing(self, seg, z, pe, normal, gap, e1, e0, x, q, predicted):
        """The motion [m] (k, 3) of edge rows' axis points (segments seg at z) relative to the edge's closest points
        pe before they meet it (:meth:`_approach`, both parts) where it is fast, else 0 (:meth:`_self_landing`)."""
        t = closest_point_parameter(pe, e1[:, 0], e1[:, 1])
        edge_move = pe - e0[:, 0] - t[:, None] * (e0[:, 1] - e0[:, 0])
        move = self._material_shift(seg, z, x, q, *predicted) - edge_move
        approach, fall = self._approach(move, gap, normal)
        fast = np.linalg.norm(approach, axis=1) > 2.0 * self.radius[seg]
        return (approach + fall) * fast[:, None]

    def _self_landing(self, i, j, zi, zj, normal, rest, x, q, predicted):
        """The relative motion [m] (k, 3) of the axis points zi of segments i and zj of j over the step before
        they meet (:meth:`_approach`, tangential and normal parts) where it is fast (farther than two radii
        along the surface), else 0: a segment pair's friction holds its two material points from where they
        meet, as a collider row's does (two rods closing head-on at 10 m/s have none at Δt = 1/200 s; at 1/60 s,
        6 cm on the rows' tilted planes, they diverge with or without it, docs/notes/contacts.md)."""
        move = self._material_shift(i, zi, x, q, *predicted) - self._material_shift(j, zj, x, q, *predicted)
        pi = x[i] + quat.rotate(q[i], np.stack((0 * zi, 0 * zi, zi), 1))
        pj = x[j] + quat.rotate(q[j], np.stack((0 * zj, 0 * zj, zj), 1))
        gap = np.einsum("ij,ij->i", pi - pj, normal) - rest
        approach, fall = self._approach(move, gap, normal)
        fast = np.linalg.norm(approach, axis=1) > 2.0 * np.minimum(self.radius[i], self.radius[j])
        return (approach + fall) * fast[:, None]

    @staticmethod
    def _wedge_normals(d, n1, n2, with_distance=False):
        """Outward normals [unit] (k, 3) of the wedge of faces n1, n2 at points d (k, 3) from their edge: a
        face's normal where d is over that face, d's own direction (less its part along the edge) in the
        edge's region, the nearer face's normal inside; and the distance to the wedge [m] (0 inside)."""
        h1, h2 = np.einsum("ij,ij->i", d, n1), np.einsum("ij,ij->i", d, n2)
        v = np.maximum(h1, 0.0)[:, None] * n1 + np.maximum(h2, 0.0)[:, None] * n2
        length = np.sqrt(np.einsum("ij,ij->i", v, v))
        inside = np.where((h1 >= h2)[:, None], n1, n2)
        n = np.where((length > 0.0)[:, None], v / np.maximum(length, 1e-300)[:, None], inside)
        return (n, length) if with_distance else n

    def _edge_candidates(self, x, q, margin, t0, t1, with_gap=False):
        """Contacts with the sharp edges of colliders (``Collider.edges``): segment, z, the edge's closest
        point, normal, the edge's ends at t1 and t0 and its faces' normals at t1 (k, 2, 3), μ (and, with
        ``with_gap``, the surface gap to the wedge [m]); one per segment and edge whose closest points are
        within the segment's radius plus ``margin`` of the wedge the edge's two faces make, where the
        edge's closest point is inside the edge.

        A collider contact keeps its material point and plane for the step, so a rod rolling over an
        edge within one step meets the edge between its rows (docs/notes/contacts.md).
        An edge row slides along both the axis and the edge in every solve, like two crossing segments,
        and measures the gap to the wedge (its normal: a face's normal over that face, the direction
        from the edge beyond both), so a rod sliding along a face over the edge is free along the face
        (the edge's own direction there is a tangent plane of its r-cylinder that lets the rod advance
        by half its distance per solve). The wedge holds the collider, so the row never holds a pose
        that touches nothing."""
        out = []
        a_end, b_end = self._segment_ends(x, q)
        reach = self.radius + margin
        lo_s = np.minimum(a_end, b_end) - reach[:, None]
        hi_s = np.maximum(a_end, b_end) + reach[:, None]
        for col in self.colliders:
            e1 = col.edges(t1)
            if e1 is None:
                continue
            e0 = col.edges(t0)
            lo_e, hi_e = np.minimum(e1[0], e1[1]), np.maximum(e1[0], e1[1])
            seg, edge = np.nonzero(np.all((lo_s[:, None] <= hi_e[None]) & (hi_s[:, None] >= lo_e[None]), axis=2))
            if seg.size == 0:
                continue
            s, t = closest_points_on_segments(a_end[seg], b_end[seg], e1[0][edge], e1[1][edge])
            pa = a_end[seg] + s[:, None] * (b_end[seg] - a_end[seg])
            pe = e1[0][edge] + t[:, None] * (e1[1][edge] - e1[0][edge])
            normal = self._wedge_normals(pa - pe, e1[2][edge], e1[3][edge])
            height = np.einsum("ij,ij->i", normal, pa - pe)
            keep = (height < reach[seg]) & (t > 1e-6) & (t < 1.0 - 1e-6)
            if not keep.any():
                continue
            seg, edge, s, pe, normal, height = seg[keep], edge[keep], s[keep], pe[keep], normal[keep], height[keep]
            ends1 = np.stack((e1[0][edge], e1[1][edge]), axis=1)
            ends0 = np.stack((e0[0][edge], e0[1][edge]), axis=1)
            faces = np.stack((e1[2][edge], e1[3][edge]), axis=1)
            mu = self.friction if col.friction is None else col.friction
            out.append(
                (seg, (s - 0.5) * self.model.lengths[seg], pe, normal, ends1, ends0, faces, np.full(seg.size, mu))
                + ((height - self.radius[seg],) if with_gap else ())
            )
        if not out:
            return None
        return [np.concatenate(parts) for parts in zip(*out, strict=True)]

    def _motion(self, x, q, x_pred, q_pred):
        """Each segment's predicted motion over the step: its centre's displacement [m] (n, 3) and how far its
        turn moves its ends, l/2 |Δθ| [m] (n,)."""
        return x_pred - x, 0.5 * self.model.lengths * np.linalg.norm(quat.body_rotation_vector(q, q_pred), axis=1)

    @staticmethod
    def _swept_distance(a0, b0, c0, d0, v):
        """Smallest distance [m] (k,) over the step between the axes a0–b0 and c0–d0 + τ v, τ ∈ [0, 1] (v: the
        second segment's translation relative to the first): the distance of two convex sets, one moving on a
        line, is convex in τ, so a golden-section search finds it (to 0.618²⁴ ≈ 1e-5 of the step)."""

        def f(tau):
            c, d = c0 + tau[:, None] * v, d0 + tau[:, None] * v
            s, t = closest_points_on_segments(a0, b0, c, d)
            gap = a0 + s[:, None] * (b0 - a0) - c - t[:, None] * (d - c)
            return np.sqrt(np.einsum("ij,ij->i", gap, gap))

        _, _, inside = golden_section(f, a0.shape[0])
        return np.minimum(inside, np.minimum(f(np.zeros(a0.shape[0])), f(np.ones(a0.shape[0]))))

    def _self_pairs(self, x, q, margin, predicted=None):
        """Segment pairs (not within ``exclude_hops``) whose capsules are closer than the sum of their
        margins: cKDTree broad phase on capsule centres, exact closest axis points.
        ``predicted`` (positions, orientations) of the step's prediction: ``margin`` then includes each segment's
        motion (:meth:`_motion`, |Δx| + l/2 |Δθ|), and a pair is kept only where the swept capsules meet: the
        axes, one translated relative to the other over the step (:meth:`_swept_distance`), come within the
        radii plus the margins less the translations. Two rods crossing at 10 m/s with Δt = 1/60 s otherwise
        made a row for every pair of segments within the 17 cm that each moves (1452 rows of which a handful
        can meet), and their direct solve diverged in the first step.
        Returns i, j, s, t (axis parameters in [0, 1]), d = p_i − p_j, |d|, r_i + r_j, axis ends."""
        segs = self._self_segments
        if segs.size < 2:
            return None
        n = self.model.n_segments
        bound = 0.5 * self.model.lengths[segs] + self.radius[segs] + margin[segs]
        pairs = cKDTree(x[segs]).query_pairs(2.0 * bound.max(), output_type="ndarray")
        if pairs.size == 0:
            return None
        i, j = segs[pairs[:, 0]], segs[pairs[:, 1]]
        i, j = np.minimum(i, j), np.maximum(i, j)
        near = bound[pairs[:, 0]] + bound[pairs[:, 1]] > np.linalg.norm(x[i] - x[j], axis=1)
        keep = near & ~np.isin(i * n + j, self._excluded)
        i, j = i[keep], j[keep]
        if i.size == 0:
            return None
        a_end, b_end = self._segment_ends(x, q)
        s, t = closest_points_on_segments(a_end[i], b_end[i], a_end[j], b_end[j])
        d = a_end[i] + s[:, None] * (b_end[i] - a_end[i]) - a_end[j] - t[:, None] * (b_end[j] - a_end[j])
        dist = np.linalg.norm(d, axis=1)
        rest = self.radius[i] + self.radius[j]
        keep = dist < rest + margin[i] + margin[j]
        if predicted is not None and np.any(keep):
            shift, turn = self._motion(x, q, *predicted)
            reach = margin - np.linalg.norm(shift, axis=1)  # the margin less the translation (keeps the turn)
            k = np.flatnonzero(keep)
            ik, jk = i[k], j[k]
            swept = self._swept_distance(a_end[ik], b_end[ik], a_end[jk], b_end[jk], shift[jk] - shift[ik])
            keep[k] = swept < rest[k] + reach[ik] + reach[jk]
        return i[keep], j[keep], s[keep], t[keep], d[keep], dist[keep], rest[keep], a_end, b_end

    def _self_candidates(self, x, q, margin, with_gap=False, predicted=None):
        """Segment–segment contacts: i, j, z_i, z_j, normal (from j to i), r_i + r_j (and, with
        ``with_gap``, the surface gap |d| − r_i − r_j [m])."""
        found = self._self_pairs(x, q, margin, predicted)
        if found is None or found[0].size == 0:
            return None
        i, j, s, t, d, dist, rest, a_end, b_end = found
        # Crossing axes (distance 0): the normal is perpendicular to both axes.
        cross = np.cross(b_end[i] - a_end[i], b_end[j] - a_end[j])
        cn = np.linalg.norm(cross, axis=1)
        fallback = np.where(cn[:, None] > 1e-12, cross / np.maximum(cn, 1e-300)[:, None], [0.0, 0.0, 1.0])
        normal = np.where(dist[:, None] > 1e-9 * rest[:, None], d / np.maximum(dist, 1e-300)[:, None], fallback)
        out = (i, j, (s - 0.5) * self.model.lengths[i], (t - 0.5) * self.model.lengths[j], normal, rest)
        return out + (dist - rest,) if with_gap else out
