"""The compiled Newton iteration (numba) and its fallback to the numpy solvers.

:class:`CompiledKKT` solves the KKT system of Deul Eq. 22 on any forest of free segments (trees, chains,
several components): the elimination schedule is built here once per topology (Python, scipy's graph
search, with the joint constants gathered into elimination order), the numeric work is two kernel passes
per Newton iteration (:mod:`solver.core._kernels`) on working copies of the pose, λ, α̃ and masses in
elimination order: constraint values, Jacobian blocks and block LDLᵀ with the forward substitution leaves to
root; back substitution with the position/orientation/λ update root to leaves; then the constraint values at
the new pose for the residual.

numba is optional. :func:`compiled_status` says whether the compiled path is active and why not; without
numba (or with a numba that fails to compile the kernels) :class:`~solver.core.timestep.Simulator` uses
the numpy solvers (:mod:`solver.core.kkt_tree`, :mod:`solver.core.kkt_chain`), with the same results to
rounding, and logs one warning. ``STIFF_RODS_COMPILED=0`` in the environment turns the compiled path off.

Compiled kernels are cached on disk (numba's cache): :func:`set_cache_dir` points the cache at a writable
folder (e.g. the host application's per-user cache folder) and must be called before the first simulation;
:func:`prepare` compiles or loads the kernels, calling ``notify("preparing the solver…")`` first if they
are not in the cache yet (the first run after an install).
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components, depth_first_order

LOGGER_NAME = "solver.compiled"  # its status records (a WARNING when numba is unavailable)
log = logging.getLogger(LOGGER_NAME)

PREPARING = "preparing the solver…"
_state: dict = {"status": None, "cache_dir": None}


@dataclass
class _Kernel:
    """A registered kernel module: its dotted name, its source file (part of the cache key), the check that
    compiles (or loads) and tests it, and the module once loaded (None: not yet, or failed)."""

    module: str
    source: Path
    warm_up: Callable[[ModuleType], None]
    loaded: ModuleType | None = None
    failed: bool = False  # a late registration's warm-up failed: not tried again


_KERNELS: dict[str, _Kernel] = {}


def register_kernel(name: str, module: str, source: Path, warm_up: Callable[[ModuleType], None]) -> None:
    """Add the numba kernel module ``module`` (dotted name, file ``source``: part of the disk cache's key) to the
    compiled path as ``name``: imported and checked by ``warm_up(module)`` (compiles or loads it, raises if it
    computes wrong) with the core kernels; :func:`kernel` gives it. Layers above core register theirs on import."""
    _KERNELS[name] = _Kernel(module, Path(source), warm_up)


def set_cache_dir(path) -> None:
    """Keep numba's compiled kernels in ``path`` (created if missing). Call before the first simulation
    (before numba is imported, so numba's own ``NUMBA_CACHE_DIR`` setting takes it); later calls only
    affect kernels not loaded yet."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    os.environ["NUMBA_CACHE_DIR"] = str(path)
    _state["cache_dir"] = path
    if "numba" in sys.modules:
        sys.modules["numba"].config.CACHE_DIR = str(path)


def _marker() -> Path | None:
    """A file in the kernel cache folder that says the kernels of this source and numba were compiled."""
    folder = _state["cache_dir"] or os.environ.get("NUMBA_CACHE_DIR")
    if not folder:
        return None
    numba = importlib.import_module("numba")
    source = b"".join(entry.source.read_bytes() for entry in _KERNELS.values())
    digest = hashlib.sha1(source + numba.__version__.encode()).hexdigest()[:16]
    return Path(folder) / f"stiff_rods_kernels_{digest}.ready"


def _disabled_by_environment() -> bool:
    return os.environ.get("STIFF_RODS_COMPILED", "1").strip().lower() in ("0", "false", "no", "off")


def _load():
    """The core kernel module, or None (with the reason in the status) if numba is missing or broken. Loads every
    registered kernel (a kernel registered after this loads on its first :func:`kernel` call)."""
    if _state["status"] is not None:
        return _KERNELS["kkt"].loaded
    if _disabled_by_environment():
        _state["status"] = (False, "compiled solver off (STIFF_RODS_COMPILED=0): using the numpy solver")
        return None
    try:
        numba = importlib.import_module("numba")
        for entry in list(_KERNELS.values()):
            _load_kernel(entry)
    except Exception as exc:  # any failure of numba or llvmlite: the numpy solver does the same work
        for entry in _KERNELS.values():
            entry.loaded = None
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        _state["status"] = (False, f"numba unavailable ({reason}): using the numpy solver (slower)")
        log.warning("Stiff Rods: %s", _state["status"][1])
        return None
    _state["status"] = (True, f"compiled solver active (numba {numba.__version__})")
    log.info("Stiff Rods: %s", _state["status"][1])
    return _KERNELS["kkt"].loaded


def _load_kernel(entry: _Kernel) -> ModuleType:
    """Import a registered kernel module and run its warm-up check (raises on failure)."""
    module = importlib.import_module(entry.module)
    entry.warm_up(module)
    entry.loaded = module
    return module


def _warm_up(kernels) -> None:
    """Run every kernel once on two three-segment rods, one clamped and one on a tilted rail with physical
    stretch (row masks and parent-frame position rows), which compiles them or loads them from the disk cache,
    and compare one Newton step with the numpy solver's: a miscompiled kernel is a broken numba."""
    from . import joint_constraint  # (late: these import this module)
    from .kkt_tree import TreeKKT
    from .model import rod_from_polyline

    points = [[0, 0, 0], [0, 0, 1], [0.1, 0, 2], [0, 0, 3]]
    models = (
        rod_from_polyline(points, 0.05, 1e9, pinned=["start"]),
        rod_from_polyline(points, 0.05, 1e9, start="rail", start_axis=(0.3, 0.4, 0.8), stretch="physical"),
    )
    for model in models:
        free = np.flatnonzero(~model.pinned)
        seg_to_free = np.full(model.n_segments, -1)
        seg_to_free[free] = np.arange(free.size)
        sides = seg_to_free[model.joint_parent], seg_to_free[model.joint_child]
        mass = np.concatenate((np.repeat(model.masses[:, None], 3, 1), model.inertia), 1)[free]
        alpha = joint_constraint.compliance(model, 1 / 60)
        for strain in joint_constraint.STRAINS:
            ev = joint_constraint.JointEvaluator(model, strain=strain)
            x, q = model.positions.copy(), model.orientations.copy()
            x[free] += [0.01, 0.02, -0.01]  # a pose with a constraint violation to remove
            lam = np.full((model.n_joints, 6), 0.1)
            rhs = ev.values(x, q) + alpha * lam
            reference = TreeKKT(free.size, *sides)
            reference.factor(mass, alpha, *ev.jacobians())
            dx, dlam = reference.solve(None, rhs)
            kkt = CompiledKKT(free.size, *sides, free, ev, kernels)
            kkt.factor(mass, alpha)
            x0, c0 = x.copy(), kkt.residual(x, q, lam, alpha)
            kkt.iterate(x, q, lam, alpha)
            solved = kkt.solve(dx, dlam)
            error = max(np.max(np.abs(x[free] - x0[free] - dx[:, :3])), np.max(np.abs(lam - 0.1 - dlam)))
            if not (c0 > 1e-3 and error < 1e-9 * np.max(np.abs(dx)) and all(np.all(np.isfinite(z)) for z in solved)):
                raise RuntimeError(f"the compiled kernels disagree with the numpy solver (difference {error:.3g})")


register_kernel("kkt", f"{__package__}._kernels", Path(__file__).with_name("_kernels.py"), _warm_up)


def compiled_status() -> tuple[bool, str]:
    """(whether the compiled Newton iteration is active, a one-line message saying so or why not).
    Loads (compiles on first use) the kernels."""
    _load()
    return _state["status"]


def known_status() -> tuple[bool, str] | None:
    """:func:`compiled_status` if the kernels were loaded (or found missing) already, else None: for a user
    interface that must not compile while it draws."""
    return _state["status"]


def prepare(notify=None) -> tuple[bool, str]:
    """Load the compiled kernels now; if they are not in the disk cache yet (the first run after an install,
    with the cache folder of :func:`set_cache_dir` or ``NUMBA_CACHE_DIR``), call ``notify(PREPARING)`` before
    compiling. Returns :func:`compiled_status`."""
    if _state["status"] is None and not _disabled_by_environment():
        try:
            marker = _marker()
        except Exception:  # numba missing: _load says so
            marker = None
        if notify is not None and (marker is None or not marker.exists()):
            notify(PREPARING)
        if _load() is not None and marker is not None:
            try:
                marker.touch()
            except OSError:
                pass
    return compiled_status()


def kernels():
    """The core kernel module (:mod:`solver.core._kernels`) if the compiled path is active, else None."""
    return _load()


def kernel(name: str) -> ModuleType | None:
    """The kernel module registered as ``name`` if the compiled path is active, else None (also for a name not
    registered, or a kernel registered late whose warm-up failed)."""
    entry = _KERNELS.get(name)
    if entry is None or entry.loaded is not None:  # (called every step: the loaded case is one lookup)
        return None if entry is None else entry.loaded
    if not entry.failed and _load() is not None and entry.loaded is None:  # registered after the others loaded
        try:
            _load_kernel(entry)
        except Exception as exc:  # this kernel only: the numpy implementation does its work
            entry.failed = True
            log.warning("Stiff Rods: the compiled kernel %r is unavailable (%s)", name, exc)
    return entry.loaded


def _schedule(n_free: int, seg_a: np.ndarray, seg_b: np.ndarray):
    """Leaves-to-root elimination order of the segment/joint forest (node ids: free segments 0…n_free−1,
    joints n_free + j): one root per component (its first joint held by a pinned segment, else its first
    node); the order is a reversed depth-first preorder, so every node follows its children and each
    subtree is contiguous. Returns (order, parent node or −1)."""
    m = seg_a.size
    n = n_free + m
    joint_nodes = n_free + np.arange(m)
    ma, mb = seg_a >= 0, seg_b >= 0
    rows = np.concatenate((seg_a[ma], seg_b[mb]))
    cols = np.concatenate((joint_nodes[ma], joint_nodes[mb]))
    graph = coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n)).tocsr()
    n_comp, label = connected_components(graph, directed=False)
    root = np.full(n_comp, -1, np.int64)
    anchored = joint_nodes[~(ma & mb)]
    root[label[anchored[::-1]]] = anchored[::-1]  # the first anchored joint of each component
    first = np.full(n_comp, -1, np.int64)
    first[label[::-1]] = np.arange(n)[::-1]
    root = np.where(root >= 0, root, first)
    # one search from a super-root joined to every component's root
    r2 = np.concatenate((rows, np.full(n_comp, n)))
    c2 = np.concatenate((cols, root))
    g2 = coo_matrix((np.ones(r2.size), (r2, c2)), shape=(n + 1, n + 1)).tocsr()
    pre, pred = depth_first_order(g2, n, directed=False, return_predecessors=True)
    if pre.size != n + 1:
        raise RuntimeError("elimination schedule: a node is not reached")
    order = pre[1:][::-1].astype(np.int64)
    parent = pred[:n].astype(np.int64)
    parent[parent == n] = -1
    return order, parent


class CompiledKKT:
    """The direct solver of Eq. 22 for one topology, with the interface the Simulator and the Gauss–Seidel
    sets use: ``factor``, ``solve``, ``factored``, plus the fused Newton step :meth:`iterate`.

    ``seg_a``/``seg_b`` (m,): the free-segment index of each joint's parent/child side (−1: pinned);
    ``free_index`` (n_free,): the segment of each free index; ``evaluator``: the
    :class:`~solver.core.joint_constraint.JointEvaluator` whose strain and constants are used.
    :meth:`factor` records the masses and compliance (changes made to those arrays in place afterwards count
    from the next :meth:`factor`) and marks the factorisation for renewal at the next :meth:`iterate` (fused
    with it), at the pose of that call.
    """

    n_rounds = 1

    def __init__(self, n_free, seg_a, seg_b, free_index, evaluator, kernel_module=None):
        self._k = kernel_module if kernel_module is not None else kernels()
        if self._k is None:
            raise RuntimeError(compiled_status()[1])
        seg_a = np.asarray(seg_a, dtype=np.int64)
        seg_b = np.asarray(seg_b, dtype=np.int64)
        self.n_free = int(n_free)
        self.n_joints = m = int(seg_a.size)
        n = self.n_free + m
        order, parent = _schedule(self.n_free, seg_a, seg_b)
        pos = np.empty(n, np.int64)
        pos[order] = np.arange(n)
        node_index = self._tree_links(order, parent, pos)
        slots = self._edge_slots(seg_a, seg_b, parent, pos)
        self._free_index = np.asarray(free_index, dtype=np.int64)
        # joint constants in elimination order of the joints, so the edge blocks are written in order
        joint = np.ascontiguousarray(node_index[self._sign < 0])
        self._joint = joint
        self._slots = [np.ascontiguousarray(a[joint]) for a in slots]
        ev = evaluator
        local = self._working_rows(ev, node_index)
        self._working_copies()
        self._rotation_strain = ev.strain == "rotation"
        self._jc = self._joint_constants(ev, local, joint)
        self._eval_at = self._first_consumers(seg_a, seg_b, pos, joint)
        # indices as int32 (fewer than 2³¹ nodes): less resident memory and memory traffic per pass
        self._node_index: np.ndarray | None = None  # each node's segment or joint index, made for solve()
        for name in ("_parent_pos", "_child_pos", "_child_ptr", "_node_rank", "_eval_at", "_joint", "_free_order",
                     "_local_seg", "_ranks", "_seg_row", "_joint_row"):  # fmt: skip
            setattr(self, name, np.ascontiguousarray(getattr(self, name), dtype=np.int32))
        self._jc = tuple(np.ascontiguousarray(a, dtype=np.int32) if a.dtype == np.int64 else a for a in self._jc)
        self._no_seg = np.zeros((0, 6))
        self._w = np.zeros((n, 6, 6))  # edge blocks G, then V = L⁻¹ G
        self._lower = np.zeros((n, 21))  # the pivots' s·D = L Δ Lᵀ: L packed by rows, Δ⁻¹ on its diagonal
        self._t = np.zeros((n, 6))
        self._c = np.zeros((m, 6))
        self._mass, self._alpha = self._no_seg, np.zeros((m, 6))
        self._pending = False  # factor() called: renew at the next iterate/solve
        self.factored = False

    def _tree_links(self, order: np.ndarray, parent: np.ndarray, pos: np.ndarray) -> np.ndarray:
        """Each node's kind (``_sign``), its parent's and its children's places in elimination order, and each
        node's row in the working arrays (``_node_rank``); returns each node's segment or joint index."""
        n, m = order.size, self.n_joints
        self._sign = np.where(order < self.n_free, 1, -1).astype(np.int8)  # +1 segment, −1 joint
        node_index = np.where(order < self.n_free, order, order - self.n_free)
        par = parent[order]
        self._parent_pos = np.where(par >= 0, pos[np.maximum(par, 0)], -1)
        has = np.flatnonzero(self._parent_pos >= 0)
        by_parent = has[np.argsort(self._parent_pos[has], kind="stable")]
        self._child_pos = by_parent.astype(np.int64)
        self._child_ptr = np.searchsorted(self._parent_pos[by_parent], np.arange(n + 1)).astype(np.int64)
        # per node its row in the working arrays: a segment's elimination rank among the segments, a joint's
        # among the joints (the arrays in model order are gathered into these once per iteration)
        self._node_rank = np.empty(n, np.int64)
        self._node_rank[self._sign > 0] = np.arange(self.n_free)
        self._node_rank[self._sign < 0] = np.arange(m)
        return node_index

    def _edge_slots(self, seg_a, seg_b, parent: np.ndarray, pos: np.ndarray) -> list[np.ndarray]:
        """For each joint side (parent, child): the place of its edge block and whether it is stored transposed.
        Each block is kept by the end eliminated first: the joint (J) or the segment (Jᵀ)."""
        m = self.n_joints
        joints = np.arange(m)
        slots = []
        for seg in (seg_a, seg_b):
            slot = np.full(m, -1, np.int64)
            transposed = np.zeros(m, np.bool_)
            free = seg >= 0
            jn = self.n_free + joints[free]
            by_joint = parent[jn] == seg[free]
            by_segment = parent[seg[free]] == jn
            if not np.all(by_joint | by_segment):
                raise RuntimeError("elimination schedule: an edge is not a tree edge")
            slot[free] = np.where(by_joint, pos[jn], pos[seg[free]])
            transposed[free] = ~by_joint
            slots += [slot, transposed]
        return slots

    def _working_rows(self, ev, node_index: np.ndarray) -> np.ndarray:
        """The segments of the working pose and their rows back in model order; returns each model segment's row
        in the working pose (−1: none). The pose is worked on in elimination order: the free segments as
        eliminated, then the pinned ones the joints hold (a pinned segment may be driven), so the joints read it
        nearly in sequence."""
        m = self.n_joints
        self._free_order = np.ascontiguousarray(node_index[self._sign > 0])
        free_order = self._free_index[self._free_order]
        held = np.concatenate((np.asarray(ev.parent, dtype=np.int64), np.asarray(ev.child, dtype=np.int64)))
        pinned = np.setdiff1d(held, self._free_index)
        self._local_seg = np.ascontiguousarray(np.concatenate((free_order, pinned)), dtype=np.int64)
        local = np.full(max(int(held.max(initial=-1)), int(self._free_index.max(initial=-1))) + 1, -1, np.int64)
        local[self._local_seg] = np.arange(self._local_seg.size)
        # and back: each model row's row in the working arrays (−1: not a free segment), each joint's rank
        self._seg_row = np.full(local.size, -1, np.int64)
        self._seg_row[free_order] = np.arange(free_order.size)
        self._joint_row = np.empty(m, np.int64)
        self._joint_row[self._joint] = np.arange(m)
        self._xe = np.zeros((self._local_seg.size, 3))
        self._qe = np.zeros((self._local_seg.size, 4))
        return local

    def _working_copies(self) -> None:
        """λ, α̃ and the masses in elimination order, and the fingerprints that say what the copies hold.

        α̃ and the masses are read in place where elimination order runs through model order (a rope: each next
        row adjacent to the last, but for under 1 % jumps), so they are neither copied nor fingerprinted;
        elsewhere (trees: about 30 % jumps) scattered reads cost more than copies in elimination order, kept
        while their fingerprints are unchanged."""
        m = self.n_joints
        rows = (self._free_order, self._joint)
        self._in_place = all(a.size < 2 or np.mean(np.abs(np.diff(a)) == 1) >= 0.99 for a in rows)
        copies = 0 if self._in_place else 1
        self._lam_e, self._alpha_e = np.zeros((m, 6)), np.zeros((copies * m, 6))
        self._mass_e = np.zeros((copies * self.n_free, 6))
        self._ranks = np.arange(copies * self.n_free, dtype=np.int64)  # (the masses' rows in _mass_e)
        self._alpha_e_key = self._alpha_key = self._mass_e_key = self._mass_key = -1  # fingerprints (-1: none)
        self._pose_key: tuple[int, int] | None = None  # fingerprints of the pose at which _c_e holds C
        # fingerprints of the pose and λ the working copies hold after iterate (None: other contents)
        self._work_key: tuple[tuple[int, int], int] | None = None
        self._no_words = np.zeros(0, np.uint64)
        self._c_e = np.zeros((m, 6))  # C in the joints' elimination order
        self._c_model = False  # whether _c (model order) holds _c_e
        self._last_residual: tuple[float, int, int] | None = None  # iterate's: (‖C + α̃λ‖∞, λ's, α̃'s fingerprint)
        self._jrank = np.arange(m, dtype=np.int32)  # (the rows of _c_e)

    def _joint_constants(self, ev, local: np.ndarray, joint: np.ndarray) -> tuple:
        """The joint constants in the joints' elimination order (the kernels' ``jc``), read in sequence (each
        joint's row in _c_e comes first: its elimination rank among the joints). Joint kinds: row masks (none if
        every row is kept) and the parent-frame basis of framed position rows."""
        frame = np.full(self.n_joints, -1, np.int64)
        if ev._framed is not None:
            frame[ev._framed] = np.arange(ev._framed.size)
        return (
            self._jrank,
            np.ascontiguousarray(local[np.asarray(ev.parent, dtype=np.int64)[joint]]),
            np.ascontiguousarray(local[np.asarray(ev.child, dtype=np.int64)[joint]]),
            np.ascontiguousarray(ev.point_parent[joint], dtype=float),
            np.ascontiguousarray(ev.point_child[joint], dtype=float),
            np.ascontiguousarray(ev._inv_l[joint], dtype=float),
            np.ascontiguousarray(ev.rest[joint], dtype=float),
            np.zeros((0, 3)) if self._rotation_strain else np.ascontiguousarray(ev._rest_strain[joint], dtype=float),
            np.zeros((0, 6)) if ev._mask is None else np.ascontiguousarray(ev._mask[joint], dtype=float),
            np.ascontiguousarray(frame[joint]),
            np.ascontiguousarray(ev._basis_t, dtype=float).reshape(-1, 3, 3),
            *self._slots,
        )

    def _first_consumers(self, seg_a, seg_b, pos: np.ndarray, joint: np.ndarray) -> np.ndarray:
        """Per node, the joint evaluated there (−1: none): each joint at its first consumer in elimination order
        (the first of its free segments and itself), so its Jacobian blocks are used while in cache."""
        m = self.n_joints
        first = pos[self.n_free + joint]
        for seg in (seg_a[joint], seg_b[joint]):
            first = np.where(seg >= 0, np.minimum(first, pos[np.maximum(seg, 0)]), first)
        eval_at = np.full(pos.size, -1, np.int64)
        eval_at[first] = np.arange(m)
        if np.unique(first).size != m:
            raise RuntimeError("elimination schedule: two joints share their first consumer")
        return eval_at

    # -------------------------------------------------------------------------------------- pose and values
    def _forward(self, evaluate: bool, refactor: bool, substitute: bool, alpha: tuple) -> float:
        """:func:`~solver.core._kernels.newton_forward` on the working arrays: with ``evaluate``, ``C`` (into
        ``_c_e``) at the gathered pose, with ``refactor`` the Jacobian blocks and the factorisation (with the
        masses of :meth:`factor`), with ``substitute`` the forward substitution. ``alpha``: α̃ and its rows
        (:meth:`_alpha_rows`). Returns ``‖C + α̃λ‖∞`` of the gathered λ if not substituting."""
        if evaluate:
            self._c_model = False
            self._last_residual = None
        mass = (self._mass, self._free_order) if self._in_place else (self._mass_e, self._ranks)
        bad = self._k.newton_forward(
            evaluate, refactor, substitute, self._xe, self._qe, self._lam_e, *alpha, *mass,
            self._sign, self._node_rank, self._parent_pos, self._child_ptr, self._child_pos, self._eval_at,
            self._rotation_strain, *self._jc, self._c_e, self._w, self._lower, self._t,
        )  # fmt: skip
        if bad < 0:
            self.factored = False
            place = int(-bad) - 1
            kind = "segment" if self._sign[place] > 0 else "joint"
            index = self._node_indices()[place]
            raise np.linalg.LinAlgError(f"a KKT pivot block is not definite ({kind} {index})")
        return float(bad)

    def _node_indices(self) -> np.ndarray:
        """Each node's free-segment or joint index (made on first use: only solve() needs it)."""
        if self._node_index is None:
            seg = self._sign > 0
            self._node_index = np.where(seg, self._free_order[np.where(seg, self._node_rank, 0)], 0)
            self._node_index[~seg] = self._joint[self._node_rank[~seg]]
            self._node_index = np.ascontiguousarray(self._node_index, dtype=np.int32)
        return self._node_index

    def _gather_pose(self, x, q) -> None:
        self._work_key = None
        self._k.gather_rows(x, self._local_seg, self._xe)
        self._k.gather_rows(q, self._local_seg, self._qe)

    @staticmethod
    def _words(a) -> np.ndarray:
        return np.ascontiguousarray(a, dtype=float).reshape(-1).view(np.uint64)

    def _fingerprints(self, x, q, lam=None) -> tuple[tuple[int, int], int]:
        """Fingerprints of the pose (a changed pose changes them: one sequential read, no copy kept) and of
        λ if given (else 0), in one kernel call."""
        hx, hq, hl = self._k.fingerprints(
            self._words(x), self._words(q), self._no_words if lam is None else self._words(lam)
        )
        return (int(hx), int(hq)), int(hl)

    def _current(self, x, q) -> bool:
        """Whether ``_c_e`` holds C at this pose."""
        return self._pose_key is not None and self._pose_key == self._fingerprints(x, q)[0]

    def values(self, x, q) -> np.ndarray:
        """``C`` (m, 6) at the pose (evaluated again only if the pose changed); an internal array."""
        if not self._current(x, q):
            self._gather_pose(x, q)
            self._forward(True, False, False, self._alpha_rows(self._alpha, self._alpha_key))  # (residual unused)
            self._pose_key = self._fingerprints(x, q)[0]
        if not self._c_model:
            self._k.scatter_rows(self._c_e, self._joint, self.n_joints, self._c)
            self._c_model = True
        return self._c

    def residual(self, x, q, lam, alpha) -> float:
        """``‖C + α̃λ‖∞`` at the pose: the one :meth:`iterate` found if the pose, λ and α̃ are still those."""
        lam = np.ascontiguousarray(lam, dtype=float)
        alpha = np.ascontiguousarray(alpha, dtype=float)
        if self._in_place:
            alpha_key = None  # (unused: α̃ read in place, no residual kept)
        else:
            alpha_key = self._alpha_key if alpha is self._alpha else self._fingerprint(alpha)
        pose_key, lam_key = self._fingerprints(x, q, lam)
        current = self._pose_key is not None and self._pose_key == pose_key
        if current and self._last_residual is not None:
            value, last_lam_key, last_alpha_key = self._last_residual
            if last_lam_key == lam_key and last_alpha_key == alpha_key:
                return value
        self._work_key = None
        self._k.gather_rows(lam, self._joint, self._lam_e)
        rows = self._alpha_rows(alpha, alpha_key)
        if current:
            return float(self._k.residual_norm(self._c_e, *rows, self._lam_e))
        self._gather_pose(x, q)
        value = self._forward(True, False, False, rows)
        self._pose_key = pose_key
        return value

    # -------------------------------------------------------------------------------------- solver
    def factor(self, seg_mass_diag, joint_compliance) -> None:
        """Renew the factorisation at the next :meth:`iterate`, with these masses diag(m, m, m, I1, I2, I3)
        (n_free, 6) and compliances α̃ (m, 6)."""
        self._mass = np.ascontiguousarray(seg_mass_diag, dtype=float)
        self._alpha = np.ascontiguousarray(joint_compliance, dtype=float)
        if not self._in_place:  # (read in place they are current anyway)
            words = self._words(self._alpha), self._words(self._mass), self._no_words
            alpha_key, mass_key, _ = self._k.fingerprints(*words)
            self._alpha_key, self._mass_key = int(alpha_key), int(mass_key)
        self._pending = True

    def _fingerprint(self, a: np.ndarray) -> int:
        return int(self._k.fingerprints(self._words(a), self._no_words, self._no_words)[0])

    def _alpha_rows(self, alpha: np.ndarray, key: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """α̃ for the kernels and each joint's row in it (joints in elimination order): read in place, or
        gathered into elimination order again only if it changed (its fingerprint ``key``, made if None)."""
        if self._in_place:
            return alpha, self._joint
        key = self._fingerprint(alpha) if key is None else key
        if key != self._alpha_e_key:
            self._k.gather_rows(alpha, self._joint, self._alpha_e)
            self._alpha_e_key = key
        return self._alpha_e, self._jrank

    def iterate(self, x, q, lam, alpha) -> float:
        """One Newton iteration at the pose (x, q) with multipliers ``lam``, all updated in place:
        H (Δx, Δλ) = (0, −(C + α̃λ)) with the factorisation renewed if :meth:`factor` asked for it.
        Returns ``‖C + α̃λ‖∞`` at the new pose. The kernels work on copies in elimination order (gathered at
        the start unless they hold this pose and λ already, as after the last iterate: compared by
        fingerprints, one sequential read; scattered at the end): they read and write them in sequence."""
        k = self._k
        refactor = self._pending
        if not refactor and not self.factored:
            raise RuntimeError("CompiledKKT.iterate called before factor")
        pose_key, lam_key = self._fingerprints(x, q, lam)
        evaluate = refactor or self._pose_key != pose_key
        if self._work_key != (pose_key, lam_key):
            k.gather_state(x, q, lam, self._local_seg, self._joint, self._xe, self._qe, self._lam_e)
        self._work_key = None
        # the factorisation's α̃ is factor()'s; the right-hand side's the one given (the same unless reusing)
        if refactor or alpha is self._alpha:
            rows = self._alpha_rows(self._alpha, self._alpha_key)
        else:
            rows = self._alpha_rows(np.ascontiguousarray(alpha, dtype=float))
        self._pose_key = self._last_residual = None
        if refactor and not self._in_place and self._mass_key != self._mass_e_key:
            k.gather_rows(self._mass, self._free_order, self._mass_e)
            self._mass_e_key = self._mass_key
        self._pending = False
        self._forward(evaluate, refactor, True, rows)
        self.factored = True
        k.backward(
            self._sign, self._parent_pos, self._w, self._lower, self._t, self._node_rank, self._xe, self._qe,
            self._lam_e, True,
        )  # fmt: skip
        k.scatter_state(self._xe, self._qe, self._lam_e, self._seg_row, self._joint_row, x, q, lam)
        residual = self._forward(True, False, False, rows)
        self._pose_key, lam_key = self._fingerprints(x, q, lam)
        self._work_key = (self._pose_key, lam_key)
        if not self._in_place:  # (read in place, α̃ has no fingerprint to tell it unchanged)
            self._last_residual = (residual, lam_key, self._alpha_e_key)
        return residual

    def solve(self, rhs_seg, rhs_joint):
        """Solve ``H z = r`` with the current factorisation (segment part (n_free, 6) or None, joint part
        (m, 6)); returns (segment part, joint part), as ``TreeKKT.solve``."""
        if self._pending:
            raise RuntimeError("CompiledKKT.solve: the factorisation was asked for but not made (call iterate)")
        if not self.factored:
            raise RuntimeError("CompiledKKT.solve called before factor")
        seg = self._no_seg if rhs_seg is None else np.ascontiguousarray(rhs_seg, dtype=float)
        k = self._k
        k.forward_only(
            self._sign, self._node_indices(), self._child_ptr, self._child_pos, seg,
            np.ascontiguousarray(rhs_joint, dtype=float), self._w, self._lower, self._t,
        )  # fmt: skip
        k.backward(
            self._sign, self._parent_pos, self._w, self._lower, self._t, self._node_rank, self._xe, self._qe,
            self._lam_e, False,
        )  # fmt: skip
        dx, dlam = np.empty((self.n_free, 6)), np.empty((self.n_joints, 6))
        k.scatter_solution(self._sign, self._node_indices(), self._t, dx, dlam)
        return dx, dlam
