"""Row geometry (:class:`RowGeometry`): where the two points of each contact row are in the current iterate, its
normal, and the generalised inverse masses and gradients every solver uses.

Segment–segment rows slide: the closest points of the two segments' pieces of the rods' smooth centrelines
(``self_contacts="pairs"``, :mod:`solver.contact.centreline`), of two crossing axes (``"capsules"``,
``"points"``), or a joint point against the closest point of the other axis, are found again in every solve; a
row at a joint point keeps its normal within the capsule chain's normal cone there. Collider rows keep their
material point and frozen normal, except edge rows, which slide along both the axis and the edge, and the
active-set direct solve's rows of fast segments, which follow the iterate (``RowGeometry._follow_collider``).
"""

from __future__ import annotations

import numpy as np

from ..core import quaternion as quat
from . import centreline
from .colliders import closest_point_parameter, closest_points_on_segments, wedge_normals
from .rows import EDGE, FIXED, SLIDE_B, SLIDE_BOTH, StepRows

# a step's collider rows follow the iterate once it is within this fraction of the radius of their rows at the
# step's start (``RowGeometry._follow_collider``)
FOLLOW_FROM = 0.1


class RowGeometry:
    """The rows' geometry for one model: ``radius`` (n,) [m], the free segments' inverse masses, the colliders and
    the topology (:class:`~solver.contact.topology.ContactTopology`); ``rows`` is the step's
    :class:`~solver.contact.rows.StepRows` (set by ``Contacts.begin_step``); ``joint_point_rows``: the rows are
    the Newton methods' (one per joint point against a collider; edge rows clear of the segment's ends).

    A *batch* (:meth:`batch`) is a dict of everything about a set of rows that stays fixed during the step."""

    def __init__(self, model, colliders, radius: np.ndarray, topology, joint_point_rows: bool):
        self.model = model
        self.colliders = colliders
        self.radius = radius
        self.topology = topology
        self.joint_point_rows = joint_point_rows
        free = ~model.pinned
        self.inv_mass = np.where(free, 1.0 / model.masses, 0.0)
        self.inv_inertia = np.where(free[:, None], 1.0 / model.inertia, 0.0)
        self.rows = StepRows.empty(model.n_segments)

    def batch(self, idx, share, direct=False, follow_colliders=False) -> dict:
        """Everything about the rows ``idx`` that stays fixed during the step (``share``: each row's share of its
        correction in a Gauss–Seidel colour). ``direct``: the direct solve's batch, where a row of two joint points
        slides along b's rod like a joint point against an axis, so two coils shearing past each other within a
        step stay apart (a row holding the two points leaves them overlapping, docs/notes/contacts.md), and joint
        point rows move over b's joints (``_follow_over_joints``). ``follow_colliders``: plain collider rows of fast
        segments follow the iterate (the active set, ``_follow_collider``)."""
        m, rows = self.model, self.rows
        x, q = rows.start
        sa, sb = rows.sa[idx], rows.sb[idx]
        env = sb < 0
        sbs = np.where(env, sa, sb)  # a collider contact's b side: a massless stand-in
        body_b = (~env).astype(float)
        mode = rows.mode[idx]
        edge = np.flatnonzero(mode == EDGE)
        b = dict(
            idx=idx,
            sa=sa,
            sb=sbs,
            env=env,
            all_env=bool(np.all(env)),
            share=share,
            slide_b=(mode == SLIDE_B) | (direct & (mode == FIXED) & ~env),
            slide_both=mode == SLIDE_BOTH,
            edge=edge,
            ends1=rows.ends1[idx[edge]],
            ends0=rows.ends0[idx[edge]],
            faces=rows.faces[idx[edge]],
            inv_m_a=self.inv_mass[sa],
            inv_i_a=self.inv_inertia[sa],
            inv_m_b=self.inv_mass[sbs] * body_b,
            inv_i_b=self.inv_inertia[sbs] * body_b[:, None],
            half_a=0.5 * m.lengths[sa],
            half_b=0.5 * m.lengths[sbs],
            x0_a=x[sa],
            r0_a=quat.to_matrix(q[sa]),
            x0_b=x[sbs] - rows.landing[idx],  # a segment pair's friction from where its points meet
            r0_b=quat.to_matrix(q[sbs]),
            anchor_b=rows.anchor_b[idx],
            landing=rows.landing[idx],
            over_joints=direct,
        )
        # The active-set direct solve's plain collider rows of segments that move more than their radius in the step
        # follow the iterate (``_follow_collider``); those inside a segment slide to its closest point. Slower ones keep
        # the step's start linearisation, which the draped rods of tests/solver/contact/test_collision.py are measured
        # with (following, a drape sank 0.14 r where it sank 0.30 r). Not on a segment with an edge row: near the edge
        # the collider's distance is the edge's, which that row follows already, and a plain row there with its own
        # normal fought it (the rope dropped on a box edge at Δt = 1/60 s: 6 kN on the two rows, 0.12 r).
        follow = env & (mode != EDGE) & (rows.collider_of[idx] >= 0)
        follow &= direct and follow_colliders
        follow &= ~np.isin(sa, sa[mode == EDGE]) & rows.fast[sa]
        z = rows.za[idx]
        b["follow"] = np.flatnonzero(follow)
        b["follow_slide"] = np.abs(np.abs(z[follow]) - b["half_a"][follow]) > 1e-9 * b["half_a"][follow]
        b["follow_on"] = False  # set by ``_follow_collider`` once the iterate meets the step's start rows
        # a follow row's collider point moves with the collider and the landing motion (``ContactDetector``)
        b["shift"] = rows.point_b[idx] - b["anchor_b"] + rows.fall[idx]
        for side, seg in (("a", sa), ("b", sbs[~env])):
            useg, inv = np.unique(seg, return_inverse=True)
            b["merge_" + side] = (useg, inv) if useg.size != seg.size else None
        return b

    def gaps(self, sim, batches) -> np.ndarray:
        """Current ``C`` [m] of the step's rows measured through ``batches`` (negative: penetration; 0 for a row in
        none)."""
        out = np.zeros(self.rows.n_contacts)
        for b in batches:
            _, _, za, zb, pa, pb = self.points(sim, b)
            out[b["idx"]] = (
                np.einsum("ij,ij->i", self.normals(sim, b, za, zb, pa, pb), pa - pb) - self.rows.rest[b["idx"]]
            )
        return out

    def collider_geometry(self, b, pa, n):
        """Gap C [m] and normal of every plain collider row (not an edge) at its axis point's current place: the
        collider's signed distance and its gradient, evaluated again at every Newton iteration, so a rod
        sliding round a curved collider meets the surface, not the tangent plane frozen at the step's start.
        Returns (rows, C, n) with n updated; rows: the rows re-evaluated."""
        which = self.rows.collider_of[b["idx"]]
        rows = np.flatnonzero(which >= 0)
        if rows.size == 0:
            return rows, np.zeros(0), n
        n = n.copy()
        c = np.zeros(rows.size)
        for i in np.unique(which[rows]):
            sel = which[rows] == i
            phi, nrm = self.colliders[i].distance(pa[rows[sel]], self.rows.t1)
            n[rows[sel]] = nrm
            c[sel] = phi - self.rows.rest[b["idx"][rows[sel]]]
        return rows, c, n

    def points(self, sim, b):
        """Rotations, axis coordinates z [m] and world points of both sides of a batch. Segment–segment
        contacts take the closest points of the two axes at the current pose (the crossing point
        slides along both segments as they move; in the direct batch a joint point's row may move over
        a joint of b's rod, ``_follow_over_joints``); collider contacts keep their material point, except
        edge rows: the closest points of a's axis and the edge."""
        idx, sa, sb, env = b["idx"], b["sa"], b["sb"], b["env"]
        rot_a, rot_b = quat.to_matrix(sim.orientations[sa]), quat.to_matrix(sim.orientations[sb])
        xa, xb = sim.positions[sa], sim.positions[sb]
        axis_a, axis_b = rot_a[:, :, 2], rot_b[:, :, 2]
        za, zb = self.rows.za[idx], self.rows.zb[idx]
        pa = xa + za[:, None] * axis_a
        if not b["all_env"]:
            ha, hb = b["half_a"][:, None] * axis_a, b["half_b"][:, None] * axis_b
            both, one = b["slide_both"], b["slide_b"]
            if both.any():
                s, t = closest_points_on_segments(xa - ha, xa + ha, xb - hb, xb + hb)
                za = np.where(both, (2.0 * s - 1.0) * b["half_a"], za)
                zb = np.where(both, (2.0 * t - 1.0) * b["half_b"], zb)
                pa = xa + za[:, None] * axis_a
                if self.topology.smooth:
                    za, zb, pa, smooth_b = self._centreline(sim, b, np.flatnonzero(both), za, zb, pa, (rot_a, rot_b))
            if one.any():
                t = closest_point_parameter(pa, xb - hb, xb + hb)
                follow = b["over_joints"]  # the direct solve's own batch
                if follow and self._follow_over_joints(sim, b, one, pa, xb + (2.0 * t - 1.0)[:, None] * hb, t):
                    return self.points(sim, b)
                zb = np.where(one, (2.0 * t - 1.0) * b["half_b"], zb)
        pb = np.where(env[:, None], self.rows.point_b[idx], xb + zb[:, None] * axis_b)
        if not b["all_env"] and b["slide_both"].any() and self.topology.smooth:
            pb[b["slide_both"]] = smooth_b
        if b["follow"].size:
            za, pa, pb = self._follow_collider(sim, b, za, pa, pb)
        e = b["edge"]
        if e.size:
            # edge rows: the closest points of a's axis and the edge, found again in every solve
            he, ends = b["half_a"][e, None] * axis_a[e], b["ends1"]
            s, t = closest_points_on_segments(xa[e] - he, xa[e] + he, ends[:, 0], ends[:, 1])
            za = za.copy()
            za[e] = (2.0 * s - 1.0) * b["half_a"][e]
            if self.joint_point_rows:
                # a radius clear of the segment's ends, whose joint-point rows meet the edge by the collider's signed
                # distance: an edge row beside a joint point's row is nearly the same row, and the Newton iterations
                # handed the load from one to the other and back (a rope over a box's ridge: a 2-cycle, every
                # step at the iteration cap)
                inner = np.maximum(b["half_a"][e] - self.radius[b["sa"][e]], 0.0)
                za[e] = np.clip(za[e], -inner, inner)
            pa[e] = xa[e] + za[e, None] * axis_a[e]
            if self.joint_point_rows:
                t = closest_point_parameter(pa[e], ends[:, 0], ends[:, 1])
            pb[e] = ends[:, 0] + t[:, None] * (ends[:, 1] - ends[:, 0])
        return rot_a, rot_b, za, zb, pa, pb

    def _centreline(self, sim, b, rows, za, zb, pa, rotations):
        """The crossing rows ``rows`` of a batch on the rods' smooth centrelines (:mod:`solver.contact.centreline`):
        the closest points of the two segments' pieces of the corner-cutting curves, from the axes' closest points
        za, zb, moved by the blended radii (``centreline.blend_radii``). Each row stays on its two segments at the
        curve points' axis coordinates; its friction holds the curve points as material points of those segments
        (``b["x0_a"]``, ``b["x0_b"]``: the start pose carries each curve point's offset from the axis in the
        segment's frame). Returns za, zb, pa (all rows) and the rows' pb (len(rows), 3)."""
        sa, sb = b["sa"][rows], b["sb"][rows]
        za, zb, pa = za.copy(), zb.copy(), pa.copy()
        x, q = sim.positions, sim.orientations
        pieces = centreline.pair_pieces(x, q, self.topology, self.model.lengths, sa, sb)
        za[rows], zb[rows], ca, cb, ra, rb = centreline.closest_points(*pieces, za[rows], zb[rows])
        x0, _ = self.rows.start
        for side, seg, z, p, rot in (("a", sa, za[rows], ca, rotations[0]), ("b", sb, zb[rows], cb, rotations[1])):
            r, r0 = rot[rows], b["r0_" + side][rows]
            w_body = np.einsum("kji,kj->ki", r, p - x[seg] - z[:, None] * r[:, :, 2])
            landing = b["landing"][rows] if side == "b" else 0.0
            b["x0_" + side][rows] = x0[seg] - landing + np.einsum("kij,kj->ki", r0, w_body)
        pa[rows], pb, _ = centreline.blend_radii(ca, cb, ra, rb, self.radius[sa], self.radius[sb])
        return za, zb, pa, pb

    def _follow_collider(self, sim, b, za, pa, pb):
        """Collider rows of the active-set direct batch (``b["follow"]``) at the current iterate: a row inside a
        segment moves to the segment's axis point closest to the collider, every row takes the collider's surface
        point and normal there (the normal kept in ``b["follow_n"]`` for :meth:`_normals`), so C = φ − r is the
        gap function itself, and the row's gradient (n at the current point, its axis coordinate held) is φ's: at
        an interior closest point the axis coordinate's own variation is zero to first order. Each direct solve is
        then a Newton step on the gap, not on a linearisation frozen at the step's start, whose tangent planes let
        a segment wrapping the collider within one step sink by its chord's sagitta between its rows.
        The rows keep the step's start geometry until the iterate meets them to within ``FOLLOW_FROM`` radii (the
        first iterate is the free-flight prediction, through the collider), and afterwards wherever an axis point is
        inside the collider or its normal turned more than 90° from the start's. Returns za, pa, pb."""
        rows, slide = b["follow"], b["follow_slide"]
        sa = b["sa"][rows]
        q, x = sim.orientations[sa], sim.positions[sa]
        axis = quat.rotate(q, np.tile([0.0, 0.0, 1.0], (rows.size, 1)))
        half = b["half_a"][rows]
        z = za[rows].copy()
        which = self.rows.collider_of[b["idx"][rows]]
        normal = np.zeros((rows.size, 3))
        phi = np.zeros(rows.size)
        for i in np.unique(which):
            col, sel = self.colliders[i], which == i
            move = sel & slide
            if move.any():
                h = half[move, None] * axis[move]
                s = col.closest_parameter(x[move] - h, x[move] + h, self.rows.t1)
                z[move] = (2.0 * s - 1.0) * half[move]
            phi[sel], normal[sel] = col.distance(x[sel] + z[sel, None] * axis[sel], self.rows.t1)
        n0 = self.rows.normal[b["idx"][rows]]
        if not b["follow_on"]:
            frozen = np.einsum("ij,ij->i", n0, x + za[rows, None] * axis - self.rows.point_b[b["idx"][rows]])
            frozen -= self.rows.rest[b["idx"][rows]]
            b["follow_on"] = bool(np.all(frozen >= -FOLLOW_FROM * self.rows.rest[b["idx"][rows]]))
        # an axis point inside the collider keeps the row found at the step's start (its point, plane and normal):
        # there the nearest surface may be the far side (a rope predicted through a cylinder)
        inside = (phi < 0.0) | (np.einsum("ij,ij->i", normal, n0) <= 0.0) | (not b["follow_on"])
        z[inside] = za[rows[inside]]
        normal[inside] = self.rows.normal[b["idx"][rows[inside]]]
        za, pa, pb = za.copy(), pa.copy(), pb.copy()
        za[rows] = z
        pa[rows] = x + z[:, None] * axis
        out = rows[~inside]
        pb[out] = pa[out] - phi[~inside, None] * normal[~inside]
        b["follow_n"] = normal
        return za, pa, pb

    def _follow_over_joints(self, sim, b, one, pa, pb, t) -> bool:
        """Move joint-point-against-axis rows (``one``) whose closest point is the joint at an end of b's
        axis onto the segment across that joint where that one is closer (the direct solve's batch only:
        it edits the rows' b side in ``b``, which a Gauss–Seidel colour's merge and colouring assume
        fixed). Returns whether any row moved.

        Rows are made once per step, each against the segment its joint point faced at the start, and
        slide along that axis only; a coil sliding along its neighbour carries the contact over the joint
        onto the next segment within a step, where no other row holds it (docs/notes/contacts.md)."""
        rows = np.flatnonzero(one & ((t >= 1.0) | (t <= 0.0)))
        if rows.size == 0:
            return False
        cur = b["sb"][rows]
        nxt = np.where(t[rows] >= 1.0, self.topology.succ[cur], self.topology.pred[cur])
        n = self.model.n_segments
        # each row's joint point (an id of the vertex table) and the two segments that own it
        sa, za = b["sa"], self.rows.za[b["idx"]]
        vertex = np.where(one, np.where(za < 0.0, self.topology.vid_lo[sa], self.topology.vid_hi[sa]), -1)
        own, other = sa[rows], self.topology.v_other[vertex[rows]]
        safe = np.maximum(nxt, 0)
        ok = (nxt >= 0) & (nxt != own) & (nxt != other)
        ok &= ~np.isin(np.minimum(own, safe) * n + np.maximum(own, safe), self.topology.excluded)
        ok &= ~np.isin(np.minimum(other, safe) * n + np.maximum(other, safe), self.topology.excluded)
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
        closer = (
            np.linalg.norm(pa[rows] - pn, axis=1)
            < np.linalg.norm(pa[rows] - pb[rows], axis=1) - 0.01 * self.rows.rest[b["idx"][rows]]
        )
        held = np.isin(vertex[rows] * n + nxt, vertex[one] * n + b["sb"][one])
        closer &= ~held
        rows, nxt = rows[closer], nxt[closer]
        if rows.size == 0:
            return False
        x0, q0 = self.rows.start
        b["sb"][rows] = nxt
        b["x0_b"][rows], b["r0_b"][rows] = x0[nxt] - b["landing"][rows], quat.to_matrix(q0[nxt])
        b["half_b"][rows] = 0.5 * self.model.lengths[nxt]
        b["inv_m_b"][rows], b["inv_i_b"][rows] = self.inv_mass[nxt], self.inv_inertia[nxt]
        return True

    @staticmethod
    def anchors(b, pb):
        """Where each collider contact's collider point was at the start of the step [m] (k, 3); an edge
        row's slides along the edge with pb (less its landing motion, ``_edge_landing``), and a row that follows
        the iterate (``_follow_collider``) keeps its collider point's motion over the step (``b["shift"]``) with
        its current surface point."""
        e, f = b["edge"], b["follow"]
        if e.size == 0 and f.size == 0:
            return b["anchor_b"]
        out = b["anchor_b"].copy()
        if e.size:
            ends1, ends0 = b["ends1"], b["ends0"]
            t = closest_point_parameter(pb[e], ends1[:, 0], ends1[:, 1])
            out[e] = ends0[:, 0] + t[:, None] * (ends0[:, 1] - ends0[:, 0]) - b["landing"][e]
        out[f] = pb[f] - b["shift"][f]
        return out

    def normals(self, sim, b, za, zb, pa, pb):
        """Contact normals: the frozen one for colliders; between segments the current direction of the
        closest points unless it has flipped against the frozen one (the axes passed each other), kept
        within the normal cone of each side's joint point (``_vertex_cone``)."""
        n = self.rows.normal[b["idx"]]
        if b["follow"].size:
            n = n.copy()
            n[b["follow"]] = b["follow_n"]
        if b["all_env"] and b["edge"].size == 0:
            return n
        d = pa - pb
        dist = np.sqrt(np.einsum("ij,ij->i", d, d))
        cur = d / np.maximum(dist, 1e-300)[:, None]
        use = ~b["env"] & (np.einsum("ij,ij->i", cur, n) > 0.0) & (dist > 1e-9 * self.rows.rest[b["idx"]])
        n = np.where(use[:, None], cur, n)
        if not b["all_env"]:
            body = ~b["env"] & ~b["slide_both"]  # rows at joint points
            n = self.vertex_cone(sim, b["sa"], za, b["half_a"], n, body)
            n = -self.vertex_cone(sim, b["sb"], zb, b["half_b"], -n, body)
        e = b["edge"]
        if e.size:
            # the wedge's normal where the rod is clear of it; where it overlaps (the prediction of a
            # step drops a rod resting on an edge by gΔt² ≈ r) the direction from the edge is noise (the
            # front face's normal would push a rod sliding over the edge forward), so the normal found at
            # the start of the step, where the rod does not overlap: its plane touches the wedge grown by
            # r, so meeting it clears the wedge too
            wedge, depth = wedge_normals(d[e], b["faces"][:, 0], b["faces"][:, 1], with_distance=True)
            n[e] = np.where((depth >= self.rows.rest[b["idx"][e]])[:, None], wedge, n[e])
        return n

    def vertex_cone(self, sim, seg, z, half, n, rows):
        """Normals n (k, 3) pushing on ``seg`` at axis coordinate z, kept within the normal cone of the
        capsule chain where z is a joint point (an end of the segment; ``rows`` masks the rows to treat).

        Of the sphere about a joint point, only the outward normals o with o·t_in ≥ 0 and o·t_out ≤ 0 lie
        on the chain's surface (t_in: the segment's axis toward the joint, t_out: the next segment's axis
        away from it; a free end has no t_out, so its whole cap is surface), and a normal pushing on the
        segment is n = −o: a straight rod has n ⟂ t there. A normal tilted beyond that
        cone (a joint point just past the point where another rod crosses this one) would push the rod
        along its own axis like a ball on top of a cylinder, an unstable equilibrium: a rod resting
        across two others would slide off along its axis from rest, without friction, its speed growing
        by about a third every 10 ms step (tests/solver/contact/test_collision.py; a ball of radius r on a cylinder of
        radius r: e^(Δt √(g/2r)) = 1.37 per step for r = 5 mm). Projected onto the cone (one half space,
        then the other), such a row pushes as the capsules' common normal does."""
        at_end = rows & (np.abs(np.abs(z) - half) <= 1e-9 * half)
        i = np.flatnonzero(at_end)
        if i.size == 0:
            return n
        t_in, t_out, has = self.topology.joint_axes(sim.orientations, seg[i], z[i])
        m = n[i].copy()
        # n pushes seg away from the other body, which lies along the outward normal o = −n
        m -= np.maximum(np.einsum("ij,ij->i", m, t_in), 0.0)[:, None] * t_in
        m -= (has * np.minimum(np.einsum("ij,ij->i", m, t_out), 0.0))[:, None] * t_out
        norm = np.linalg.norm(m, axis=1)
        ok = norm > 1e-6
        n = n.copy()
        n[i[ok]] = m[ok] / norm[ok, None]
        return n

    @staticmethod
    def inverse_mass(inv_m, inv_i, z, d_body):
        """Generalised inverse mass ``w = 1/m + (r×d)ᵀ I⁻¹ (r×d)`` of the axis point r = z·e₃ (body frame)
        along d: ``r×d = z (−d_y, d_x, 0)`` in the body frame."""
        return inv_m + z * z * (inv_i[:, 0] * d_body[:, 1] ** 2 + inv_i[:, 1] * d_body[:, 0] ** 2)

    @staticmethod
    def apply(sim, seg, rot, inv_m, inv_i, z, impulse, merge):
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

    @staticmethod
    def surface_offsets(z, signed_radius, n_body):
        """Body-frame offsets [m] of surface points: the axis point z e₃ plus ``signed_radius`` along the
        normal n (given in the body frame)."""
        off = signed_radius[:, None] * n_body
        off[:, 2] += z
        return off

    def free_gradients(self, sim, b, n, za, zb, na_body, nb_body):
        """Free index of each side (−1: pinned or a collider) and the generalised gradient (k, 6) of a unit
        normal row on it: ∂C/∂(x, δφ_body) = (±n, ±z e₃ × Rᵀn)."""
        free_of = np.full(self.model.n_segments, -1)
        free_of[sim.free_index] = np.arange(sim.free_index.size)
        fa, fb = free_of[b["sa"]], np.where(b["env"], -1, free_of[b["sb"]])
        ga = np.concatenate((n, za[:, None] * np.stack((-na_body[:, 1], na_body[:, 0], 0 * za), 1)), axis=1)
        gb = -np.concatenate((n, zb[:, None] * np.stack((-nb_body[:, 1], nb_body[:, 0], 0 * zb), 1)), axis=1)
        return fa, fb, ga, gb

    def lateral_curvature(self, sim, b, geometry, lam):
        """The rod–rod rows' curvature: a row's normal turns with its points' lateral offset, so its force λ n has a
        second derivative λ ∂²C/∂p² on the points' relative motion d = p_a − p_b. A row measures the gap to the other
        wire, whose curvature along itself is the wire's, not that of the sphere about a joint point: C = |d − (d·t)
        t| − r_a − r_b against the line along b's tangent t (b's axis, or at its joint point the mean of its two
        segments' axes), with ∂²C/∂d² = (I − n nᵀ − t tᵀ)/(n·d), the one direction e = n × t. (The sphere's own
        curvature (I − n nᵀ)/|d| along the wire holds only within the joint's normal cone, ``_vertex_cone``, a
        sliver for a point resting on a nearly straight chain: coils stacked on coils switched in and out of it
        between iterations.) Two crossing axes (``slide_both``) have none in the translations. In the momentum
        balance it is a negative stiffness −λ/(n·d) along e: two stacked wires are a ball on a ball.

        Returns the free indices (−1: pinned) and generalised gradients (m, 6) of the unit rows e·(δp_a − δp_b),
        ∂/∂(x, δφ_body) as :meth:`_free_gradients`, and their weights κ = λ/(n·d) [N·s²/m = kg], for the rows with
        λ > 0."""
        rot_a, rot_b, za, zb, pa, pb, n = geometry
        rod = ~b["env"] & ~b["slide_both"]  # (edge rows are collider rows)
        along = np.einsum("ij,ij->i", pa - pb, n)  # the distance between the axes along the normal [m]
        rows = np.flatnonzero(rod & (lam > 0.0) & (along > 0.0))
        tangent = rot_b[rows, :, 2].copy()
        end = np.abs(np.abs(zb[rows]) - b["half_b"][rows]) <= 1e-9 * b["half_b"][rows]
        if end.any():
            t_in, t_out, has = self.topology.joint_axes(sim.orientations, b["sb"][rows[end]], zb[rows[end]])
            mean = t_in + has[:, None] * t_out
            tangent[end] = mean / np.linalg.norm(mean, axis=1)[:, None]  # the chain's direction through the joint
        e = np.cross(n[rows], tangent)
        length = np.linalg.norm(e, axis=1)
        ok = length > 1e-6  # a normal along the wire (an end cap): no direction across both
        rows, e = rows[ok], e[ok] / length[ok, None]
        sub = {key: b[key][rows] for key in ("sa", "sb", "env")}
        ea_body, eb_body = np.einsum("kji,kj->ki", rot_a[rows], e), np.einsum("kji,kj->ki", rot_b[rows], e)
        fa, fb, ga, gb = self.free_gradients(sim, sub, e, za[rows], zb[rows], ea_body, eb_body)
        return fa, fb, ga, gb, lam[rows] / along[rows]
