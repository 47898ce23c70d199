"""The compiled phases 2 and 3 of the disk QP (numba): :func:`solver.contact.disk_qp._finish`'s rounds of box QPs
(:func:`solver.contact._box_qp_kernel.solve`) and :func:`~solver.contact.disk_qp._polish`'s Newton iteration on the
free rows and the circle disks' angles, in one call.

The same steps as the numpy implementation in :mod:`solver.contact.disk_qp` (which stays the reference and the
fallback): the reduced Hessian TᵀST + diag(b_j (−c_jᵀ∇f_j)) gathered from S's rows and columns, its Cholesky
factorisation (a Hessian that is not positive definite stops the iteration, as LAPACK's failure does there), the
ratio test on the free bounded rows and the backtracking line search on f or the reduced gradient. Loaded with the
compiled Newton iteration (:mod:`solver.core.compiled`), sharing its disk cache.
"""

from __future__ import annotations

import importlib

import numpy as np

from ._box_qp_kernel import solve as box_solve

nb = importlib.import_module("numba")  # (imported by name: numba ships no type information)

_JIT = dict(cache=True, nogil=True, error_model="numpy")


@nb.njit(**_JIT)
def cholesky_factor(a):
    """The lower Cholesky factor of the symmetric ``a`` and whether ``a`` is positive definite (False: the factor
    is undefined)."""
    m = a.shape[0]
    low = np.zeros((m, m))
    for j in range(m):
        d = a[j, j]
        for k in range(j):
            d -= low[j, k] * low[j, k]
        if not d > 0.0:
            return low, False
        low[j, j] = np.sqrt(d)
        for i in range(j + 1, m):
            v = a[i, j]
            for k in range(j):
                v -= low[i, k] * low[j, k]
            low[i, j] = v / low[j, j]
    return low, True


@nb.njit(**_JIT)
def factored_solve(low, b):
    """x with L Lᵀ x = b (two triangular solves)."""
    m = b.size
    x = np.empty(m)
    for i in range(m):
        v = b[i]
        for k in range(i):
            v -= low[i, k] * x[k]
        x[i] = v / low[i, i]
    for i in range(m - 1, -1, -1):
        v = x[i]
        for k in range(i + 1, m):
            v -= low[k, i] * x[k]
        x[i] = v / low[i, i]
    return x


@nb.njit(**_JIT)
def cholesky_solve(a, b):
    """x with a x = b for the symmetric ``a`` (its Cholesky factor), and whether ``a`` was positive definite (False:
    x is undefined)."""
    low, ok = cholesky_factor(a)
    if not ok:
        return b, False
    return factored_solve(low, b), True


@nb.njit(**_JIT)
def reduced_system(s, g, fi, ca, cb, cr, cos, sin):
    """The reduced Hessian TᵀST + diag(curvature) on θ and the reduced gradient Tᵀ∇f (disk_qp._reduced_hessian),
    and whether every disk's curvature −b_j c_jᵀ∇f_j is positive."""
    nf, nc = fi.size, ca.size
    m = nf + nc
    da, db = -cr * sin, cr * cos
    hess = np.empty((m, m))
    grad = np.empty(m)
    ok = True
    for a in range(nf):
        grad[a] = g[fi[a]]
        for b in range(nf):
            hess[a, b] = s[fi[a], fi[b]]
        for j in range(nc):
            hess[a, nf + j] = s[fi[a], ca[j]] * da[j] + s[fi[a], cb[j]] * db[j]
            hess[nf + j, a] = da[j] * s[ca[j], fi[a]] + db[j] * s[cb[j], fi[a]]
    for i in range(nc):
        grad[nf + i] = da[i] * g[ca[i]] + db[i] * g[cb[i]]
        for j in range(nc):
            st_a = s[ca[i], ca[j]] * da[j] + s[ca[i], cb[j]] * db[j]
            st_b = s[cb[i], ca[j]] * da[j] + s[cb[i], cb[j]] * db[j]
            hess[nf + i, nf + j] = da[i] * st_a + db[i] * st_b
        curvature = -cr[i] * (cos[i] * g[ca[i]] + sin[i] * g[cb[i]])
        ok = ok and curvature > 0.0
        hess[nf + i, nf + i] += curvature
    return hess, grad, ok


@nb.njit(**_JIT)
def _value(s, q, v):
    """(f(v), ∇f(v)) from one product with S."""
    sv = s @ v
    return 0.5 * (v @ sv) + q @ v, sv + q


@nb.njit(**_JIT)
def _reduced_norm(g, fi, ca, cb, cr, th):
    """The largest entry of the reduced gradient Tᵀ∇f at the angles ``th``."""
    out = 0.0
    for a in range(fi.size):
        out = max(out, abs(g[fi[a]]))
    for j in range(ca.size):
        out = max(out, abs(cr[j] * (-np.sin(th[j]) * g[ca[j]] + np.cos(th[j]) * g[cb[j]])))
    return out


@nb.njit(**_JIT)
def polish(s, q, n_bounded, fi, ca, cb, cr, y, theta, steps, rounding, final):  # noqa: PLR0913, C901 (numba)
    """disk_qp._polish from the start on the circles (``y``, its angles ``theta``; ``fi`` the free rows, ``ca``/
    ``cb``/``cr`` the circle disks' rows and radii; ``rounding``, ``final``: disk_qp.ROUNDING, disk_qp.FINAL):
    (y, Newton steps taken)."""
    nf = fi.size
    value, g = _value(s, q, y)
    taken = 0
    for _ in range(4 * steps):
        if taken >= steps:
            break
        hess, grad, positive = reduced_system(s, g, fi, ca, cb, cr, np.cos(theta), np.sin(theta))
        if not positive:
            break
        step, factored = cholesky_solve(hess, grad)
        if not factored:
            break
        step = -step
        slope = grad @ step
        norm = np.max(np.abs(grad)) if grad.size else 0.0
        if not slope < -rounding * abs(value):
            break
        ratio = np.full(nf, np.inf)
        first = 1.0
        for a in range(nf):
            if fi[a] < n_bounded and step[a] < 0.0:
                ratio[a] = -y[fi[a]] / step[a]
                first = min(first, ratio[a])
        alpha = first
        trial, th = y.copy(), theta.copy()
        value_t, g_t = value, g
        while alpha > 1e-6 * first:
            trial = y.copy()
            for a in range(nf):
                trial[fi[a]] += alpha * step[a]
            th = theta + alpha * step[nf:]
            for j in range(ca.size):
                trial[ca[j]] = cr[j] * np.cos(th[j])
                trial[cb[j]] = cr[j] * np.sin(th[j])
            for i in range(n_bounded):
                trial[i] = max(trial[i], 0.0)  # rounding at the stopping row
            value_t, g_t = _value(s, q, trial)
            if (
                value_t <= value + 1e-4 * alpha * slope
                or _reduced_norm(g_t, fi, ca, cb, cr, th) < (1.0 - 1e-4 * alpha) * norm
            ):
                break
            alpha *= 0.5
        if alpha <= 1e-6 * first:
            break
        if alpha == first and first < 1.0:
            keep = ratio > first * (1.0 + 1e-12)
            for a in range(nf):
                if not keep[a]:
                    trial[fi[a]] = 0.0
            fi = fi[keep]
            nf = fi.size
            value_t, g_t = _value(s, q, trial)
        else:
            taken += 1
        y, theta, value, g = trial, th, value_t, g_t
        if alpha == 1.0 and -slope <= final * abs(value):
            break
    return y, taken


@nb.njit(**_JIT)
def kkt_violation(s, q, n_bounded, rows_a, rows_b, radius, x):
    """disk_qp.disk_kkt_violation: the natural map's largest entry |x − proj(x − ∇f)|."""
    trial = x - (s @ x + q)
    out = 0.0
    for i in range(n_bounded):
        out = max(out, abs(x[i] - max(trial[i], 0.0)))
    free = np.ones(x.size, np.bool_)
    free[:n_bounded] = False
    for j in range(rows_a.size):
        a, b = rows_a[j], rows_b[j]
        free[a] = free[b] = False
        scale = min(1.0, radius[j] / max(np.hypot(trial[a], trial[b]), 1e-300))
        out = max(out, abs(x[a] - trial[a] * scale), abs(x[b] - trial[b] * scale))
    for i in range(x.size):
        if free[i]:
            out = max(out, abs(x[i] - trial[i]))
    return out


@nb.njit(**_JIT)
def _polish_start(y, lo, hi, rows_a, rows_b, radius, sliding):
    """disk_qp._active and disk_qp._onto_circles: the free rows, the circle disks' rows and radii, the start on the
    circles and its angles."""
    circle = sliding & (radius > 0.0)
    free = ~((y <= lo) | (y >= hi))
    for j in range(radius.size):
        if circle[j] or radius[j] <= 0.0:
            free[rows_a[j]] = free[rows_b[j]] = False
    ca, cb, cr = rows_a[circle], rows_b[circle], radius[circle]
    y = y.copy()
    theta = np.empty(ca.size)
    for j in range(ca.size):
        a, b = ca[j], cb[j]
        held_a = y[a] <= lo[a] or y[a] >= hi[a]
        held_b = y[b] <= lo[b] or y[b] >= hi[b]
        if held_a and not held_b and abs(y[b]) <= cr[j]:
            y[a] = np.copysign(np.sqrt(cr[j] ** 2 - y[b] ** 2), y[a])
        elif held_b and not held_a and abs(y[a]) <= cr[j]:
            y[b] = np.copysign(np.sqrt(cr[j] ** 2 - y[a] ** 2), y[b])
        theta[j] = np.arctan2(y[b], y[a])
        y[a], y[b] = cr[j] * np.cos(theta[j]), cr[j] * np.sin(theta[j])
    return np.flatnonzero(free), ca, cb, cr, y, theta


@nb.njit(**_JIT)
def _inscribed_boxes(y, sliding, rows_a, rows_b, radius, lo, hi):
    """The boxes inscribed along the sliding disks' directions (the whole box ±b_j for the others), set in ``lo``/
    ``hi``, and a copy of y with the sliding disks at their corner."""
    y = y.copy()
    for j in range(radius.size):
        a, b = rows_a[j], rows_b[j]
        length = np.hypot(y[a], y[b])
        ua, ub = 1.0, 1.0
        if sliding[j] and length > 0.0:
            ua, ub = abs(y[a]) / length, abs(y[b]) / length
        lo[a], hi[a] = -radius[j] * ua, radius[j] * ua
        lo[b], hi[b] = -radius[j] * ub, radius[j] * ub
        if sliding[j] and length > 0.0:
            y[a], y[b] = np.copysign(hi[a], y[a]), np.copysign(hi[b], y[b])
    return y


@nb.njit(**_JIT)
def finish(s, q, n_bounded, rows_a, rows_b, radius, y, sliding, lo, hi, max_rounds, rounding, final):  # noqa: PLR0913
    """disk_qp._finish (phases 2 and 3) with the compiled box QP: (y, box QP solves, Newton steps, settled,
    sliding); ``lo``/``hi`` set in place to the last box QP's bounds."""
    sliding = sliding.copy()
    solves, newton, settled = 0, 0, False
    fixed = np.zeros(y.size, np.bool_)
    for _ in range(max_rounds):
        x = np.minimum(np.maximum(_inscribed_boxes(y, sliding, rows_a, rows_b, radius, lo, hi), lo), hi)
        for i in range(y.size):
            fixed[i] = lo[i] == hi[i]
        scale = max(np.max(np.abs(q)), np.max(np.abs(s)) * np.max(np.abs(x)), 1e-300)
        y, its, converged, _, _ = box_solve(s, q, lo, hi, x, fixed, 4 * y.size + 20, 1e-12, scale)
        solves += its
        outside = False
        for j in range(radius.size):
            a, b = rows_a[j], rows_b[j]
            sliding[j] = sliding[j] and (y[a] <= lo[a] or y[a] >= hi[a] or y[b] <= lo[b] or y[b] >= hi[b])
            if not sliding[j] and np.hypot(y[a], y[b]) > radius[j] * (1.0 + 1e-12):
                sliding[j] = outside = True  # a disk leaving its circle: its inscribed box next round
        if outside:
            continue
        fi, ca, cb, cr, start, theta = _polish_start(y, lo, hi, rows_a, rows_b, radius, sliding)
        if ca.size:
            y, taken = polish(s, q, n_bounded, fi, ca, cb, cr, start, theta, 8, rounding, final)
            newton += taken
        violation = kkt_violation(s, q, n_bounded, rows_a, rows_b, radius, y)
        settled = converged and violation <= 1e-9 * max(np.max(np.abs(y)), 1e-300)
        if settled:
            break
    return y, solves, newton, settled, sliding


@nb.njit(**_JIT)
def sensitivity(s, q, rows_a, rows_b, radius, y, lo, hi, sliding):  # noqa: PLR0913 (numba: arrays, no objects)
    """disk_qp.radius_sensitivity at the solution ``y`` (its last box ``lo``/``hi``, its ``sliding`` disks): ∂y/∂b
    (n, n_disks), zeros where the active set is degenerate."""
    n = y.size
    out = np.zeros((n, radius.size))
    circle = sliding & (radius > 0.0)
    free = ~((y <= lo) | (y >= hi))
    for j in range(radius.size):
        if circle[j] or radius[j] <= 0.0:
            free[rows_a[j]] = free[rows_b[j]] = False
    fi, which = np.flatnonzero(free), np.flatnonzero(circle)
    ca, cb, cr = rows_a[circle], rows_b[circle], radius[circle]
    nf, nc = fi.size, ca.size
    if nc == 0:
        return out
    theta = np.arctan2(y[cb], y[ca])
    cos, sin = np.cos(theta), np.sin(theta)
    g = s @ y + q
    hess, _, positive = reduced_system(s, g, fi, ca, cb, cr, cos, sin)
    low, factored = cholesky_factor(hess)
    if not (positive and factored):
        return out
    da, db = -cr * sin, cr * cos
    rhs = np.empty(nf + nc)
    for j in range(nc):
        # ∂G/∂b_j = Tᵀ S ∂y/∂b_j (∂y/∂b_j = c_j on disk j's rows) + d_jᵀ∇f_j on θ_j
        for a in range(nf):
            rhs[a] = s[fi[a], ca[j]] * cos[j] + s[fi[a], cb[j]] * sin[j]
        for i in range(nc):
            sa = s[ca[i], ca[j]] * cos[j] + s[ca[i], cb[j]] * sin[j]
            sb = s[cb[i], ca[j]] * cos[j] + s[cb[i], cb[j]] * sin[j]
            rhs[nf + i] = da[i] * sa + db[i] * sb
        rhs[nf + j] += -sin[j] * g[ca[j]] + cos[j] * g[cb[j]]
        dz = factored_solve(low, rhs)
        col = which[j]
        for a in range(nf):  # ∂y/∂b_j = −T dz + c_j
            out[fi[a], col] = -dz[a]
        for i in range(nc):
            out[ca[i], col] = -da[i] * dz[nf + i]
            out[cb[i], col] = -db[i] * dz[nf + i]
        out[ca[j], col] += cos[j]
        out[cb[j], col] += sin[j]
    return out
