"""Joints and contacts in one sparse direct solve: Deul Eq. 22 with the active contact rows added.

The tree KKT solvers (``kkt_tree``, ``kkt_chain``) need an acyclic constraint graph; contacts close
loops (a coil resting on the coil below it, a rod touching the floor twice). Gauss–Seidel on contacts
(Eq. 21 with the two segments' masses) converges slowly where many contacts act in series, as in a
stack of Slinky coils: about one coil per sweep. Here the active contact rows join the joint rows in
the constraint-space Schur complement of Eq. 22

    S = J M⁻¹ Jᵀ + α̃,   J = [J_joint; G_contact],   S Δλ = −(C + α̃λ),   Δx = M⁻¹ Jᵀ Δλ,

which is sparse (a contact couples two segments) and factored by SuperLU (``scipy.sparse.linalg.splu``):
one Newton step for all joints and contacts together. Contact rows are unilateral (λ ≥ 0): a
primal–dual active-set iteration over a few rounds: rows touching (or pushing) start active, rows whose
λ would turn negative leave and inactive rows the step pushes into contact enter, both at once.
Coulomb friction (seed 002 §7, at the position level as in contacts.py) adds two tangential rows per
contact: sticking rows hold the material points' relative tangential displacement over the step at zero;
a row whose λ_t leaves the box |λ_t| ≤ μ λ_n slides (its equation becomes λ_t = ±μ λ_n, coupled to the
normal row of the same solve, so S is no longer symmetric: LU, not Cholesky), and a sliding row whose
friction would push along the slip sticks again, in any round. Rows start sliding only in rounds where
the normal active set did not change (changing both at once cycles in a stack of coils). Inactive
contacts release their impulses (Δλ = −λ).

Units: positions [m], body rotation vectors [rad], λ [N·s²], α̃ = α/Δt² with α [m/N] (stretch) and
[1/(N·m)] (bend/twist) for joints, [m/N] for contacts and friction rows (sticking rows of a stack of
coils welded to each other and to the joints are nearly redundant: α ~ 1e-4 m/N keeps LU accurate).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix, diags
from scipy.sparse.linalg import splu


class JointRows:
    """Sparse pattern of the joint Jacobian rows (6 per joint) over the free segments' 6 columns each,
    computed once per topology. ``seg_a``/``seg_b`` (m,): free index of each joint side, −1 if pinned."""

    def __init__(self, n_free: int, seg_a: np.ndarray, seg_b: np.ndarray):
        self.n_free = int(n_free)
        self.n_joints = m = int(seg_a.shape[0])
        r6, c6 = np.meshgrid(np.arange(6), np.arange(6), indexing="ij")
        rows, cols, keep = [], [], []
        for seg in (seg_a, seg_b):
            rows.append((6 * np.arange(m)[:, None, None] + r6).reshape(m, 36))
            cols.append((6 * np.maximum(seg, 0)[:, None, None] + c6).reshape(m, 36))
            keep.append(np.broadcast_to((seg >= 0)[:, None], (m, 36)))
        k = np.concatenate(keep, axis=1).reshape(-1)
        self._rows = np.concatenate(rows, axis=1).reshape(-1)[k]
        self._cols = np.concatenate(cols, axis=1).reshape(-1)[k]
        self._keep = k

    def entries(self, jac_a: np.ndarray, jac_b: np.ndarray):
        """COO rows, columns and values of the joint rows from the (m, 6, 6) side Jacobians."""
        m = self.n_joints
        vals = np.concatenate((jac_a.reshape(m, 36), jac_b.reshape(m, 36)), axis=1).reshape(-1)
        return self._rows, self._cols, vals[self._keep]


def contact_entries(row0: int, free_a: np.ndarray, free_b: np.ndarray, grad_a: np.ndarray, grad_b: np.ndarray):
    """COO entries of contact rows ``row0 + i``: the generalised gradients (k, 6) of each side on its
    free segment's 6 columns (a side with index −1, pinned or a collider, has none)."""
    rows, cols, vals = [], [], []
    for seg, grad in ((free_a, grad_a), (free_b, grad_b)):
        ok = seg >= 0
        rows.append(np.repeat(row0 + np.flatnonzero(ok), 6))
        cols.append((6 * seg[ok][:, None] + np.arange(6)).reshape(-1))
        vals.append(grad[ok].reshape(-1))
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)


@dataclass
class FrictionRows:
    """Two tangential rows per contact (Coulomb friction, box approximation of the cone): generalised
    gradients ``grad_a``/``grad_b`` (k, 2, 6) of the tangential displacement C_t [m] of the contact's
    material points since the start of the step, ``rhs`` = C_t + α̃λ_t (k, 2), ``alpha`` α̃ (k, 2),
    accumulated ``lam`` λ_t (k, 2) [N·s²], ``mu`` (k,), ``sliding`` (k, 2) int8: 0 sticking, ±1 sliding
    with λ_t = ±μ λ_n (kept from one solve to the next, so a sliding contact needs no extra round)."""

    grad_a: np.ndarray
    grad_b: np.ndarray
    rhs: np.ndarray
    alpha: np.ndarray
    lam: np.ndarray
    mu: np.ndarray
    sliding: np.ndarray


@dataclass
class JointBlock:
    """The joints' rows of a solve: their sparse pattern ``rows`` (:class:`JointRows`), the side Jacobians
    ``jac_a``/``jac_b`` (m, 6, 6), ``rhs`` = C + α̃λ (m, 6) and ``alpha`` α̃ (m, 6)."""

    rows: JointRows
    jac_a: np.ndarray
    jac_b: np.ndarray
    rhs: np.ndarray
    alpha: np.ndarray


@dataclass
class NormalRows:
    """The contacts' normal rows of a solve: free segment of each side ``free_a``/``free_b`` (k,) (−1: none),
    gradients ``grad_a``/``grad_b`` (k, 6) of C, ``rhs`` = C + α̃λ (k,), ``alpha`` α̃ (k,) (> 0 keeps nearly
    coincident rows from making S singular) and the current ``lam`` λ (k,)."""

    free_a: np.ndarray
    free_b: np.ndarray
    grad_a: np.ndarray
    grad_b: np.ndarray
    rhs: np.ndarray
    alpha: np.ndarray
    lam: np.ndarray


@dataclass(frozen=True, kw_only=True)
class ActiveSetRules:
    """How a solve finds the rows' states. ``touch`` [m] (scalar or (k,)): rows with ``C + α̃λ`` below it start
    active, so a resting stack is one solve, not one more contact per round (rows that then pull leave);
    ``rounds``: active-set solves at most; an inactive row enters when the step would take it deeper than
    ``enter_depth`` [m] (scalar or (k,)). ``grow_rounds``: if the active set still cycles after ``rounds``, up to
    this many more solves in which rows may only enter (no friction row starts sliding): the set grows
    monotonically, so it settles, with no row left penetrating to first order; a row that would pull holds its gap
    for this solve instead, and its friction rows are released (kinetic friction on a pulling row would push along
    the slip). ``active`` (k,) bool, optional: the normal rows' states given by the caller (with
    ``friction.sliding`` the friction rows'), instead of ``touch``; with ``rounds=1`` the call is one linear solve
    in those states (the semismooth Newton step). ``exact``: an active row that is open closes its gap
    (``C + ΔC + α̃λ = 0``) instead of holding it. ``fixed_normals``: the normal rows keep the given states in every
    round (only friction rows change state)."""

    touch: float | np.ndarray = 0.0
    rounds: int = 8
    enter_depth: float | np.ndarray = 0.0
    grow_rounds: int = 0
    active: np.ndarray | None = None
    exact: bool = False
    fixed_normals: bool = False


@dataclass
class _System:
    """The stacked rows of one solve: the Jacobian (rows × free columns), S = J M⁻¹ Jᵀ + α̃, the right-hand side of
    Eq. 22 and the rows' impulses; m joints, k contacts."""

    jac: csr_matrix
    minv: np.ndarray
    s_full: csr_matrix
    rhs: np.ndarray
    m: int
    k: int

    @property
    def n_rows(self) -> int:
        return self.s_full.shape[0]


def _system(joints: JointBlock, inv_mass, normals: NormalRows, friction, exact: bool) -> _System:
    m, k = joints.rows.n_joints, normals.free_a.size
    n_cols = 6 * joints.rows.n_free
    jr, jc, jv = joints.rows.entries(joints.jac_a, joints.jac_b)
    blocks = [(jr, jc, jv), contact_entries(6 * m, normals.free_a, normals.free_b, normals.grad_a, normals.grad_b)]
    if friction is not None:
        for c in range(2):
            blocks.append(
                contact_entries(
                    6 * m + (1 + c) * k, normals.free_a, normals.free_b, friction.grad_a[:, c], friction.grad_b[:, c]
                )
            )
    n_rows = 6 * m + (1 if friction is None else 3) * k
    jac = csr_matrix(
        (
            np.concatenate([b[2] for b in blocks]),
            (np.concatenate([b[0] for b in blocks]), np.concatenate([b[1] for b in blocks])),
        ),
        shape=(n_rows, n_cols),
    )
    minv = inv_mass.reshape(-1)
    alpha = [joints.alpha.reshape(-1), normals.alpha]
    rhs = [-joints.rhs.reshape(-1), -(normals.rhs if exact else np.minimum(normals.rhs, 0.0))]
    # An active row that is still open keeps its gap (Δgap ≥ −gap would be the exact LCP; holding it is
    # the row that a resting stack needs, and one that separates leaves below with λ < 0).
    if friction is not None:
        alpha += [friction.alpha[:, 0], friction.alpha[:, 1]]
        rhs += [-friction.rhs[:, 0], -friction.rhs[:, 1]]
    alpha, rhs = np.concatenate(alpha), np.concatenate(rhs)
    # S = J M⁻¹ Jᵀ + α̃ for all rows once; a round only swaps rows (structure fixed for the call)
    s_full = (jac.multiply(minv[None, :]) @ jac.T + diags(alpha)).tocsr()
    return _System(jac, minv, s_full, rhs, m, k)


def _round_solve(system: _System, normals: NormalRows, friction, active, sliding, unloaded):
    """One round: every row an unknown of ``A Δλ = b``, by state (module docstring); returns Δλ and Δx."""
    m, k, n_rows = system.m, system.k, system.n_rows
    n_rows_c = np.arange(6 * m, 6 * m + k)
    keep = np.ones(n_rows, bool)  # rows of Eq. 22 (kinematic)
    keep[n_rows_c[~active]] = False
    b = system.rhs.copy()
    b[n_rows_c[~active]] = -normals.lam[~active]
    er, ec, ev = [n_rows_c[~active]], [n_rows_c[~active]], [np.ones(int((~active).sum()))]
    if friction is not None:
        for c in range(2):
            rows = 6 * m + (1 + c) * k + np.arange(k)
            off = ~active | (friction.mu == 0.0) | unloaded  # released with their contact; no friction
            slide = ~off & (sliding[:, c] != 0)
            keep[rows[off | slide]] = False
            b[rows[off]] = -friction.lam[off, c]
            sm = sliding[slide, c] * friction.mu[slide]
            b[rows[slide]] = sm * normals.lam[slide] - friction.lam[slide, c]
            er += [rows[off], rows[slide], rows[slide]]
            ec += [rows[off], rows[slide], n_rows_c[slide]]
            ev += [np.ones(int(off.sum())), np.ones(int(slide.sum())), -sm]
    repl = csr_matrix((np.concatenate(ev), (np.concatenate(er), np.concatenate(ec))), shape=(n_rows, n_rows))
    a = (diags(keep.astype(float)) @ system.s_full + repl).tocsc()
    dl = splu(a, permc_spec="COLAMD").solve(b)
    return dl, (system.jac.T @ dl) * system.minv


def _friction_states(system: _System, friction, state: dict, dl, dx, lam_n, settled: bool) -> bool:
    """The friction rows' states after a round (``state``: ``sliding``, ``flipped``, ``active``, ``leaving``, updated
    in place); returns whether any changed. Rows start sliding only in a round where the normal active set has
    settled for the current ones: changing both at once cycles in a stack of coils until the round cap
    (docs/notes/contacts.md). A sliding row whose kinetic friction pushes along the slip sticks in any round: left
    sliding, a fixed-sign μ λ_n drives the slip the other way, an energy source (it can hold a rod balanced on a box
    edge that it should fall off); sticking never is one."""
    m, k, jac = system.m, system.k, system.jac
    sliding, flipped = state["sliding"], state["flipped"]
    c_t = friction.rhs - friction.alpha * friction.lam
    slip = c_t + np.stack([jac[6 * m + (1 + c) * k : 6 * m + (2 + c) * k] @ dx for c in range(2)], axis=1)
    # Each row changes state at most once per call (stick ↔ slide chatters in a stack otherwise);
    # rows of contacts that leave are decided again when they are back.
    staying = (state["active"] & ~state["leaving"])[:, None] & ~flipped
    # kinetic friction pushing along the slip (it would reverse it): stick
    to_stick = staying & (sliding != 0) & (sliding * slip > 0.0)
    to_slide = np.zeros_like(to_stick)
    if settled:
        # static friction beyond the box: slide, with the impulse on the box in its own direction
        lam_t = friction.lam + np.stack((dl[6 * m + k : 6 * m + 2 * k], dl[6 * m + 2 * k :]), axis=1)
        bound = friction.mu[:, None] * np.maximum(lam_n, 0.0)[:, None]
        to_slide = staying & (sliding == 0) & (np.abs(lam_t) > bound * (1.0 + 1e-9) + 1e-300)
        sliding[:] = np.where(to_slide, np.sign(lam_t), sliding)
    sliding[to_stick] = 0
    flipped |= to_slide | to_stick
    return bool(to_slide.any() or to_stick.any())


def solve_joints_and_contacts(
    joints: JointBlock,
    inv_mass,
    normals: NormalRows,
    friction: FrictionRows | None = None,
    rules: ActiveSetRules | None = None,
    stats: dict | None = None,
):
    """One Newton step (Eq. 22) for all ``joints`` (:class:`JointBlock`), the active contact ``normals``
    (:class:`NormalRows`) and their ``friction`` rows (:class:`FrictionRows`, two tangential rows per contact; its
    ``sliding`` state is updated in place); ``inv_mass`` (n_free, 6) M⁻¹.

    Every row is always an unknown of one sparse system ``A Δλ = b`` whose rows are, by state:
    active normal or sticking tangent rows are Eq. 22's (``S_i Δλ = −(C + α̃λ)_i``); an inactive contact's
    rows release their impulse (``Δλ_i = −λ_i``); a sliding tangent row holds its impulse on the Coulomb
    box (``λ_t + Δλ_t = s μ (λ_n + Δλ_n)``, the kinetic friction force, coupled to the normal row of the
    same solve). The states are found by an active-set iteration (:class:`ActiveSetRules`).
    ``stats`` (a dict, optional) receives ``rounds`` (solves used), ``converged`` (the last round
    changed no state; False: the active set was still cycling when the rounds ran out) and
    ``friction_checked``: rounds in which sticking rows were checked against the Coulomb box (the normal
    active set had settled; None without friction rows; 0: it never settled, so no row started sliding).
    Returns Δx (n_free, 6), Δλ of the joints (m, 6), of the normals (k,) and of the tangents (k, 2).
    """
    rules = rules or ActiveSetRules()
    if friction is not None and not (friction.mu.size > 0 and bool(np.any(friction.mu > 0.0))):
        friction = None  # no row has a friction coefficient: normal rows only
    system = _system(joints, inv_mass, normals, friction, rules.exact)
    m, k = system.m, system.k
    c_now = normals.rhs - normals.alpha * normals.lam  # C of the normal rows
    if rules.active is None:
        active = (normals.rhs < rules.touch) | (normals.lam > 0.0)
    else:
        active = np.asarray(rules.active, bool).copy()
    sliding = friction.sliding if friction is not None else np.zeros((k, 2), np.int8)
    if friction is not None:
        sliding[~active] = 0
    state = dict(sliding=sliding, flipped=np.zeros((k, 2), bool))
    unloaded = np.zeros(k, bool)
    cap = max(int(rules.rounds), 1)
    checked = 0  # rounds in which sticking rows were checked against the box
    for used in range(1, cap + max(int(rules.grow_rounds), 0) + 1):
        growing = used > cap
        dl, dx = _round_solve(system, normals, friction, active, sliding, unloaded)
        lam_n = normals.lam + dl[6 * m : 6 * m + k]
        # tolerances against cycling: a row enters when it would sink deeper than ``enter_depth``, leaves
        # when it pulls by more than a 1e-6 share of the largest push
        leaving = active & (lam_n < -1e-6 * max(float(lam_n.max(initial=0.0)), 1e-300)) & (not growing)
        entering = ~active & (c_now + system.jac[6 * m : 6 * m + k] @ dx < -rules.enter_depth)
        if rules.fixed_normals:
            leaving[:], entering[:] = False, False
        changed = bool(leaving.any() or entering.any())
        settled = not changed and not growing
        if friction is not None:
            checked += settled
            state.update(active=active, leaving=leaving)
            changed |= _friction_states(system, friction, state, dl, dx, lam_n, settled)
        if growing and friction is not None:
            # A row held in a grow-only round may pull (λ_n < 0): its kinetic friction s μ λ_n would then
            # push along the slip. Its friction is released instead, from the next round on (once released,
            # it stays so for this call, so the set still only grows); kept, it feeds energy into the
            # motion (docs/notes/contacts.md).
            newly = active & ~unloaded & (lam_n < 0.0) & (friction.mu > 0.0)
            unloaded |= newly
            changed |= bool(newly.any())
        if not changed:
            break
        active = (active & ~leaving) | entering  # primal–dual active set: both changes at once
        if friction is not None:
            sliding[~active] = 0
    if stats is not None:
        fr = friction is not None
        stats.update(rounds=used, converged=not changed, grown=used > cap, friction_checked=checked if fr else None)
    # Rows still pulling after the last round are dropped (λ ≥ 0); their share of Δx stays (first order).
    dl_t = (
        np.stack((dl[6 * m + k : 6 * m + 2 * k], dl[6 * m + 2 * k :]), axis=1)
        if friction is not None
        else np.zeros((k, 2))
    )
    return dx.reshape(-1, 6), dl[: 6 * m].reshape(m, 6), dl[6 * m : 6 * m + k], dl_t
