"""Unilateral contacts with Coulomb friction: rod segments against colliders and against each other.

A :class:`Contacts` object is a Gauss–Seidel constraint set for ``Simulator.gs_constraints``
(Deul Algorithm 1, lines 10–14): ``begin_step`` generates the contacts once per step (line 13 of
seed 002's Algorithm 1), ``project`` runs one non-linear Gauss–Seidel sweep (Eqs. 21/20) and
``end_step`` records statistics (and, with ``post_stabilise``, removes the overlaps left from the
positions only).

Every segment is a capsule: its axis (local z over ±l/2) swept by the radius ``max(radii)`` (a leaf
plate by its half thickness). A contact joins an axis point of segment ``a`` to an axis point of
segment ``b`` (the two closest points, found again in every sweep; in the direct solve a joint point's
row follows its closest point over a joint of b's rod onto the next segment), to a fixed world point on
a collider (a material point of ``a``), or to a collider's sharp edge (``Collider.edges``: the closest
points of a's axis and the edge, found again in every solve), with a normal n from b to a (a collider's
frozen for the step; a segment pair's along the closest points unless that flipped, and at a joint point
within the chain's normal cone there; an edge's that of the wedge its two faces make, while the rod is
clear of it) and a rest distance R:

    C = n·(p_a − p_b) − R ≥ 0,   λ_n ≥ 0                                    (unilateral)

Friction is Coulomb at the position level (seed 002 §7 uses Macklin et al. 2014; here in XPBD form):
the relative tangential motion of the two material points over the step is a second constraint whose
accumulated multiplier is clamped to the cone ``|λ_t| ≤ μ λ_n``: inside the cone the points stick
(static friction), on it they slide against a friction impulse μ λ_n (kinetic). In the direct solve
(``response="direct"``) the two material points of a segment pair are its touching surface points, so
segments turning together do not slip; the Gauss–Seidel sweeps (and every collider contact) use the
axis points, which resist a common turn of two touching segments, and rolling on a collider.

Contacts are coloured once per step so that no two contacts of a colour share a free segment; a sweep
solves each colour at once (vectorised), which is Gauss–Seidel in a multicolour order.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy.sparse import coo_matrix, identity
from scipy.spatial import cKDTree

from . import quaternion as quat
from .colliders import Collider, closest_point_parameter, closest_points_on_segments
from .contact_kkt import FrictionRows, JointRows, solve_joints_and_contacts


def _empty(n: int, *tail) -> np.ndarray:
    return np.zeros((n,) + tail)


# How the two points of a contact are found in every sweep: both material points fixed for the step
# (a collider contact, two joint points), a fixed point of a against the closest point of b's axis, the
# closest points of both axes (crossing segments), or the closest points of a's axis and a collider's edge.
FIXED, SLIDE_B, SLIDE_BOTH, EDGE = 0, 1, 2, 3


def _rows_times(fa, fb, ga, gb, x: np.ndarray) -> np.ndarray:
    """J x for contact rows: each row's gradients ``ga``/``gb`` (k, 6) against the free-segment vector
    ``x`` (n_free, 6) at its free indices ``fa``/``fb`` (−1: that side is a collider or pinned)."""
    out = np.zeros(fa.size)
    for g, fs in ((ga, fa), (gb, fb)):
        ok = fs >= 0
        out[ok] += np.einsum("ij,ij->i", g[ok], x[fs[ok]])
    return out


class Contacts:
    """Contact and friction constraints of one model (a ``Simulator.gs_constraints`` element).

    Parameters: ``colliders`` (sequence of :class:`~solver.colliders.Collider`); ``friction`` μ for
    contacts with colliders whose own ``friction`` is None; ``self_collision`` (bool, or an (n,) mask
    of the segments that take part); ``self_friction`` μ between segments (default ``friction``);
    ``margin`` [m]: contacts are generated for gaps below this (default: per segment, its radius plus
    its predicted displacement in the step); ``exclude_hops``: segment pairs joined by at most this
    many joints never self-collide (default ``1 + ceil(2 max r / min l)``, so neighbours whose capsules
    overlap at rest are skipped); ``compliance`` [m/N] of the normal constraint (0: rigid); ``sweeps``
    Gauss–Seidel sweeps over the contacts per ``project`` call; ``max_colours``: colours per sweep at
    most (each costs a few dozen numpy calls); contacts beyond them are averaged (Jacobi) in the last.
    ``self_contacts``: ``"pairs"`` (one contact per pair of capsules whose gap is below the margin) or
    ``"points"`` (one contact per physical contact point: every joint point against the closest point of
    the other rod's axis, a local minimum along it; two joint points closer than a tenth of a radius
    along the axis are one vertex–vertex contact; two segments crossing with both closest points
    interior; margin: ``margin`` (default a quarter of the two radii) plus the two points' predicted
    relative motion, so coils stacked two apart make no contacts). ``response``: ``"local"`` (Eq. 21 with
    the two segments' masses), ``"tree"`` (normal rows applied through the tree's KKT factorisation),
    ``"direct"`` (joints, contact normal rows and two friction rows per contact in one sparse direct
    solve per sweep, :mod:`solver.contact_kkt`; no Gauss–Seidel pass); ``direct_compliance`` [m/N]
    of the contact rows in that solve (keeps nearly coincident rows from a singular system),
    ``collider_compliance`` [m/N] of its rows against colliders (default ``direct_compliance``),
    ``friction_compliance`` [m/N] of its friction rows (a stack of coils stuck to each other is nearly
    redundant with the joints; 1e-4 keeps its LU accurate, see benchmarks/slinky.py); ``direct_rounds``:
    active-set solves per call at most, then up to ``direct_grow_rounds`` more in which rows only enter
    (:func:`solver.contact_kkt.solve_joints_and_contacts`). ``solve_log`` lists (rounds, converged) of
    every direct solve; ``friction_log`` the rounds of each that checked sticking rows against the Coulomb
    box (0: the normal active set never settled, so no friction row started sliding).
    ``direct_max_move`` [m] (optional): a direct solve whose Newton step would move some segment's surface
    farther is scaled down to that distance (damped Newton; ``damped_solves`` counts them): far outside
    the linear regime a full step overshoots, and the solves of a jittering Slinky moved segments 13–20 mm
    with 100–970 N on its rows (it weighs 0.9 N) and made 40 mJ in one step.
    ``post_stabilise``: after each step, overlaps the step's solves left deeper than ``post_tolerance``
    (0.02) radii plus the compliant sink of the row's load are removed from the positions only, once the
    step has taken its velocities (``end_step``; one joint-and-contact direct solve, needs the ``"kkt"``
    solver); ``post_overlap`` [m] is the deepest overlap it found in the last step. ``post_velocity``:
    the rows it closes also lose their relative velocity into each other (an inelastic velocity solve
    through the joints; without it a segment the step's solves left sinking keeps sinking at that speed
    in the next step, and post-stabilisation lifts it out again: a damped Slinky's coils sank 12 r into a
    step for 0.2 s at 1.5–1.8 m/s).
    ``self_pairs`` ((k, 2) segment indices, ``self_contacts="points"`` only): candidate pairs present in
    every step whatever their distance (each joint point of one against the other's axis, where that is
    the closest point along the rod), e.g. a helix's neighbouring coils, which may close several radii
    within one step; their rows are refreshed from the iterate at every solve and cost nothing but size
    while apart (inactive).

    After a step: ``n_contacts``, ``n_active`` (λ_n > 0), ``max_penetration`` [m] (deepest
    ``−C`` over this step's contacts at the end of the step), ``normal_impulse`` λ_n [N·s²] per contact.
    """

    def __init__(self, model, colliders: Sequence[Collider] = (), *, friction: float = 0.0,
                 self_collision=False, self_friction: float | None = None, margin: float | None = None,
                 exclude_hops: int | None = None, compliance: float = 0.0, sweeps: int = 1,
                 max_colours: int = 32, pre_sweeps: int = 0, response: str = "local",
                 self_contacts: str = "pairs", direct_compliance: float = 1e-7,
                 friction_compliance: float = 1e-7, direct_rounds: int = 8, self_pairs=None,
                 direct_grow_rounds: int = 0, collider_compliance: float | None = None, post_stabilise: bool = False,
                 direct_max_move: float | None = None, post_velocity: bool = False):
        self.model = model
        self.colliders = list(colliders)
        for i, c in enumerate(self.colliders):
            if not isinstance(c, Collider):
                raise ValueError(f"colliders[{i}] is not a Collider (got {type(c).__name__})")
        for name, mu in (("friction", friction), ("self_friction", self_friction)):
            if mu is not None and not (np.isfinite(mu) and mu >= 0.0):
                raise ValueError(f"{name} must be finite and ≥ 0, got {mu}")
        if margin is not None and not (np.isfinite(margin) and margin >= 0.0):
            raise ValueError(f"margin must be finite and ≥ 0 m, got {margin}")
        if not (np.isfinite(compliance) and compliance >= 0.0):
            raise ValueError(f"compliance must be finite and ≥ 0 m/N, got {compliance}")
        for name, value, low in (("sweeps", sweeps, 1), ("max_colours", max_colours, 1), ("pre_sweeps", pre_sweeps, 0),
                                 ("direct_rounds", direct_rounds, 1), ("direct_grow_rounds", direct_grow_rounds, 0)):
            if int(value) != value or value < low:
                raise ValueError(f"{name} must be an integer ≥ {low}, got {value}")
        self.max_colours = int(max_colours)
        self.pre_sweeps = int(pre_sweeps)
        if response not in ("local", "tree", "direct"):
            raise ValueError(f"response must be 'local', 'tree' or 'direct', got {response!r}")
        if self_contacts not in ("pairs", "points"):
            raise ValueError(f"self_contacts must be 'pairs' or 'points', got {self_contacts!r}")
        if collider_compliance is None:
            collider_compliance = direct_compliance
        for name, value in (("direct_compliance", direct_compliance), ("friction_compliance", friction_compliance),
                            ("collider_compliance", collider_compliance)):
            if not (np.isfinite(value) and value > 0.0):
                raise ValueError(f"{name} must be finite and > 0 m/N, got {value}")
        self.response = response
        self.self_contacts = self_contacts
        self.direct_compliance = float(direct_compliance)
        self.collider_compliance = float(collider_compliance)
        self.friction_compliance = float(friction_compliance)
        self.direct_touch = 0.05           # rows closer than this fraction of R start active in the direct solve
        self.direct_enter = 0.005          # ... and enter it when the step takes them deeper than this fraction
        self.direct_rounds = int(direct_rounds)
        self.post_stabilise = bool(post_stabilise)
        self.post_velocity = bool(post_velocity)
        if direct_max_move is not None and not (np.isfinite(direct_max_move) and direct_max_move > 0.0):
            raise ValueError(f"direct_max_move must be finite and > 0 m, got {direct_max_move}")
        self.direct_max_move = None if direct_max_move is None else float(direct_max_move)
        self.damped_solves = 0             # direct solves scaled down to direct_max_move
        self.post_tolerance = 0.02         # overlaps deeper than this fraction of the radius are post-stabilised
        self.post_overlap = 0.0            # [m] the deepest overlap before post-stabilisation, last step
        self.direct_grow_rounds = int(direct_grow_rounds)
        self.solve_log: list[tuple[int, bool]] = []     # (active-set rounds, converged) per direct solve
        self.friction_log: list[int] = []    # per direct solve with friction rows: rounds that checked the box
        self._joint_rows = None
        self._joint_rows_model = None
        self.friction = float(friction)
        self.self_friction = self.friction if self_friction is None else float(self_friction)
        self.margin = margin
        self.compliance = float(compliance)
        self.sweeps = int(sweeps)
        n = model.n_segments
        leaf = getattr(model, "leaf", None)
        r = model.radii.max(axis=1)
        self.radius = np.where(leaf, model.radii[:, 1], r) if leaf is not None else r
        free = ~model.pinned
        self._inv_mass = np.where(free, 1.0 / model.masses, 0.0)
        self._inv_inertia = np.where(free[:, None], 1.0 / model.inertia, 0.0)
        mask = np.broadcast_to(np.asarray(self_collision, dtype=bool), (n,))
        self._self_segments = np.flatnonzero(mask)
        if exclude_hops is None:
            exclude_hops = 1 + int(np.ceil(2.0 * self.radius.max() / model.lengths.min()))
        self.exclude_hops = int(exclude_hops)
        self._excluded = self._near_pairs(self.exclude_hops) if self._self_segments.size > 1 else np.zeros(0, np.int64)
        self._vertex_table()
        self._permanent_candidates(self_pairs)
        self._rng_seed = 0
        self.sa = self.sb = np.zeros(0, np.int64)
        self.normal_impulse = np.zeros(0)
        self._batches: list[dict] = []
        self.max_penetration = 0.0

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

    def _vertex_table(self) -> None:
        """Joint points of the self-colliding segments, each once (topology, computed once): a segment's −z
        end, and its +z end where no successor's −z end is jointed to it. ``_succ``/``_pred`` (n,): the
        segment across a segment's +z / −z end (−1 if none), ``_vid_lo``/``_vid_hi`` (n,): vertex ids."""
        m, n = self.model, self.model.n_segments
        succ, pred = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
        half_p, half_c = 0.5 * m.lengths[m.joint_parent], 0.5 * m.lengths[m.joint_child]
        tol = 1e-9 * np.maximum(half_p, half_c)
        at_end = (np.abs(m.joint_point_parent[:, 2] - half_p) < tol) & (np.abs(m.joint_point_child[:, 2] + half_c) < tol)
        at_end &= np.all(np.abs(m.joint_point_parent[:, :2]) < tol[:, None], axis=1)
        at_end &= np.all(np.abs(m.joint_point_child[:, :2]) < tol[:, None], axis=1)
        member = np.zeros(n, bool)
        member[self._self_segments] = True
        at_end &= member[m.joint_parent] & member[m.joint_child]
        succ[m.joint_parent[at_end]] = m.joint_child[at_end]
        pred[m.joint_child[at_end]] = m.joint_parent[at_end]
        segs = self._self_segments
        hi_own = segs[succ[segs] < 0]
        self._v_seg = np.concatenate((segs, hi_own))                       # owner segment of each vertex
        self._v_z = np.concatenate((-0.5 * m.lengths[segs], 0.5 * m.lengths[hi_own]))
        self._v_other = np.concatenate((np.where(pred[segs] >= 0, pred[segs], segs), hi_own))
        self._vid_lo = np.full(n, -1, np.int64)
        self._vid_lo[segs] = np.arange(segs.size)
        self._vid_hi = np.full(n, -1, np.int64)
        self._vid_hi[hi_own] = segs.size + np.arange(hi_own.size)
        has = succ >= 0
        self._vid_hi[has] = self._vid_lo[succ[has]]
        self._succ, self._pred = succ, pred

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
            raise ValueError(f"self_pairs[{bad[0]}] = {pairs[bad[0]].tolist()} is not a pair of two segments of 0..{n - 1}")
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
            quat.body_rotation_vector(q, q_pred), axis=1)
        base = 0.5 * self.radius if self.margin is None else np.full(n, self.margin)
        reach = self.radius + base + 2.0 * move
        rmax = reach[segs].max()
        vs, vz = self._v_seg, self._v_z
        vp = np.where((vz < 0)[:, None], a_end[vs], b_end[vs])
        found = cKDTree(vp).sparse_distance_matrix(cKDTree(x[segs]), 0.5 * m.lengths[segs].max() + 2.0 * rmax,
                                                   output_type="ndarray")
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
        rel = np.linalg.norm(self._material_shift(vs[v], zv, x, q, x_pred, q_pred)
                             - self._material_shift(b, zb, x, q, x_pred, q_pred), axis=1)
        close = (dist - rest < 0.5 * (base[vs[v]] + base[b]) + rel) | perm
        v, b, t, lb, d, dist, rest, zb = v[close], b[close], t[close], lb[close], d[close], dist[close], rest[close], zb[close]
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
        # side: the direction to it within 30° of the chain's normal cone (``_vertex_cone``). A permanent
        # candidate 22 mm along a coil from the other rod's end (Slinky) is not: its normal, projected onto
        # the cone, measured the gap to the chain's tangent line, 0.07 r, and its row held that.
        dn = d / np.maximum(dist, 1e-300)[:, None]
        ok = self._cone_excess(q, seg_i, zi, dn) < 0.5
        ok &= ~vv | (self._cone_excess(q, seg_j, zj, -dn) < 0.5)
        seg_i, seg_j, zi, zj, d, dist, rest, mode = seg_i[ok], seg_j[ok], zi[ok], zj[ok], d[ok], dist[ok], rest[ok], mode[ok]
        # Crossing segments whose closest points are both inside (away from joint points by a tenth of a
        # radius) and not near-parallel (there the joint points' rows carry the contact).
        pairs = self._self_pairs(x, q, base + move)
        if pairs is not None and pairs[0].size:
            i2, j2, s2, t2, d2, dist2, rest2, _, _ = pairs
            li, lj = m.lengths[i2], m.lengths[j2]
            inside = (s2 * li > 0.1 * self.radius[i2]) & ((1 - s2) * li > 0.1 * self.radius[i2]) & \
                     (t2 * lj > 0.1 * self.radius[j2]) & ((1 - t2) * lj > 0.1 * self.radius[j2])
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

    def _collider_candidates(self, x, q, margin, t0, t1):
        """Contacts with colliders (placed at t1): segment, z, surface point, normal, collider motion, μ."""
        out = []
        for col, seg, z, p, phi, normal in self._collider_points(x, q, margin, t1):
            surface = p - phi[:, None] * normal
            mu = self.friction if col.friction is None else col.friction
            out.append((seg, z, surface, normal, col.displacement(surface, t0, t1), np.full(seg.size, mu)))
        if not out:
            return None
        return [np.concatenate(parts) for parts in zip(*out)]

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

        A collider contact keeps its material point and plane for the step, so a coil rolling over a
        step's edge within one step met the edge between its rows (0.2 wire radii deep in the Slinky).
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
            out.append((seg, (s - 0.5) * self.model.lengths[seg], pe, normal, ends1, ends0, faces,
                        np.full(seg.size, mu)) + ((height - self.radius[seg],) if with_gap else ()))
        if not out:
            return None
        return [np.concatenate(parts) for parts in zip(*out)]

    def _self_pairs(self, x, q, margin):
        """Segment pairs (not within ``exclude_hops``) whose capsules are closer than the sum of their
        margins: cKDTree broad phase on capsule centres, exact closest axis points.
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
        return i[keep], j[keep], s[keep], t[keep], d[keep], dist[keep], rest[keep], a_end, b_end

    def _self_candidates(self, x, q, margin, with_gap=False):
        """Segment–segment contacts: i, j, z_i, z_j, normal (from j to i), r_i + r_j (and, with
        ``with_gap``, the surface gap |d| − r_i − r_j [m])."""
        found = self._self_pairs(x, q, margin)
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

    def surface_gaps(self, sim) -> tuple[float, float]:
        """Exact smallest surface gaps [m] at the current pose, independent of this step's contacts:
        (between non-neighbouring segments, between segments and colliders at ``sim.time``); +inf
        where nothing is within a radius. Negative values are penetrations."""
        x, q = sim.positions, sim.orientations
        margin = np.full(x.shape[0], self.radius.max())
        found = self._self_pairs(x, q, margin)
        self_gap = float(np.min(found[5] - found[6])) if found is not None and found[0].size else np.inf
        col_gap = np.inf
        for _, seg, _, _, phi, _ in self._collider_points(x, q, margin, sim.time):
            if seg.size:
                col_gap = min(col_gap, float(np.min(phi - self.radius[seg])))
        return self_gap, col_gap

    def begin_step(self, sim) -> None:
        """Generate this step's contacts and reset λ.

        Contact points and normals come from the pose at the start of the step, where the capsules do
        not overlap, so a fast segment cannot tunnel to the wrong side of a thin collider or another
        rod; the margin covers each segment's predicted motion (``sim.positions`` after the prediction).
        Colliders are placed at their pose at the end of the step (t + Δt).
        """
        x_pred, q_pred = sim.positions, sim.orientations
        x, q = (sim._saved[0], sim._saved[1]) if hasattr(sim, "_saved") else (x_pred.copy(), q_pred.copy())
        self._start = (x, q)                # the step's start pose (the Simulator saves a fresh copy per step)
        t0, t1 = sim.time, sim.time + sim.dt
        turn = np.linalg.norm(quat.body_rotation_vector(q, q_pred), axis=1)
        move = np.linalg.norm(x_pred - x, axis=1) + 0.5 * self.model.lengths * turn
        margin = (self.radius + move) if self.margin is None else self.margin + move
        sa, sb, za, zb = np.zeros(0, np.int64), np.zeros(0, np.int64), _empty(0), _empty(0)
        point_b, normal, anchor_b, rest, mu = _empty(0, 3), _empty(0, 3), _empty(0, 3), _empty(0), _empty(0)
        env = self._collider_candidates(x, q, margin, t0, t1)
        if env is not None:
            seg, z, surface, nrm, shift, m = env
            sa, sb, za, zb = seg, np.full(seg.size, -1, np.int64), z, np.zeros(seg.size)
            point_b, normal, anchor_b = surface, nrm, surface - shift
            rest, mu = self.radius[seg], m
        mode = np.full(sa.size, FIXED)
        ends1, ends0, faces = _empty(sa.size, 2, 3), _empty(sa.size, 2, 3), _empty(sa.size, 2, 3)
        edges = self._edge_candidates(x, q, margin, t0, t1)
        if edges is not None:
            seg, z, pe, nrm, e1, e0, fn, m = edges
            sa, sb = np.concatenate((sa, seg)), np.concatenate((sb, np.full(seg.size, -1, np.int64)))
            za, zb = np.concatenate((za, z)), np.concatenate((zb, np.zeros(seg.size)))
            point_b, normal, anchor_b = np.vstack((point_b, pe)), np.vstack((normal, nrm)), np.vstack((anchor_b, pe))
            rest, mu = np.concatenate((rest, self.radius[seg])), np.concatenate((mu, m))
            mode = np.concatenate((mode, np.full(seg.size, EDGE)))
            ends1, ends0, faces = np.concatenate((ends1, e1)), np.concatenate((ends0, e0)), np.concatenate((faces, fn))
        if self.self_contacts == "points":
            selfc = self._point_contacts(x, q, x_pred, q_pred)
        else:
            selfc = self._self_candidates(x, q, margin)
            if selfc is not None:
                selfc = selfc + (np.full(selfc[0].size, SLIDE_BOTH),)
        if selfc is not None:
            i, j, zi, zj, nrm, rr, md = selfc
            mode = np.concatenate((mode, md))
            sa, sb = np.concatenate((sa, i)), np.concatenate((sb, j))
            za, zb = np.concatenate((za, zi)), np.concatenate((zb, zj))
            point_b = np.vstack((point_b, np.zeros((i.size, 3))))
            anchor_b = np.vstack((anchor_b, np.zeros((i.size, 3))))
            ends1, ends0, faces = (np.concatenate((e, _empty(i.size, 2, 3))) for e in (ends1, ends0, faces))
            normal = np.vstack((normal, nrm))
            rest, mu = np.concatenate((rest, rr)), np.concatenate((mu, np.full(i.size, self.self_friction)))
        self.sa, self.sb, self.za, self.zb = sa, sb, za, zb
        self.point_b, self.normal, self.rest, self.mu, self.mode = point_b, normal, rest, mu, mode
        self._edge_ends = (ends1, ends0, faces)
        self.normal_impulse = np.zeros(sa.size)
        self.tangent_impulse = np.zeros((sa.size, 3))
        self._sliding = np.zeros((sa.size, 2), np.int8)
        self._first_solve = True
        self._alpha_tilde = self.compliance / (sim.dt * sim.dt)
        self._batches = [self._batch(idx, x, q, anchor_b) for idx in self._colour(sa, sb)]
        self._all = self._batch(np.arange(sa.size), x, q, anchor_b, direct=self.response == "direct")
        # Project the prediction out of the contacts before the first joint solve (extra Gauss–Seidel
        # sweeps of Eqs. 20/21): otherwise every step starts g Δt² deep in a floor, and the first
        # KKT solve, which does not see the contacts, spreads that error along the rods.
        for _ in range(self.pre_sweeps):
            for batch in self._batches:
                self._project_batch(sim, batch)

    def _batch(self, idx, x, q, anchor_b, direct=False) -> dict:
        """Everything about the contacts of one colour that stays fixed during the step. ``direct``: the
        direct solve's batch, where a row of two joint points slides along b's rod like a joint point
        against an axis: coils sheared 1.6 mm in one step while their joint points' row held the two points
        (0.15 r deep in the Slinky)."""
        m = self.model
        sa, sb = self.sa[idx], self.sb[idx]
        env = sb < 0
        sbs = np.where(env, sa, sb)                 # a collider contact's b side: a massless stand-in
        body_b = (~env).astype(float)
        edge = np.flatnonzero(self.mode[idx] == EDGE)
        b = dict(idx=idx, sa=sa, sb=sbs, env=env, all_env=bool(np.all(env)), share=self._share[idx],
                 slide_b=(self.mode[idx] == SLIDE_B) | (direct & (self.mode[idx] == FIXED) & ~env),
                 slide_both=self.mode[idx] == SLIDE_BOTH,
                 edge=edge, ends1=self._edge_ends[0][idx[edge]], ends0=self._edge_ends[1][idx[edge]],
                 faces=self._edge_ends[2][idx[edge]],
                 inv_m_a=self._inv_mass[sa], inv_i_a=self._inv_inertia[sa],
                 inv_m_b=self._inv_mass[sbs] * body_b, inv_i_b=self._inv_inertia[sbs] * body_b[:, None],
                 half_a=0.5 * m.lengths[sa], half_b=0.5 * m.lengths[sbs],
                 x0_a=x[sa], r0_a=quat.to_matrix(q[sa]), x0_b=x[sbs], r0_b=quat.to_matrix(q[sbs]),
                 anchor_b=anchor_b[idx])
        for side, seg in (("a", sa), ("b", sbs[~env])):
            useg, inv = np.unique(seg, return_inverse=True)
            b["merge_" + side] = (useg, inv) if useg.size != seg.size else None
        return b

    @property
    def _colours(self) -> list[np.ndarray]:
        return [b["idx"] for b in getattr(self, "_batches", [])]

    @property
    def n_contacts(self) -> int:
        return int(self.sa.size)

    @property
    def n_active(self) -> int:
        return int(np.count_nonzero(self.normal_impulse > 0.0))

    def _colour(self, sa, sb) -> list[np.ndarray]:
        """Split contacts into colours of contacts with no free segment in common: rounds of a
        randomised maximal matching (a contact joins the colour when it has the lowest random
        priority at every free segment it touches), vectorised over contacts. The last of at most
        ``max_colours`` colours takes all remaining contacts, solved Jacobi-style with averaging."""
        k = sa.size
        self._share = np.ones(k)
        if k == 0:
            return []
        n = self.model.n_segments
        free = ~self.model.pinned
        a = np.where(free[sa], sa, n)                   # pinned sides and colliders never conflict
        b = np.where((sb >= 0) & free[np.maximum(sb, 0)], sb, n)
        prio = np.random.default_rng(self._rng_seed).permutation(k)
        left = np.arange(k)
        colours = []
        while left.size:
            if len(colours) == self.max_colours - 1:
                count = np.bincount(a[left], minlength=n + 1) + np.bincount(b[left], minlength=n + 1)
                count[n] = 1
                self._share[left] = 1.0 / np.maximum(count[a[left]], count[b[left]])
                colours.append(left)
                break
            best = np.full(n + 1, k, np.int64)
            np.minimum.at(best, a[left], prio[left])
            np.minimum.at(best, b[left], prio[left])
            win = ((best[a[left]] == prio[left]) | (a[left] == n)) & ((best[b[left]] == prio[left]) | (b[left] == n))
            colours.append(left[win])
            left = left[~win]
        return colours

    # ------------------------------------------------------------------ Gauss–Seidel sweep (Eqs. 20, 21)
    def _points(self, sim, b):
        """Rotations, axis coordinates z [m] and world points of both sides of a batch. Segment–segment
        contacts take the closest points of the two axes at the current pose (the crossing point
        slides along both segments as they move; in the direct batch a joint point's row may move over
        a joint of b's rod, ``_follow_over_joints``); collider contacts keep their material point, except
        edge rows: the closest points of a's axis and the edge."""
        idx, sa, sb, env = b["idx"], b["sa"], b["sb"], b["env"]
        rot_a, rot_b = quat.to_matrix(sim.orientations[sa]), quat.to_matrix(sim.orientations[sb])
        xa, xb = sim.positions[sa], sim.positions[sb]
        axis_a, axis_b = rot_a[:, :, 2], rot_b[:, :, 2]
        za, zb = self.za[idx], self.zb[idx]
        pa = xa + za[:, None] * axis_a
        if not b["all_env"]:
            ha, hb = b["half_a"][:, None] * axis_a, b["half_b"][:, None] * axis_b
            both, one = b["slide_both"], b["slide_b"]
            if both.any():
                s, t = closest_points_on_segments(xa - ha, xa + ha, xb - hb, xb + hb)
                za = np.where(both, (2.0 * s - 1.0) * b["half_a"], za)
                zb = np.where(both, (2.0 * t - 1.0) * b["half_b"], zb)
                pa = xa + za[:, None] * axis_a
            if one.any():
                t = closest_point_parameter(pa, xb - hb, xb + hb)
                follow = self.response == "direct" and b is self._all       # the direct solve's own batch
                if follow and self._follow_over_joints(sim, b, one, pa, xb + (2.0 * t - 1.0)[:, None] * hb, t):
                    return self._points(sim, b)
                zb = np.where(one, (2.0 * t - 1.0) * b["half_b"], zb)
        pb = np.where(env[:, None], self.point_b[idx], xb + zb[:, None] * axis_b)
        e = b["edge"]
        if e.size:
            # edge rows: the closest points of a's axis and the edge, found again in every solve
            he, ends = b["half_a"][e, None] * axis_a[e], b["ends1"]
            s, t = closest_points_on_segments(xa[e] - he, xa[e] + he, ends[:, 0], ends[:, 1])
            za = za.copy()
            za[e] = (2.0 * s - 1.0) * b["half_a"][e]
            pa[e] = xa[e] + za[e, None] * axis_a[e]
            pb[e] = ends[:, 0] + t[:, None] * (ends[:, 1] - ends[:, 0])
        return rot_a, rot_b, za, zb, pa, pb

    def _follow_over_joints(self, sim, b, one, pa, pb, t) -> bool:
        """Move joint-point-against-axis rows (``one``) whose closest point is the joint at an end of b's
        axis onto the segment across that joint where that one is closer (the direct solve's batch only:
        it edits the rows' b side in ``b``, which a Gauss–Seidel colour's merge and colouring assume
        fixed). Returns whether any row moved.

        Rows are made once per step, each against the segment its joint point faced at the start, and
        slide along that axis only: a coil sliding 1.7 mm along its neighbour in one step took the
        contact over the joint onto the next segment, where no row was (0.2–0.5 wire radii deep in the
        Slinky)."""
        rows = np.flatnonzero(one & ((t >= 1.0) | (t <= 0.0)))
        if rows.size == 0:
            return False
        cur = b["sb"][rows]
        nxt = np.where(t[rows] >= 1.0, self._succ[cur], self._pred[cur])
        n = self.model.n_segments
        # each row's joint point (an id of the vertex table) and the two segments that own it
        sa, za = b["sa"], self.za[b["idx"]]
        vertex = np.where(one, np.where(za < 0.0, self._vid_lo[sa], self._vid_hi[sa]), -1)
        own, other = sa[rows], self._v_other[vertex[rows]]
        safe = np.maximum(nxt, 0)
        ok = (nxt >= 0) & (nxt != own) & (nxt != other)
        ok &= ~np.isin(np.minimum(own, safe) * n + np.maximum(own, safe), self._excluded)
        ok &= ~np.isin(np.minimum(other, safe) * n + np.maximum(other, safe), self._excluded)
        rows, nxt = rows[ok], nxt[ok]
        if rows.size == 0:
            return False
        axis = quat.rotate(sim.orientations[nxt], np.tile([0.0, 0.0, 1.0], (nxt.size, 1)))
        h = 0.5 * self.model.lengths[nxt, None] * axis
        xn = sim.positions[nxt]
        tn = closest_point_parameter(pa[rows], xn - h, xn + h)
        pn = xn + (2.0 * tn - 1.0)[:, None] * h
        # clearly closer (a rod crossing another at a joint would flip between the two sides every solve),
        # and not onto a segment this joint point already has a row against (two equal rows)
        closer = np.linalg.norm(pa[rows] - pn, axis=1) < np.linalg.norm(pa[rows] - pb[rows], axis=1) \
            - 0.01 * self.rest[b["idx"][rows]]
        held = np.isin(vertex[rows] * n + nxt, vertex[one] * n + b["sb"][one])
        closer &= ~held
        rows, nxt = rows[closer], nxt[closer]
        if rows.size == 0:
            return False
        x0, q0 = self._start
        b["sb"][rows] = nxt
        b["x0_b"][rows], b["r0_b"][rows] = x0[nxt], quat.to_matrix(q0[nxt])
        b["half_b"][rows] = 0.5 * self.model.lengths[nxt]
        b["inv_m_b"][rows], b["inv_i_b"][rows] = self._inv_mass[nxt], self._inv_inertia[nxt]
        return True

    @staticmethod
    def _anchors(b, pb):
        """Where each collider contact's collider point was at the start of the step [m] (k, 3); an edge
        row's slides along the edge with pb."""
        e = b["edge"]
        if e.size == 0:
            return b["anchor_b"]
        ends1, ends0 = b["ends1"], b["ends0"]
        t = closest_point_parameter(pb[e], ends1[:, 0], ends1[:, 1])
        out = b["anchor_b"].copy()
        out[e] = ends0[:, 0] + t[:, None] * (ends0[:, 1] - ends0[:, 0])
        return out

    def _normals(self, sim, b, za, zb, pa, pb):
        """Contact normals: the frozen one for colliders; between segments the current direction of the
        closest points unless it has flipped against the frozen one (the axes passed each other), kept
        within the normal cone of each side's joint point (``_vertex_cone``)."""
        n = self.normal[b["idx"]]
        if b["all_env"] and b["edge"].size == 0:
            return n
        d = pa - pb
        dist = np.sqrt(np.einsum("ij,ij->i", d, d))
        cur = d / np.maximum(dist, 1e-300)[:, None]
        use = ~b["env"] & (np.einsum("ij,ij->i", cur, n) > 0.0) & (dist > 1e-9 * self.rest[b["idx"]])
        n = np.where(use[:, None], cur, n)
        if not b["all_env"]:
            body = ~b["env"] & ~b["slide_both"]             # rows at joint points
            n = self._vertex_cone(sim, b["sa"], za, b["half_a"], n, body)
            n = -self._vertex_cone(sim, b["sb"], zb, b["half_b"], -n, body)
        e = b["edge"]
        if e.size:
            # the wedge's normal where the rod is clear of it; where it overlaps (the prediction of a
            # step drops a rod resting on an edge by gΔt² ≈ r) the direction from the edge is noise (the
            # front face's normal pushed a rod sliding over the edge forward), so the normal found at the
            # start of the step, where the rod did not overlap: its plane touches the wedge grown by r,
            # so meeting it clears the wedge too
            wedge, depth = self._wedge_normals(d[e], b["faces"][:, 0], b["faces"][:, 1], with_distance=True)
            n[e] = np.where((depth >= self.rest[b["idx"][e]])[:, None], wedge, n[e])
        return n

    def _vertex_cone(self, sim, seg, z, half, n, rows):
        """Normals n (k, 3) pushing on ``seg`` at axis coordinate z, kept within the normal cone of the
        capsule chain where z is a joint point (an end of the segment; ``rows`` masks the rows to treat).

        Of the sphere about a joint point, only the outward normals o with o·t_in ≥ 0 and o·t_out ≤ 0 lie
        on the chain's surface (t_in: the segment's axis toward the joint, t_out: the next segment's axis
        away from it; a free end has no t_out, so its whole cap is surface), and a normal pushing on the
        segment is n = −o: a straight rod has n ⟂ t there. A normal tilted beyond that
        cone (a joint point just past the point where another rod crosses this one) would push the rod
        along its own axis like a ball on top of a cylinder, an unstable equilibrium: a rod resting
        across two others slid off along its axis from rest, without friction, its speed growing by
        about a third every 10 ms step (tests/test_collision.py; a ball of radius r on a cylinder of
        radius r: e^(Δt √(g/2r)) = 1.37 per step for r = 5 mm). Projected onto the cone (one half space,
        then the other), such a row pushes as the capsules' common normal does."""
        at_end = rows & (np.abs(np.abs(z) - half) <= 1e-9 * half)
        i = np.flatnonzero(at_end)
        if i.size == 0:
            return n
        t_in, t_out, has = self._joint_axes(sim.orientations, seg[i], z[i])
        m = n[i].copy()
        # n pushes seg away from the other body, which lies along the outward normal o = −n
        m -= np.maximum(np.einsum("ij,ij->i", m, t_in), 0.0)[:, None] * t_in
        m -= (has * np.minimum(np.einsum("ij,ij->i", m, t_out), 0.0))[:, None] * t_out
        norm = np.linalg.norm(m, axis=1)
        ok = norm > 1e-6
        n = n.copy()
        n[i[ok]] = m[ok] / norm[ok, None]
        return n

    def _joint_axes(self, q, seg, z):
        """At the joint point z = ±l/2 of each segment: t_in, its axis toward the joint, t_out, the next
        segment's axis away from it (k, 3), and whether there is a next segment (a free end has none)."""
        s = np.sign(z)
        nxt = np.where(s > 0, self._succ[seg], self._pred[seg])
        ez = np.tile([0.0, 0.0, 1.0], (seg.size, 1))
        t_in = s[:, None] * quat.rotate(q[seg], ez)
        t_out = s[:, None] * quat.rotate(q[np.maximum(nxt, 0)], ez)
        return t_in, t_out, nxt >= 0

    def _cone_excess(self, q, seg, z, n):
        """How far n (k, 3), pushing on ``seg`` at its joint point z, lies outside the chain's normal cone
        there (``_vertex_cone``): max(n·t_in, −n·t_out) (≤ 0 inside; up to 1)."""
        t_in, t_out, has = self._joint_axes(q, seg, z)
        return np.maximum(np.einsum("ij,ij->i", n, t_in), np.where(has, -np.einsum("ij,ij->i", n, t_out), -1.0))

    @staticmethod
    def _inverse_mass(inv_m, inv_i, z, d_body):
        """Generalised inverse mass ``w = 1/m + (r×d)ᵀ I⁻¹ (r×d)`` of the axis point r = z·e₃ (body frame)
        along d: ``r×d = z (−d_y, d_x, 0)`` in the body frame."""
        return inv_m + z * z * (inv_i[:, 0] * d_body[:, 1] ** 2 + inv_i[:, 1] * d_body[:, 0] ** 2)

    @staticmethod
    def _apply(sim, seg, rot, inv_m, inv_i, z, impulse, merge):
        """Eq. 20: Δx = M⁻¹ Jᵀ Δλ for position impulses at axis points z (summed per segment by ``merge``)."""
        p_body = np.einsum("kji,kj->ki", rot, impulse)
        dx = inv_m[:, None] * impulse
        dphi = np.zeros_like(p_body)
        dphi[:, 0] = -inv_i[:, 0] * z * p_body[:, 1]
        dphi[:, 1] = inv_i[:, 1] * z * p_body[:, 0]
        if merge is not None:
            seg, inv = merge
            dx = np.stack([np.bincount(inv, dx[:, c], seg.size) for c in range(3)], axis=1)
            dphi = np.stack([np.bincount(inv, dphi[:, c], seg.size) for c in range(3)], axis=1)
        sim.positions[seg] += dx
        sim.orientations[seg] = quat.integrate_body(sim.orientations[seg], dphi)

    def project(self, sim) -> float:
        """Gauss–Seidel sweep(s) over the contacts; returns the largest ``|C + α̃λ|`` met (0 if none)."""
        residual = 0.0
        for _ in range(self.sweeps):
            if self.response == "tree":
                self._project_through_tree(sim)
            if self.response != "direct":
                for batch in self._batches:
                    residual = max(residual, self._project_batch(sim, batch))
            else:
                self._project_direct(sim)
                residual = max(residual, float(np.max(-self.gaps(sim), initial=0.0)))
        return residual

    def _project_batch(self, sim, b) -> float:
        idx = b["idx"]
        rot_a, rot_b, za, zb, pa, pb = self._points(sim, b)
        n = self._normals(sim, b, za, zb, pa, pb)
        at = self._alpha_tilde
        lam = self.normal_impulse[idx]
        c = np.einsum("ij,ij->i", n, pa - pb) - self.rest[idx]
        na_body, nb_body = np.einsum("kji,kj->ki", rot_a, n), np.einsum("kji,kj->ki", rot_b, n)
        w_n = self._inverse_mass(b["inv_m_a"], b["inv_i_a"], za, na_body) + \
            self._inverse_mass(b["inv_m_b"], b["inv_i_b"], zb, nb_body)
        # Eq. 21 for one scalar row, then the unilateral projection λ ≥ 0.
        dlam = -(c + at * lam) / np.maximum(w_n + at, 1e-300)
        lam_new = np.maximum(lam + dlam, 0.0)
        dlam = lam_new - lam
        res = np.where(lam_new > 0.0, np.abs(c + at * lam), np.maximum(-c, 0.0))
        # Coulomb friction: undo the relative tangential motion of the two material points since the
        # start of the step, with the accumulated tangential impulse kept inside the cone μ λ_n.
        start_a = b["x0_a"] + za[:, None] * b["r0_a"][:, :, 2]
        start_b = np.where(b["env"][:, None], self._anchors(b, pb), b["x0_b"] + zb[:, None] * b["r0_b"][:, :, 2])
        rel = (pa - start_a) - (pb - start_b)
        tang = rel - n * np.einsum("ij,ij->i", rel, n)[:, None]
        t_dir = tang / np.maximum(np.sqrt(np.einsum("ij,ij->i", tang, tang)), 1e-300)[:, None]
        w_t = self._inverse_mass(b["inv_m_a"], b["inv_i_a"], za, np.einsum("kji,kj->ki", rot_a, t_dir)) + \
            self._inverse_mass(b["inv_m_b"], b["inv_i_b"], zb, np.einsum("kji,kj->ki", rot_b, t_dir))
        lt_old = self.tangent_impulse[idx]
        lt = lt_old - tang / np.maximum(w_t, 1e-300)[:, None]
        lt_len = np.sqrt(np.einsum("ij,ij->i", lt, lt))
        lt = lt * np.minimum(1.0, self.mu[idx] * lam_new / np.maximum(lt_len, 1e-300))[:, None]
        # Jacobi with averaging where a colour holds several contacts of one segment (share < 1): each
        # moves it by its share of the correction, and its λ grows by the same share.
        share = b["share"]
        self.normal_impulse[idx] = lam + share * dlam
        self.tangent_impulse[idx] = lt_old + share[:, None] * (lt - lt_old)
        impulse = share[:, None] * (n * dlam[:, None] + (lt - lt_old))
        self._apply(sim, b["sa"], rot_a, b["inv_m_a"], b["inv_i_a"], za, impulse, b["merge_a"])
        if not b["all_env"]:
            body = ~b["env"]
            self._apply(sim, b["sb"][body], rot_b[body], b["inv_m_b"][body], b["inv_i_b"][body], zb[body],
                        -impulse[body], b["merge_b"])
        return float(res.max()) if res.size else 0.0

    @staticmethod
    def _surface_offsets(z, signed_radius, n_body):
        """Body-frame offsets [m] of surface points: the axis point z e₃ plus ``signed_radius`` along the
        normal n (given in the body frame)."""
        off = signed_radius[:, None] * n_body
        off[:, 2] += z
        return off

    def _free_gradients(self, sim, b, n, za, zb, na_body, nb_body):
        """Free index of each side (−1: pinned or a collider) and the generalised gradient (k, 6) of a unit
        normal row on it: ∂C/∂(x, δφ_body) = (±n, ±z e₃ × Rᵀn)."""
        free_of = np.full(self.model.n_segments, -1)
        free_of[sim.free_index] = np.arange(sim.free_index.size)
        fa, fb = free_of[b["sa"]], np.where(b["env"], -1, free_of[b["sb"]])
        ga = np.concatenate((n, za[:, None] * np.stack((-na_body[:, 1], na_body[:, 0], 0 * za), 1)), axis=1)
        gb = -np.concatenate((n, zb[:, None] * np.stack((-nb_body[:, 1], nb_body[:, 0], 0 * zb), 1)), axis=1)
        return fa, fb, ga, gb

    def _project_through_tree(self, sim) -> None:
        """All normal contact rows at once, applied through the tree's KKT factorisation of this
        iteration (Eq. 22 with the contact forces as right-hand side, as ``loop_closing`` does for
        loops), so the joints stay satisfied to first order instead of pulling the contacts back in the
        next direct solve. Each contact's Δλ from its local inverse mass is rescaled by the ratio of
        the gap change it asked for to the one the tree predicts (a Jacobi step on J H⁻¹ Jᵀ with a
        secant diagonal), then applied by a second solve."""
        kkt = getattr(sim, "_kkt", None)
        if self.n_contacts == 0 or sim.solver != "kkt" or not getattr(kkt, "factored", False):
            return
        b = self._all
        rot_a, rot_b, za, zb, pa, pb = self._points(sim, b)
        n = self._normals(sim, b, za, zb, pa, pb)
        at = self._alpha_tilde
        lam = self.normal_impulse
        c = np.einsum("ij,ij->i", n, pa - pb) - self.rest
        na_body, nb_body = np.einsum("kji,kj->ki", rot_a, n), np.einsum("kji,kj->ki", rot_b, n)
        w = self._inverse_mass(b["inv_m_a"], b["inv_i_a"], za, na_body) + \
            self._inverse_mass(b["inv_m_b"], b["inv_i_b"], zb, nb_body)
        dlam = np.maximum(lam - (c + at * lam) / np.maximum(w + at, 1e-300), 0.0) - lam
        fa, fb, ga, gb = self._free_gradients(sim, b, n, za, zb, na_body, nb_body)
        zero_joint = np.zeros_like(sim.lam)

        def respond(d):
            f = np.zeros((sim.free_index.size, 6))
            for g, fs in ((ga, fa), (gb, fb)):
                ok = fs >= 0
                np.add.at(f, fs[ok], g[ok] * d[ok, None])
            x, l_joint = kkt.solve(f, zero_joint)
            return x, l_joint, _rows_times(fa, fb, ga, gb, x)

        _, _, dc = respond(dlam)
        wanted = w * dlam                       # the gap change the local step asked for
        scale = np.where(np.abs(dc) > 1e-12 * np.maximum(np.abs(wanted), 1e-300),
                         np.clip(wanted / np.where(dc == 0.0, 1.0, dc), 0.0, 1e3), 1.0)
        dlam = np.maximum(dlam * scale, -lam)
        x, l_joint, _ = respond(dlam)
        self.normal_impulse = lam + dlam
        sim.lam += l_joint
        f = sim.free_index
        sim.positions[f] += x[:, :3]
        sim.orientations[f] = quat.integrate_body(sim.orientations[f], x[:, 3:])

    def gaps(self, sim) -> np.ndarray:
        """Current ``C`` [m] of this step's contacts (negative: penetration)."""
        out = np.zeros(self.n_contacts)
        # the direct solve moves rows over joints in its own batch (``_follow_over_joints``)
        for b in ([self._all] if self.response == "direct" and self.n_contacts else self._batches):
            _, _, za, zb, pa, pb = self._points(sim, b)
            out[b["idx"]] = np.einsum("ij,ij->i", self._normals(sim, b, za, zb, pa, pb), pa - pb) - self.rest[b["idx"]]
        return out

    def end_step(self, sim) -> None:
        """Record the deepest remaining penetration of this step's contacts [m]."""
        self.post_overlap = 0.0
        if self.post_stabilise:
            self._post_stabilise(sim)
        g = self.gaps(sim)
        self.max_penetration = float(max(0.0, -g.min())) if g.size else 0.0

    def _overlap_rows(self, sim, margin):
        """Rows of every capsule overlap (and gap below ``margin`` (n,) [m]) at the current pose, found exactly
        as ``surface_gaps`` does: segment a, its axis coordinate, segment b (−1: a collider), b's, normal
        from b to a, gap C [m]."""
        x, q = sim.positions, sim.orientations
        t1 = sim.time + sim.dt
        parts = []
        for _, seg, z, _, phi, nrm in self._collider_points(x, q, margin, t1):
            parts.append((seg, z, np.full(seg.size, -1), np.zeros(seg.size), nrm, phi - self.radius[seg]))
        edges = self._edge_candidates(x, q, margin, t1, t1, with_gap=True)
        if edges is not None:
            seg, z, nrm, gap = edges[0], edges[1], edges[3], edges[-1]
            parts.append((seg, z, np.full(seg.size, -1), np.zeros(seg.size), nrm, gap))
        found = self._self_candidates(x, q, margin, with_gap=True)
        if found is not None:
            i, j, zi, zj, nrm, _, gap = found
            parts.append((i, zi, j, zj, nrm, gap))
        if not parts:
            return None
        return [np.concatenate(p) for p in zip(*parts)]

    def _post_stabilise(self, sim) -> None:
        """Position-only removal of the overlaps left at the end of a step (post-stabilisation, Cline & Pai
        2003): every capsule overlap at the end pose (found exactly, as ``surface_gaps`` does) and every
        gap below a quarter radius is a row of one joint-and-contact direct solve (joints held, overlapping
        rows closed, the others entering only if pushed in), applied to the positions after the step took
        its velocities from them: it removes what the step's three solves left without moving energy into
        the motion (a correction that fed the velocities, as the solve's own does, would throw the
        contact apart at the overlap's depth per step). A compliant row's own sink is left: each row is
        allowed α F, with α its compliance and F the largest normal force [N] this step's solves put on either
        of its segments, and is closed to that depth (closing it to zero, the next step sinks it again, a
        velocity of α F / Δt at rest). Skipped while no overlap is deeper than that plus ``post_tolerance``
        radii; ``post_overlap`` [m] records the deepest overlap found."""
        if sim.solver != "kkt" or sim.model.n_joints == 0:
            return
        load = np.zeros(self.model.n_segments)                  # [N] per segment, this step's contacts
        if self.n_contacts:
            force = self.normal_impulse / (sim.dt * sim.dt)
            np.maximum.at(load, self.sa, force)
            body = self.sb >= 0
            np.maximum.at(load, self.sb[body], force[body])
        for first in (True, False, False):
            # a correction may push a part of the rod that was not near anything into something: look again
            rows = self._overlap_rows(sim, 0.25 * self.radius)
            if rows is None or rows[0].size == 0:
                return
            sa, za, sb, zb, n, c = rows
            if first:
                self.post_overlap = float(max(0.0, -c.min()))
            env, other = sb < 0, np.maximum(sb, 0)
            compliance = np.where(env, self.collider_compliance, self.direct_compliance) if self.response == "direct" \
                else np.full(c.size, self.compliance)
            scale = np.where(env, self.radius[sa], 0.5 * (self.radius[sa] + self.radius[other]))
            sink = np.minimum(compliance * np.maximum(load[sa], np.where(env, 0.0, load[other])),
                              self.post_tolerance * scale)
            if np.all(c + sink >= -self.post_tolerance * scale):
                return
            self._post_solve(sim, sa, za, sb, zb, n, c + sink)

    def _post_solve(self, sim, sa, za, sb, zb, n, c) -> None:
        """One post-stabilisation solve of the rows (segment a, its axis coordinate, segment b or −1 for a
        collider, b's, normal from b to a, the gap to close [m]): positions and orientations only."""
        env = sb < 0
        sbs = np.where(env, sa, sb)
        rot_a, rot_b = quat.to_matrix(sim.orientations[sa]), quat.to_matrix(sim.orientations[sbs])
        na_body, nb_body = np.einsum("kji,kj->ki", rot_a, n), np.einsum("kji,kj->ki", rot_b, n)
        fa, fb, ga, gb = self._free_gradients(sim, dict(sa=sa, sb=sbs, env=env), n, za, zb, na_body, nb_body)
        sim._joint_values()
        jp, jc, _, _ = sim._joint_eval.jacobians()
        alpha = np.full(c.size, self.direct_compliance / (sim.dt * sim.dt))
        dx, _, _, _ = solve_joints_and_contacts(
            self._joint_rows_of(sim), jp, jc, np.zeros((sim.model.n_joints, 6)), sim.alpha_tilde, 1.0 / sim._mass_diag_free,
            fa, fb, ga, gb, c, alpha, np.zeros(c.size), touch=0.0, rounds=self.direct_rounds,
            grow_rounds=self.direct_grow_rounds)
        f = sim.free_index
        sim.positions[f] += dx[:, :3]
        sim.orientations[f] = quat.integrate_body(sim.orientations[f], dx[:, 3:])
        if self.post_velocity:
            self._post_velocity(sim, jp, jc, fa, fb, ga, gb, c < 0.0)

    def _post_velocity(self, sim, jp, jc, fa, fb, ga, gb, closing) -> None:
        """The closed rows' relative normal velocity into each other removed (J v ≥ 0 for them, an
        inelastic impulse through one joint-and-contact direct solve in which the joints' velocities do not
        change; rows that would pull leave): a projection onto non-approaching rows, so it takes kinetic
        energy out. Against a collider the collider is taken at rest (an animated one's own speed is not
        added). ``jp``, ``jc``: the joints' Jacobians of the position solve just done."""
        if not np.any(closing):
            return
        f = sim.free_index
        vel = np.concatenate((sim.velocities[f], sim.angular_velocities[f]), axis=1)   # [m/s, rad/s body]
        fa, fb, ga, gb = fa[closing], fb[closing], ga[closing], gb[closing]
        jv = _rows_times(fa, fb, ga, gb, vel)                   # [m/s] relative normal velocity, + apart
        if not np.any(jv < 0.0):
            return
        # velocity-level rows: compliance α/Δt (impulses in N·s), the joints' relative velocity held
        dv, _, _, _ = solve_joints_and_contacts(
            self._joint_rows_of(sim), jp, jc, np.zeros((sim.model.n_joints, 6)), sim.alpha_tilde * sim.dt,
            1.0 / sim._mass_diag_free, fa, fb, ga, gb, jv, np.full(fa.size, self.direct_compliance / sim.dt),
            np.zeros(fa.size), touch=0.0, rounds=self.direct_rounds, grow_rounds=self.direct_grow_rounds)
        sim.velocities[f] += dv[:, :3]
        sim.angular_velocities[f] += dv[:, 3:]

    def _joint_rows_of(self, sim) -> JointRows:
        """The sparse pattern of the Simulator's joint rows, built anew when its model changed
        (remove_joints: a fracture, a hand letting go). Reads the Simulator's joint sides, masses and
        evaluator (no public accessor yet)."""
        if self._joint_rows is None or self._joint_rows_model is not sim.model:
            self._joint_rows = JointRows(sim.free_index.size, sim._seg_a, sim._seg_b)
            self._joint_rows_model = sim.model
        return self._joint_rows

    def _project_direct(self, sim) -> None:
        """Joints, all contact normal rows and their friction rows in one sparse direct solve
        (:mod:`solver.contact_kkt`): a contact held by a stack of others is met in one solve, not one coil
        per sweep, and friction moves the whole rod, not one segment (no Gauss–Seidel pass that the next
        joint solve undoes)."""
        if self.n_contacts == 0 or sim.solver != "kkt" or sim.model.n_joints == 0:
            return
        joint_rows = self._joint_rows_of(sim)
        b = self._all
        rot_a, rot_b, za, zb, pa, pb = self._points(sim, b)
        n = self._normals(sim, b, za, zb, pa, pb)
        lam = self.normal_impulse
        at = max(self._alpha_tilde, self.direct_compliance / (sim.dt * sim.dt))
        alpha = np.where(b["env"], max(self._alpha_tilde, self.collider_compliance / (sim.dt * sim.dt)), at)
        c = np.einsum("ij,ij->i", n, pa - pb) - self.rest
        na_body, nb_body = np.einsum("kji,kj->ki", rot_a, n), np.einsum("kji,kj->ki", rot_b, n)
        fa, fb, ga, gb = self._free_gradients(sim, b, n, za, zb, na_body, nb_body)
        friction, basis = None, None
        if np.any(self.mu > 0.0):
            friction, basis = self._friction_rows(sim, b, rot_a, rot_b, za, zb, pa, pb, n, at)
        joint_rhs = sim._joint_values() + sim.alpha_tilde * sim.lam
        jp, jc, _, _ = sim._joint_eval.jacobians()
        # the step's first solve starts with every touching row active; later ones with the last active set
        touch = (self.direct_touch if self._first_solve else -self.direct_enter) * self.rest
        self._first_solve = False
        stats = {}
        dx, dl_joint, dl_c, dl_t = solve_joints_and_contacts(
            joint_rows, jp, jc, joint_rhs, sim.alpha_tilde, 1.0 / sim._mass_diag_free, fa, fb, ga, gb,
            c + alpha * lam, alpha, lam, touch=touch, friction=friction,
            enter_depth=self.direct_enter * self.rest, rounds=self.direct_rounds, stats=stats,
            grow_rounds=self.direct_grow_rounds)
        if self.direct_max_move is not None:
            # Damped Newton: a solve whose linearisation moves some segment's surface farther than
            # ``direct_max_move`` is scaled down to that (positions, λ and the contact impulses alike)
            reach = np.linalg.norm(dx[:, :3], axis=1) + (0.5 * self.model.lengths[sim.free_index] + self.radius[sim.free_index]) \
                * np.linalg.norm(dx[:, 3:], axis=1)
            far = float(reach.max(initial=0.0))
            if far > self.direct_max_move:
                scale = self.direct_max_move / far
                dx, dl_joint, dl_c, dl_t = dx * scale, dl_joint * scale, dl_c * scale, dl_t * scale
                self.damped_solves += 1
        self.solve_log.append((stats["rounds"], stats["converged"]))
        if stats["friction_checked"] is not None:
            self.friction_log.append(stats["friction_checked"])
        self.normal_impulse = np.maximum(lam + dl_c, 0.0)
        if friction is not None:
            # the last round's impulses, kept inside the box μ λ_n (rows that still violate it are clamped)
            bound = (self.mu * self.normal_impulse)[:, None]
            lt = np.clip(friction.lam + dl_t, -bound, bound)
            self.tangent_impulse = lt[:, 0, None] * basis[0] + lt[:, 1, None] * basis[1]
            self._sliding = friction.sliding
        sim.lam += dl_joint
        f = sim.free_index
        sim.positions[f] += dx[:, :3]
        sim.orientations[f] = quat.integrate_body(sim.orientations[f], dx[:, 3:])

    def _friction_rows(self, sim, b, rot_a, rot_b, za, zb, pa, pb, n, at):
        """Two tangential rows per contact for the direct solve: C_t, the relative displacement of the two
        material points since the start of the step along t₁ (the slip direction, so the box is the cone
        for a sliding contact) and t₂ = n × t₁. Returns the rows and the basis (t₁, t₂).

        Between two segments the material points are where the surfaces touch, r_a and r_b off the axes
        along ∓n: two coils turning together (a stack of coils tipping over) do not slip there, while
        their axis points do (ω × (r_a + r_b) n), so friction held at the axes locked a stack against
        tipping (a Slinky pushed at 6 rad/s stopped within one step). Against a collider the axis point
        is kept: at the surface point, the friction torque about the axis (μ λ_n r) made the active
        set of a rod sliding down a 60° slope cycle to the cap and the rod stop (it slid 7 % of the
        Coulomb distance in 0.4 s); the price is that a rod cannot roll on a collider without slipping."""
        env = b["env"]
        rad_a = np.where(env, 0.0, self.radius[b["sa"]])
        rad_b = np.where(env, 0.0, self.radius[b["sb"]])
        off_a = self._surface_offsets(za, -rad_a, np.einsum("kji,kj->ki", rot_a, n))   # body frames (k, 3)
        off_b = self._surface_offsets(zb, rad_b, np.einsum("kji,kj->ki", rot_b, n))
        start_a = b["x0_a"] + np.einsum("kij,kj->ki", b["r0_a"], off_a)
        start_b = np.where(env[:, None], self._anchors(b, pb), b["x0_b"] + np.einsum("kij,kj->ki", b["r0_b"], off_b))
        rel = (pa - rad_a[:, None] * n - start_a) - (pb + rad_b[:, None] * n - start_b)
        tang = rel - n * np.einsum("ij,ij->i", rel, n)[:, None]
        slip = np.sqrt(np.einsum("ij,ij->i", tang, tang))
        # no slip yet: any tangent (the axis least along n crossed with n)
        helper = np.eye(3)[np.argmin(np.abs(n), axis=1)]
        perp = np.cross(n, helper)
        perp /= np.linalg.norm(perp, axis=1)[:, None]
        moving = slip > 1e-12 * self.rest
        t1 = np.where(moving[:, None], tang / np.maximum(slip, 1e-300)[:, None], perp)
        t2 = np.cross(n, t1)
        ga, gb, c_t, lam_t = [], [], [], []
        for t in (t1, t2):
            ta_body, tb_body = np.einsum("kji,kj->ki", rot_a, t), np.einsum("kji,kj->ki", rot_b, t)
            ga.append(np.concatenate((t, np.cross(off_a, ta_body)), axis=1))      # ∂C_t/∂(x, δφ_body)
            gb.append(-np.concatenate((t, np.cross(off_b, tb_body)), axis=1))
            c_t.append(np.einsum("ij,ij->i", t, rel))
            lam_t.append(np.einsum("ij,ij->i", t, self.tangent_impulse))
        c_t, lam_t = np.stack(c_t, axis=1), np.stack(lam_t, axis=1)
        # a sliding row keeps sliding against its slip (t₁ turns with it; t₂ along the old impulse)
        sliding = np.where(self._sliding != 0, np.where(moving[:, None] & (np.arange(2) == 0), -1,
                                                        np.sign(lam_t)), 0).astype(np.int8)
        alpha = np.full(c_t.shape, max(at, self.friction_compliance / (sim.dt * sim.dt)))
        rows = FrictionRows(np.stack(ga, axis=1), np.stack(gb, axis=1), c_t + alpha * lam_t, alpha, lam_t,
                            self.mu, sliding)
        return rows, (t1, t2)
