"""Linear-time direct solver for the KKT system of Deul Eq. 22 on a forest.

The matrix ``H = [[M, −Jᵀ], [−J, −α̃]]`` has one node per free segment (6 DOF) and one per joint
(6 rows); its graph (segment — joint — segment …) is a forest, so a block LDLᵀ factorisation in a
suitable elimination order has no fill-in beyond O(n) (Baraff 1996, with the compliance block).

The order is found once per topology by *tree contraction*: each round eliminates, all at once,
every leaf ("rake") and an independent set of degree-2 nodes ("compress"). Raking a leaf only
updates its neighbour's diagonal block; compressing a node joins its two neighbours by one new
edge, so the graph stays a forest and the fill is at most one block per eliminated node. A chain
of n segments needs O(log n) rounds, and every round is a handful of numpy calls over all nodes
of that round: no Python loop per segment or per tree level in the numeric phase.

Plain contraction is exact but not accurate here: the KKT matrix is quasi-definite with pivots
from ``α̃ ≈ 10⁻⁷`` to ``10⁴``, and eliminating a joint before the segments beyond it leaves
pivots of size α̃ computed by cancellation (relative errors of 10⁻³ and worse were measured). So
only stable eliminations are allowed (see :meth:`TreeKKT._stable`): segments fold into their joints
(forming the SPD joint-space Schur complement locally), joints among joints are Cholesky steps on
that SPD complement, and a joint next to a segment goes only toward the root (Baraff's order).
Measured against scipy's sparse LU on random trees: relative error ≤ 10⁻¹⁰.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .definite_blocks import inv_definite



@dataclass
class _Round:
    elim: np.ndarray          # (k,) nodes eliminated in this round
    sign: np.ndarray          # (k,) +1 for segment pivots (positive definite), −1 for joint pivots
    pair_local: np.ndarray    # (P,) index into elim of the eliminated node of each (node, neighbour) pair
    pair_nbr: np.ndarray      # (P,) neighbour node
    pair_edge: np.ndarray     # (P,) edge id joining them
    pair_trans: np.ndarray    # (P,) bool: stored edge block is (node, nbr) and must be transposed to get H[nbr, node]
    nbr_order: np.ndarray     # pairs sorted by neighbour
    nbr_unique: np.ndarray    # distinct neighbours, in that order
    nbr_starts: np.ndarray    # reduceat starts over sorted pairs
    nbr_distinct: bool        # every pair has its own neighbour: scatter without reduction
    node_with_pairs: np.ndarray  # local indices of elim nodes having ≥ 1 pair (pairs are grouped by node)
    node_starts: np.ndarray   # reduceat starts over pairs for those nodes
    fill_a: np.ndarray        # (F,) pair index of the first neighbour of a compressed node
    fill_b: np.ndarray        # (F,) pair index of the second neighbour
    fill_edge: np.ndarray     # (F,) new edge id, stored as block H[nbr_a, nbr_b]


def _bfs_distance(n: int, rows: np.ndarray, cols: np.ndarray, roots: np.ndarray) -> np.ndarray:
    """Hop distance of every node from the nearest root (scipy csgraph BFS; components without a root
    are rooted at their lowest-numbered node)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components, shortest_path

    g = coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n)).tocsr()
    _, label = connected_components(g, directed=False)
    has_root = np.zeros(label.max() + 1 if n else 0, bool)
    has_root[label[roots]] = True
    first = np.full(has_root.size, -1)
    first[label[::-1]] = np.arange(n)[::-1]
    sources = np.concatenate((roots, first[~has_root])).astype(np.int64)
    # one super-source: add an extra node joined to every source
    ss = n
    r2 = np.concatenate((rows, np.full(sources.size, ss)))
    c2 = np.concatenate((cols, sources))
    g2 = coo_matrix((np.ones(r2.size), (r2, c2)), shape=(n + 1, n + 1)).tocsr()
    d = shortest_path(g2, method="D", directed=False, unweighted=True, indices=ss)
    return (d[:n] - 1).astype(np.int64)


class TreeKKT:
    """Symbolic elimination schedule + numeric block LDLᵀ for a segment/joint forest.

    ``seg_a`` and ``seg_b`` (m,) give, per joint, the free-segment index (0…n_free−1) of its two
    sides, or −1 where that side is pinned. Blocks are 6×6 throughout.
    """

    def __init__(self, n_free: int, seg_a: np.ndarray, seg_b: np.ndarray):
        self.n_free = int(n_free)
        self.n_joints = int(seg_a.shape[0])
        self.n_nodes = self.n_free + self.n_joints
        seg_a = np.asarray(seg_a, dtype=np.int64)
        seg_b = np.asarray(seg_b, dtype=np.int64)
        joint_nodes = self.n_free + np.arange(self.n_joints)
        # Initial edges: (segment node, joint node) with block H[seg, joint] = −J_sideᵀ.
        ma, mb = seg_a >= 0, seg_b >= 0
        self.edge_a_joint = np.flatnonzero(ma)           # joints whose a-side block is edge k
        self.edge_b_joint = np.flatnonzero(mb)
        rows = np.concatenate((seg_a[ma], seg_b[mb]))
        cols = np.concatenate((joint_nodes[ma], joint_nodes[mb]))
        self.n_initial_edges = rows.size
        # Distance of every node from the roots of its tree (joints held by a pinned segment; a free-floating
        # component is rooted at its first segment): a leaf joint may only be folded into its rootward neighbour.
        roots = joint_nodes[~(ma & mb)]
        self._dist = _bfs_distance(self.n_nodes, rows, cols, roots)
        self._symbolic(rows, cols)

    # ---------------------------------------------------------------- symbolic phase (once per topology)
    def _symbolic(self, rows: np.ndarray, cols: np.ndarray) -> None:
        n = self.n_nodes
        adj: list[dict[int, int]] = [dict() for _ in range(n)]
        edge_row = rows.tolist()
        for e, (u, v) in enumerate(zip(rows.tolist(), cols.tolist())):
            adj[u][v] = e
            adj[v][u] = e
        is_seg = [i < self.n_free for i in range(n)]
        dist = self._dist.tolist()
        active = list(range(n))
        alive = [True] * n
        rounds: list[_Round] = []
        while active:
            cand = [i for i in active if self._stable(i, adj[i], is_seg, dist)]
            if not cand:  # only happens with redundant pins (a loop through the world): any low-degree node
                cand = [i for i in active if len(adj[i]) <= 2]
            cand.sort(key=lambda i: len(adj[i]))
            blocked = set()
            picked = []
            for i in cand:
                if i in blocked:
                    continue
                picked.append(i)
                blocked.add(i)
                blocked.update(adj[i])
            pair_local, pair_nbr, pair_edge, pair_trans = [], [], [], []
            fill_a, fill_b, fill_edge = [], [], []
            for li, i in enumerate(picked):
                nbrs = list(adj[i].items())
                first = len(pair_nbr)
                for a, e in nbrs:
                    pair_local.append(li)
                    pair_nbr.append(a)
                    pair_edge.append(e)
                    pair_trans.append(edge_row[e] != a)
                    del adj[a][i]
                adj[i].clear()
                alive[i] = False
                if len(nbrs) == 2:
                    (a, _), (b, _) = nbrs
                    e_new = len(edge_row)
                    edge_row.append(a)
                    adj[a][b] = e_new
                    adj[b][a] = e_new
                    fill_a.append(first)
                    fill_b.append(first + 1)
                    fill_edge.append(e_new)
            active = [i for i in active if alive[i]]
            pair_local_a = np.asarray(pair_local, dtype=np.int64)
            pair_nbr_a = np.asarray(pair_nbr, dtype=np.int64)
            order = np.argsort(pair_nbr_a, kind="stable")
            sorted_nbr = pair_nbr_a[order]
            if sorted_nbr.size:
                starts = np.flatnonzero(np.concatenate(([True], sorted_nbr[1:] != sorted_nbr[:-1])))
            else:
                starts = np.zeros(0, np.int64)
            if pair_local_a.size:
                node_starts = np.flatnonzero(np.concatenate(([True], pair_local_a[1:] != pair_local_a[:-1])))
                node_with_pairs = pair_local_a[node_starts]
            else:
                node_starts = np.zeros(0, np.int64)
                node_with_pairs = np.zeros(0, np.int64)
            rounds.append(_Round(
                elim=np.asarray(picked, dtype=np.int64),
                sign=np.where(np.asarray(picked, dtype=np.int64) < self.n_free, 1.0, -1.0), pair_local=pair_local_a, pair_nbr=pair_nbr_a,
                pair_edge=np.asarray(pair_edge, dtype=np.int64), pair_trans=np.asarray(pair_trans, dtype=bool),
                nbr_order=order, nbr_unique=sorted_nbr[starts], nbr_starts=starts,
                nbr_distinct=bool(starts.size == sorted_nbr.size),
                node_with_pairs=node_with_pairs, node_starts=node_starts,
                fill_a=np.asarray(fill_a, dtype=np.int64), fill_b=np.asarray(fill_b, dtype=np.int64),
                fill_edge=np.asarray(fill_edge, dtype=np.int64)))
        self.rounds = rounds
        self.n_edges = len(edge_row)
        self._D = np.zeros((n, 6, 6))
        self._E = np.zeros((self.n_edges, 6, 6))
        self._Dinv = [None] * len(rounds)
        self._W = [None] * len(rounds)
        self.factored = False

    @staticmethod
    def _stable(i: int, nbrs: dict, is_seg: list, dist: list) -> bool:
        """May node i be eliminated now without losing accuracy?

        A segment with ≤ 2 neighbours, all joints: folds its mass into its joints (a step of forming the
        SPD joint-space Schur complement J M⁻¹ Jᵀ + α̃). A joint whose neighbours are all joints: a
        Cholesky step on that (negated) SPD complement, stable in any order. A joint with one segment
        neighbour left: only if that neighbour is rootward (Baraff's leaves-to-root order), so its pivot
        already holds the articulated inertia of everything beyond it instead of a bare −α̃.
        """
        d = len(nbrs)
        if d == 0:
            return True
        if d > 2:
            return False
        if any(is_seg[a] for a in nbrs):
            if is_seg[i]:
                return False
            return d == 1 and dist[next(iter(nbrs))] < dist[i]
        return True

    # ---------------------------------------------------------------- numeric phase (every Newton iteration)
    def factor(self, seg_mass_diag: np.ndarray, joint_compliance: np.ndarray,
               jac_a: np.ndarray, jac_b: np.ndarray) -> None:
        """Factor H for the current Jacobians.

        ``seg_mass_diag`` (n_free, 6): diag(m, m, m, I1, I2, I3); ``joint_compliance`` (m, 6): diag(α̃);
        ``jac_a``/``jac_b`` (m, 6, 6): the constraint Jacobians w.r.t. the a- and b-side segments.
        """
        D, E = self._D, self._E
        nf = self.n_free
        D.fill(0.0)
        idx = np.arange(6)
        D[:nf, idx, idx] = seg_mass_diag
        D[nf:, idx, idx] = -joint_compliance
        na = self.edge_a_joint.size
        E[:na] = -np.swapaxes(jac_a[self.edge_a_joint], 1, 2)
        E[na:self.n_initial_edges] = -np.swapaxes(jac_b[self.edge_b_joint], 1, 2)
        for k, rd in enumerate(self.rounds):
            dinv = inv_definite(D[rd.elim], rd.sign)
            self._Dinv[k] = dinv
            if rd.pair_nbr.size == 0:
                self._W[k] = None
                continue
            h = E[rd.pair_edge]                       # stored blocks
            h[rd.pair_trans] = np.swapaxes(h[rd.pair_trans], 1, 2)   # now H[nbr, node]
            w = h @ dinv[rd.pair_local]               # H[a,i] D_i⁻¹
            self._W[k] = w
            upd = w @ np.swapaxes(h, 1, 2)            # H[a,i] D_i⁻¹ H[i,a]
            if rd.nbr_distinct:
                D[rd.pair_nbr] -= upd
            else:
                D[rd.nbr_unique] -= np.add.reduceat(upd[rd.nbr_order], rd.nbr_starts, axis=0)
            if rd.fill_edge.size:
                E[rd.fill_edge] = -(w[rd.fill_a] @ np.swapaxes(h[rd.fill_b], 1, 2))
        self.factored = True

    def solve(self, rhs_seg: np.ndarray | None, rhs_joint: np.ndarray):
        """Solve ``H z = r`` for the last factorisation; returns (segment part (n_free, 6), joint part (m, 6))."""
        if not self.factored:
            raise RuntimeError("TreeKKT.solve called before factor")
        z = np.zeros((self.n_nodes, 6))
        if rhs_seg is not None:
            z[: self.n_free] = rhs_seg
        z[self.n_free:] = rhs_joint
        for k, rd in enumerate(self.rounds):
            ri = z[rd.elim]
            z[rd.elim] = (self._Dinv[k] @ ri[:, :, None])[:, :, 0]
            w = self._W[k]
            if w is not None:
                contrib = (w @ ri[rd.pair_local][:, :, None])[:, :, 0]
                if rd.nbr_distinct:
                    z[rd.pair_nbr] -= contrib
                else:
                    z[rd.nbr_unique] -= np.add.reduceat(contrib[rd.nbr_order], rd.nbr_starts, axis=0)
        for k in range(len(self.rounds) - 1, -1, -1):
            rd = self.rounds[k]
            w = self._W[k]
            if w is None:
                continue
            t = (np.swapaxes(w, 1, 2) @ z[rd.pair_nbr][:, :, None])[:, :, 0]   # D_i⁻¹ H[i,a] z_a
            sums = np.add.reduceat(t, rd.node_starts, axis=0)
            z[rd.elim[rd.node_with_pairs]] -= sums
        return z[: self.n_free], z[self.n_free:]

    @property
    def n_rounds(self) -> int:
        return len(self.rounds)
