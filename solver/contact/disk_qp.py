"""Convex quadratic programs with bounds and disks: the contact QP with Tresca friction on a round cone section.

    minimise  f(y) = ½ yᵀ S y + qᵀ y   subject to   y_i ≥ 0 (i < n_bounded),   ‖(y_a(j), y_b(j))‖ ≤ b_j (disks j)

(S symmetric positive definite; a normal impulse per contact, two tangential impulses per disk.) The method has three
phases:

1. A barrier method (Boyd & Vandenberghe 2004, "Convex Optimization", §11.3): the minimisers of
   ψ_t(y) = t f(y) − Σ log y_i − Σ log(b_j² − ‖y_j‖²) for t growing by ``growth`` (the central path), each found
   by Newton's method with a backtracking line search from the last. Both barriers are self-concordant (the
   logarithm of an affine and of a concave quadratic function: §9.6.2, §11.6.1), so each centring takes a number
   of Newton steps bounded independently of S and q (§11.5), and a central point is within m/t of the optimum
   in f (m = the number of constraints; §11.2.2). The barrier stops at a relative gap ``gap_rtol``.
2. An active-set finish: with u_j the direction of disk j's point where it lies on its circle, the box inscribed
   in the disk along u_j, |y_a| ≤ b_j |u_a|, |y_b| ≤ b_j |u_b|, lies in the disk and holds its minimiser at a
   corner when u_j is the minimiser's direction; there the disk's KKT condition ∇f_j = −ν y_j (ν ≥ 0) gives each
   tangent's gradient the sign of its held bound, so the minimiser of the disk QP is the KKT point, hence the
   minimiser, of the box QP over these boxes (the whole box b_j for a disk strictly inside: its constraint is
   inactive in both). :func:`~solver.contact.box_qp.solve_box_qp` (an active-set method with finite termination)
   solves that box QP from the barrier's point, its bounded rows with y_i S_ii < ∇f_i (the rows the barrier's gap
   leaves off the solution: y_i ∇f_i = 1/t on the central path) set on their bound: every bound row exactly on or
   off its bound, every disk's point inside its disk. A disk whose box point leaves its circle is given its
   inscribed box along that point, one the box QP holds on neither side of its corner sticks, and the box QP is
   solved again.
3. Newton's method on the sliding disks' angles (y_j = b_j (cos θ_j, sin θ_j)) with the box QP's active set: f is
   smooth in the free rows and θ there, so each step squares the direction's error left by the barrier's gap; a
   free bounded row the step would take below 0 stops the step there and is held (the next box QP may release it).
   Phases 2 and 3 repeat from the polished directions until the natural map (:func:`disk_kkt_violation`) is below
   1e-9 of the largest impulse.

From a start ``x0`` (the last Newton iteration's impulses) phases 2 and 3 run first from the start's own active set
(its disks within 1 % of their radius sliding, their point put on the circle's corner); the barrier only where that
does not settle within eight box QPs (on the Slinky, ~1100 rows, a warm start settles in 0.03–0.1 s where the barrier
and its box QP took ~4 s). Phases 2 and 3 of QPs up to ``box_qp.FRESH_UP_TO`` rows run compiled
(:mod:`solver.contact._disk_qp_kernel`, the same steps in one numba call; ``DiskQPOptions(compiled=False)`` runs the
numpy implementation here, the reference and the fallback). Tested (tests/solver/contact/test_disk_qp.py) against a
closed form, and against scipy's SLSQP on random problems with condition numbers up to ~1e9; the compiled path
against this one on a capstan's QPs (tests/solver/contact/test_compiled_contact_qps.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from numpy.linalg import LinAlgError

from ..core import compiled
from .box_qp import FRESH_UP_TO, cholesky_factor, cholesky_solve, solve_box_qp

# phase 3 stops where Newton's step would lower f by at most this much of |f|: the step is then ~1e-13 of y (f's
# decrease is quadratic in it), which is rounding
ROUNDING = 1e-26
# ... and after a full step that lowered f by at most this much of |f| (a step of ~1e-10 of y: the next one,
# quadratically smaller, is rounding)
FINAL = 1e-20


@dataclass
class DiskQPResult:
    """``x``: the solution; ``newton``: Newton steps (the barrier's and the angles'); ``box_solves``: active-set
    subproblem solves; ``converged``: the natural map is below 1e-9 of the largest impulse (and the barrier, if it
    ran, reached its gap); ``lo``/``hi``: the bounds of the last box QP (a disk's tangents: ±b_j|u| on its circle,
    ±b_j inside); ``sliding``: (n_disks,) the disks whose point is on their circle."""

    x: np.ndarray
    newton: int
    box_solves: int
    converged: bool
    lo: np.ndarray
    hi: np.ndarray
    sliding: np.ndarray


def disk_kkt_violation(s, q, n_bounded, rows_a, rows_b, radius, x) -> float:
    """The largest violation of the QP's first-order conditions at ``x``: the natural map |x − proj(x − ∇f)|,
    the projection onto the half-lines and disks (0 exactly at the solution)."""
    g = s @ x + q
    trial = x - g
    proj = trial.copy()
    proj[:n_bounded] = np.maximum(trial[:n_bounded], 0.0)
    pair = np.stack((trial[rows_a], trial[rows_b]), axis=1)
    length = np.linalg.norm(pair, axis=1)
    scale = np.minimum(1.0, np.asarray(radius, float) / np.maximum(length, 1e-300))
    proj[rows_a], proj[rows_b] = pair[:, 0] * scale, pair[:, 1] * scale
    return float(np.max(np.abs(x - proj), initial=0.0))


def _newton_step(s, g_f, y, bounded, rows_a, rows_b, radius, t):
    """Newton's step of ψ_t at ``y`` (g_f = ∇f(y)): (t S + ∇²φ) p = −(t ∇f + ∇φ); returns p and ∇ψ_t."""
    grad = t * g_f
    hess = t * s
    yb = y[bounded]
    grad[bounded] -= 1.0 / yb
    hess[bounded, bounded] += 1.0 / (yb * yb)
    ya, yt = y[rows_a], y[rows_b]
    slack = radius * radius - ya * ya - yt * yt
    grad[rows_a] += 2.0 * ya / slack
    grad[rows_b] += 2.0 * yt / slack
    two, four = 2.0 / slack, 4.0 / (slack * slack)
    hess[rows_a, rows_a] += two + four * ya * ya
    hess[rows_b, rows_b] += two + four * yt * yt
    hess[rows_a, rows_b] += four * ya * yt
    hess[rows_b, rows_a] += four * ya * yt
    try:
        p = -cholesky_solve(cholesky_factor(hess), grad)
    except LinAlgError:
        p = -np.linalg.solve(hess, grad)
    return p, grad


def _max_step(y, p, bounded, rows_a, rows_b, radius) -> float:
    """The largest α ≤ 1 with y + α p strictly feasible, times 0.99."""
    alpha = 1.0
    pb = p[bounded]
    down = pb < 0.0
    if down.any():
        alpha = min(alpha, 0.99 * float(np.min(-y[bounded][down] / pb[down])))
    a = p[rows_a] ** 2 + p[rows_b] ** 2  # ‖y + α p‖² = b²: a α² + 2 c α + e = 0, e < 0
    c = y[rows_a] * p[rows_a] + y[rows_b] * p[rows_b]
    e = y[rows_a] ** 2 + y[rows_b] ** 2 - radius * radius
    moving = a > 0.0
    if moving.any():
        root = (-c[moving] + np.sqrt(c[moving] ** 2 - a[moving] * e[moving])) / a[moving]
        alpha = min(alpha, 0.99 * float(np.min(root)))
    return alpha


def _psi(f_y, y, bounded, rows_a, rows_b, radius, t) -> float:
    """ψ_t(y) given f(y) (+∞ outside the constraints)."""
    slack = radius * radius - y[rows_a] ** 2 - y[rows_b] ** 2
    yb = y[bounded]
    if np.any(yb <= 0.0) or np.any(slack <= 0.0):
        return np.inf
    return float(t * f_y - np.sum(np.log(yb)) - np.sum(np.log(slack)))


def _barrier(s, q, y, bounded, disks, options: DiskQPOptions):
    """Phase 1: the barrier method from the strictly feasible ``y``, t₀ = m / Σ|y_i ∇f_i| (on the central path
    y_i ∇f_i = 1/t per bound), ``disks`` = (rows_a, rows_b, radius). Returns (y, Newton steps, reached the gap)."""
    rows_a, rows_b, radius = disks
    growth, gap_rtol, max_newton = options.growth, options.gap_rtol, options.max_newton
    m = int(bounded.sum()) + rows_a.size
    t = m / max(float(np.sum(np.abs(y * (s @ y + q)))), 1e-300)
    steps = 0
    while True:
        for _ in range(50):  # centring: Newton with backtracking (Armijo 1/4, halving) until λ²/2 ≤ 1e-8
            sy = s @ y
            p, grad = _newton_step(s, sy + q, y, bounded, rows_a, rows_b, radius, t)
            decrement = -float(grad @ p)
            if decrement <= 2e-8 or steps >= max_newton:
                break
            steps += 1
            alpha = _max_step(y, p, bounded, rows_a, rows_b, radius)
            # f(y + α p) = f(y) + α ∇f·p + ½ α² pᵀS p: one product with S per Newton step, not per trial
            fy, slope, curve = float(0.5 * y @ sy + q @ y), float((sy + q) @ p), float(p @ (s @ p))
            psi = _psi(fy, y, bounded, rows_a, rows_b, radius, t)
            while alpha > 1e-12 and _psi(
                fy + alpha * slope + 0.5 * alpha * alpha * curve, y + alpha * p, bounded, rows_a, rows_b, radius, t
            ) > (psi - 0.25 * alpha * decrement):
                alpha *= 0.5
            if alpha <= 1e-12:
                break
            y = y + alpha * p
        energy = abs(float(y @ (s @ y))) + abs(float(q @ y))
        if m / t <= gap_rtol * energy or steps >= max_newton:
            return y, steps, m / t <= gap_rtol * energy
        t *= growth


@dataclass(frozen=True, kw_only=True)
class DiskQPOptions:
    """``growth``: the barrier parameter's factor per centring, ``gap_rtol``: the barrier's stop, m/t ≤ gap_rtol
    (|yᵀSy| + |qᵀy|); ``max_newton``: Newton steps at most; ``max_rounds``: box QPs at most (a disk leaving its
    circle in one gets its inscribed box in the next); ``compiled``: the box QPs and phase 3 run compiled where the
    compiled path is active (:mod:`solver.contact._disk_qp_kernel`, the same steps; the numpy implementation here is
    the reference and the fallback)."""

    growth: float = 20.0
    gap_rtol: float = 1e-9
    max_newton: int = 400
    max_rounds: int = 4
    compiled: bool = True


def solve_disk_qp(s, q, n_bounded: int, rows_a, rows_b, radius, x0=None, options: DiskQPOptions | None = None):
    """Solve the QP of the module docstring. ``s`` (n, n) symmetric positive definite, ``q`` (n,), rows
    0…``n_bounded``−1 bounded below by 0, the other rows free but for the disks: disk j holds rows ``rows_a[j]``
    and ``rows_b[j]`` within ``radius[j]`` ≥ 0 (a disk of radius 0 holds its rows at 0). ``x0``: a start (moved
    strictly inside the constraints for the barrier); ``options``: :class:`DiskQPOptions`. Returns a
    :class:`DiskQPResult`."""
    options = options or DiskQPOptions()
    s = np.asarray(s, dtype=float)
    q = np.asarray(q, dtype=float)
    n = q.size
    rows_a = np.asarray(rows_a, dtype=np.int64)
    rows_b = np.asarray(rows_b, dtype=np.int64)
    radius = np.asarray(radius, dtype=float)
    if s.shape != (n, n) or rows_a.shape != rows_b.shape or radius.shape != rows_a.shape:
        raise ValueError("disk QP: S must be (n, n) and the disks' rows and radii of one length")
    if np.any(radius < 0.0) or not np.all(np.isfinite(radius)):
        raise ValueError("disk QP: every disk's radius must be finite and ≥ 0")
    disk_rows = np.concatenate((rows_a, rows_b))
    if np.any(disk_rows < n_bounded) or np.any(disk_rows >= n) or np.unique(disk_rows).size != disk_rows.size:
        raise ValueError("disk QP: the disks' rows must be distinct rows after the bounded ones")
    lo = np.full(n, -np.inf)
    hi = np.full(n, np.inf)
    lo[:n_bounded] = 0.0
    lo[rows_a], hi[rows_a] = -radius, radius
    lo[rows_b], hi[rows_b] = -radius, radius
    y = np.zeros(n) if x0 is None else np.array(x0, dtype=float)
    open_ = radius > 1e-12 * max(float(radius.max(initial=0.0)), 1e-300)
    if x0 is not None:
        # from the start's own active set (its disks on their circle sliding, the others sticking): where the
        # solution's is that one or is reached from it within eight box QPs, phases 2 and 3 alone find it (a warm
        # start: the last Newton iteration's impulses; the capstan runs took 92 s of CPU, 171 s with one box QP).
        # Within 1 % of the circle counts as on it: a start from the last step, on its circle of a slightly
        # different radius, otherwise starts every disk sticking (the capstan's first QPs: ~35 face steps, 14 at
        # 1e-3, 10 at 1e-2; at 1e-1 the misjudged disks took the barrier)
        start = y.copy()
        start[:n_bounded] = np.maximum(start[:n_bounded], 0.0)
        _into_disks(start, rows_a, rows_b, np.where(open_, radius, 0.0))
        on = open_ & (np.hypot(start[rows_a], start[rows_b]) >= radius * (1.0 - 1e-2))
        warm = _finish(s, q, n_bounded, (rows_a, rows_b, radius), start, on, (lo, hi), replace(options, max_rounds=8))
        if warm[3]:
            return DiskQPResult(warm[0], warm[2], warm[1], True, lo.copy(), hi.copy(), warm[4])
    newton = 0
    reached = True
    if open_.any():
        # phase 1 on the rows of the open disks, the bounded rows and the free rows (closed disks' rows held at 0)
        keep = np.ones(n, bool)
        keep[rows_a[~open_]] = keep[rows_b[~open_]] = False
        idx = np.flatnonzero(keep)
        where = np.full(n, -1, np.int64)
        where[idx] = np.arange(idx.size)
        ra, rb, rad = where[rows_a[open_]], where[rows_b[open_]], radius[open_]
        bounded = np.zeros(idx.size, bool)
        bounded[where[:n_bounded][keep[:n_bounded]]] = True
        ss, qs = s[np.ix_(idx, idx)], q[idx]
        ys = y[idx].copy()
        # a strictly feasible start near x0: bounded rows at least a hundredth of the impulses' scale, disks within
        # 0.9 of their radius
        scale = max(float(np.max(np.abs(ys), initial=0.0)), float(rad.max()), 1e-300)
        if scale <= 1e-300 or not np.any(ys):
            scale = max(float(np.max(np.abs(qs) / np.diag(ss), initial=0.0)), 1e-300)
        ys[bounded] = np.maximum(ys[bounded], 1e-2 * scale)
        _into_disks(ys, ra, rb, 0.9 * rad)
        ys, newton, reached = _barrier(ss, qs, ys, bounded, (ra, rb, rad), options)
        y = np.zeros(n)
        y[idx] = ys
        # the bounded rows whose impulse is below their gradient's scale (y_i S_ii < ∇f_i; on the central path
        # y_i ∇f_i = 1/t) start the box QP held at 0: from the barrier's strictly positive point the box QP would
        # hold the inactive rows one face step each (on the Slinky ~800 of ~1100 rows)
        off = y[:n_bounded] * np.diag(s)[:n_bounded] < (s @ y + q)[:n_bounded]
        y[:n_bounded][off] = 0.0
    # on its circle at the barrier's end: within 1e-3 of its radius (an active disk's slack falls with the gap, an
    # inactive disk's stays; one misjudged inside is reclassified after the box QP)
    length = np.hypot(y[rows_a], y[rows_b])
    sliding = open_ & (length >= radius * (1.0 - 1e-3))
    y, solves, polished, settled, sliding = _finish(
        s, q, n_bounded, (rows_a, rows_b, radius), y, sliding, (lo, hi), options
    )
    return DiskQPResult(y, newton + polished, solves, bool(reached and settled), lo.copy(), hi.copy(), sliding)


def _into_disks(y, rows_a, rows_b, radius) -> None:
    """Scale each disk's pair of rows of ``y`` (in place) onto the disk of ``radius`` where it lies outside."""
    shrink = np.minimum(1.0, radius / np.maximum(np.hypot(y[rows_a], y[rows_b]), 1e-300))
    y[rows_a] *= shrink
    y[rows_b] *= shrink


def _finish(s, q, n_bounded, disks, y, sliding, box, options: DiskQPOptions):
    """Phases 2 and 3 from ``y`` with the disks ``sliding`` on their circle: the box QP over the boxes inscribed
    along the sliding disks' directions (``box`` = (lo, hi), set in place), then Newton on their angles; again from
    the polished directions while the natural map is above 1e-9 of the largest impulse (``disks`` = (rows_a,
    rows_b, radius), ``options`` its ``max_rounds`` and ``compiled``). Returns (y, box QP solves, Newton steps, settled,
    sliding)."""
    rows_a, rows_b, radius = disks
    lo, hi = box
    if options.compiled and 0 < y.size <= FRESH_UP_TO and compiled.kernel("box_qp") is not None:
        kernel = compiled.kernel("disk_qp")
        if kernel is not None:  # the same rounds in one call (solver/contact/_disk_qp_kernel.py)
            out = kernel.finish(
                np.ascontiguousarray(s), q, int(n_bounded), rows_a, rows_b, radius, y, sliding, lo, hi,
                int(options.max_rounds), ROUNDING, FINAL,
            )  # fmt: skip
            return out[0], int(out[1]), int(out[2]), bool(out[3]), out[4]
    sliding = sliding.copy()
    length = np.hypot(y[rows_a], y[rows_b])
    solves, newton, settled = 0, 0, False
    for _ in range(options.max_rounds):
        u = np.ones((radius.size, 2))
        on = sliding & (length > 0.0)
        u[on, 0] = np.abs(y[rows_a[on]]) / length[on]
        u[on, 1] = np.abs(y[rows_b[on]]) / length[on]
        lo[rows_a], hi[rows_a] = -radius * u[:, 0], radius * u[:, 0]
        lo[rows_b], hi[rows_b] = -radius * u[:, 1], radius * u[:, 1]
        # the box QP starts with the sliding disks at their corner, exactly (a point a rounding inside its circle
        # would start free and take a face step per row back to the bound: 1–2 of the capstan's ~24 per QP)
        y = y.copy()
        y[rows_a[on]] = np.copysign(hi[rows_a[on]], y[rows_a[on]])
        y[rows_b[on]] = np.copysign(hi[rows_b[on]], y[rows_b[on]])
        res = solve_box_qp(s, q, lo, hi, x0=y, compiled_qp=options.compiled)
        y, solves = res.x, solves + res.iterations
        length = np.hypot(y[rows_a], y[rows_b])
        # a disk the box QP holds on neither side of its corner sticks (inside its inscribed box)
        sliding &= (
            (y[rows_a] <= lo[rows_a])
            | (y[rows_a] >= hi[rows_a])
            | (y[rows_b] <= lo[rows_b])
            | (y[rows_b] >= hi[rows_b])
        )
        outside = ~sliding & (length > radius * (1.0 + 1e-12))
        if outside.any():
            sliding |= outside
            continue
        y, polished = _polish(s, q, n_bounded, disks, y, box, sliding, options.compiled)
        newton += polished
        length = np.hypot(y[rows_a], y[rows_b])
        violation = disk_kkt_violation(s, q, n_bounded, rows_a, rows_b, radius, y)
        settled = res.converged and violation <= 1e-9 * max(float(np.max(np.abs(y), initial=0.0)), 1e-300)
        if settled:
            break
    return y, solves, newton, settled, sliding


def _active(y, lo, hi, rows_a, rows_b, radius, sliding):
    """The box QP's active set: the free rows (neither on a bound nor a circle disk's) and the disks on their
    circle (``sliding``, radius > 0)."""
    circle = sliding & (radius > 0.0)
    free = ~((y <= lo) | (y >= hi))
    free[rows_a[circle]] = free[rows_b[circle]] = False
    free[rows_a[radius <= 0.0]] = free[rows_b[radius <= 0.0]] = False
    return np.flatnonzero(free), circle


def _reduced_hessian(s, g, fi, ca, cb, cr, cos, sin):
    """With the free rows and the circle disks' angles θ as variables (y_j = b_j (cos θ_j, sin θ_j)): T = ∂y/∂(free,
    θ), the Hessian TᵀST + diag(b_j (−c_jᵀ∇f_j)) on θ (c_j = (cos θ_j, sin θ_j)), and the θ columns; None for the
    Hessian where a disk's curvature is not positive (not a sliding disk's minimiser). T has one or two entries per
    column, so S T and Tᵀ(S T) are gathered from S's rows and columns (not dense products)."""
    tmat = np.zeros((g.size, fi.size + ca.size))
    tmat[fi, np.arange(fi.size)] = 1.0
    cols = fi.size + np.arange(ca.size)
    da, db = -cr * sin, cr * cos
    tmat[ca, cols] = da
    tmat[cb, cols] = db
    curvature = -cr * (cos * g[ca] + sin * g[cb])
    if np.any(curvature <= 0.0):
        return tmat, None, cols
    st = np.concatenate((s[:, fi], s[:, ca] * da + s[:, cb] * db), axis=1)
    hess = np.concatenate((st[fi], da[:, None] * st[ca] + db[:, None] * st[cb]), axis=0)
    hess[cols, cols] += curvature
    return tmat, hess, cols


def _onto_circles(y, box, ca, cb, cr):
    """The start of :func:`_polish` on the circle (a copy of y) and its angles: a disk held on one side of its corner
    keeps its free row's value (the box QP set it, perhaps against a stiff row) and moves the held row along the
    circle; a disk at its corner is on it."""
    lo, hi = box
    y = y.copy()
    held_a = (y[ca] <= lo[ca]) | (y[ca] >= hi[ca])
    held_b = (y[cb] <= lo[cb]) | (y[cb] >= hi[cb])
    only_a = held_a & ~held_b & (np.abs(y[cb]) <= cr)
    only_b = held_b & ~held_a & (np.abs(y[ca]) <= cr)
    y[ca[only_a]] = np.copysign(np.sqrt(cr[only_a] ** 2 - y[cb[only_a]] ** 2), y[ca[only_a]])
    y[cb[only_b]] = np.copysign(np.sqrt(cr[only_b] ** 2 - y[ca[only_b]] ** 2), y[cb[only_b]])
    theta = np.arctan2(y[cb], y[ca])
    y[ca], y[cb] = cr * np.cos(theta), cr * np.sin(theta)
    return y, theta


def _polish(s, q, n_bounded, disks, y, box, sliding, compiled_qp: bool = True):
    """Phase 3: Newton's method on the box QP's active set with the disks on their circle parametrised by their
    angle, y_j = b_j (cos θ_j, sin θ_j): f is smooth in (the free rows, θ), its Hessian TᵀST plus b_j (−c_jᵀ∇f_j)
    on θ_j (positive where the disk's multiplier is), with a backtracking line search that keeps the free bounded
    rows ≥ 0 and lowers f (Armijo) or, near the solution where f's changes are lost to rounding, the reduced
    gradient: from the corner's direction (exact to the interior-point gap) each step
    squares the direction's error (``sliding``: the disks on their circle, which the box QP may hold on one side
    of their corner only). Stops where the Hessian is not positive definite, where the step no longer lowers f, and
    where it would lower f by at most ``ROUNDING`` |f| (a step of ~1e-13 of y: on the capstan from the second or
    third step on, which before changed y by rounding only), or after a full step that lowered it by at most
    ``FINAL`` |f|.
    Returns (y, steps taken); ``disks`` = (rows_a, rows_b, radius), ``box`` = (lo, hi). Runs compiled
    (:func:`solver.contact._disk_qp_kernel.polish`, the same steps) where the compiled path is active and
    ``compiled_qp``."""
    rows_a, rows_b, radius = disks
    fi, circle = _active(y, box[0], box[1], rows_a, rows_b, radius, sliding)
    ca, cb, cr = rows_a[circle], rows_b[circle], radius[circle]
    if ca.size == 0:
        return y, 0
    y, theta = _onto_circles(y, box, ca, cb, cr)
    kernel = compiled.kernel("disk_qp") if compiled_qp else None
    if kernel is not None:
        y, taken = kernel.polish(
            np.ascontiguousarray(s), q, int(n_bounded), fi, ca, cb, cr, y, theta, 8, ROUNDING, FINAL
        )
        return y, int(taken)
    return _newton_on_angles(s, q, n_bounded, fi, (ca, cb, cr), y, theta)


def _newton_on_angles(s, q, n_bounded, fi, circles, y, theta, steps: int = 8):
    """:func:`_polish`'s iteration in numpy from the start ``y`` on the circles (angles ``theta``; ``fi`` the free
    rows, ``circles`` = (rows_a, rows_b, radius) of the circle disks): (y, Newton steps taken)."""
    ca, cb, cr = circles

    def f(v):  # (f(v), ∇f(v)) from one product with S
        sv = s @ v
        return 0.5 * v @ sv + q @ v, sv + q

    def reduced(g, th):  # the largest entry of the reduced gradient Tᵀ∇f, g = ∇f
        return float(
            max(
                np.max(np.abs(g[fi]), initial=0.0),
                np.max(np.abs(cr * (-np.sin(th) * g[ca] + np.cos(th) * g[cb])), initial=0.0),
            )
        )

    value, g = f(y)
    taken = 0
    for _ in range(4 * steps):
        if taken >= steps:
            break
        tmat, hess, _ = _reduced_hessian(s, g, fi, ca, cb, cr, np.cos(theta), np.sin(theta))
        if hess is None:
            break
        grad = tmat.T @ g
        try:
            step = -cholesky_solve(cholesky_factor(hess), grad)
        except LinAlgError:
            break
        slope = float(grad @ step)
        norm = float(np.max(np.abs(grad), initial=0.0))
        if not slope < -ROUNDING * abs(value):
            break
        # a free bounded row the step would take below 0 stops it there and is held at 0 from then on (the active
        # set changes; the box QP's next round releases it if its multiplier says so)
        down = (fi < n_bounded) & (step[: fi.size] < 0.0)
        ratio = np.full(fi.size, np.inf)
        ratio[down] = -y[fi[down]] / step[: fi.size][down]
        first = min(1.0, float(ratio.min(initial=np.inf)))
        alpha = first
        while alpha > 1e-6 * first:
            trial = y.copy()
            trial[fi] += alpha * step[: fi.size]
            th = theta + alpha * step[fi.size :]
            trial[ca], trial[cb] = cr * np.cos(th), cr * np.sin(th)
            trial[:n_bounded] = np.maximum(trial[:n_bounded], 0.0)  # rounding at the stopping row
            value_t, g_t = f(trial)
            if value_t <= value + 1e-4 * alpha * slope or reduced(g_t, th) < (1.0 - 1e-4 * alpha) * norm:
                break
            alpha *= 0.5
        if alpha <= 1e-6 * first:
            break
        if alpha == first < 1.0:
            hit = ratio <= first * (1.0 + 1e-12)
            trial[fi[hit]] = 0.0
            fi = fi[~hit]
            value_t, g_t = f(trial)
        else:
            taken += 1
        y, theta, value, g = trial, th, value_t, g_t
        if alpha == 1.0 and -slope <= FINAL * abs(value):
            break
    return y, taken


def radius_sensitivity(s, q, rows_a, rows_b, radius, result: DiskQPResult, compiled_qp: bool = True) -> np.ndarray:
    """∂y/∂b (n, n_disks): how the solution moves with the disks' radii while its active set holds (the implicit
    function theorem on the stationarity of f in the free rows and the circle disks' angles: with G = Tᵀ∇f,
    ∂z/∂b = −(∂G/∂z)⁻¹ ∂G/∂b, where ∂y/∂b_j = c_j on disk j's rows and ∂G_θj/∂b_j gains d_jᵀ∇f_j, d_j = (−sin θ_j,
    cos θ_j)). Disks inside their circle have no column (their radius does not bind); zeros where the active set
    is degenerate (a circle disk without a positive multiplier). Runs compiled
    (:func:`solver.contact._disk_qp_kernel.sensitivity`) where the compiled path is active and ``compiled_qp``."""
    y = result.x
    kernel = compiled.kernel("disk_qp") if compiled_qp else None
    if kernel is not None:
        return kernel.sensitivity(
            np.ascontiguousarray(s), q, rows_a, rows_b, radius, y, result.lo, result.hi, result.sliding
        )
    out = np.zeros((y.size, radius.size))
    fi, circle = _active(y, result.lo, result.hi, rows_a, rows_b, radius, result.sliding)
    ca, cb, cr = rows_a[circle], rows_b[circle], radius[circle]
    if ca.size == 0:
        return out
    theta = np.arctan2(y[cb], y[ca])
    cos, sin = np.cos(theta), np.sin(theta)
    g = s @ y + q
    tmat, hess, cols = _reduced_hessian(s, g, fi, ca, cb, cr, cos, sin)
    if hess is None:
        return out
    j = np.arange(ca.size)
    dyb = np.zeros((y.size, ca.size))
    dyb[ca, j], dyb[cb, j] = cos, sin
    sdyb = s[:, ca] * cos + s[:, cb] * sin  # S ∂y/∂b (two entries per column)
    dgdb = tmat.T @ sdyb
    dgdb[cols, j] += -sin * g[ca] + cos * g[cb]
    try:
        dz = -cholesky_solve(cholesky_factor(hess), dgdb)
    except LinAlgError:
        return out
    out[:, np.flatnonzero(circle)] = tmat @ dz + dyb
    return out


def _warm_up_disk_qp(kernel) -> None:
    """Compile (or load) the disk QP kernel and compare its phase 3 with the numpy method's on a random QP with bound
    rows and four sliding disks, from the solution with each disk turned by 0.05 rad (its box inscribed along the
    turned direction): the same point to 1e-12 of its size and the same number of Newton steps."""
    rng = np.random.default_rng(2)
    k, nd = 6, 4
    n = k + 2 * nd
    a = rng.standard_normal((n, n))
    s = a @ a.T + 0.5 * np.eye(n)
    q = 2.0 * rng.standard_normal(n)
    q[:k] = -np.abs(q[:k])  # pressed: the normals carry load
    disks = (k + np.arange(nd), k + nd + np.arange(nd), 0.2 + 0.3 * rng.random(nd))
    rows_a, rows_b, radius = disks
    res = solve_disk_qp(s, q, k, *disks, options=DiskQPOptions(compiled=False))
    y = res.x.copy()
    theta = np.arctan2(y[rows_b], y[rows_a]) + 0.05
    y[rows_a], y[rows_b] = radius * np.cos(theta), radius * np.sin(theta)
    lo, hi = np.zeros(n), np.full(n, np.inf)
    lo[rows_a], lo[rows_b] = -radius * np.abs(np.cos(theta)), -radius * np.abs(np.sin(theta))
    hi[rows_a], hi[rows_b] = -lo[rows_a], -lo[rows_b]
    ref = _polish(s, q, k, disks, y, (lo, hi), res.sliding, compiled_qp=False)
    fi, circle = _active(y, lo, hi, rows_a, rows_b, radius, res.sliding)
    ca, cb, cr = rows_a[circle], rows_b[circle], radius[circle]
    start, angles = _onto_circles(y, (lo, hi), ca, cb, cr)
    out = kernel.polish(s, q, k, fi, ca, cb, cr, start, angles, 8, ROUNDING, FINAL)
    if ref[1] < 2 or out[1] != ref[1] or not np.allclose(out[0], ref[0], rtol=0.0, atol=1e-12 * np.abs(ref[0]).max()):
        raise RuntimeError("the compiled disk QP polish disagrees with the numpy method")
    sens = radius_sensitivity(s, q, *disks, res, compiled_qp=False)
    out = kernel.sensitivity(s, q, *disks, res.x, res.lo, res.hi, res.sliding)
    if not np.any(sens) or not np.allclose(out, sens, rtol=0.0, atol=1e-10 * np.abs(sens).max()):
        raise RuntimeError("the compiled disk QP's radius sensitivity disagrees with the numpy method")


# the compiled phase 3 joins the compiled path (its cache key, its warm-up, compiled.kernel("disk_qp"))
compiled.register_kernel(
    "disk_qp", f"{__package__}._disk_qp_kernel", Path(__file__).with_name("_disk_qp_kernel.py"), _warm_up_disk_qp
)
