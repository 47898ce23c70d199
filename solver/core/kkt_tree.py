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

Memory layout (chosen once, so the numeric phase does no fancy-index copies of pivots or edges):
nodes are renumbered in elimination order, so a round's pivot blocks are one contiguous slice; in a
round, nodes with two neighbours come first, then one, then none. Every edge block is consumed
exactly once, by the first of its two ends to be eliminated; it is stored at that "pair slot" as
``−H[eliminated node, neighbour]`` (a Jacobian block or its transpose, as given), and a round's pair
slots are contiguous (first neighbours of all its nodes, then second neighbours). Products then
take only the fast forms ``A @ B`` and ``Aᵀ @ B`` of stacked 6×6 blocks (``A @ Bᵀ`` costs twice as
much). The Schur updates of a round are not scattered into their neighbours' pivots but pulled by
the neighbours' round as one sparse product, and the Jacobian blocks written every iteration land
mostly in runs of consecutive slots. Rounds whose pivots are still the untouched diagonal ``M`` or
``−α̃`` (round one: every leaf and chain segment) skip the inversion. Measured per Newton iteration
(benchmarks/vs_reference.py, profile in README "Performance"): the 6×6 pivot inversions are the
largest part, then the products per pair, the solve and the constraint evaluation.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix

try:  # y += A x for CSR A and row-major x with several columns, without scipy's per-call dispatch (~30 µs)
    from scipy.sparse._sparsetools import csr_matvecs as _csr_matvecs
except ImportError:  # pragma: no cover - other scipy layouts
    _csr_matvecs = None

from .definite_blocks import inv_definite


@dataclass
class _Round:
    start: int  # pivot slice [start, stop) in elimination order
    stop: int
    k1: int  # nodes [0, k1) have ≥ 1 neighbour (their first pair slot is pair_start + local)
    k2: int  # nodes [0, k2) have 2 neighbours (second pair slot is pair_start + k1 + local)
    pair_start: int
    pair_stop: int
    pair_nbr: np.ndarray  # (P,) neighbour's position in elimination order
    fill_dest: np.ndarray  # (k2,) pair slot of the fill edge H[first nbr, second nbr] made by each compressed node
    # CSR (k × all pairs): which earlier pairs update each pivot (None: pivots untouched)
    incoming: csr_matrix | None = None
    incoming_negated: csr_matrix | None = None


def _accumulate(a: csr_matrix, x: np.ndarray, y: np.ndarray) -> None:
    """``y += a @ x`` in place (x, y C-contiguous 2-D)."""
    if _csr_matvecs is not None:
        _csr_matvecs(a.shape[0], a.shape[1], x.shape[1], a.indptr, a.indices, a.data, x.ravel(), y.ravel())
    else:
        y += a @ x


def _runs(slots: np.ndarray, joints: np.ndarray, min_length: int = 16):
    """Split sorted slots into runs of consecutive slots (written through slices, with the joint indices
    as a slice too where they are consecutive) and the leftover (written by fancy indexing)."""
    if slots.size == 0:
        return [], (slots, joints)
    cut = np.flatnonzero(np.diff(slots) != 1) + 1
    bounds = np.concatenate(([0], cut, [slots.size]))
    runs: list[tuple[slice, np.ndarray | slice]] = []
    rest = []
    for lo, hi in itertools.pairwise(bounds):
        if hi - lo >= min_length:
            j = joints[lo:hi]
            run_joints = slice(int(j[0]), int(j[-1]) + 1) if np.all(np.diff(j) == 1) else j
            runs.append((slice(int(slots[lo]), int(slots[hi - 1]) + 1), run_joints))
        else:
            rest.append(np.arange(lo, hi))
    left = np.concatenate(rest) if rest else np.zeros(0, np.int64)
    return runs, (slots[left], joints[left])


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
        # Initial edges: (segment node, joint node); edge k < na is the a-side of joint edge_a_joint[k].
        ma, mb = seg_a >= 0, seg_b >= 0
        self.edge_a_joint = np.flatnonzero(ma)
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
        for e, (u, v) in enumerate(zip(rows.tolist(), cols.tolist(), strict=True)):
            adj[u][v] = e
            adj[v][u] = e
        n_edges = rows.size
        is_seg = [i < self.n_free for i in range(n)]
        dist = self._dist.tolist()
        active = list(range(n))
        raw = []  # per round: list of (node, [(nbr, edge), …]) and fills (node, edge)
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
            elim, fills = [], {}
            for i in picked:
                nbrs = list(adj[i].items())
                for a, _ in nbrs:
                    del adj[a][i]
                adj[i].clear()
                if len(nbrs) == 2:
                    (a, _), (b, _) = nbrs
                    adj[a][b] = n_edges
                    adj[b][a] = n_edges
                    fills[i] = n_edges
                    n_edges += 1
                elim.append((i, nbrs))
            picked_set = set(picked)
            active = [i for i in active if i not in picked_set]
            raw.append((elim, fills))
        self.n_edges = n_edges
        self._layout(raw)

    def _layout(self, raw) -> None:
        """Elimination-order positions, pair slots and index arrays for the numeric phase.

        Within a round: nodes with two neighbours, then one, then none (so that the pairs align with pivot
        slices); the first pair of a node is the neighbour eliminated first (it consumes the fill edge).
        Nodes are further sorted by the kind and joint of their first pair, so that the initial edge blocks
        written every iteration form long runs of consecutive slots. A node's first pair depends on the
        order of later rounds, so rounds are laid out last to first.
        """
        n, nf = self.n_nodes, self.n_free
        pos, starts, oriented = self._positions(raw)
        self.order = np.empty(n, np.int64)  # node id at each elimination position
        self.order[pos] = np.arange(n)
        self.position = pos  # elimination position of each node id
        edge_slot, edge_node = self._pair_rounds(raw, oriented, starts, pos)
        self._pull_updates()
        self._init_plan = self._initial_edge_plan(edge_slot, edge_node)
        self._sign = np.where(self.order < nf, 1.0, -1.0)
        self._seg_pos = pos[:nf]
        self._joint_pos = pos[nf:]
        self._Dinv = np.zeros((n, 6, 6))
        self._dinv_diag = np.zeros((n, 6))
        self._diag = np.zeros((n, 6))
        self._G = np.zeros((self.n_pairs, 6, 6))  # −H[node, nbr] per pair slot: the Jacobian blocks as given
        self._V = np.zeros((self.n_pairs, 6, 6))  # D⁻¹ G
        self._U = np.zeros((self.n_pairs, 36))  # Gᵀ D⁻¹ G = H[a,i] D_i⁻¹ H[i,a], subtracted from D_a
        self._C = np.zeros((self.n_pairs, 6))  # forward-substitution contributions
        self._blocks_ready = False  # constant blocks of the initial edges in G (factor_blocks)
        self.factored = False

    def _positions(self, raw) -> tuple[np.ndarray, np.ndarray, list[list]]:
        """Each node's elimination position, each round's first position, and per round its nodes with their
        pairs in order (the first pair: the neighbour eliminated first), rounds laid out last to first."""
        ne, na = self.n_initial_edges, self.edge_a_joint.size
        side_joint = np.concatenate((self.edge_a_joint, self.edge_b_joint)).tolist()
        pos = np.empty(self.n_nodes, np.int64)
        starts = np.concatenate(([0], np.cumsum([len(elim) for elim, _ in raw])))
        oriented: list[list] = [[] for _ in raw]  # per round: (node, its pairs), filled below
        for r in range(len(raw) - 1, -1, -1):
            items = []
            for i, nb in raw[r][0]:
                if len(nb) == 2 and pos[nb[1][0]] < pos[nb[0][0]]:
                    nb = nb[::-1]  # first pair: the neighbour eliminated first
                e = nb[0][1] if nb else -1
                kind = 4 if e < 0 or e >= ne else 2 * (e >= na) + (i < self.n_free)
                items.append(((-len(nb), kind, side_joint[e] if 0 <= e < ne else 0), i, nb))
            items.sort(key=lambda t: t[0])
            oriented[r] = [(i, nb) for _, i, nb in items]
            pos[[i for _, i, _ in items]] = starts[r] + np.arange(len(items))
        return pos, starts, oriented

    def _pair_rounds(self, raw, oriented, starts, pos) -> tuple[np.ndarray, np.ndarray]:
        """The rounds (:class:`_Round`: pivots, pair slots, their neighbours' positions, fill destinations) into
        ``rounds`` and ``n_pairs``; returns each edge's pair slot and the node that consumes it (eliminated
        first)."""
        edge_slot = np.empty(self.n_edges, np.int64)
        edge_node = np.empty(self.n_edges, np.int64)
        rounds = []
        pair_start = 0
        for r, (_, fills) in enumerate(raw):
            elim = oriented[r]
            start = int(starts[r])
            k2 = sum(len(nb) == 2 for _, nb in elim)
            first = [(i, nb[0]) for i, nb in elim if nb]
            pairs = first + [(i, nb[1]) for i, nb in elim if len(nb) == 2]
            slots = pair_start + np.arange(len(pairs))
            for s, (i, (_, e)) in zip(slots.tolist(), pairs, strict=True):
                edge_slot[e] = s
                edge_node[e] = i
            fill_edges = [fills[i] for i, _ in first[:k2]]
            pair_nbr = pos[np.asarray([a for _, (a, _) in pairs], dtype=np.int64)] if pairs else np.zeros(0, np.int64)
            rounds.append(
                _Round(
                    start=start,
                    stop=start + len(elim),
                    k1=sum(len(nb) >= 1 for _, nb in elim),
                    k2=k2,
                    pair_start=pair_start,
                    pair_stop=pair_start + len(pairs),
                    pair_nbr=pair_nbr,
                    fill_dest=np.asarray(fill_edges, dtype=np.int64),
                )
            )
            pair_start += len(pairs)
        for rd in rounds:  # fill edges are consumed in later rounds
            rd.fill_dest = edge_slot[rd.fill_dest] if rd.fill_dest.size else rd.fill_dest
        self.rounds = rounds
        self.n_pairs = pair_start
        return edge_slot, edge_node

    def _pull_updates(self) -> None:
        """Updates are pulled, not scattered: the pivots of a round are the initial diagonal minus the sum of the
        updates of all earlier pairs pointing at them, one sparse (k × pairs) product per round."""
        rounds = self.rounds
        if not self.n_pairs:
            return
        nbr = np.concatenate([rd.pair_nbr for rd in rounds])
        starts = np.asarray([rd.start for rd in rounds])
        owner = np.searchsorted(starts, nbr, side="right") - 1
        by_round = np.argsort(owner, kind="stable")
        bounds = np.searchsorted(owner[by_round], np.arange(len(rounds) + 1))
        for r, rd in enumerate(rounds):
            in_round = by_round[bounds[r] : bounds[r + 1]]
            if in_round.size:
                rd.incoming = csr_matrix(
                    (np.ones(in_round.size), (nbr[in_round] - rd.start, in_round)),
                    shape=(rd.stop - rd.start, self.n_pairs),
                )
                rd.incoming.sort_indices()
                rd.incoming_negated = -rd.incoming

    def _initial_edge_plan(self, edge_slot: np.ndarray, edge_node: np.ndarray) -> list:
        """Initial edges: stored as J (consumed by the joint: −H[j, s] = J_s) or Jᵀ (consumed by the segment); per
        kind (a/b side × consumed by joint/segment): runs of consecutive slots (slices) and the rest."""
        ne, na = self.n_initial_edges, self.edge_a_joint.size
        by_seg = edge_node[:ne] < self.n_free
        side_joint = np.concatenate((self.edge_a_joint, self.edge_b_joint))
        is_a = np.arange(ne) < na
        plan = []
        for side in (is_a, ~is_a):
            for consumed_by_segment in (False, True):
                sel = np.flatnonzero(side & (by_seg == consumed_by_segment))
                sel = sel[np.argsort(edge_slot[sel])]
                plan.append(
                    (side_joint[sel], edge_slot[sel], consumed_by_segment, _runs(edge_slot[sel], side_joint[sel]))
                )
        return plan

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
    def factor(
        self,
        seg_mass_diag: np.ndarray,
        joint_compliance: np.ndarray,
        jac_a: np.ndarray,
        jac_b: np.ndarray,
        jac_a_t: np.ndarray | None = None,
        jac_b_t: np.ndarray | None = None,
    ) -> None:
        """Factor H for the current Jacobians.

        ``seg_mass_diag`` (n_free, 6): diag(m, m, m, I1, I2, I3); ``joint_compliance`` (m, 6): diag(α̃);
        ``jac_a``/``jac_b`` (m, 6, 6): the constraint Jacobians w.r.t. the a- and b-side segments;
        ``jac_a_t``/``jac_b_t``: optionally the same transposed (contiguous), saving a transpose here.
        """
        G = self._G
        for (joints, slots, transposed, _), jac, jac_t in zip(
            self._init_plan, (jac_a, jac_a, jac_b, jac_b), (None, jac_a_t, None, jac_b_t), strict=True
        ):
            if slots.size:
                if not transposed:
                    G[slots] = jac[joints]
                elif jac_t is not None:
                    G[slots] = jac_t[joints]
                else:
                    G[slots] = np.swapaxes(jac[joints], 1, 2)
        self._blocks_ready = False
        self._factor(seg_mass_diag, joint_compliance)

    def factor_blocks(
        self, seg_mass_diag: np.ndarray, joint_compliance: np.ndarray, rot_a: np.ndarray, rot_b: np.ndarray
    ) -> None:
        """:meth:`factor` for Jacobians of the Eq. 23 form, given by their rotation columns ``rot_a``,
        ``rot_b`` (m, 6, 3) = ``J[:, :, 3:]``: the translation columns are the constants ``[±I; 0]`` (+ for
        the a side, − for the b side), kept in the edge storage, so per iteration only the rotation
        columns are written, mostly through slices."""
        G = self._G
        if not self._blocks_ready:
            for (_, slots, _, _), sign in zip(self._init_plan, (1.0, 1.0, -1.0, -1.0), strict=True):
                G[slots] = 0.0
                G[slots, :3, :3] = sign * np.eye(3)
            self._blocks_ready = True
        for (_, _, transposed, (runs, (slots, joints))), rot in zip(
            self._init_plan, (rot_a, rot_a, rot_b, rot_b), strict=True
        ):
            if transposed:  # Jᵀ rows 3–5 are the rotation columns, transposed
                for sl, j in runs:
                    G[sl, 3:, :] = np.swapaxes(rot[j], 1, 2)
                if slots.size:
                    G[slots, 3:, :] = np.swapaxes(rot[joints], 1, 2)
            else:
                for sl, j in runs:
                    G[sl, :, 3:] = rot[j]
                if slots.size:
                    G[slots, :, 3:] = rot[joints]
        self._factor(seg_mass_diag, joint_compliance)

    def _factor(self, seg_mass_diag: np.ndarray, joint_compliance: np.ndarray) -> None:
        """Block LDLᵀ over the rounds, with the initial edge blocks already in ``G``."""
        G, V, U = self._G, self._V, self._U
        diag = self._diag
        diag[self._seg_pos] = seg_mass_diag
        diag[self._joint_pos] = -joint_compliance
        for rd in self.rounds:
            s, e, k1, k2, ps, pe = rd.start, rd.stop, rd.k1, rd.k2, rd.pair_start, rd.pair_stop
            if rd.incoming is None:  # pivots are still diag(M) or −α̃
                dd = np.divide(1.0, diag[s:e], out=self._dinv_diag[s:e])
                np.multiply(G[ps : ps + k1], dd[:k1, :, None], out=V[ps : ps + k1])
                np.multiply(G[ps + k1 : pe], dd[:k2, :, None], out=V[ps + k1 : pe])
            else:
                d = np.zeros((e - s, 36))
                _accumulate(rd.incoming_negated, U, d)
                d[:, ::7] += diag[s:e]
                dinv = inv_definite(d.reshape(-1, 6, 6), self._sign[s:e], out=self._Dinv[s:e])
                np.matmul(dinv[:k1], G[ps : ps + k1], out=V[ps : ps + k1])
                np.matmul(dinv[:k2], G[ps + k1 : pe], out=V[ps + k1 : pe])
            if pe == ps:
                continue
            g = np.swapaxes(G[ps:pe], 1, 2)
            np.matmul(g, V[ps:pe], out=U[ps:pe].reshape(-1, 6, 6))  # H[a,i] D_i⁻¹ H[i,a]
            if k2:  # fill −H[a,b] = H[a,i] D_i⁻¹ H[i,b]
                G[rd.fill_dest] = np.matmul(g[:k2], V[ps + k1 : ps + k1 + k2])
        self.factored = True

    def solve(self, rhs_seg: np.ndarray | None, rhs_joint: np.ndarray):
        """Solve ``H z = r`` for the last factorisation; returns (segment part (n_free, 6), joint part (m, 6))."""
        if not self.factored:
            raise RuntimeError("TreeKKT.solve called before factor")
        G, V, C = self._G, self._V, self._C
        z = np.zeros((self.n_nodes, 6))
        if rhs_seg is not None:
            z[self._seg_pos] = rhs_seg
        z[self._joint_pos] = rhs_joint
        for rd in self.rounds:
            s, e, ps, pe = rd.start, rd.stop, rd.pair_start, rd.pair_stop
            r = z[s:e]
            if rd.incoming is not None:  # r_i −= Σ H[i,c] D_c⁻¹ r_c over earlier neighbours c
                _accumulate(rd.incoming, C, r)
            if rd.incoming is None:
                r *= self._dinv_diag[s:e]
            else:
                r[:] = np.einsum("kij,kj->ki", self._Dinv[s:e], r)
            k1, k2 = rd.k1, rd.k2
            if k1:  # C = rᵢᵀ G per pair (the pairs of node i: slot ps + i and, if any, ps + k1 + i)
                np.matmul(r[:k1, None, :], G[ps : ps + k1], out=C[ps : ps + k1, None, :])
            if k2:
                np.matmul(r[:k2, None, :], G[ps + k1 : pe], out=C[ps + k1 : pe, None, :])
        for rd in reversed(self.rounds):
            s, k1, k2, ps, pe = rd.start, rd.k1, rd.k2, rd.pair_start, rd.pair_stop
            if pe == ps:
                continue
            t = np.einsum("kij,kj->ki", V[ps:pe], z[rd.pair_nbr])  # −D_i⁻¹ H[i,a] z_a
            z[s : s + k1] += t[:k1]
            z[s : s + k2] += t[k1:]
        return z[self._seg_pos], z[self._joint_pos]

    @property
    def n_rounds(self) -> int:
        return len(self.rounds)
