"""The incremental potential Φ of the schur method's line search (solver/contact/solvers/schur_newton.py): its row
terms are the compliant rows' energies, so their derivatives are the rows' impulses (checked by central
differences)."""

import numpy as np

from solver.contact.solvers.schur_newton import incremental_potential


def _phi(c_rows, alpha_rows, k, bound_t, joint_c=None, joint_alpha=None, inertia=0.0):
    joint_c = np.zeros((1, 6)) if joint_c is None else joint_c
    joint_alpha = np.ones((1, 6)) if joint_alpha is None else joint_alpha
    return incremental_potential(inertia, joint_c, joint_alpha, np.asarray(c_rows, float), alpha_rows, k, bound_t)


def _derivative(f, x, h=1e-9):
    return (f(x + h) - f(x - h)) / (2.0 * h)


def test_the_normal_rows_energy_has_the_compliant_rows_impulse_as_its_derivative():
    """dΦ/dC = −max(0, −C/α̃): zero for an open gap, −C/α̃ for an overlap (a row pushing apart)."""
    alpha = np.array([2e-3])
    for c in (-3e-4, -1e-6, 2e-5, 1e-3):
        d = _derivative(lambda x: _phi([x], alpha, 1, np.zeros(0)), c)
        assert np.isclose(d, -max(0.0, -c / alpha[0]), rtol=1e-6, atol=1e-9)


def test_a_friction_rows_energy_has_the_clamped_compliant_impulse_as_its_derivative():
    """Huber's function of the slip: dΦ/dC_t = clamp(C_t/α̃, −b, b) (Tresca's law with the row's compliance), and
    Φ is continuous where the row starts to slide (|C_t| = α̃b)."""
    alpha, b = np.array([0.0, 1e-3]), np.array([0.5])
    rows_alpha = np.array([1.0, 1e-3])  # a normal row (closed gap, no energy), then one friction row
    for c_t in (-2e-3, -4e-4, 1e-4, 4.9e-4, 5.1e-4, 3e-3):
        d = _derivative(lambda x: _phi([1.0, x], rows_alpha, 1, b), c_t)
        assert np.isclose(d, np.clip(c_t / alpha[1], -b[0], b[0]), rtol=1e-6, atol=1e-9)
    edge = alpha[1] * b[0]
    below, above = _phi([1.0, edge * (1 - 1e-12)], rows_alpha, 1, b), _phi([1.0, edge * (1 + 1e-12)], rows_alpha, 1, b)
    assert abs(above - below) < 1e-15
    assert np.isclose(below, 0.5 * edge**2 / alpha[1])


def test_joint_rows_and_inertia_add_their_quadratic_energies():
    joint_c = np.array([[1e-4, 0, 0, 0, 0, 2e-2]])
    joint_alpha = np.array([[1e-6, 1, 1, 1, 1, 4.0]])
    phi = _phi([1.0], np.ones(1), 1, np.zeros(0), joint_c=joint_c, joint_alpha=joint_alpha, inertia=0.25)
    assert np.isclose(phi, 0.25 + 0.5 * (1e-8 / 1e-6 + 4e-4 / 4.0))
