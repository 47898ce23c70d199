"""The compiled contact QPs (solver/contact/_disk_qp_kernel.py, _box_qp_kernel.py) against the numpy methods they
replace, on the QPs a capstan actually solves: the same solution to rounding, the same active set."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import contact_closed_forms as closed  # noqa: E402

from solver import Capsule, Contacts, Simulator, rod_from_polyline  # noqa: E402
from solver.contact import box_qp  # noqa: E402
from solver.contact.disk_qp import DiskQPOptions, disk_kkt_violation, radius_sensitivity, solve_disk_qp  # noqa: E402
from solver.contact.solvers import schur  # noqa: E402
from solver.core import compiled  # noqa: E402

G = 9.81


def capstan_qps(monkeypatch, ratio: float, steps: int) -> list:
    """The disk QPs (S, q, bounded rows, disks, start) of a rope wrapped π over a cylinder, μ 0.5, its ends pulled by
    blocks in the ratio ``ratio`` e^{μθ} (sliding above 1, holding below), ``steps`` steps of 1/200 s."""
    mu, wrap, r, cyl = 0.5, np.pi, 0.003, 0.05
    pts, t1, t2, _ = closed.capstan_rope(wrap, r, cyl, joints=True)
    model = rod_from_polyline(pts, r, 1e6, density=1150.0, rest="straight")
    m2 = 0.05
    m1 = ratio * np.exp(mu * wrap) * m2
    dens = model.densities.copy()
    vol = model.masses / model.densities
    dens[0], dens[-1] = m1 / vol[0], m2 / vol[-1]
    model = model.copy_with(densities=dens)
    sim = Simulator(model, dt=1 / 200, max_iterations=50, tolerance=1e-6, gravity=(0.0, 0.0, 0.0))
    sim.forces[0], sim.forces[-1] = m1 * G * t1, m2 * G * t2
    cylinder = Capsule((0.0, -0.3, 0.0), (0.0, 0.3, 0.0), cyl, friction=mu)
    sim.gs_constraints.append(Contacts(model, [cylinder], friction=mu, method="schur"))
    recorded = []

    def record(s, q, k, ra, rb, radius, x0=None, options=None):
        recorded.append((s.copy(), q.copy(), k, ra.copy(), rb.copy(), radius.copy(), np.array(x0, float)))
        return solve_disk_qp(s, q, k, ra, rb, radius, x0=x0, options=options)

    monkeypatch.setattr(schur, "solve_disk_qp", record)
    for _ in range(steps):
        sim.step()
    return recorded


def kernels_active() -> bool:
    return compiled.kernel("disk_qp") is not None and compiled.kernel("box_qp") is not None


@pytest.mark.parametrize("ratio", [1.25, 0.8])
def test_the_compiled_disk_qp_solves_the_capstans_qps_as_the_numpy_method(monkeypatch, ratio):
    """Solution within 1e-12 of rounding (the backward error |S Δy| ≤ 1e-12 |S| |y|: S's condition number, ~1.3e6
    here, amplifies the factorisations' different rounding to ~1e-10 in y itself), the same sliding disks and rows
    held at zero, the natural map of both at the method's 1e-9, and the same radius sensitivity."""
    if not kernels_active():
        pytest.skip("the compiled path is not active (numba missing or STIFF_RODS_COMPILED=0)")
    qps = capstan_qps(monkeypatch, ratio, 12)
    assert len(qps) >= 20
    converged = 0
    for s, q, k, ra, rb, radius, x0 in qps:
        fast = solve_disk_qp(s, q, k, ra, rb, radius, x0=x0)
        ref = solve_disk_qp(s, q, k, ra, rb, radius, x0=x0, options=DiskQPOptions(compiled=False))
        # (the QP of the first step's second iteration ends at the barrier's gap in both, natural map ~5e-7 |y|,
        # as before the kernels)
        assert fast.converged == ref.converged
        converged += ref.converged
        size = np.abs(ref.x).max()
        assert np.abs(s @ (fast.x - ref.x)).max() <= 1e-12 * np.abs(s).max() * size
        assert np.array_equal(fast.sliding, ref.sliding)
        assert np.array_equal(fast.x[:k] == 0.0, ref.x[:k] == 0.0)
        for res in (fast, ref) if ref.converged else ():
            assert disk_kkt_violation(s, q, k, ra, rb, radius, res.x) <= 1e-9 * size
        sens = radius_sensitivity(s, q, ra, rb, radius, ref, compiled_qp=False)
        sens_fast = radius_sensitivity(s, q, ra, rb, radius, ref)
        assert np.abs(sens_fast - sens).max() <= 1e-8 * max(np.abs(sens).max(), 1e-300)
    assert converged >= len(qps) - 2


@pytest.mark.parametrize("seed", range(4))
def test_the_compiled_box_qp_keeps_its_factor_through_many_changes(seed):
    """A box QP of 180 variables from a cold start (a face step per bound met: the kernel's factor of S_FF loses and
    gains rows by updates, refined once per step) against the numpy method (a factorisation per face): the same
    active set and solution, and the KKT conditions to 1e-9."""
    if compiled.kernel("box_qp") is None:
        pytest.skip("the compiled path is not active")
    rng = np.random.default_rng(seed)
    n = 180
    u, _ = np.linalg.qr(rng.standard_normal((n, n)))
    s = (u * np.geomspace(1.0, 1e5, n)) @ u.T
    s = 0.5 * (s + s.T)
    q = 30.0 * rng.standard_normal(n)
    lo = np.where(rng.random(n) < 0.5, 0.0, -rng.random(n))
    hi = np.where(rng.random(n) < 0.3, np.inf, rng.random(n))
    fast = box_qp.solve_box_qp(s, q, lo, hi)
    ref = box_qp.solve_box_qp(s, q, lo, hi, compiled_qp=False)
    assert fast.converged and ref.converged and fast.iterations > 20
    assert np.array_equal(fast.at_lower, ref.at_lower) and np.array_equal(fast.at_upper, ref.at_upper)
    assert np.abs(s @ (fast.x - ref.x)).max() <= 1e-12 * np.abs(s).max() * np.abs(ref.x).max()
    assert box_qp.kkt_violation(s, q, lo, hi, fast.x) < 1e-9
