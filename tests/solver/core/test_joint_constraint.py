"""Eq. 23 constraint and its Jacobians (Eqs. 25–27) against central finite differences."""

import numpy as np
import pytest

from solver import RodModel
from solver.core import quaternion as quat
from solver.core.joint_constraint import compliance, evaluate


def random_model(rng, m=7):
    n = m + 1
    pos = rng.normal(size=(n, 3))
    q = quat.normalize(rng.normal(size=(n, 4)))
    parent = rng.integers(0, np.arange(1, n))  # parent index < child
    child = np.arange(1, n)
    return RodModel.from_arrays(
        pos,
        q,
        rng.uniform(0.1, 1.0, n),
        rng.uniform(0.01, 0.1, (n, 2)),
        1000.0,
        joint_parent=parent,
        joint_child=child,
        joint_point_parent=rng.normal(size=(m, 3)),
        joint_point_child=rng.normal(size=(m, 3)),
        youngs_modulus=1e9,
        torsion_modulus=4e8,
    )


def perturbed(rng, model):
    n = model.n_segments
    return model.positions + 0.1 * rng.normal(size=(n, 3)), quat.normalize(
        model.orientations + 0.2 * rng.normal(size=(n, 4))
    )


@pytest.mark.parametrize("seed", range(5))
def test_jacobians_match_finite_differences(seed):
    rng = np.random.default_rng(seed)
    model = random_model(rng)
    x, q = perturbed(rng, model)
    c, jp, jc = evaluate(model, x, q)
    h = 1e-6
    for side, jac, seg_of in (("parent", jp, model.joint_parent), ("child", jc, model.joint_child)):
        for j in range(model.n_joints):
            seg = seg_of[j]
            num = np.zeros((6, 6))
            for k in range(6):
                d = np.zeros(6)
                d[k] = h
                xp, qp, xm, qm = x.copy(), q.copy(), x.copy(), q.copy()
                xp[seg] += d[:3]
                xm[seg] -= d[:3]
                qp[seg] = quat.integrate_body(q[seg], d[3:])
                qm[seg] = quat.integrate_body(q[seg], -d[3:])
                cp = evaluate(model, xp, qp, [j], with_jacobians=False)[0]
                cm = evaluate(model, xm, qm, [j], with_jacobians=False)[0]
                num[:, k] = (cp - cm) / (2 * h)
            np.testing.assert_allclose(jac[j], num, atol=1e-7, rtol=1e-6, err_msg=f"{side} joint {j}")


def test_constraint_vanishes_in_rest_pose_and_double_cover():
    rng = np.random.default_rng(3)
    model = random_model(rng)
    c = evaluate(model, model.positions + 0.0, model.orientations, with_jacobians=False)
    # rest pose: attachment points need not coincide for a random model, but bend/twist rows vanish
    np.testing.assert_allclose(c[:, 3:], 0.0, atol=1e-12)
    # q and −q are the same rotation: flipping the sign of any segment's quaternion changes nothing
    q = model.orientations.copy()
    q[::2] *= -1.0
    c2 = evaluate(model, model.positions, q, with_jacobians=False)
    np.testing.assert_allclose(c2, c, atol=1e-12)


def test_darboux_vector_measures_bend_and_twist():
    """Two unit segments along z, the child turned by θ about x (bend) or z (twist): ΔΩ = (2/l) sin(θ/2) on
    that axis."""
    theta, length = 0.3, 1.0
    for axis in (0, 2):
        pos = np.array([[0, 0, -0.5], [0, 0, 0.5]], float)
        q = np.array([[1, 0, 0, 0], [1, 0, 0, 0]], float)
        model = RodModel.from_arrays(
            pos, q, length, 0.05, 1000.0, joint_parent=[0], joint_child=[1], youngs_modulus=1e9
        )
        q2 = q.copy()
        q2[1] = [np.cos(theta / 2), 0, 0, 0]
        q2[1, 1 + axis] = np.sin(theta / 2)
        c = evaluate(model, pos, q2, with_jacobians=False)
        expect = np.zeros(3)
        expect[axis] = 2.0 / length * np.sin(theta / 2)
        np.testing.assert_allclose(c[0, 3:], expect, atol=1e-14)


def test_compliance_is_inverse_stiffness_times_length():
    pos = np.array([[0, 0, -0.5], [0, 0, 0.5]], float)
    q = np.array([[1, 0, 0, 0], [1, 0, 0, 0]], float)
    a, b = 0.02, 0.05
    model = RodModel.from_arrays(
        pos,
        q,
        1.0,
        [[a, b], [a, b]],
        1000.0,
        joint_parent=[0],
        joint_child=[1],
        youngs_modulus=2e9,
        torsion_modulus=1e9,
        stretch_compliance=1e-9,
    )
    dt = 0.01
    at = compliance(model, dt)[0] * dt * dt
    i1, i2 = np.pi * a * b**3 / 4, np.pi * a**3 * b / 4
    np.testing.assert_allclose(
        at, [1e-9, 1e-9, 1e-9, 1 / (2e9 * i1), 1 / (2e9 * i2), 1 / (1e9 * (i1 + i2))], rtol=1e-12
    )
