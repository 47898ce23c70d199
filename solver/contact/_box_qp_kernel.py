"""The compiled box QP (numba): :func:`solver.contact.box_qp.solve_box_qp` for QPs whose faces are factored afresh
(n ≤ ``box_qp.FRESH_UP_TO``), the whole active-set loop in one call.

The same method, steps and tests as the numpy implementation in :mod:`solver.contact.box_qp` (which stays the
reference and the fallback): face steps by a Cholesky factorisation of S_FF, the projected search of Moré & Toraldo,
the step to the first bound, the release of held variables with wrong-signed multipliers. Loaded with the compiled
Newton iteration (:mod:`solver.core.compiled`), sharing its disk cache.
"""

from __future__ import annotations

import importlib

import numpy as np

nb = importlib.import_module("numba")  # (imported by name: numba ships no type information)

_JIT = dict(cache=True, nogil=True, error_model="numpy")


@nb.njit(**_JIT)
def face_step(s, g, free):
    """p with S_FF p_F = −g_F, p = 0 on the held variables (Cholesky of S_FF, two triangular solves)."""
    n = g.size
    p = np.zeros(n)
    idx = np.flatnonzero(free)
    k = idx.size
    if k == 0:
        return p
    sub = np.empty((k, k))
    for a in range(k):
        for b in range(k):
            sub[a, b] = s[idx[a], idx[b]]
    low = np.linalg.cholesky(sub)
    y = np.empty(k)
    for a in range(k):  # L y = −g_F
        acc = -g[idx[a]]
        for b in range(a):
            acc -= low[a, b] * y[b]
        y[a] = acc / low[a, a]
    for a in range(k - 1, -1, -1):  # Lᵀ p_F = y
        acc = y[a]
        for b in range(a + 1, k):
            acc -= low[b, a] * p[idx[b]]
        p[idx[a]] = acc / low[a, a]
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
def _release(s, g, free, wrong, tol, at_lo, at_hi):
    """Release held variables with wrong-signed multipliers (box_qp._release); returns the next face's step if a
    trial step made it (else an empty array) and the face steps taken."""
    n = g.size
    release = wrong > tol
    worst = np.argmax(wrong)
    ready = np.zeros(0)
    solves = 0
    while release.sum() > 1:
        p = face_step(s, g, free | release)
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
    while it < cap:
        free = ~(at_lo | at_hi)
        g = s @ x + q
        if not minimiser:
            if ready.size:
                p, ready = ready, np.zeros(0)
            else:
                it += 1
                p = face_step(s, g, free)
            x, met = _descend(s, q, lo, hi, x, g, free, p, at_lo, at_hi, rtol)
            if met:
                continue
            minimiser = True
            g = s @ x + q
        wrong = np.where(at_lo & ~fixed, -g, 0.0) + np.where(at_hi & ~fixed, g, 0.0)
        if not np.any(wrong > tol):
            return x, it, True, at_lo, at_hi
        ready, solves = _release(s, g, free, wrong, tol, at_lo, at_hi)
        it += solves
        minimiser = False
    return x, it, False, at_lo, at_hi
