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
from a good working set (the last solution's), it needs few Cholesky factorisations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve


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


def _face_step(s: np.ndarray, g: np.ndarray, free: np.ndarray) -> np.ndarray:
    """The step p to the minimiser of f on the face that holds the variables not ``free``: S_FF p_F = −g_F by
    Cholesky, p = 0 on the held variables."""
    p = np.zeros(g.size)
    if free.any():
        f = np.flatnonzero(free)
        p[f] = -cho_solve(cho_factor(s[np.ix_(f, f)], lower=True, check_finite=False), g[f], check_finite=False)
    return p


def solve_box_qp(s, q, lo, hi, x0=None, max_iterations: int | None = None, rtol: float = 1e-12) -> BoxQPResult:
    """Solve the QP above by the primal active-set method (module docstring). ``s`` (n, n) symmetric positive
    definite, ``q`` (n,), bounds ``lo``/``hi`` (n,) (±inf allowed, lo ≤ hi; lo = hi fixes a variable), ``x0``
    (optional) a starting point, projected onto the box (its variables on a bound start held there).
    ``max_iterations``: subproblem solves at most (default 4 n + 20). ``rtol``: relative tolerance of the
    multipliers' sign test and of meeting a bound."""
    s = np.asarray(s, dtype=float)
    q = np.asarray(q, dtype=float)
    lo = np.asarray(lo, dtype=float)
    hi = np.asarray(hi, dtype=float)
    n = q.size
    if s.shape != (n, n) or lo.shape != (n,) or hi.shape != (n,):
        raise ValueError(f"box QP: S must be ({n}, {n}) and the bounds ({n},), got {s.shape}, {lo.shape}, {hi.shape}")
    if np.any(lo > hi) or np.any(np.isnan(lo)) or np.any(np.isnan(hi)):
        raise ValueError("box QP: every lower bound must be ≤ its upper bound")
    x = np.zeros(n) if x0 is None else np.array(x0, dtype=float)
    x = np.clip(x, lo, hi)
    at_lo = x <= lo
    at_hi = (x >= hi) & ~at_lo
    fixed = lo == hi
    cap = 4 * n + 20 if max_iterations is None else int(max_iterations)
    scale = max(
        float(np.max(np.abs(q), initial=0.0)),
        float(np.max(np.abs(s), initial=0.0)) * float(np.max(np.abs(x), initial=0.0)),
        1e-300,
    )
    minimiser = False  # x minimises f on its current face
    ready = None  # the face step a release already made for the face it leaves
    it = 0
    while it < cap:
        held = at_lo | at_hi
        free = ~held
        g = s @ x + q
        if not minimiser:
            if ready is None:
                it += 1
                p = _face_step(s, g, free)
            else:
                p, ready = ready, None
            if np.any((x + p < lo) | (x + p > hi)):
                # projected search (Moré & Toraldo 1991): the full step projected onto the box, taken if it lowers
                # f; it holds every variable it puts on a bound at once, where the step to the first bound holds one
                trial = np.clip(x + p, lo, hi)
                if 0.5 * trial @ (s @ trial) + q @ trial < 0.5 * x @ (g + q):
                    at_lo |= free & (trial <= lo)
                    at_hi |= free & (trial >= hi) & ~at_lo
                    x = trial
                    continue
            # the largest feasible step along p, up to 1
            with np.errstate(divide="ignore", invalid="ignore"):
                up = np.where(free & (p > 0.0), (hi - x) / p, np.inf)
                down = np.where(free & (p < 0.0), (lo - x) / p, np.inf)
            ratio = np.minimum(up, down)
            alpha = float(min(1.0, ratio.min(initial=np.inf)))
            x = x + alpha * p
            if alpha < 1.0:
                hit = ratio <= alpha * (1.0 + rtol) + 1e-300
                hit_hi = hit & (up <= down)
                at_hi |= hit_hi
                at_lo |= hit & ~hit_hi
                x = np.where(at_lo, lo, np.where(at_hi, hi, x))
                continue
            minimiser = True
            g = s @ x + q
        # multipliers of the held variables: g ≥ 0 at a lower bound, ≤ 0 at an upper one
        tol = rtol * scale
        wrong = np.where(at_lo & ~fixed, -g, 0.0) + np.where(at_hi & ~fixed, g, 0.0)
        if not np.any(wrong > tol):
            return BoxQPResult(x, it, True, at_lo.copy(), at_hi.copy())
        release = wrong > tol
        worst = int(np.argmax(wrong))
        while release.sum() > 1:
            # all at once if the face's minimiser moves every released variable into the box, else those it moves
            # inward, tried again, down to the worst one alone (which moves inward: its multiplier is the
            # directional derivative along its release)
            p = _face_step(s, g, free | release)
            it += 1
            inward = np.where(at_lo, p > 0.0, p < 0.0)
            if np.all(inward[release]):
                ready = p  # the next face's step: x and g unchanged
                break
            subset = release & inward
            if subset.sum() < 2:
                release = np.zeros(n, bool)
                release[worst] = True
                break
            release = subset
        at_lo &= ~release
        at_hi &= ~release
        minimiser = False
    return BoxQPResult(x, it, False, at_lo.copy(), at_hi.copy())
