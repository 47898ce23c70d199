"""The contact QP with round friction disks (solver.contact.disk_qp): exact against a closed form, optimal against
an independent solver (scipy's SLSQP) on random problems, and its radius sensitivity against finite differences."""

import numpy as np
import pytest
from scipy.optimize import minimize

from solver.contact.disk_qp import disk_kkt_violation, radius_sensitivity, solve_disk_qp


def _random_problem(rng, spread=1.0, closed=False):
    k = int(rng.integers(1, 6))
    nf = int(rng.integers(1, k + 1))
    n = k + 2 * nf
    a = rng.normal(size=(n, n)) * 10 ** rng.uniform(-spread, spread, size=n)[:, None]
    s = a @ a.T + 0.1 * np.eye(n)
    q = rng.normal(size=n) * 3.0
    ra, rb = k + np.arange(nf), k + nf + np.arange(nf)
    radius = rng.uniform(0.05, 1.0, nf)
    if closed:
        radius[rng.random(nf) < 0.2] = 0.0
    return s, q, k, ra, rb, radius


@pytest.mark.parametrize("phi", [0.0, 0.7, 2.5, -1.9])
@pytest.mark.parametrize("pull", [0.4, 3.0])
def test_one_contact_sticks_inside_its_disk_and_slides_on_it_along_the_pull(phi, pull):
    # S = I: y minimises ½|y − y_free|² over y_n ≥ 0, |y_t| ≤ b: y_n = 1, y_t the pull projected onto the disk
    s = np.eye(3)
    q = -np.array([1.0, pull * np.cos(phi), pull * np.sin(phi)])
    res = solve_disk_qp(s, q, 1, [1], [2], [1.5])
    expected_t = min(pull, 1.5) * np.array([np.cos(phi), np.sin(phi)])
    assert res.converged
    np.testing.assert_allclose(res.x, [1.0, *expected_t], atol=1e-12)
    assert bool(res.sliding[0]) == (pull > 1.5)


def test_a_disk_of_radius_zero_holds_its_rows_and_a_separating_contact_has_no_impulse():
    s = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.5]])
    q = np.array([0.5, -1.0, 2.0])  # pushed apart: y_n = 0
    res = solve_disk_qp(s, q, 1, [1], [2], [0.0])
    np.testing.assert_array_equal(res.x, [0.0, 0.0, 0.0])
    res = solve_disk_qp(s, q, 1, [1], [2], [0.3])
    assert res.x[0] == 0.0 and np.hypot(res.x[1], res.x[2]) <= 0.3 * (1 + 1e-12)
    assert disk_kkt_violation(s, q, 1, [1], [2], [0.3], res.x) < 1e-12


def _slsqp(s, q, k, ra, rb, radius):
    """scipy's SLSQP on the same QP (the disks as quadratic inequalities)."""
    n = q.size
    cons = [
        {"type": "ineq", "fun": (lambda y, j=j: radius[j] ** 2 - y[ra[j]] ** 2 - y[rb[j]] ** 2)} for j in range(ra.size)
    ]
    return minimize(
        lambda y: 0.5 * y @ s @ y + q @ y, np.zeros(n), jac=lambda y: s @ y + q, method="SLSQP",
        bounds=[(0, None)] * k + [(None, None)] * (n - k), constraints=cons, options=dict(ftol=1e-14, maxiter=500),
    ).x  # fmt: skip


def test_random_problems_are_solved_to_their_optimum():
    # condition numbers up to ~1e9 (rows scaled by 10^±2.5), some disks closed (radius 0)
    rng = np.random.default_rng(7)
    worst, sliding = 0.0, 0
    for _ in range(100):
        s, q, k, ra, rb, radius = _random_problem(rng, spread=2.5, closed=True)
        res = solve_disk_qp(s, q, k, ra, rb, radius)
        assert res.converged
        violation = disk_kkt_violation(s, q, k, ra, rb, radius, res.x)
        worst = max(worst, violation / max(np.abs(res.x).max(), 1.0))
        sliding += int(res.sliding.sum())
        # from its own solution (a warm start) it stays there, by the box QP and the angles' Newton steps alone
        warm = solve_disk_qp(s, q, k, ra, rb, radius, x0=res.x)
        assert warm.converged
        np.testing.assert_allclose(warm.x, res.x, rtol=0, atol=1e-8 * max(np.abs(res.x).max(), 1.0))
        # feasible, and no worse than SLSQP's feasible points (an independent method)
        assert np.all(res.x[:k] >= 0.0)
        assert np.all(np.hypot(res.x[ra], res.x[rb]) <= radius * (1 + 1e-12))
        yr = _slsqp(s, q, k, ra, rb, radius)
        feasible = min(yr[:k].min(), (radius - np.hypot(yr[ra], yr[rb])).min()) > -1e-10
        if feasible:
            f, fr = 0.5 * res.x @ s @ res.x + q @ res.x, 0.5 * yr @ s @ yr + q @ yr
            assert f <= fr + 1e-9 * max(abs(fr), 1.0)
    assert worst < 1e-9
    assert sliding > 20  # the problems exercise the disks' circles


def test_the_radius_sensitivity_matches_finite_differences():
    rng = np.random.default_rng(3)
    worst, checked = 0.0, 0
    for _ in range(40):
        s, q, k, ra, rb, radius = _random_problem(rng, spread=0.5)
        res = solve_disk_qp(s, q, k, ra, rb, radius)
        jac = radius_sensitivity(s, q, ra, rb, radius, res)
        h = 1e-6
        for j in range(radius.size):
            up, down = radius.copy(), radius.copy()
            up[j] += h
            down[j] -= h
            a, b = solve_disk_qp(s, q, k, ra, rb, up), solve_disk_qp(s, q, k, ra, rb, down)
            if not (np.array_equal(a.sliding, res.sliding) and np.array_equal(b.sliding, res.sliding)):
                continue  # the active set changes within ±h: no derivative
            fd = (a.x - b.x) / (2 * h)
            worst = max(worst, float(np.abs(fd - jac[:, j]).max() / max(np.abs(fd).max(), 1.0)))
            checked += 1
    assert checked > 40
    assert worst < 1e-5
