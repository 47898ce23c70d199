"""Convex quadratic programs with bounds on the variables: a primal active-set method.

    minimise  f(x) = ½ xᵀ S x + qᵀ x   subject to   lo ≤ x ≤ hi      (S symmetric positive definite)

The method is the primal active-set method for convex QPs (Nocedal & Wright 2006, "Numerical Optimization",
2nd ed., §16.5, Algorithm 16.3) specialised to bounds, where the working set W is a set of variables held at one
of their bounds and the equality-constrained subproblem on the free variables F is a Cholesky solve of S_FF:

1. p_F = argmin over the face {x_W fixed} (S_FF p_F = −(S x + q)_F).
2. p_F reaches outside the box: step to the first bound it meets (α < 1) and hold the variables that meet it.
   Else take the full step: x is the minimiser on its face; if every held variable's multiplier has the sign
   of its bound (gradient ≥ 0 at a lower bound, ≤ 0 at an upper one), x is the solution (the KKT conditions of
   the QP, which for S positive definite are sufficient and define x uniquely); else release held variables whose
   multiplier has the wrong sign.

Every step with α > 0 lowers f strictly (S positive definite); a face is never visited twice after its minimiser
was reached, and there are finitely many faces, so the method terminates (Nocedal & Wright, Theorem 16.5's
argument). The full step projected onto the box is taken instead where it lowers f (the projected search of Moré &
Toraldo 1991, "On the solution of large quadratic programming problems with bound constraints", SIAM J. Optim. 1:
93–113): it holds all the variables it puts on a bound at once, so a run of such steps grows the working set and ends
within n steps at a face whose minimiser is reached, and the argument above still bounds the number of faces. The
released variable of largest violation moves into the box on the next step (its multiplier is
the directional derivative along its release); several are released at once where the next step moves every one
of them into the box, else those it moves inward are tried again, down to that one alone (on the Slinky's first
steps, 1000 rows, about 235 variables to release per round: 20 release rounds instead of 488, one by one). Started
from a good working set (the last solution's), it needs few face steps. In QPs of more than 200 rows the face steps
share one Cholesky factorisation over a Schur complement of the working set's changes (:class:`_FaceSolver`): on
the Slinky's ~1100 rows a face step costs a few triangular solves instead of a factorisation; smaller QPs factor
each face afresh (:class:`_FreshFaces`), which costs less than the bordered solve's bookkeeping there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.linalg import lapack

from ..core import compiled


def cholesky_factor(a: np.ndarray) -> np.ndarray:
    """The lower Cholesky factor of the symmetric positive definite ``a`` (LAPACK dpotrf, the upper triangle left
    as it was): ``scipy.linalg.cho_factor`` without its per-call wrapping, which cost ~80 µs a call, more than the
    factorisation of the capstan's ~60-row faces. Raises ``LinAlgError`` where ``a`` is not positive definite."""
    if a.size == 0:
        return np.zeros((0, 0))
    c, info = lapack.dpotrf(a, lower=1, clean=0)
    if info != 0:
        raise np.linalg.LinAlgError(f"dpotrf: leading minor {info} not positive definite")
    return c


def cholesky_solve(c: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x with a x = b from :func:`cholesky_factor`'s ``c`` (LAPACK dpotrs; b a vector or columns)."""
    if c.size == 0:
        return np.zeros(np.shape(b))
    x, _ = lapack.dpotrs(c, b, lower=1)
    return x


@dataclass
class BoxQPResult:
    """``x``: the solution; ``iterations``: subproblem solves; ``converged``: the KKT conditions hold (False only
    when ``max_iterations`` ran out); ``at_lower``/``at_upper``: the variables held at their bounds."""

    x: np.ndarray
    iterations: int
    converged: bool
    at_lower: np.ndarray
    at_upper: np.ndarray


def kkt_violation(s: np.ndarray, q: np.ndarray, lo: np.ndarray, hi: np.ndarray, x: np.ndarray) -> float:
    """The largest violation of the QP's first-order conditions at ``x``: |x − proj(x − (S x + q))|, 0 exactly at
    the solution (the natural map of the bound-constrained problem)."""
    g = s @ x + q
    return float(np.max(np.abs(x - np.clip(x - g, lo, hi)), initial=0.0))


# QPs up to this size factor each face afresh (:class:`_FreshFaces`; LAPACK's dpotrf: 40–230 µs for 60–200 rows
# against 120–210 µs for a bordered step's bookkeeping, measured on one core); larger ones use :class:`_FaceSolver`
FRESH_UP_TO = 200


class _FreshFaces:
    """Face steps p_F = −S_FF⁻¹ g_F, each by its own Cholesky factorisation of S_FF (small QPs)."""

    def __init__(self, s: np.ndarray) -> None:
        self.s = s

    def step(self, g: np.ndarray, free: np.ndarray) -> np.ndarray:
        """p with S_FF p_F = −g_F, p = 0 on the held variables."""
        p = np.zeros(g.size)
        idx = np.flatnonzero(free)
        if idx.size:
            p[idx] = -cholesky_solve(cholesky_factor(self.s[np.ix_(idx, idx)]), g[idx])
        return p


class _FaceSolver:
    """Face steps p_F = −S_FF⁻¹ g_F for a free set F that changes a few variables at a time: one Cholesky
    factorisation of S over a base free set F0 and a Schur complement over the changes since (the Schur-complement
    method of active-set QP: Gill, Murray, Saunders & Wright 1990, "A Schur-complement method for sparse quadratic
    programming", in Reliable Numerical Computation, 113–138; Bartlett & Biegler 2006, "QPSchur", Optim. Eng. 7:
    5–32). A variable held since the base borders S_F0F0 with a constraint e_jᵀp = 0, a variable freed since with
    its row and column of S; the bordered system's Schur complement C = D − Bᵀ S_F0F0⁻¹ B is as small as the
    changes. Each face step then costs two triangular solves of the base and a solve with C instead of a
    factorisation (~1000 rows on the Slinky: ~40 factorisations per QP before). F0 is factored again when the
    changes pass ``limit``, and each step is refined once against S_FF itself (the bordered system is less well
    conditioned than S_FF)."""

    def __init__(self, s: np.ndarray) -> None:
        self.s = s
        self.base: np.ndarray | None = None

    def _factor(self, free: np.ndarray) -> None:
        self.base = free.copy()
        self.idx = np.flatnonzero(free)
        self.pos = np.full(free.size, -1, np.int64)
        self.pos[self.idx] = np.arange(self.idx.size)
        sub = self.s[np.ix_(self.idx, self.idx)]
        self.chol = cholesky_factor(sub) if self.idx.size else None
        # a change's border column b and S_F0F0⁻¹ b (key: the variable; b of a held variable is a unit vector)
        self.columns: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.limit = max(8, min(64, self.idx.size // 4))

    def _base_solve(self, rhs: np.ndarray) -> np.ndarray:
        return cholesky_solve(self.chol, rhs) if self.chol is not None else rhs[:0]

    def _column(self, var: int, freed: bool) -> tuple[np.ndarray, np.ndarray]:
        pair = self.columns.get(var)
        if pair is None:
            if freed:
                b = self.s[self.idx, var]
            else:
                b = np.zeros(self.idx.size)
                b[self.pos[var]] = 1.0
            pair = self.columns[var] = (b, self._base_solve(b))
        return pair

    def _bordered(self, added: np.ndarray, removed: np.ndarray):
        """The border B, S_F0F0⁻¹ B and the LU factors of the Schur complement C for these changes (one face
        step's two solves share them), or None without changes."""
        if added.size + removed.size == 0:
            return None
        pairs = [self._column(int(var), True) for var in added] + [self._column(int(var), False) for var in removed]
        border = np.stack([b for b, _ in pairs], axis=1)
        solved = np.stack([col for _, col in pairs], axis=1)
        schur = -border.T @ solved
        schur[: added.size, : added.size] += self.s[np.ix_(added, added)]
        lu = lapack.dgetrf(schur)[:2]  # (a singular C is reported below, as np.linalg.solve would)
        if not (np.all(np.isfinite(lu[0])) and np.all(np.diag(lu[0]) != 0.0)):
            raise np.linalg.LinAlgError("the face system's Schur complement is singular")
        return border, solved, lu, added, removed

    def _solve(self, rhs: np.ndarray, bordered) -> np.ndarray:
        """The face system S_FF p_F = rhs_F (``rhs`` over all variables, p zero off F) through the bordered base
        (:meth:`_bordered`)."""
        p = np.zeros(rhs.size)
        w = self._base_solve(rhs[self.idx])
        if bordered is None:
            p[self.idx] = w
            return p
        border, solved, lu, added, removed = bordered
        right = -border.T @ w
        right[: added.size] += rhs[added]
        z = lapack.dgetrs(lu[0], lu[1], right)[0]
        p[self.idx] = w - solved @ z
        p[added] = z[: added.size]
        p[removed] = 0.0
        return p

    def step(self, g: np.ndarray, free: np.ndarray) -> np.ndarray:
        """p with S_FF p_F = −g_F, p = 0 on the held variables."""
        if not free.any():
            return np.zeros(g.size)
        if self.base is None:
            self._factor(free)
        assert self.base is not None
        added = np.flatnonzero(free & ~self.base)
        removed = np.flatnonzero(self.base & ~free)
        if added.size + removed.size > self.limit:
            self._factor(free)
            added = removed = added[:0]
        try:
            bordered = self._bordered(added, removed)
            p = self._solve(-g, bordered)
            if bordered is not None:
                r = np.where(free, -g - self.s @ p, 0.0)  # p is 0 off F, so (S p)_F = S_FF p_F
                p += self._solve(r, bordered)
        except np.linalg.LinAlgError:
            self._factor(free)
            p = self._solve(-g, None)
        return p


def _checked(s, q, lo, hi):
    s = np.asarray(s, dtype=float)
    q = np.asarray(q, dtype=float)
    lo = np.asarray(lo, dtype=float)
    hi = np.asarray(hi, dtype=float)
    n = q.size
    if s.shape != (n, n) or lo.shape != (n,) or hi.shape != (n,):
        raise ValueError(f"box QP: S must be ({n}, {n}) and the bounds ({n},), got {s.shape}, {lo.shape}, {hi.shape}")
    if np.any(lo > hi) or np.any(np.isnan(lo)) or np.any(np.isnan(hi)):
        raise ValueError("box QP: every lower bound must be ≤ its upper bound")
    return s, q, lo, hi


class _Iterate:
    """The active-set method's iterate: x, the variables held at their lower/upper bound, whether x minimises f on
    its face, the face step a release already made for the face it leaves (``ready``) and the solves so far."""

    def __init__(self, x, lo, hi):
        self.x = x
        self.at_lo = x <= lo
        self.at_hi = (x >= hi) & ~self.at_lo
        self.minimiser = False
        self.ready = None
        self.it = 0

    def result(self, converged: bool) -> BoxQPResult:
        return BoxQPResult(self.x, self.it, converged, self.at_lo.copy(), self.at_hi.copy())


def _descend(it: _Iterate, faces: _FreshFaces | _FaceSolver, s, q, box, g, free, rtol) -> bool:
    """One step towards the minimiser of f on the iterate's face (bounds ``box`` = (lo, hi)); returns True where it
    met a bound (the face changed), False where it reached the face's minimiser."""
    lo, hi = box
    x = it.x
    if it.ready is None:
        it.it += 1
        p = faces.step(g, free)
    else:
        p, it.ready = it.ready, None
    if np.any((x + p < lo) | (x + p > hi)):
        # projected search (Moré & Toraldo 1991): the full step projected onto the box, taken if it lowers
        # f; it holds every variable it puts on a bound at once, where the step to the first bound holds one
        trial = np.clip(x + p, lo, hi)
        if 0.5 * trial @ (s @ trial) + q @ trial < 0.5 * x @ (g + q):
            it.at_lo |= free & (trial <= lo)
            it.at_hi |= free & (trial >= hi) & ~it.at_lo
            it.x = trial
            return True
    # the largest feasible step along p, up to 1
    with np.errstate(divide="ignore", invalid="ignore"):
        up = np.where(free & (p > 0.0), (hi - x) / p, np.inf)
        down = np.where(free & (p < 0.0), (lo - x) / p, np.inf)
    ratio = np.minimum(up, down)
    alpha = float(min(1.0, ratio.min(initial=np.inf)))
    it.x = x + alpha * p
    if alpha < 1.0:
        hit = ratio <= alpha * (1.0 + rtol) + 1e-300
        hit_hi = hit & (up <= down)
        it.at_hi |= hit_hi
        it.at_lo |= hit & ~hit_hi
        it.x = np.where(it.at_lo, lo, np.where(it.at_hi, hi, it.x))
        return True
    it.minimiser = True
    return False


def _release(it: _Iterate, faces: _FreshFaces | _FaceSolver, g, free, wrong, tol) -> None:
    """Release held variables whose multipliers have the wrong sign: all at once if the face's minimiser moves every
    released variable into the box, else those it moves inward, tried again, down to the worst one alone (which
    moves inward: its multiplier is the directional derivative along its release)."""
    n = g.size
    release = wrong > tol
    worst = int(np.argmax(wrong))
    while release.sum() > 1:
        p = faces.step(g, free | release)
        it.it += 1
        inward = np.where(it.at_lo, p > 0.0, p < 0.0)
        if np.all(inward[release]):
            it.ready = p  # the next face's step: x and g unchanged
            break
        subset = release & inward
        if subset.sum() < 2:
            release = np.zeros(n, bool)
            release[worst] = True
            break
        release = subset
    it.at_lo &= ~release
    it.at_hi &= ~release
    it.minimiser = False


def solve_box_qp(
    s, q, lo, hi, x0=None, max_iterations: int | None = None, rtol: float = 1e-12, compiled_qp: bool = True
) -> BoxQPResult:
    """Solve the QP above by the primal active-set method (module docstring). ``s`` (n, n) symmetric positive
    definite, ``q`` (n,), bounds ``lo``/``hi`` (n,) (±inf allowed, lo ≤ hi; lo = hi fixes a variable), ``x0``
    (optional) a starting point, projected onto the box (its variables on a bound start held there).
    ``max_iterations``: subproblem solves at most (default 4 n + 20). ``rtol``: relative tolerance of the
    multipliers' sign test and of meeting a bound. QPs of up to ``FRESH_UP_TO`` variables run compiled
    (:mod:`solver.contact._box_qp_kernel`, the same steps in one numba call) where the compiled path is active and
    ``compiled_qp``; the numpy implementation here is the reference and the fallback."""
    s, q, lo, hi = _checked(s, q, lo, hi)
    n = q.size
    x = np.zeros(n) if x0 is None else np.array(x0, dtype=float)
    x = np.clip(x, lo, hi)
    fixed = lo == hi
    cap = 4 * n + 20 if max_iterations is None else int(max_iterations)
    scale = max(
        float(np.max(np.abs(q), initial=0.0)),
        float(np.max(np.abs(s), initial=0.0)) * float(np.max(np.abs(x), initial=0.0)),
        1e-300,
    )
    kernel = compiled.kernel("box_qp") if 0 < n <= FRESH_UP_TO and compiled_qp else None
    if kernel is not None:
        x, solves, converged, at_lo, at_hi = kernel.solve(
            np.ascontiguousarray(s), q, lo, hi, x, fixed, cap, float(rtol), scale
        )
        return BoxQPResult(x, int(solves), bool(converged), at_lo, at_hi)
    faces = _FreshFaces(s) if n <= FRESH_UP_TO else _FaceSolver(s)
    it = _Iterate(x, lo, hi)
    while it.it < cap:
        free = ~(it.at_lo | it.at_hi)
        g = s @ it.x + q
        if not it.minimiser:
            if _descend(it, faces, s, q, (lo, hi), g, free, rtol):
                continue
            g = s @ it.x + q
        # multipliers of the held variables: g ≥ 0 at a lower bound, ≤ 0 at an upper one
        tol = rtol * scale
        wrong = np.where(it.at_lo & ~fixed, -g, 0.0) + np.where(it.at_hi & ~fixed, g, 0.0)
        if not np.any(wrong > tol):
            return it.result(True)
        _release(it, faces, g, free, wrong, tol)
    return it.result(False)


def _warm_up_box_qp(kernel) -> None:
    """Compile (or load) the box QP kernel and compare it with the numpy method on random QPs with lower, upper, two-
    sided, fixed and free variables, from a cold and a warm start: the same solution and active set."""
    rng = np.random.default_rng(0)
    for n in (1, 7, 40):
        a = rng.standard_normal((n, n))
        s = a @ a.T + 0.1 * np.eye(n)
        q = 3.0 * rng.standard_normal(n)
        lo = np.where(rng.random(n) < 0.7, -rng.random(n), -np.inf)
        hi = np.where(rng.random(n) < 0.5, rng.random(n), np.inf)
        lo[0] = hi[0] = min(hi[0], 0.25)  # a fixed variable
        for x0 in (None, rng.standard_normal(n)):
            ref = solve_box_qp(s, q, lo, hi, x0=x0, compiled_qp=False)
            x = np.zeros(n) if x0 is None else np.clip(x0, lo, hi)
            scale = max(float(np.max(np.abs(q))), float(np.max(np.abs(s))) * float(np.max(np.abs(x))), 1e-300)
            out = kernel.solve(s, q, lo, hi, x, lo == hi, 4 * n + 20, 1e-12, scale)
            if not (out[2] and ref.converged and np.allclose(out[0], ref.x, rtol=1e-9, atol=1e-12)):
                raise RuntimeError("the compiled box QP disagrees with the numpy method")
            if not (np.array_equal(out[3], ref.at_lower) and np.array_equal(out[4], ref.at_upper)):
                raise RuntimeError("the compiled box QP's active set differs from the numpy method's")


# the compiled box QP joins the compiled path (its cache key, its warm-up, compiled.kernel("box_qp"))
compiled.register_kernel(
    "box_qp", f"{__package__}._box_qp_kernel", Path(__file__).with_name("_box_qp_kernel.py"), _warm_up_box_qp
)
