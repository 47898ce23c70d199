"""Direct solver for the KKT system of Deul Eq. 22 when the joints form chains (rods, ropes, cables).

If every free segment has at most two joints, eliminating all segments first (their pivots are the
diagonal mass matrices) leaves the joint-space Schur complement ``S = J M⁻¹ Jᵀ + α̃``, symmetric
positive definite and, with the joints numbered along each chain, block tridiagonal with 6×6
blocks: a band matrix of half-bandwidth 11. One LAPACK banded Cholesky (``dpbtrf``) and one
banded solve (``dpbtrs``) then do all the sequential work in compiled code, so a Newton iteration
costs a fixed ~20 numpy calls plus O(n) arithmetic, which matters for short rods where per-call
overhead dominates. Cholesky on the SPD complement is backward stable in any order (this is the
"segments fold into their joints, joints among joints" part of :mod:`solver.core.kkt_tree`).

    Δλ = −S⁻¹ (r_joint + J M⁻¹ r_seg),   Δx = M⁻¹ (r_seg + Jᵀ Δλ)
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack
from scipy.sparse import csr_matrix

BAND = 11  # half-bandwidth of a block-tridiagonal matrix of 6×6 blocks


def chain_order(n_free: int, seg_a: np.ndarray, seg_b: np.ndarray):
    """Joints numbered along chains, or ``None`` if some free segment has more than two joints.

    Returns ``(order, link)``: ``order`` (m,) joint indices in band order; ``link`` (m − 1,) bool, True
    where joints ``order[i]`` and ``order[i + 1]`` share a free segment (else they belong to different
    chains and their block of S is zero).
    """
    m = seg_a.shape[0]
    sides = np.concatenate((seg_a, seg_b))
    joint_of = np.concatenate((np.arange(m), np.arange(m)))
    free = sides >= 0
    count = np.bincount(sides[free], minlength=n_free) if n_free else np.zeros(0, np.int64)
    if count.size and count.max() > 2:
        return None
    # the other joint at each side's segment (−1 if none): the two joints of a segment point at each other
    by_seg = np.argsort(np.where(free, sides, -1), kind="stable")
    s_sorted = sides[by_seg]
    other = np.full(2 * m, -1, np.int64)
    pair = (s_sorted[1:] == s_sorted[:-1]) & (s_sorted[1:] >= 0)
    i = np.flatnonzero(pair)
    other[by_seg[i]] = joint_of[by_seg[i + 1]]
    other[by_seg[i + 1]] = joint_of[by_seg[i]]
    nbr = other.reshape(2, m).T.tolist()  # ≤ 2 neighbouring joints per joint
    degree = [(a >= 0) + (b >= 0) for a, b in nbr]
    seen = [False] * m
    order: list[int] = []
    link: list[bool] = []
    for start in [j for j in range(m) if degree[j] < 2]:  # walk each path from one end
        if seen[start]:
            continue
        prev, j = -1, start
        if order:
            link.append(False)
        while j >= 0 and not seen[j]:
            seen[j] = True
            order.append(j)
            nxt = [a for a in nbr[j] if a >= 0 and a != prev and not seen[a]]
            prev, j = j, (nxt[0] if nxt else -1)
            if j >= 0:
                link.append(True)
    if len(order) < m:  # a ring of joints (cannot happen for a forest of free segments)
        return None
    return np.asarray(order, dtype=np.int64), np.asarray(link, dtype=bool)


class ChainKKT:
    """Banded joint-space solver with the :class:`~solver.core.kkt_tree.TreeKKT` interface, for chains.

    ``seg_a`` and ``seg_b`` (m,) give, per joint, the free-segment index (0…n_free−1) of its two
    sides, or −1 where that side is pinned. Raises ``ValueError`` if a free segment has more than
    two joints (use :class:`~solver.core.kkt_tree.TreeKKT`).
    """

    def __init__(self, n_free: int, seg_a: np.ndarray, seg_b: np.ndarray):
        seg_a = np.asarray(seg_a, dtype=np.int64)
        seg_b = np.asarray(seg_b, dtype=np.int64)
        found = chain_order(n_free, seg_a, seg_b)
        if found is None:
            raise ValueError("ChainKKT needs every free segment to have at most two joints")
        order, link = found
        self.n_free = int(n_free)
        self.n_joints = m = int(seg_a.shape[0])
        self.n_rounds = 1
        self._order = order
        self._seg_a = np.where(seg_a >= 0, seg_a, n_free)[order]  # pinned → the zero row n_free
        self._seg_b = np.where(seg_b >= 0, seg_b, n_free)[order]
        # coupling block S[i+1, i] = J_{i+1,s} M_s⁻¹ J_{i,s}ᵀ of consecutive joints through their shared segment s,
        # grouped by which side (a: 0, b: 1) s is of each (a plain chain has one group: b of i, a of i+1)
        lo = np.flatnonzero(link)
        sa, sb = self._seg_a, self._seg_b
        side_lo = np.where((sa[lo] == sa[lo + 1]) | (sa[lo] == sb[lo + 1]), 0, 1)
        side_hi = np.where((sa[lo + 1] == sa[lo]) | (sa[lo + 1] == sb[lo]), 0, 1)
        self._links = []
        for s_hi in (0, 1):
            for s_lo in (0, 1):
                sel = lo[(side_hi == s_hi) & (side_lo == s_lo)]
                if sel.size:
                    if np.all(np.diff(sel) == 1):  # slices: no fancy-index copies
                        self._links.append((s_hi, s_lo, slice(sel[0], sel[-1] + 1), slice(sel[0] + 1, sel[-1] + 2)))
                    else:
                        self._links.append((s_hi, s_lo, sel, sel + 1))
        self._identity = bool(np.array_equal(order, np.arange(m)))
        # band storage (lower): ab[d, col] = S[col + d, col]; blocks flattened as [diagonal | sub-diagonal | 0]
        n = 6 * m
        col = np.arange(n)
        d = np.arange(BAND + 1)[:, None]
        blk, c = col // 6, col % 6
        row = c + d
        zero = 72 * m
        in_diag = row < 6
        has_sub = np.zeros(m, bool)
        has_sub[lo] = True
        in_sub = ~in_diag & (row < 12) & has_sub[blk]
        idx = np.full((BAND + 1, n), zero, np.int64)
        idx[in_diag] = np.broadcast_to(36 * blk + 6 * row + c, idx.shape)[in_diag]
        idx[in_sub] = np.broadcast_to(36 * m + 36 * blk + 6 * (row - 6) + c, idx.shape)[in_sub]
        self._band_index = np.ascontiguousarray(idx.T)  # gathered as (n, 12), used transposed (F order)
        self._buf = np.zeros(72 * m + 1)
        # Jᵀ Δλ summed per segment: a sparse (n_free × 2m) incidence of the stacked sides
        sides = np.concatenate((self._seg_a, self._seg_b))
        keep = sides < n_free
        self._gather = csr_matrix(
            (np.ones(int(keep.sum())), (sides[keep], np.flatnonzero(keep))), shape=(n_free, 2 * m)
        )
        self._minv = np.zeros((n_free + 1, 6))
        self._chol = None
        self.factored = False

    def factor(
        self,
        seg_mass_diag: np.ndarray,
        joint_compliance: np.ndarray,
        jac_a: np.ndarray,
        jac_b: np.ndarray,
        jac_a_t: np.ndarray | None = None,
        jac_b_t: np.ndarray | None = None,
    ) -> None:
        """Form ``S = J M⁻¹ Jᵀ + α̃`` in band storage and factor it (same arguments as ``TreeKKT.factor``)."""
        m, o = self.n_joints, self._order
        np.divide(1.0, seg_mass_diag, out=self._minv[: self.n_free])
        if jac_a_t is None:
            jac_a_t = np.ascontiguousarray(np.swapaxes(jac_a, 1, 2))
        if jac_b_t is None:
            jac_b_t = np.ascontiguousarray(np.swapaxes(jac_b, 1, 2))
        jac = (jac_a, jac_b, jac_a_t, jac_b_t)
        if not self._identity:
            jac = tuple(j[o] for j in jac)
            joint_compliance = joint_compliance[o]
        self._jac = jac
        w = (jac[0] * self._minv[self._seg_a][:, None, :], jac[1] * self._minv[self._seg_b][:, None, :])
        self._w = w
        diag = self._buf[: 36 * m].reshape(m, 6, 6)
        np.matmul(w[0], jac[2], out=diag)
        diag += w[1] @ jac[3]
        diag.reshape(m, 36)[:, ::7] += joint_compliance
        sub = self._buf[36 * m : 72 * m].reshape(m, 6, 6)
        for s_hi, s_lo, rows, hi in self._links:
            sub[rows] = w[s_hi][hi] @ jac[2 + s_lo][rows]
        ab = self._buf[self._band_index].T
        chol, info = lapack.dpbtrf(ab, lower=1, overwrite_ab=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"joint-space matrix not positive definite (dpbtrf info {info})")
        self._chol = chol
        self.factored = True

    def solve(self, rhs_seg: np.ndarray | None, rhs_joint: np.ndarray):
        """Solve ``H z = r``; returns (segment part (n_free, 6), joint part (m, 6)), as ``TreeKKT.solve``."""
        if not self.factored:
            raise RuntimeError("ChainKKT.solve called before factor")
        m, o = self.n_joints, self._order
        ja, jb, jat, jbt = self._jac
        b = -rhs_joint if self._identity else -rhs_joint[o]
        if rhs_seg is not None:
            r = np.zeros((self.n_free + 1, 6))
            r[: self.n_free] = rhs_seg
            b -= np.einsum("kij,kj->ki", self._w[0], r[self._seg_a])
            b -= np.einsum("kij,kj->ki", self._w[1], r[self._seg_b])
        lam, info = lapack.dpbtrs(self._chol, b.reshape(-1), lower=1)
        lam = lam.reshape(m, 6)
        jt_lam = np.concatenate((np.einsum("kij,kj->ki", jat, lam), np.einsum("kij,kj->ki", jbt, lam)))
        dx = self._gather @ jt_lam
        if rhs_seg is not None:
            dx += rhs_seg
        dx *= self._minv[: self.n_free]
        if self._identity:
            return dx, lam
        out = np.empty((m, 6))
        out[o] = lam
        return dx, out
