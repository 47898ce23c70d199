"""The rod–rod rows' lateral curvature in the schur method's Newton matrix (``RowGeometry.lateral_curvature``,
``schur_newton.lateral_woodbury``) and the steps it finds unstable, solved with XPBD's iteration
(``Schur._restart_as_xpbd``): a frictionless rod resting on a pinned rod, the unstable equilibrium of a
ball on a ball, whose top rod slides off on a circle of radius d = 2r about the lower axis, θ'' = (g/d) θ."""

import logging
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

from contact_closed_forms import join_rods  # noqa: E402

from solver import Contacts, Simulator, rod_from_polyline  # noqa: E402
from solver.contact import DetectionOptions  # noqa: E402
from solver.contact.solvers.common import row_geometry  # noqa: E402
from solver.contact.solvers.schur_newton import lateral_woodbury  # noqa: E402

G = 9.81
R = 0.005  # both rods' radius [m]: the axes are d = 2r = 1 cm apart
N = 10  # segments per rod


@pytest.fixture(autouse=True)
def _quiet():
    logging.getLogger("solver.contact").setLevel(logging.ERROR)


def rod_on_rod(dt: float, offset: float = 1e-5, youngs_modulus: float = 1e9):
    """A 10 cm rod resting along a pinned one, its axis ``offset`` [m] to the side of the top, and the schur
    method's contacts (joint-point rows, frictionless)."""
    x = np.linspace(-0.05, 0.05, N + 1)
    bottom = rod_from_polyline(np.stack([x, 0 * x, 0 * x], 1), R, 1e9, density=1000.0)
    top_pose = np.stack([x, 0 * x + offset, 0 * x + 2 * R * (1 + 1e-9)], 1)
    top = rod_from_polyline(top_pose, R, youngs_modulus, density=1000.0)
    model = join_rods(bottom, top)
    model.pinned[:N] = True
    sim = Simulator(model, dt=dt, max_iterations=30, tolerance=1e-9, gravity=(0.0, 0.0, -G))
    contacts = Contacts(
        model, friction=0.0, self_collision=True, method="schur", detection=DetectionOptions(self_contacts="points")
    )
    sim.gs_constraints.append(contacts)
    return sim, contacts


def sideways(sim, contacts, steps: int):
    """The top rod's sideways offset [m] after each step, and the steps' contact reports."""
    out, reports = [], []
    for _ in range(steps):
        sim.step()
        out.append(float(sim.positions[N:, 1].mean()))
        reports.append(contacts.last_report)
    return np.array(out), reports


def test_the_lateral_curvature_is_the_derivative_of_the_rows_forces():
    """κ e eᵀ on the points' relative motion against central differences of the rows' forces Σ λ ∇C (normals and
    closest points evaluated again at each pose), for sideways and vertical moves of the top rod's segments."""
    sim, contacts = rod_on_rod(0.01, offset=2e-3)
    sim.step()  # rows and impulses of a resting contact
    b, geo = contacts.solver.all_rows, contacts.geometry
    lam = contacts.normal_impulse.copy()
    assert np.count_nonzero(lam > 0.0) >= N

    def forces():
        rot_a, rot_b, za, zb, pa, pb, n, *_ = row_geometry(geo, contacts.rows, sim, b, contacts.solver.options)
        na, nb = np.einsum("kji,kj->ki", rot_a, n), np.einsum("kji,kj->ki", rot_b, n)
        fa, fb, ga, gb = geo.free_gradients(sim, b, n, za, zb, na, nb)
        f = np.zeros((sim.free_index.size, 3))
        for segs, grads in ((fa, ga), (fb, gb)):
            ok = segs >= 0
            np.add.at(f, segs[ok], lam[ok, None] * grads[ok, :3])
        return f, (rot_a, rot_b, za, zb, pa, pb, n)

    _, geometry = forces()
    wa, wb, ga, gb, kappa = geo.lateral_curvature(sim, b, geometry, lam)
    assert kappa.size >= N and np.all(kappa > 0.0)
    rng = np.random.default_rng(5)
    base = sim.positions.copy()
    for _ in range(3):
        move = np.zeros((sim.free_index.size, 3))
        move[:, 1:] = rng.normal(size=(sim.free_index.size, 2)) * 1e-7  # y and z of every top segment [m]
        eps = 1.0
        sim.positions[sim.free_index] = base[sim.free_index] + eps * move
        plus, _ = forces()
        sim.positions[sim.free_index] = base[sim.free_index] - eps * move
        minus, _ = forces()
        sim.positions[...] = base
        numeric = (plus - minus) / (2 * eps)
        # the curvature rows' W δ, weighted by κ, back through Wᵀ
        rel = np.zeros(kappa.size)
        for segs, grads in ((wa, ga), (wb, gb)):
            ok = segs >= 0
            rel[ok] += np.einsum("ij,ij->i", grads[ok, :3], move[segs[ok]])
        model = np.zeros_like(numeric)
        for segs, grads in ((wa, ga), (wb, gb)):
            ok = segs >= 0
            np.add.at(model, segs[ok], (kappa * rel)[ok, None] * grads[ok, :3])
        assert np.abs(numeric).max() > 1e-12
        assert np.abs(numeric - model).max() <= 1e-3 * np.abs(numeric).max()


@pytest.mark.parametrize("scale", [5.0, 40.0])
def test_the_woodbury_step_is_the_dense_inverse_of_the_curved_newton_matrix(scale):
    """The Woodbury terms against the dense inverse: with P the pose's response to forces through the joints'
    factorisation (one tree solve per degree of freedom, a soft top rod so that P⁻¹ is well conditioned) and the
    curvature rows W, weights κ, the Newton matrix is P⁻¹ − Wᵀ diag(κ) W. A contact row's response and the joints'
    step through it match its dense inverse; the method's test σ ≥ ``UNSTABLE_FROM`` agrees with that matrix's
    smallest eigenvalue (negative exactly where σ > 1: the impulses scaled by ``scale``, σ ≈ 0.5 and 4)."""
    from solver.contact.solvers.schur_newton import UNSTABLE_FROM

    sim, contacts = rod_on_rod(0.01, offset=2e-3, youngs_modulus=1e5)
    sim.step()
    joints, b, geo = sim.step_context.joints, contacts.solver.all_rows, contacts.geometry
    geometry = row_geometry(geo, contacts.rows, sim, b, contacts.solver.options)[:7]
    lam = scale * contacts.normal_impulse
    nf = sim.free_index.size
    zero_joint = np.zeros_like(sim.lam)
    p = np.stack([joints.solve(u.reshape(nf, 6), zero_joint)[0].ravel() for u in np.eye(6 * nf)], axis=1)
    wa, wb, wga, wgb, kappa = geo.lateral_curvature(sim, b, geometry, lam)
    w = np.zeros((kappa.size, 6 * nf))
    for segs, grads in ((wa, wga), (wb, wgb)):
        for r in np.flatnonzero(segs >= 0):
            w[r, 6 * segs[r] : 6 * segs[r] + 6] += grads[r]
    curved = np.linalg.inv(p) - w.T @ (kappa[:, None] * w)
    curved = 0.5 * (curved + curved.T)
    root = np.sqrt(kappa)
    sigma = np.linalg.eigvalsh(root[:, None] * (w @ p @ w.T) * root[None, :])
    rng = np.random.default_rng(7)
    probe = (np.array([3]), np.array([-1]), rng.normal(size=(1, 6)), np.zeros((1, 6)))
    force = rng.normal(size=6 * nf) * 1e-6
    dz = (p @ force).reshape(nf, 6)  # a joint step: the response to some right-hand side
    out = lateral_woodbury(geo, sim, joints, b, geometry, lam, probe, dz)
    assert (sigma[-1] > 1.0) == (np.linalg.eigvalsh(curved)[0] < 0.0)  # Haynsworth: the test is definiteness
    if sigma[-1] >= UNSTABLE_FROM:
        assert out == "unstable" and scale == 40.0
        return
    assert scale == 5.0 and 0.2 < sigma[-1] < UNSTABLE_FROM
    g = np.zeros(6 * nf)
    g[18:24] = probe[2][0]
    inverse = np.linalg.inv(curved)
    response = p @ g - np.tensordot(out["coupling"][:, 0], out["resp_x"], axes=1).ravel()
    joint_step = dz.ravel() - np.tensordot(out["joint"], out["resp_x"], axes=1).ravel()
    assert np.abs(response - inverse @ g).max() <= 1e-4 * np.abs(inverse @ g).max()
    expected = inverse @ force
    assert np.abs(joint_step - expected).max() <= 1e-4 * np.abs(expected).max()
    # the curvature changes the step: not a test passed by the uncorrected response
    assert np.abs(p @ g - inverse @ g).max() > 1e-3 * np.abs(inverse @ g).max()


def test_a_rod_on_a_rod_slides_off_at_the_implicit_steps_rate():
    """Δt = 10 ms: Δt √(g/d) = hs = 0.31, the Newton matrix stays definite (σ ≈ h²s² ≈ 0.1) and every step is the
    implicit one: its growing mode multiplies the offset by 1/(1 − hs) per step (backward Euler on θ'' = s² θ:
    (1 − h²s²) z² − 2z + 1 = 0), within 0.2 % once the decaying mode has gone."""
    dt = 0.01
    sim, contacts = rod_on_rod(dt)
    y, reports = sideways(sim, contacts, 12)
    hs = dt * np.sqrt(G / (2 * R))
    ratio = y[1:] / y[:-1]
    assert ratio[-3:] == pytest.approx(1.0 / (1.0 - hs), rel=2e-3)
    assert not any(r.xpbd for r in reports)
    assert all(r.converged and not r.hit_cap for r in reports)


def test_a_stack_unstable_within_the_step_is_solved_by_xpbd_and_reported():
    """Δt = 40 ms: h²s² = 1.57 > 1, backward Euler has no solution near the iterate (z = 1/(1 − hs) < 0), Φ is not
    convex and its saddle is out of the Newton method's reach (the method without the curvature test threw the rod
    1 cm sideways in its first step, at the 30-iteration cap). The steps are XPBD's: converged within a few
    iterations, reported, and the rod rolls off by the start normal's lateral force (its prediction falls through
    the lower axis, where the rows keep the start's normal): y_{n+1} = 2y_n − y_{n−1} + h²s² y_n, the growing root of
    z² − (2 + h²s²) z + 1 = 0, within 1 %."""
    dt = 0.04
    sim, contacts = rod_on_rod(dt)
    y, reports = sideways(sim, contacts, 4)
    h2s2 = dt * dt * G / (2 * R)
    z = 1.0 + 0.5 * h2s2 + np.sqrt(h2s2 * (1.0 + 0.25 * h2s2))
    assert y[0] < 1e-4
    assert (y[1:] / y[:-1])[1:] == pytest.approx(z, rel=1e-2)
    assert all(r.xpbd for r in reports)
    assert all(r.converged and r.iterations <= 5 for r in reports)


def test_a_step_not_converged_in_half_its_iterations_finishes_with_xpbd():
    """A tolerance no step meets: the Newton iterations take the first half of the cap (6 of 12), XPBD's iteration
    the rest, and the report says so; the rod still rests on the lower one (gap within 1e-6 r)."""
    sim, contacts = rod_on_rod(0.01)
    sim.tolerance, sim.max_iterations = 1e-300, 12
    sim.step()
    report = contacts.last_report
    assert report.xpbd and report.hit_cap and report.iterations == 12
    gap = float(np.hypot(*sim.positions[N:, 1:].mean(0).tolist())) - 2 * R
    assert abs(gap) <= 1e-6 * R
