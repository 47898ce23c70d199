"""The rows of one step (:class:`StepRows`), plain data: what ``Contacts.begin_step`` generates (segments, axis
coordinates, collider points, normals, rest distances, friction μ, how each row's points move) and the impulses
the step's solves accumulate on them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# How the two points of a contact are found in every sweep: both material points fixed for the step
# (a collider contact, two joint points), a fixed point of a against the closest point of b's axis, the
# closest points of both axes (crossing segments), or the closest points of a's axis and a collider's edge.
FIXED, SLIDE_B, SLIDE_BOTH, EDGE = 0, 1, 2, 3


@dataclass
class StepRows:
    """One step's contact rows (k of them). Each joins an axis point of segment ``sa`` at axis coordinate ``za``
    [m] to one of segment ``sb`` at ``zb`` (−1: a collider, whose surface point is ``point_b``), along ``normal``
    (from b to a) at rest distance ``rest`` [m] (C = n·(p_a − p_b) − R ≥ 0), with friction ``mu``. ``mode``: how its
    points are found again in every solve (:data:`FIXED`, :data:`SLIDE_B`, :data:`SLIDE_BOTH`, :data:`EDGE`).
    ``anchor_b``: a collider row's collider point at the step's start [m]; ``collider_of``: the collider's index
    (−1: an edge or a segment pair); ``fall``, ``landing``: the normal part of a collider row's and the motion of an
    edge or segment-pair row's points before they meet [m] (k, 3); ``ends1``/``ends0``/``faces`` (k, 2, 3): an edge
    row's edge at the step's end and start and its two faces' normals; ``fast`` (n,): segments the prediction moves
    by more than their radius.

    Set by ``Contacts.begin_step``: ``start`` the stage's start pose (x̂, q̂) friction holds the material points
    from, ``predicted`` the prediction (x, q), ``t1`` the step's end [s], where the colliders are placed.
    Accumulated by the solves: ``normal_impulse`` λ_n (k,) and ``tangent_impulse`` (k, 3) [N·s²], ``sliding``
    (k, 2) the friction rows' states (0 sticking, ±1 on the Coulomb bound), ``warm_normal`` (k,) the last step's λ_n
    at the same material point (the Newton methods' first friction bound), ``xpbd``: the schur method solved the
    step with XPBD's iteration."""

    sa: np.ndarray
    sb: np.ndarray
    za: np.ndarray
    zb: np.ndarray
    point_b: np.ndarray
    normal: np.ndarray
    anchor_b: np.ndarray
    rest: np.ndarray
    mu: np.ndarray
    mode: np.ndarray
    collider_of: np.ndarray
    fall: np.ndarray
    landing: np.ndarray
    ends1: np.ndarray
    ends0: np.ndarray
    faces: np.ndarray
    fast: np.ndarray
    start: tuple[np.ndarray, np.ndarray] = (np.zeros((0, 3)), np.zeros((0, 4)))
    predicted: tuple[np.ndarray, np.ndarray] = (np.zeros((0, 3)), np.zeros((0, 4)))
    t1: float = 0.0
    # sized by __post_init__
    normal_impulse: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tangent_impulse: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    warm_normal: np.ndarray = field(default_factory=lambda: np.zeros(0))
    sliding: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int8))
    xpbd: bool = False

    def __post_init__(self):
        k = self.sa.size
        self.normal_impulse = np.zeros(k)
        self.tangent_impulse = np.zeros((k, 3))
        self.warm_normal = np.zeros(k)
        self.sliding = np.zeros((k, 2), np.int8)

    @classmethod
    def empty(cls, n_segments: int) -> StepRows:
        """No rows (before the first step)."""
        z3, z23 = np.zeros((0, 3)), np.zeros((0, 2, 3))
        i0, f0 = np.zeros(0, np.int64), np.zeros(0)
        return cls(i0, i0, f0, f0, z3, z3, z3, f0, f0, i0, i0, z3, z3, z23, z23, z23, np.zeros(n_segments, bool))

    @property
    def n_contacts(self) -> int:
        return int(self.sa.size)

    @property
    def n_active(self) -> int:
        return int(np.count_nonzero(self.normal_impulse > 0.0))

    def keys(self) -> list[tuple]:
        """One key per row that a row of the next step at the same material point shares: the segments, the
        collider (−1: edge or self) and the axis coordinates (a joint point's row is at ±half the length)."""
        return list(
            zip(
                self.sa.tolist(),
                self.sb.tolist(),
                self.collider_of.tolist(),
                np.round(self.za, 9).tolist(),
                np.round(self.zb, 9).tolist(),
                strict=True,
            )
        )


def rows_times(fa, fb, ga, gb, x: np.ndarray) -> np.ndarray:
    """J x for contact rows: each row's gradients ``ga``/``gb`` (k, 6) against the free-segment vector
    ``x`` (n_free, 6) at its free indices ``fa``/``fb`` (−1: that side is a collider or pinned)."""
    out = np.zeros(fa.size)
    for g, fs in ((ga, fa), (gb, fb)):
        ok = fs >= 0
        out[ok] += np.einsum("ij,ij->i", g[ok], x[fs[ok]])
    return out
