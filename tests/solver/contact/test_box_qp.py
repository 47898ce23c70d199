"""The bound-constrained QP of the contact solve (solver/contact/box_qp.py) against solutions found independently."""

import numpy as np
import pytest
from scipy.optimize import lsq_linear

from solver.contact.box_qp import _FaceSolver, kkt_violation, solve_box_qp


def random_problem(n, seed, cond=1e4):
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.standard_normal((n, n)))
    s = (u * np.geomspace(1.0, cond, n)) @ u.T
    s = 0.5 * (s + s.T)
    q = rng.standard_normal(n) * 10.0
    lo = np.where(rng.random(n) < 0.5, 0.0, -rng.random(n))
    hi = np.where(rng.random(n) < 0.3, np.inf, rng.random(n))
    return s, q, lo, hi


def reference(s, q, lo, hi):
    """½xᵀSx + qᵀx = ½‖Lᵀx + L⁻¹q‖² − const (S = L Lᵀ): a bounded linear least-squares problem (scipy's own)."""
    low = np.linalg.cholesky(s)
    b = -np.linalg.solve(low, q)
    return lsq_linear(low.T, b, bounds=(lo, hi), method="bvls", tol=1e-14).x


@pytest.mark.parametrize("compiled_qp", [True, False])
@pytest.mark.parametrize("seed", range(8))
def test_the_box_qp_matches_a_bounded_least_squares_solution(seed, compiled_qp):
    """Both implementations: the compiled kernel (where numba works) and the numpy method."""
    n = 30 + 5 * seed
    s, q, lo, hi = random_problem(n, seed)
    res = solve_box_qp(s, q, lo, hi, compiled_qp=compiled_qp)
    assert res.converged
    x_ref = reference(s, q, lo, hi)
    assert np.all(res.x >= lo) and np.all(res.x <= hi)
    assert np.allclose(res.x, x_ref, atol=1e-7 * max(1.0, np.abs(x_ref).max()))
    assert kkt_violation(s, q, lo, hi, res.x) < 1e-9


def test_a_two_variable_problem_with_a_known_solution():
    """min ½(x₁² + x₂²) − 2x₁ + x₂ on 0 ≤ x ≤ 1: the unconstrained minimiser (2, −1) is clipped to (1, 0)."""
    res = solve_box_qp(np.eye(2), np.array([-2.0, 1.0]), np.zeros(2), np.ones(2))
    assert res.converged
    assert res.x == pytest.approx([1.0, 0.0])
    assert res.at_upper.tolist() == [True, False] and res.at_lower.tolist() == [False, True]


def test_a_warm_start_at_the_solution_needs_one_solve_and_every_start_gives_the_same_solution():
    s, q, lo, hi = random_problem(40, 11)
    cold = solve_box_qp(s, q, lo, hi)
    warm = solve_box_qp(s, q, lo, hi, x0=cold.x)
    assert warm.iterations == 1 and np.allclose(warm.x, cold.x, atol=1e-10)
    for start in (np.full(40, 5.0), -np.full(40, 5.0), np.random.default_rng(1).standard_normal(40)):
        assert np.allclose(solve_box_qp(s, q, lo, hi, x0=start).x, cold.x, atol=1e-8)


@pytest.mark.parametrize("compiled_qp", [True, False])
def test_the_objective_falls_with_every_iteration(compiled_qp):
    """Capped after i solves, the iterate's objective is never above the one capped after i − 1 (monotone)."""
    s, q, lo, hi = random_problem(25, 3)

    def f(x):
        return 0.5 * x @ s @ x + q @ x

    last = f(np.clip(np.zeros(25), lo, hi))
    for cap in range(1, 40):
        value = f(solve_box_qp(s, q, lo, hi, max_iterations=cap, compiled_qp=compiled_qp).x)
        assert value <= last + 1e-9 * abs(last)
        last = value


def test_fixed_variables_and_bad_bounds():
    s = np.diag([2.0, 1.0])
    res = solve_box_qp(s, np.array([-4.0, -1.0]), np.array([0.5, 0.0]), np.array([0.5, np.inf]))
    assert res.x == pytest.approx([0.5, 1.0])
    with pytest.raises(ValueError, match="lower bound"):
        solve_box_qp(s, np.zeros(2), np.array([1.0, 0.0]), np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="must be"):
        solve_box_qp(np.eye(3), np.zeros(2), np.zeros(2), np.ones(2))


@pytest.mark.parametrize("cond", [1e2, 1e8])
def test_face_steps_through_the_schur_complement_match_a_fresh_factorisation(cond):
    # a walk of free sets changing one to five variables at a time (past the refactoring limit), as the active-set
    # method changes its working set: every step equals the face system solved from scratch
    n = 120
    s, _, _, _ = random_problem(n, 3, cond=cond)
    rng = np.random.default_rng(7)
    faces = _FaceSolver(s)
    free = rng.random(n) < 0.6
    refactored = 0
    for _ in range(60):
        flip = rng.choice(n, size=int(rng.integers(1, 6)), replace=False)
        free[flip] = ~free[flip]
        g = rng.standard_normal(n)
        base = faces.base
        p = faces.step(g, free)
        refactored += faces.base is not base
        f = np.flatnonzero(free)
        exact = np.zeros(n)
        exact[f] = -np.linalg.solve(s[np.ix_(f, f)], g[f])
        assert np.all(p[~free] == 0.0)
        assert np.abs(p - exact).max() <= 1e-15 * cond * np.abs(exact).max()  # a backward-stable solve's error
    assert refactored >= 2  # the walk passed the limit: the base was factored again


def test_the_compiled_kernel_runs_where_the_compiled_path_is_active():
    from solver.core import compiled

    active, why = compiled.compiled_status()
    if not active:
        pytest.skip(why)
    assert compiled.kernel("box_qp") is not None  # loaded and its warm-up agreed with the numpy method
