"""The compiled box QP (numba): :func:`solver.contact.box_qp.solve_box_qp` for QPs whose faces are factored afresh
(n ≤ ``box_qp.FRESH_UP_TO``), the whole active-set loop in one call.

The same method, steps and tests as the numpy implementation in :mod:`solver.contact.box_qp` (which stays the
reference and the fallback): face steps p_F = −S_FF⁻¹ g_F, the projected search of Moré & Toraldo, the step to the
first bound, the release of held variables with wrong-signed multipliers. Where the numpy method factors each face's
S_FF afresh, the kernel keeps one Cholesky factor and updates it as the face changes by a few variables (a row
deleted by Givens rotations, one appended by a triangular solve: O(k²) each instead of O(k³)), refining each step
once against S_FF; on the capstan's QPs (~100 rows) the solutions agree with the numpy method's to a backward error
|S Δx| ≤ 1e-14 |S| |x| (tests/solver/contact/test_compiled_contact_qps.py). Loaded with the compiled Newton
iteration (:mod:`solver.core.compiled`), sharing its disk cache.
"""

from __future__ import annotations

import importlib

import numpy as np

nb = importlib.import_module("numba")  # (imported by name: numba ships no type information)

_JIT = dict(cache=True, nogil=True, error_model="numpy")


@nb.njit(**_JIT)
def _refactor(s, free, low, order, size):
    """Factor S_FF afresh (LAPACK's Cholesky through numba): ``order`` the free variables, ``low`` its lower factor."""
    idx = np.flatnonzero(free)
    k = idx.size
    sub = np.empty((k, k))
    for a in range(k):
        order[a] = idx[a]
        for b in range(k):
            sub[a, b] = s[idx[a], idx[b]]
    low[:, :] = 0.0
    if k:
        low[:k, :k] = np.linalg.cholesky(sub)
    size[0], size[1] = k, 0


@nb.njit(**_JIT)
def _delete(low, order, size, at):
    """Remove the variable at factor position ``at``: its row out of L, then Givens rotations of the columns at
    ≥ ``at`` from the right (L Lᵀ unchanged by them) to make L triangular again (Golub & Van Loan 2013, §6.5.4)."""
    k = size[0]
    for i in range(at, k - 1):
        order[i] = order[i + 1]
        for c in range(k):
            low[i, c] = low[i + 1, c]
    low[k - 1, :k] = 0.0
    for j in range(at, k - 1):
        a, b = low[j, j], low[j, j + 1]
        r = np.hypot(a, b)
        c, sn = a / r, b / r
        low[j, j], low[j, j + 1] = r, 0.0
        for i in range(j + 1, k - 1):
            x, z = low[i, j], low[i, j + 1]
            low[i, j] = c * x + sn * z
            low[i, j + 1] = c * z - sn * x
    size[0] = k - 1


@nb.njit(**_JIT)
def _append(s, low, order, size, var):
    """Add the variable ``var`` as L's last row: l = L⁻¹ S_F,var, the diagonal √(S_var,var − lᵀl); False where that
    is not positive (rounding: the caller factors afresh)."""
    k = size[0]
    for a in range(k):
        acc = s[order[a], var]
        for b in range(a):
            acc -= low[a, b] * low[k, b]
        low[k, a] = acc / low[a, a]
    d = s[var, var]
    for b in range(k):
        d -= low[k, b] * low[k, b]
    if not d > 0.0:
        return False
    low[k, k] = np.sqrt(d)
    order[k] = var
    size[0] = k + 1
    return True


@nb.njit(**_JIT)
def _follow(s, free, low, order, size):
    """Bring the factor of S_FF to the free set ``free``: deletions and additions of single variables while they are
    fewer than a quarter of the set (each O(k²)), else a fresh factorisation (O(k³))."""
    k = size[0]
    held = np.zeros(0, np.int64)
    for a in range(k - 1, -1, -1):  # from the back: the earlier positions stay where they are
        if not free[order[a]]:
            held = np.append(held, a)
    inside = np.zeros(free.size, np.bool_)
    for a in range(k):
        inside[order[a]] = True
    added = np.flatnonzero(free & ~inside)
    target = int(free.sum())
    if held.size + added.size > max(2, target // 4):
        _refactor(s, free, low, order, size)
        return
    for at in held:
        _delete(low, order, size, at)
    for var in added:
        if not _append(s, low, order, size, var):
            _refactor(s, free, low, order, size)
            return
    size[1] += held.size + added.size


@nb.njit(**_JIT)
def _triangular(low, k, rhs):
    """x with L Lᵀ x = rhs (the first k rows and columns of ``low``)."""
    y = np.empty(k)
    for a in range(k):
        acc = rhs[a]
        for b in range(a):
            acc -= low[a, b] * y[b]
        y[a] = acc / low[a, a]
    for a in range(k - 1, -1, -1):
        acc = y[a]
        for b in range(a + 1, k):
            acc -= low[b, a] * y[b]
        y[a] = acc / low[a, a]
    return y


@nb.njit(**_JIT)
def face_step(s, g, free, low, order, size):
    """p with S_FF p_F = −g_F, p = 0 on the held variables: the Cholesky factor of S_FF (``low`` in the variables'
    ``order``) kept up to date by :func:`_follow`; a factor updated since it was made afresh refines p once
    against S_FF itself."""
    _follow(s, free, low, order, size)
    k = size[0]
    p = np.zeros(g.size)
    rhs = np.empty(k)
    for a in range(k):
        rhs[a] = -g[order[a]]
    step = _triangular(low, k, rhs)
    if size[1]:
        for a in range(k):
            acc = rhs[a]
            for b in range(k):
                acc -= s[order[a], order[b]] * step[b]
            rhs[a] = acc
        step += _triangular(low, k, rhs)
    for a in range(k):
        p[order[a]] = step[a]
    return p


@nb.njit(**_JIT)
def _descend(s, q, lo, hi, x, g, free, p, at_lo, at_hi, rtol):  # noqa: PLR0913 (numba: arrays, no objects)
    """One step along the face step ``p`` (box_qp._descend): returns the new x and whether it met a bound (else x
    is the face's minimiser); ``at_lo``/``at_hi`` updated in place."""
    outside = np.any((x + p < lo) | (x + p > hi))
    if outside:
        trial = np.minimum(np.maximum(x + p, lo), hi)
        if 0.5 * (trial @ (s @ trial)) + q @ trial < 0.5 * (x @ (g + q)):
            for i in range(x.size):
                if free[i] and trial[i] <= lo[i]:
                    at_lo[i] = True
                elif free[i] and trial[i] >= hi[i] and not at_lo[i]:
                    at_hi[i] = True
            return trial, True
    up = np.where(free & (p > 0.0), (hi - x) / p, np.inf)
    down = np.where(free & (p < 0.0), (lo - x) / p, np.inf)
    ratio = np.minimum(up, down)
    alpha = min(1.0, ratio.min()) if ratio.size else 1.0
    x = x + alpha * p
    if alpha < 1.0:
        for i in range(x.size):
            if ratio[i] <= alpha * (1.0 + rtol) + 1e-300:
                if up[i] <= down[i]:
                    at_hi[i] = True
                else:
                    at_lo[i] = True
            if at_lo[i]:
                x[i] = lo[i]
            elif at_hi[i]:
                x[i] = hi[i]
        return x, True
    return x, False


@nb.njit(**_JIT)
def _release(s, g, free, wrong, tol, at_lo, at_hi, factor):  # noqa: PLR0913 (numba: arrays, no objects)
    """Release held variables with wrong-signed multipliers (box_qp._release); returns the next face's step if a
    trial step made it (else an empty array) and the face steps taken."""
    n = g.size
    release = wrong > tol
    worst = np.argmax(wrong)
    ready = np.zeros(0)
    solves = 0
    while release.sum() > 1:
        p = face_step(s, g, free | release, *factor)
        solves += 1
        inward = np.where(at_lo, p > 0.0, p < 0.0)
        if np.all(inward[release]):
            ready = p  # the next face's step: x and g unchanged
            break
        subset = release & inward
        if subset.sum() < 2:
            release = np.zeros(n, np.bool_)
            release[worst] = True
            break
        release = subset
    for i in range(n):
        if release[i]:
            at_lo[i] = False
            at_hi[i] = False
    return ready, solves


@nb.njit(**_JIT)
def solve(s, q, lo, hi, x, fixed, cap, rtol, scale):  # noqa: PLR0913 (numba: arrays, no objects)
    """The active-set loop of box_qp.solve_box_qp from the projected start ``x``: (x, face solves, converged,
    at_lo, at_hi)."""
    at_lo = x <= lo
    at_hi = (x >= hi) & ~at_lo
    minimiser = False
    ready = np.zeros(0)
    it = 0
    tol = rtol * scale
    # the factor of S_FF: L, the variables in its order, (its size, updates since made afresh)
    factor = (np.zeros((x.size, x.size)), np.zeros(x.size, np.int64), np.zeros(2, np.int64))
    _refactor(s, ~(at_lo | at_hi), *factor)
    while it < cap:
        free = ~(at_lo | at_hi)
        g = s @ x + q
        if not minimiser:
            if ready.size:
                p, ready = ready, np.zeros(0)
            else:
                it += 1
                p = face_step(s, g, free, *factor)
            x, met = _descend(s, q, lo, hi, x, g, free, p, at_lo, at_hi, rtol)
            if met:
                continue
            minimiser = True
            g = s @ x + q
        wrong = np.where(at_lo & ~fixed, -g, 0.0) + np.where(at_hi & ~fixed, g, 0.0)
        if not np.any(wrong > tol):
            return x, it, True, at_lo, at_hi
        ready, solves = _release(s, g, free, wrong, tol, at_lo, at_hi, factor)
        it += solves
        minimiser = False
    return x, it, False, at_lo, at_hi
