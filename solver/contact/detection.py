"""Contact detection (:class:`ContactDetector`): which axis points of which segments may touch a collider, a
collider's edge or another segment in a step, and the rows of the step (:class:`~solver.contact.rows.StepRows`).

Detection runs once per step on the pose at the start of the step: a cKDTree broad phase on capsule centres or
joint points, then the exact closest points of two axes, of an axis and a collider's edge, or of an axis point and
a collider's surface. The rods' topology (pairs never in contact, joint points, permanent candidates) is computed
once (:mod:`solver.contact.topology`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from ..core import quaternion as quat
from . import centreline
from .colliders import closest_point_parameter, closest_points_on_segments, golden_section, wedge_normals
from .kinematic import KinematicPoints
from .rows import EDGE, FIXED, SLIDE_B, SLIDE_BOTH, StepRows
from .topology import ContactTopology, between_joint_rows


@dataclass(frozen=True, kw_only=True)
class DetectionOptions:
    """How contacts are found. ``self_friction`` μ between segments (None: the contacts' ``friction``);
    ``margin`` [m]: contacts are generated for gaps below this (None: per segment, its radius plus its predicted
    displacement in the step); ``exclude_hops``: segment pairs joined by at most this many joints never self-collide
    (None: ``1 + ceil(2 max r / min l)``, so neighbours whose capsules overlap at rest are skipped).
    ``self_contacts``: ``"pairs"`` (one contact per segment pair whose gap is below the margin, on the rods' smooth
    centrelines, :mod:`solver.contact.centreline`), ``"capsules"`` (those pairs on the segments' axes: a crease at
    every bent joint, kept to measure against) or ``"points"``
    (one contact per physical contact point: every joint point against the closest point of the other rod's axis, a
    local minimum along it; two joint points closer than a tenth of a radius along the axis are one vertex–vertex
    contact; two segments crossing with both closest points interior; margin: ``margin`` (default a quarter of the
    two radii) plus the two points' predicted relative motion, so coils stacked two apart make no contacts).
    ``self_pairs`` ((k, 2) segment indices, ``"points"`` only): candidate pairs present in every step whatever their
    distance (each joint point of one against the other's axis, where that is the closest point along the rod),
    e.g. a helix's neighbouring coils, which may close several radii within one step; their rows are refreshed from
    the iterate at every solve and cost nothing but size while apart (inactive)."""

    self_friction: float | None = None
    margin: float | None = None
    exclude_hops: int | None = None
    self_contacts: str = "pairs"
    self_pairs: np.ndarray | None = None

    def __post_init__(self):
        mu = self.self_friction
        if mu is not None and not (np.isfinite(mu) and mu >= 0.0):
            raise ValueError(f"self_friction must be finite and ≥ 0, got {mu}")
        if self.margin is not None and not (np.isfinite(self.margin) and self.margin >= 0.0):
            raise ValueError(f"margin must be finite and ≥ 0 m, got {self.margin}")
        if self.self_contacts not in ("pairs", "capsules", "points"):
            raise ValueError(f"self_contacts must be 'pairs', 'capsules' or 'points', got {self.self_contacts!r}")


def _empty(n: int, *tail) -> np.ndarray:
    return np.zeros((n,) + tail)


def _no_rows() -> dict:
    return _rows_of(np.zeros(0, np.int64), _empty(0), _empty(0, 3), _empty(0, 3), _empty(0, 3), _empty(0))


def _rows_of(seg, z, point_b, normal, anchor_b, mu, rest=None, mode=FIXED) -> dict:
    """The fields of :class:`~solver.contact.rows.StepRows` for rows of segments ``seg`` at axis coordinates z
    against a collider (b side −1), with the defaults the other kinds overwrite."""
    k = seg.size
    return dict(
        sa=seg,
        sb=np.full(k, -1, np.int64),
        za=z,
        zb=np.zeros(k),
        point_b=point_b,
        normal=normal,
        anchor_b=anchor_b,
        rest=_empty(0) if rest is None else rest,
        mu=mu,
        mode=np.full(k, mode),
        collider_of=np.full(k, -1, np.int64),
        fall=_empty(k, 3),
        landing=_empty(k, 3),
        ends1=_empty(k, 2, 3),
        ends0=_empty(k, 2, 3),
        faces=_empty(k, 2, 3),
    )


def contact_radius(model) -> np.ndarray:
    """Each segment's capsule radius [m] (n,): ``max(radii)``, a leaf plate's half thickness."""
    leaf = getattr(model, "leaf", None)
    r = model.radii.max(axis=1)
    return np.where(leaf, model.radii[:, 1], r) if leaf is not None else r


class ContactDetector:
    """Contact candidates of one model against ``colliders`` and itself (``self_collision``: bool or an (n,) mask
    of the segments that take part), with ``friction`` μ for colliders whose own ``friction`` is None and
    :class:`DetectionOptions`. ``radius`` (n,) [m]: each segment's capsule radius; ``topology``: the
    :class:`~solver.contact.topology.ContactTopology`."""

    def __init__(self, model, colliders, friction: float, self_collision, options: DetectionOptions):
        self.model = model
        self.colliders = list(colliders)
        self.friction = float(friction)
        self.self_friction = self.friction if options.self_friction is None else float(options.self_friction)
        self.margin = options.margin
        self.self_contacts = options.self_contacts
        self.radius = contact_radius(model)
        mask = np.broadcast_to(np.asarray(self_collision, dtype=bool), (model.n_segments,))
        hops = options.exclude_hops
        if hops is None:
            hops = 1 + int(np.ceil(2.0 * self.radius.max() / model.lengths.min()))
        self.kinematic = KinematicPoints(model, self.radius)
        self.topology = ContactTopology(
            model, np.flatnonzero(mask), hops, options.self_pairs, self.self_contacts == "points", self.radius
        )
        self.topology.smooth = self.self_contacts == "pairs"

    @property
    def exclude_hops(self) -> int:
        return self.topology.exclude_hops

    # ------------------------------------------------------------------ the step's rows
    def generate(self, start, predicted, t0: float, t1: float, joint_point_rows: bool) -> StepRows:
        """The rows of a step from its start pose ``start`` (x, q) and the prediction ``predicted`` (x, q), the
        colliders placed at t1 (the step's end), their motion from t0; ``joint_point_rows``: one row per joint point
        against a collider and none between two (the Newton methods' rows). Contact points and normals come from the
        start pose, where the capsules do not overlap, so a fast segment cannot tunnel to the wrong side of a thin
        collider or another rod; the margin covers each segment's predicted motion."""
        (x, q), (x_pred, q_pred) = start, predicted
        turn = np.linalg.norm(quat.body_rotation_vector(q, q_pred), axis=1)
        move = np.linalg.norm(x_pred - x, axis=1) + 0.5 * self.model.lengths * turn
        margin = (self.radius + move) if self.margin is None else self.margin + move
        parts = [self._collider_rows(x, q, margin, t0, t1, predicted, joint_point_rows)]
        parts.append(self._edge_rows(x, q, margin, t0, t1, predicted))
        parts.append(self._self_rows(x, q, margin, predicted))
        rows = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
        moves = self.kinematic.movable(rows["sa"], rows["sb"], rows["za"])
        if not moves.all():
            rows = {key: value[moves] for key, value in rows.items()}
        return StepRows(fast=move > self.radius, **rows)  # fast: segments whose collider rows follow the iterate

    def _collider_rows(self, x, q, margin, t0, t1, predicted, joint_point_rows) -> dict:
        env = self._collider_candidates(x, q, margin, t0, t1, predicted)
        if env is None:
            return _no_rows()
        rows = env
        if joint_point_rows:
            # one row per joint point and none between two (``between_joint_rows``, ``near_joint_rows``)
            seg, z, which = rows[0], rows[1], rows[6]
            rows = [v[~between_joint_rows(seg, z, which, 0.5 * self.model.lengths[seg])] for v in rows]
            rows = [v[~self.topology.near_joint_rows(rows[0], rows[1], rows[6])] for v in rows]
            rows = [v[~self.topology.joint_twins(rows[0], rows[1], rows[6])] for v in rows]
        seg, z, surface, nrm, shift, m, which, fall = rows
        out = _rows_of(seg, z, surface, nrm, surface - shift, m, rest=self.radius[seg])
        out["collider_of"], out["fall"] = which, fall
        return out

    def _edge_rows(self, x, q, margin, t0, t1, predicted) -> dict:
        edges = self._edge_candidates(x, q, margin, t0, t1, with_gap=True)
        if edges is None:
            return _no_rows()
        seg, z, pe, nrm, e1, e0, fn, m, gap = edges
        out = _rows_of(seg, z, pe, nrm, pe, m, rest=self.radius[seg], mode=EDGE)
        out["landing"] = self._edge_landing((seg, z, pe, nrm, gap, e1, e0), (x, q), predicted)
        out["ends1"], out["ends0"], out["faces"] = e1, e0, fn
        return out

    def _self_rows(self, x, q, margin, predicted) -> dict:
        if self.self_contacts == "points":
            selfc = self._point_contacts(x, q, *predicted)
        else:
            selfc = self.self_candidates(x, q, margin, predicted=predicted)
            if selfc is not None:
                selfc = selfc + (np.full(selfc[0].size, SLIDE_BOTH),)
        if selfc is None:
            return _no_rows()
        i, j, zi, zj, nrm, rr, md = selfc
        out = _rows_of(i, zi, np.zeros((i.size, 3)), nrm, np.zeros((i.size, 3)), np.full(i.size, self.self_friction))
        out.update(
            sb=j, zb=zj, rest=rr, mode=md, landing=self._self_landing((i, j, zi, zj, nrm, rr), (x, q), predicted)
        )
        return out

    def surface_gaps(self, x, q, t: float) -> tuple[float, float]:
        """Exact smallest surface gaps [m] at the pose (x, q), independent of any step's rows: (between non-neighbouring
        segments, on the ``self_contacts`` geometry, between segments and colliders at time t); +inf where nothing is
        within a radius. Negative values are penetrations."""
        margin = np.full(x.shape[0], self.radius.max())
        found = self.self_candidates(x, q, margin, with_gap=True)
        self_gap = float(np.min(found[-1])) if found is not None else np.inf
        col_gap = np.inf
        for _, seg, _, _, phi, _ in self.collider_points(x, q, margin, t):
            if seg.size:
                col_gap = min(col_gap, float(np.min(phi - self.radius[seg])))
        return self_gap, col_gap

    def overlap_rows(self, x, q, margin, t: float):
        """Rows of every capsule overlap (and gap below ``margin`` (n,) [m]) at the pose (x, q), colliders at t,
        found exactly as :meth:`surface_gaps` does: segment a, its axis coordinate, segment b (−1: a collider), b's,
        normal from b to a, gap C [m]; None if there are none."""
        parts = []
        for _, seg, z, _, phi, nrm in self.collider_points(x, q, margin, t):
            parts.append((seg, z, np.full(seg.size, -1), np.zeros(seg.size), nrm, phi - self.radius[seg]))
        edges = self._edge_candidates(x, q, margin, t, t, with_gap=True)
        if edges is not None:
            seg, z, nrm, gap = edges[0], edges[1], edges[3], edges[-1]
            parts.append((seg, z, np.full(seg.size, -1), np.zeros(seg.size), nrm, gap))
        found = self.self_candidates(x, q, margin, with_gap=True)
        if found is not None:
            i, j, zi, zj, nrm, _, gap = found
            parts.append((i, zi, j, zj, nrm, gap))
        if not parts:
            return None
        return [np.concatenate(p) for p in zip(*parts, strict=True)]

    # ------------------------------------------------------------------ self contacts, one per contact point
    def _material_shift(self, seg, z, x, q, x_pred, q_pred):
        """Predicted displacement [m] over the step of the axis points z of segments seg."""
        zz = np.zeros((seg.size, 3))
        zz[:, 2] = z
        return x_pred[seg] + quat.rotate(q_pred[seg], zz) - x[seg] - quat.rotate(q[seg], zz)

    def _point_contacts(self, x, q, x_pred, q_pred):
        """Self contacts, one per physical contact point (``self_contacts="points"``): i, j, z_i, z_j,
        normal (from j to i), r_i + r_j, mode (:data:`FIXED` joint point pair, :data:`SLIDE_B` joint point
        against an axis, :data:`SLIDE_BOTH` crossing segments)."""
        segs = self.topology.self_segments
        if segs.size < 2:
            return None
        m, n = self.model, self.model.n_segments
        ends = self.segment_ends(x, q)
        move = np.linalg.norm(x_pred - x, axis=1) + 0.5 * m.lengths * np.linalg.norm(
            quat.body_rotation_vector(q, q_pred), axis=1
        )
        base = 0.5 * self.radius if self.margin is None else np.full(n, self.margin)
        near = self._vertex_axis_pairs(x, q, (x_pred, q_pred), ends, move, base)
        seg_i, seg_j, zi, zj, d, dist, rest, mode = self._vertex_rows(x, q, ends, near)
        # Crossing segments whose closest points are both inside (away from joint points by a tenth of a
        # radius) and not near-parallel (there the joint points' rows carry the contact).
        pairs = self.self_pairs(x, q, base + move, (x_pred, q_pred))
        if pairs is not None and pairs[0].size:
            i2, j2, s2, t2, d2, dist2, rest2, _, _ = pairs
            inside = self._crossing(ends, move, base, pairs)
            li, lj = m.lengths[i2], m.lengths[j2]
            seg_i, seg_j = np.concatenate((seg_i, i2[inside])), np.concatenate((seg_j, j2[inside]))
            zi = np.concatenate((zi, (s2[inside] - 0.5) * li[inside]))
            zj = np.concatenate((zj, (t2[inside] - 0.5) * lj[inside]))
            d, dist = np.vstack((d, d2[inside])), np.concatenate((dist, dist2[inside]))
            rest = np.concatenate((rest, rest2[inside]))
            mode = np.concatenate((mode, np.full(int(inside.sum()), SLIDE_BOTH)))
        if seg_i.size == 0:
            return None
        a_end, b_end = ends
        fallback = np.cross(b_end[seg_i] - a_end[seg_i], b_end[seg_j] - a_end[seg_j])
        fn = np.linalg.norm(fallback, axis=1)
        fallback = np.where(fn[:, None] > 1e-12, fallback / np.maximum(fn, 1e-300)[:, None], [0.0, 0.0, 1.0])
        normal = np.where(dist[:, None] > 1e-9 * rest[:, None], d / np.maximum(dist, 1e-300)[:, None], fallback)
        return seg_i, seg_j, zi, zj, normal, rest, mode

    def _vertex_axis_pairs(self, x, q, predicted, ends, move, base):
        """Joint points (vertex ids v) near the axis of a segment b whose closest point is a local minimum along
        b's rod and within the margin: v, b, the axis parameter t ∈ [0, 1], b's length, d = p_v − p_b, |d|,
        r_v + r_b and b's axis coordinate."""
        segs, topo, m, n = self.topology.self_segments, self.topology, self.model, self.model.n_segments
        a_end, b_end = ends
        reach = self.radius + base + 2.0 * move
        rmax = reach[segs].max()
        vs, vz = topo.v_seg, topo.v_z
        vp = np.where((vz < 0)[:, None], a_end[vs], b_end[vs])
        found = cKDTree(vp).sparse_distance_matrix(
            cKDTree(x[segs]), 0.5 * m.lengths[segs].max() + 2.0 * rmax, output_type="ndarray"
        )
        v, b = found["i"].astype(np.int64), segs[found["j"]]
        perm = np.zeros(v.size, bool)
        if topo.perm_v.size:
            # permanent candidates (``self_pairs``): kept however far apart, so no fast approach is missed;
            # one row per (vertex, axis), the detected duplicate dropped
            v, b = np.concatenate((topo.perm_v, v)), np.concatenate((topo.perm_b, b))
            perm = np.concatenate((np.ones(topo.perm_v.size, bool), perm))
            _, first = np.unique(v * n + b, return_index=True)
            v, b, perm = v[first], b[first], perm[first]
        own, other = vs[v], topo.v_other[v]
        keep = (own != b) & (other != b)
        keep &= ~np.isin(np.minimum(own, b) * n + np.maximum(own, b), topo.excluded)
        keep &= ~np.isin(np.minimum(other, b) * n + np.maximum(other, b), topo.excluded)
        v, b, perm = v[keep], b[keep], perm[keep]
        p = vp[v]
        ab = b_end[b] - a_end[b]
        lb2 = np.einsum("ij,ij->i", ab, ab)
        t_raw = np.einsum("ij,ij->i", p - a_end[b], ab) / lb2
        # A local minimum along b's rod: a point beyond b's +z end belongs to the successor; one before its
        # −z end is that joint point only if it is also beyond the predecessor's +z end (a convex corner).
        pr = topo.pred[b]
        ab_pred = b_end[np.maximum(pr, 0)] - a_end[np.maximum(pr, 0)]
        beyond_pred = np.einsum("ij,ij->i", p - a_end[b], ab_pred) >= 0.0
        keep = ~((t_raw >= 1.0) & (topo.succ[b] >= 0)) & ~((t_raw <= 0.0) & (pr >= 0) & ~beyond_pred)
        v, b, p, t_raw, lb, perm = v[keep], b[keep], p[keep], t_raw[keep], np.sqrt(lb2[keep]), perm[keep]
        t = np.clip(t_raw, 0.0, 1.0)
        d = p - a_end[b] - t[:, None] * (b_end[b] - a_end[b])
        dist = np.linalg.norm(d, axis=1)
        rest = self.radius[vs[v]] + self.radius[b]
        zv = vz[v]
        zb = (t - 0.5) * m.lengths[b]
        rel = np.linalg.norm(
            self._material_shift(vs[v], zv, x, q, *predicted) - self._material_shift(b, zb, x, q, *predicted),
            axis=1,
        )
        close = (dist - rest < 0.5 * (base[vs[v]] + base[b]) + rel) | perm
        return tuple(a[close] for a in (v, b, t, lb, d, dist, rest, zb))

    def _vertex_rows(self, x, q, ends, near):
        """The rows of the joint points near an axis (:meth:`_vertex_axis_pairs`): one vertex–vertex row where the
        closest point is within a tenth of a radius of b's joint point and the rods run nearly parallel, else the
        joint point against b's axis; kept where the direction to the other side is within the chain's normal cone.
        Returns i, j, z_i, z_j, d, |d|, r_i + r_j, mode."""
        v, b, t, lb, d, dist, rest, zb = near
        topo = self.topology
        a_end, b_end = ends
        vs, vz = topo.v_seg, topo.v_z
        # Within a tenth of a radius of a joint point of b the contact is that joint point's: one
        # vertex–vertex row, found once whichever side generated it ...
        snap = 0.1 * self.radius[b]
        # ... where the two rods run nearly parallel there (two balls are unstable where two crossing
        # cylinders are not: crossing rods keep a joint point against the other's axis, from both sides).
        own_axis = quat.rotate(q[vs[v]], np.tile([0.0, 0.0, 1.0], (v.size, 1)))
        parallel = np.linalg.norm(np.cross(own_axis, (b_end[b] - a_end[b]) / lb[:, None]), axis=1) < 0.2
        lo, hi = parallel & (t * lb < snap), parallel & ((1.0 - t) * lb < snap)
        w = np.where(lo, topo.vid_lo[b], np.where(hi, topo.vid_hi[b], -1))
        vv = w >= 0
        key = np.where(vv, np.minimum(v, w) * (topo.v_seg.size + 1) + np.maximum(v, w), -1 - np.arange(v.size))
        _, first = np.unique(key, return_index=True)
        pick = np.zeros(v.size, bool)
        pick[first] = True
        v, b, w, vv, d, dist, rest, zb = v[pick], b[pick], w[pick], vv[pick], d[pick], dist[pick], rest[pick], zb[pick]
        seg_j = np.where(vv, topo.v_seg[np.maximum(w, 0)], b)
        zj = np.where(vv, topo.v_z[np.maximum(w, 0)], zb)
        seg_i, zi = vs[v], vz[v]
        pi = x[seg_i] + quat.rotate(q[seg_i], np.stack((0 * zi, 0 * zi, zi), 1))
        pj = x[seg_j] + quat.rotate(q[seg_j], np.stack((0 * zj, 0 * zj, zj), 1))
        d = pi - pj
        dist = np.linalg.norm(d, axis=1)
        mode = np.where(vv, FIXED, SLIDE_B)
        # A row belongs to a joint point only where that point is its chain's nearest feature to the other
        # side: the direction to it within 30° of the chain's normal cone (``RowGeometry.vertex_cone``). Elsewhere
        # (a permanent candidate far along a coil from the other rod's end) its normal, projected onto the
        # cone, measures the gap to the chain's tangent line, not to the other rod, and its row would hold that.
        dn = d / np.maximum(dist, 1e-300)[:, None]
        ok = topo.cone_excess(q, seg_i, zi, dn) < 0.5
        ok &= ~vv | (topo.cone_excess(q, seg_j, zj, -dn) < 0.5)
        return seg_i[ok], seg_j[ok], zi[ok], zj[ok], d[ok], dist[ok], rest[ok], mode[ok]

    def _crossing(self, ends, move, base, pairs) -> np.ndarray:
        """Which capsule pairs (:meth:`self_pairs`) cross with both closest points inside (a tenth of a radius
        from the joint points), not near-parallel, and within the margin."""
        m = self.model
        a_end, b_end = ends
        i2, j2, s2, t2, _, dist2, rest2, _, _ = pairs
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
        return inside

    # ------------------------------------------------------------------ contact generation
    def segment_ends(self, x, q):
        half = np.zeros((x.shape[0], 3))
        half[:, 2] = 0.5 * self.model.lengths
        axis = quat.rotate(q, half)
        return x - axis, x + axis

    def collider_points(self, x, q, margin, t):
        """Per collider: axis points of segments near it (both ends and the collider's closest axis
        point) with gap φ − r below ``margin`` (n,) [m]: (collider, segment, z, point, φ, normal)."""
        a_end, b_end = self.segment_ends(x, q)
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
        normal turns during the step (``RowGeometry._follow_collider``)."""
        out = []
        for col, seg, z, p, phi, normal in self.collider_points(x, q, margin, t1):
            surface = p - phi[:, None] * normal
            mu = self.friction if col.friction is None else col.friction
            which = np.full(seg.size, self.colliders.index(col), np.int64)
            shift = col.displacement(surface, t0, t1)
            fall = np.zeros_like(shift)
            if predicted is not None:
                move = self._material_shift(seg, z, x, q, *predicted) - shift
                approach, fall = self._approach(move, phi - self.radius[seg], normal)
                # only where the approach is fast (farther than two radii along the surface): slower ones keep
                # the anchor at the step's start, which the draped rods of
                # tests/solver/contact/test_collision.py are measured with
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

    def _edge_landing(self, edge, start, predicted):
        """The motion [m] (k, 3) of edge rows' axis points (segments seg at z) relative to the edge's closest points
        pe before they meet it (:meth:`_approach`, both parts) where it is fast, else 0 (:meth:`_self_landing`)."""
        seg, z, pe, normal, gap, e1, e0 = edge
        x, q = start
        t = closest_point_parameter(pe, e1[:, 0], e1[:, 1])
        edge_move = pe - e0[:, 0] - t[:, None] * (e0[:, 1] - e0[:, 0])
        move = self._material_shift(seg, z, x, q, *predicted) - edge_move
        approach, fall = self._approach(move, gap, normal)
        fast = np.linalg.norm(approach, axis=1) > 2.0 * self.radius[seg]
        return (approach + fall) * fast[:, None]

    def _self_landing(self, pair, start, predicted):
        """The relative motion [m] (k, 3) of the axis points zi of segments i and zj of j over the step before
        they meet (:meth:`_approach`, tangential and normal parts) where it is fast (farther than two radii
        along the surface), else 0: a segment pair's friction holds its two material points from where they
        meet, as a collider row's does (two rods closing head-on at 10 m/s have none at Δt = 1/200 s; at 1/60 s,
        6 cm on the rows' tilted planes, they diverge with or without it, docs/notes/contacts.md)."""
        i, j, zi, zj, normal, rest = pair
        x, q = start
        move = self._material_shift(i, zi, x, q, *predicted) - self._material_shift(j, zj, x, q, *predicted)
        pi, pj = (x[s] + quat.rotate(q[s], np.stack((0 * z, 0 * z, z), 1)) for s, z in ((i, zi), (j, zj)))
        gap = np.einsum("ij,ij->i", pi - pj, normal) - rest
        approach, fall = self._approach(move, gap, normal)
        fast = np.linalg.norm(approach, axis=1) > 2.0 * np.minimum(self.radius[i], self.radius[j])
        return (approach + fall) * fast[:, None]

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
        a_end, b_end = self.segment_ends(x, q)
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
            normal = wedge_normals(pa - pe, e1[2][edge], e1[3][edge])
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
    def swept_distance(a0, b0, c0, d0, v):
        """Smallest distance [m] (k,) over the step between the axes a0–b0 and c0–d0 + τ v, τ ∈ [0, 1] (v: the
        second segment's translation relative to the first): the distance of two convex sets, one moving on a
        line, is convex in τ, so a golden-section search finds it (to 0.618²⁴ ≈ 1e-5 of the step)."""

        def f(tau):
            s, t = closest_points_on_segments(a0, b0, c0 + tau[:, None] * v, d0 + tau[:, None] * v)
            return np.linalg.norm(a0 + s[:, None] * (b0 - a0) - c0 - tau[:, None] * v - t[:, None] * (d0 - c0), axis=1)

        _, _, inside = golden_section(f, a0.shape[0])
        return np.minimum(inside, np.minimum(f(np.zeros(a0.shape[0])), f(np.ones(a0.shape[0]))))

    def self_pairs(self, x, q, margin, predicted=None):
        """Segment pairs (not within ``exclude_hops``) whose capsules are closer than the sum of their margins:
        cKDTree broad phase on capsule centres, exact closest axis points. ``predicted`` (positions, orientations)
        of the step's prediction: ``margin`` then includes each segment's motion (:meth:`_motion`, |Δx| + l/2 |Δθ|),
        and a pair is kept only where the swept capsules meet: the axes, one translated relative to the other over
        the step (:meth:`swept_distance`), come within the radii plus the margins less the translations. Two rods
        crossing at 10 m/s with Δt = 1/60 s otherwise made a row for every pair of segments within the 17 cm that
        each moves (1452 rows of which a handful can meet), and their direct solve diverged in the first step.
        Returns i, j, s, t (axis parameters in [0, 1]), d = p_i − p_j, |d|, r_i + r_j, axis ends."""
        segs = self.topology.self_segments
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
        keep = near & ~np.isin(i * n + j, self.topology.excluded)
        i, j = i[keep], j[keep]
        if i.size == 0:
            return None
        a_end, b_end = self.segment_ends(x, q)
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
            swept = self.swept_distance(a_end[ik], b_end[ik], a_end[jk], b_end[jk], shift[jk] - shift[ik])
            keep[k] = swept < rest[k] + reach[ik] + reach[jk]
        return i[keep], j[keep], s[keep], t[keep], d[keep], dist[keep], rest[keep], a_end, b_end

    def self_candidates(self, x, q, margin, with_gap=False, predicted=None):
        """Segment–segment contacts: i, j, z_i, z_j, normal (from j to i), r_i + r_j (and, with ``with_gap``, the
        surface gap |d| − r_i − r_j [m]); on the smooth centrelines where ``topology.smooth``."""
        found = self.self_pairs(x, q, margin, predicted)
        if found is None or found[0].size == 0:
            return None
        i, j, s, t, d, dist, rest, a_end, b_end = found
        zi, zj = (s - 0.5) * self.model.lengths[i], (t - 0.5) * self.model.lengths[j]
        if self.topology.smooth:
            zi, zj, d = centreline.pair_offsets(x, q, self.topology, self.model.lengths, (i, j, zi, zj))
            dist = np.linalg.norm(d, axis=1)
        # Crossing axes (distance 0): the normal is perpendicular to both axes.
        cross = np.cross(b_end[i] - a_end[i], b_end[j] - a_end[j])
        cn = np.linalg.norm(cross, axis=1)
        fallback = np.where(cn[:, None] > 1e-12, cross / np.maximum(cn, 1e-300)[:, None], [0.0, 0.0, 1.0])
        normal = np.where(dist[:, None] > 1e-9 * rest[:, None], d / np.maximum(dist, 1e-300)[:, None], fallback)
        out = (i, j, zi, zj, normal, rest)
        return out + (dist - rest,) if with_gap else out
