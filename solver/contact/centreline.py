"""The rods' smooth centrelines for rod–rod contact: the C¹ corner-cutting curve of each chain of segments and the
closest points of two such curves, vectorised over segment pairs.

Over the joint between segments i and i+1 (half lengths h_i, h_{i+1}, axes t_i, t_{i+1}) the curve is the
quadratic Bézier from a = x_i + (h_i − c) t_i through the joint point J to b = x_{i+1} − (h_{i+1} − c) t_{i+1},
c = min(h_i, h_{i+1}) (the joint point J: the mean of the two segments' end points, which the joint holds
together): it leaves each segment tangent to its axis, is the axis itself on a straight rod (at unit speed),
and cuts the joint's corner by u² c (t_{i+1} − t_i) at most, c θ / 4 for a joint bent by θ (Farin, *Curves and
Surfaces for CAGD*, §3 and §8: the quadratic B-spline of the polygon through the segments' middles when all
lengths are equal). Between the two corner zones of a segment (where its neighbours are shorter) the curve is the
segment's axis. A segment's own piece of the curve is parametrised by its axis coordinate z ∈ [−h, h]: the half
of each corner Bézier on its side of the joint (u ∈ [0, ½]), so the pieces of a chain meet at u = ½, C¹. A
segment without a self-colliding neighbour across an end keeps its straight axis up to that end (a capsule's cap).
Where a joint is open (a Newton iterate, the free-flight prediction), each piece's middle control point moves from
its own segment's end E (u = 0) to the joint point J (u = ½) as E + 2u (J − E): each piece still leaves its segment
along the segment's axis and the pieces still meet at u = ½. (With J itself, the prediction's open joint turned
the curve's tangent at the loaded segment's middle by 2° in the crossing benchmark, and the schur method's steps
took 3 iterations instead of 2.)

The radius is blended across the joint as the Bézier blends the points: r(u) = (1 − u) r_i + u r_{i+1}.

Rows stay attached to one segment each (``RowGeometry.points``): the curve point of a segment's piece depends on
its neighbour's pose too, but the joint carries any load between them, so the solvers keep their one-segment
gradients at the curve point's axis coordinate (docs/notes/contacts.md, "Smooth rod–rod contact").
"""

from __future__ import annotations

import numpy as np

from ..core import quaternion as quat

# the most projected Newton iterations of ``closest_points`` (it stops where no coordinate moves): 2 meet a dense
# sampling of the curves within 1e-9 m on rods bent by 8° and 10° per joint, from the segments' middles
# (tests/solver/contact/test_smooth_centreline.py)
NEWTON_ITERATIONS = 6


def _axes(orientations, seg):
    ez = np.zeros((seg.size, 3))
    ez[:, 2] = 1.0
    return quat.rotate(orientations[seg], ez)


class Pieces:
    """The smooth pieces of segments ``seg`` (k,) at the pose (positions, orientations): each segment's centre x,
    axis t, half length h [m] and radius r [m], and per end (``hi``: +z, ``lo``: −z) the corner zone's half
    length c [m] (0: no self-colliding neighbour there), the Bézier's control points a, E (the segment's end), b
    (k, 3), the slack δ = J − E to the joint point and the neighbour's radius. ``succ``/``pred`` (n,): the
    self-colliding segment across each segment's +z / −z end (−1: none), ``lengths`` (n,) [m], ``radius`` (n,) [m]."""

    def __init__(self, positions, orientations, lengths, radius, succ, pred, seg):
        self.x, self.t = positions[seg], _axes(orientations, seg)
        self.h, self.r = 0.5 * lengths[seg], radius[seg]
        self.ends = []
        for sign, nxt in ((1.0, succ[seg]), (-1.0, pred[seg])):
            has = nxt >= 0
            o = np.maximum(nxt, 0)
            xn, tn, hn = positions[o], _axes(orientations, o), 0.5 * lengths[o]
            c = np.where(has, np.minimum(self.h, hn), 0.0)
            end = self.x + sign * self.h[:, None] * self.t
            slack = 0.5 * (xn - sign * hn[:, None] * tn - end)  # to the joint point: half the joint's violation
            a = self.x + sign * (self.h - c)[:, None] * self.t
            b = xn - sign * (hn - c)[:, None] * tn
            self.ends.append((sign, c, a, end, slack, b, np.where(has, radius[o], self.r)))

    def evaluate(self, z):
        """Curve point P(z) [m], dP/dz, d²P/dz² [1/m] (k, 3) and the blended radius r(z) [m] (k,) at axis
        coordinates z (k,) [m] of the pieces."""
        p = self.x + z[:, None] * self.t
        dp = self.t.copy()
        ddp = np.zeros_like(p)
        r = self.r.copy()
        for sign, c, a, end, slack, b, r_next in self.ends:
            zone = (c > 0.0) & (sign * z > self.h - c)
            if not zone.any():
                continue
            i = np.flatnonzero(zone)
            ci = c[i]
            u = (sign * z[i] - (self.h[i] - ci)) / (2.0 * ci)
            ai, ei, si, bi = a[i], end[i], slack[i], b[i]
            # the middle control point moves from the segment's end (u = 0: the segment's own tangent, whatever the
            # joint's violation) to the joint point (u = ½, shared with the next piece): E + 2u δ
            p[i] = ((1 - u) ** 2)[:, None] * ai + (2 * u * (1 - u))[:, None] * ei + (u * u)[:, None] * bi
            p[i] += (4 * u * u * (1 - u))[:, None] * si
            du = sign / (2.0 * ci)  # du/dz
            dp[i] = du[:, None] * (
                (2 * (1 - u))[:, None] * (ei - ai) + (2 * u)[:, None] * (bi - ei) + (8 * u - 12 * u * u)[:, None] * si
            )
            ddp[i] = (du * du)[:, None] * (2.0 * (ai - 2.0 * ei + bi) + (8.0 - 24.0 * u)[:, None] * si)
            r[i] = (1 - u) * self.r[i] + u * r_next[i]
        return p, dp, ddp, r


def _newton(pa, pb, za, zb, ha, hb):
    """One projected Newton step on f(z_a, z_b) = ½ |P_a − P_b|² (Gauss–Newton where the Hessian is not positive):
    the 2-D step, and where it leaves the box on one coordinate, that coordinate clamped and the other's minimiser
    of the quadratic model with it (Bertsekas, *Nonlinear Programming*, §2.3: the reduced step on the box's face;
    near-parallel pieces take the model's coordinate steps, a then b). Returns the new (z_a, z_b)."""
    (p1, d1, dd1, _), (p2, d2, dd2, _) = pa, pb
    d = p1 - p2
    g1, g2 = np.einsum("ij,ij->i", d, d1), -np.einsum("ij,ij->i", d, d2)
    a11, a22 = np.einsum("ij,ij->i", d1, d1), np.einsum("ij,ij->i", d2, d2)
    h11 = a11 + np.einsum("ij,ij->i", d, dd1)
    h22 = a22 - np.einsum("ij,ij->i", d, dd2)
    h12 = -np.einsum("ij,ij->i", d1, d2)
    h11, h22 = np.where(h11 > 0.0, h11, a11), np.where(h22 > 0.0, h22, a22)
    det = h11 * h22 - h12 * h12
    ok = det > 1e-9 * h11 * h22  # not parallel
    safe = np.where(ok, det, 1.0)
    step_a = np.where(ok, -(h22 * g1 - h12 * g2) / safe, -g1 / h11)
    new_a = np.clip(za + step_a, -ha, ha)
    step_b = np.where(ok & (new_a == za + step_a), -(h11 * g2 - h12 * g1) / safe, -(g2 + h12 * (new_a - za)) / h22)
    new_b = np.clip(zb + step_b, -hb, hb)
    # b on its bound: a's minimiser on that face (unless a is on its own bound too)
    face = (new_b != zb + step_b) & (new_a == za + step_a)
    new_a = np.where(face, np.clip(za - (g1 + h12 * (new_b - zb)) / h11, -ha, ha), new_a)
    return new_a, new_b


def closest_points(a: Pieces, b: Pieces, za, zb, iterations: int = NEWTON_ITERATIONS):
    """Closest points of the pieces a and b (row-wise), from the axis coordinates za, zb [m] (e.g. the segments'
    axes' closest points): projected Newton on ½ |P_a(z_a) − P_b(z_b)|² (:func:`_newton`), until no coordinate moves
    by more than 1e-9 of its half length or after ``iterations``. Returns za, zb [m], the points P_a, P_b [m] (k, 3)
    and the blended radii r_a, r_b [m] there."""
    pa, pb = a.evaluate(za), b.evaluate(zb)
    for _ in range(iterations):
        za_new, zb_new = _newton(pa, pb, za, zb, a.h, b.h)
        moved = max(np.max(np.abs(za_new - za) / a.h, initial=0.0), np.max(np.abs(zb_new - zb) / b.h, initial=0.0))
        za, zb = za_new, zb_new
        pa, pb = a.evaluate(za), b.evaluate(zb)
        if moved <= 1e-9:
            break
    return za, zb, pa[0], pb[0], pa[3], pb[3]


def pair_pieces(positions, orientations, topology, lengths, sa, sb) -> tuple[Pieces, Pieces]:
    """The smooth pieces of segments sa and sb (k,) at the pose (``topology``: a
    :class:`~solver.contact.topology.ContactTopology`, its ``succ``/``pred`` and radii)."""
    args = (positions, orientations, lengths, topology.radius, topology.succ, topology.pred)
    return Pieces(*args, sa), Pieces(*args, sb)


def pair_closest_points(positions, orientations, topology, lengths, sa, sb, za, zb):
    """Closest points of the smooth pieces of segments sa and sb (k,) at the pose (:func:`pair_pieces`), from axis
    coordinates za, zb [m]. Returns as :func:`closest_points`."""
    return closest_points(*pair_pieces(positions, orientations, topology, lengths, sa, sb), za, zb)


def blend_radii(pa, pb, ra, rb, rest_a, rest_b):
    """The closest points pa, pb (k, 3) [m] moved towards each other by the blended radii's excess over the rows'
    own (``rest_a``, ``rest_b``: the two segments' radii [m], whose sum is the row's rest distance), so that
    n·(pa − pb) − rest is the gap between the blended tubes; and the unit direction n from pb to pa (0 where the
    centrelines meet)."""
    d = pa - pb
    dist = np.sqrt(np.einsum("ij,ij->i", d, d))
    n = d / np.maximum(dist, 1e-300)[:, None]
    n[dist <= 0.0] = 0.0
    return pa - (ra - rest_a)[:, None] * n, pb + (rb - rest_b)[:, None] * n, n


def pair_offsets(positions, orientations, topology, lengths, pairs):
    """For ``pairs`` = (sa, sb, za, zb) as :func:`pair_closest_points`: the closest points' axis coordinates za, zb
    [m] and d = p_a − p_b (k, 3) [m] between the blended tubes' centres (|d| − r_a − r_b: their gap)."""
    sa, sb, za, zb = pairs
    za, zb, pa, pb, ra, rb = pair_closest_points(positions, orientations, topology, lengths, sa, sb, za, zb)
    pa, pb, _ = blend_radii(pa, pb, ra, rb, topology.radius[sa], topology.radius[sb])
    return za, zb, pa - pb
