"""The fast paths of the direct solver give the numbers of the plain formulations they replace.

ChainKKT (banded joint-space Cholesky) and TreeKKT.factor_blocks against scipy's sparse LU of the
same KKT matrix (Eq. 22); the Eq. 23 strain option against finite differences; the bilinear-table
quaternion products against direct formulas; the chunked pivot inversion against LAPACK.
"""

import numpy as np
import pytest
from test_kkt_tree import assemble, pinned_both_ends

from solver import RodModel, Simulator, TreeKKT
from solver.build.scenes import chain, random_tree
from solver.core import quaternion as quat
from solver.core.definite_blocks import CHUNK, inv_definite
from solver.core.joint_constraint import JointEvaluator, evaluate
from solver.core.kkt_chain import ChainKKT, chain_order


def v_chain():
    """Two rods hanging from one middle segment (which is the parent of both joints next to it)."""
    n = 9
    pos = np.zeros((n, 3))
    pos[:, 0] = np.arange(n) * 0.1
    q = np.tile([1.0, 0, 0, 0], (n, 1))
    parent = [4, 3, 2, 1, 4, 5, 6, 7]
    child = [3, 2, 1, 0, 5, 6, 7, 8]
    pp = np.array([[-0.05, 0, 0]] * 4 + [[0.05, 0, 0]] * 4)
    pinned = np.zeros(n, bool)
    pinned[0] = True
    return RodModel.from_arrays(
        pos,
        q,
        0.1,
        0.01,
        1000.0,
        joint_parent=parent,
        joint_child=child,
        joint_point_parent=pp,
        joint_point_child=-pp,
        youngs_modulus=1e9,
        pinned=pinned,
    )


def two_rods():
    a, b = chain(6), pinned_both_ends()
    n = a.n_segments
    cat = np.concatenate
    return RodModel.from_arrays(
        cat((a.positions, b.positions + 1.0)),
        cat((a.orientations, b.orientations)),
        cat((a.lengths, b.lengths)),
        cat((a.radii, b.radii)),
        1000.0,
        joint_parent=cat((a.joint_parent, b.joint_parent + n)),
        joint_child=cat((a.joint_child, b.joint_child + n)),
        joint_point_parent=cat((a.joint_point_parent, b.joint_point_parent)),
        joint_point_child=cat((a.joint_point_child, b.joint_point_child)),
        youngs_modulus=1e9,
        pinned=cat((a.pinned, b.pinned)),
    )


def perturbed_step(model, seed=0):
    sim = Simulator(model, dt=1 / 60)
    sim.begin_step()
    rng = np.random.default_rng(seed)
    sim.positions += 1e-3 * rng.normal(size=sim.positions.shape) * (~model.pinned)[:, None]
    sim.orientations = quat.normalize(sim.orientations + 1e-2 * rng.normal(size=sim.orientations.shape))
    sim.lam = rng.normal(size=sim.lam.shape)
    return sim, rng


@pytest.mark.parametrize("make", [lambda: chain(40), pinned_both_ends, v_chain, two_rods])
def test_chain_solver_solves_the_kkt_system(make):
    """ChainKKT's solution satisfies H z = r (H assembled as in test_kkt_tree) and equals TreeKKT's,
    with and without a segment right-hand side."""
    sim, rng = perturbed_step(make())
    h, c = assemble(sim)
    _, jp, jc = evaluate(sim.model, sim.positions, sim.orientations)
    solvers = [K(sim.free_index.size, sim._seg_a, sim._seg_b) for K in (ChainKKT, TreeKKT)]
    for k in solvers:
        k.factor(sim._mass_diag_free, sim.alpha_tilde, jp, jc)
    rhs_joint = c + sim.alpha_tilde * sim.lam
    for rhs_seg in (rng.normal(size=(sim.free_index.size, 6)), None):
        r = np.concatenate(
            (np.zeros(6 * sim.free_index.size) if rhs_seg is None else rhs_seg.ravel(), rhs_joint.ravel())
        )
        z_chain, z_tree = (np.concatenate([part.ravel() for part in k.solve(rhs_seg, rhs_joint)]) for k in solvers)
        assert np.linalg.norm(h @ z_chain - r) <= 1e-8 * np.linalg.norm(z_chain) * np.abs(h).max()
        np.testing.assert_allclose(z_chain, z_tree, rtol=1e-7, atol=1e-9 * np.max(np.abs(z_tree)))


def test_solver_choice_chains_banded_trees_contracted():
    tree = random_tree(60, seed=3)
    assert chain_order(tree.n_segments, tree.joint_parent, tree.joint_child) is None
    with pytest.raises(ValueError):
        ChainKKT(tree.n_segments, tree.joint_parent, tree.joint_child)
    for model, kind in ((chain(30), ChainKKT), (v_chain(), ChainKKT), (tree, TreeKKT)):
        sim = Simulator(model, dt=1 / 60, compiled=False)  # the numpy solvers (the compiled one serves both)
        sim.step()
        assert isinstance(sim._kkt, kind)


def test_factor_from_blocks_equals_factor_from_full_jacobians():
    model = random_tree(200, seed=4, branch_probability=0.6)
    sim, rng = perturbed_step(model, seed=1)
    ev = JointEvaluator(model)
    rhs = ev.values(sim.positions, sim.orientations) + sim.alpha_tilde * sim.lam
    full = TreeKKT(sim.free_index.size, sim._seg_a, sim._seg_b)
    full.factor(sim._mass_diag_free, sim.alpha_tilde, *ev.jacobians())
    fast = TreeKKT(sim.free_index.size, sim._seg_a, sim._seg_b)
    fast.factor_blocks(sim._mass_diag_free, sim.alpha_tilde, *ev.rotation_columns())
    for a, b in zip(full.solve(None, rhs), fast.solve(None, rhs), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.max(np.abs(a)))
    # a general factor() in between must not leave its blocks behind for factor_blocks
    full.factor(sim._mass_diag_free, sim.alpha_tilde, *(2.0 * j for j in ev.jacobians()[:2]))
    full.factor_blocks(sim._mass_diag_free, sim.alpha_tilde, *ev.rotation_columns())
    np.testing.assert_allclose(
        full.solve(None, rhs)[1],
        fast.solve(None, rhs)[1],
        rtol=1e-12,
        atol=1e-12 * np.max(np.abs(fast.solve(None, rhs)[1])),
    )


def bent_model(rng, m=6):
    """A random model whose rest pose has large relative rotations (junction-like)."""
    n = m + 1
    q = quat.normalize(rng.normal(size=(n, 4)))
    return RodModel.from_arrays(
        rng.normal(size=(n, 3)),
        q,
        rng.uniform(0.1, 1.0, n),
        0.05,
        1000.0,
        joint_parent=np.arange(m),
        joint_child=np.arange(1, n),
        joint_point_parent=rng.normal(size=(m, 3)),
        joint_point_child=rng.normal(size=(m, 3)),
        youngs_modulus=1e9,
    )


def test_eq23_strain_and_jacobians():
    rng = np.random.default_rng(7)
    model = bent_model(rng)
    x = model.positions + 0.05 * rng.normal(size=model.positions.shape)
    q = quat.normalize(model.orientations + 0.1 * rng.normal(size=model.orientations.shape))
    c, jp, jc = evaluate(model, x, q, strain="eq23")
    # Eq. 23 literally: (2/l)(Im(q̄_p q_c) − Im(q̄_p⁰ q_c⁰))
    d = quat.multiply(quat.conjugate(q[model.joint_parent]), q[model.joint_child])
    want = 2.0 / model.joint_lengths[:, None] * (d[:, 1:] - model.rest_darboux[:, 1:])
    np.testing.assert_allclose(c[:, 3:], want, atol=1e-13)
    # the two strains differ at large rest rotations, agree for a straight rest pose
    assert np.max(np.abs(c - evaluate(model, x, q, with_jacobians=False))) > 1e-3
    straight = chain(8)
    qs = quat.normalize(straight.orientations + 0.05 * rng.normal(size=straight.orientations.shape))
    np.testing.assert_allclose(
        evaluate(straight, straight.positions, qs, with_jacobians=False, strain="eq23"),
        evaluate(straight, straight.positions, qs, with_jacobians=False),
        atol=1e-12,
    )
    h = 1e-6
    for jac, seg_of in ((jp, model.joint_parent), (jc, model.joint_child)):
        for j in range(model.n_joints):
            num = np.zeros((6, 6))
            for k in range(6):
                step = np.zeros(6)
                step[k] = h
                out = []
                for sgn in (1.0, -1.0):
                    xx, qq = x.copy(), q.copy()
                    xx[seg_of[j]] += sgn * step[:3]
                    qq[seg_of[j]] = quat.integrate_body(q[seg_of[j]], sgn * step[3:])
                    out.append(evaluate(model, xx, qq, [j], with_jacobians=False, strain="eq23")[0])
                num[:, k] = (out[0] - out[1]) / (2 * h)
            np.testing.assert_allclose(jac[j], num, atol=1e-7, rtol=1e-6)
    with pytest.raises(ValueError, match="strain"):
        JointEvaluator(model, strain="bogus")


def test_quaternion_tables_match_direct_formulas():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(20, 4)), rng.normal(size=(20, 4))
    aw, av, bw, bv = a[:, 0], a[:, 1:], b[:, 0], b[:, 1:]
    direct = np.concatenate(
        ((aw * bw - np.sum(av * bv, axis=1))[:, None], aw[:, None] * bv + bw[:, None] * av + np.cross(av, bv)), axis=1
    )
    np.testing.assert_allclose(quat.multiply(a, b), direct, atol=1e-14)
    np.testing.assert_allclose(quat.multiply_conjugate(a, b), quat.multiply(quat.conjugate(a), b), atol=1e-14)
    np.testing.assert_allclose(quat.cross(av, bv), np.cross(av, bv), atol=1e-14)
    u = quat.normalize(a)
    r = quat.to_matrix(a)  # unnormalised input: the rotation of a/|a|
    np.testing.assert_allclose(r @ np.swapaxes(r, 1, 2), np.broadcast_to(np.eye(3), r.shape), atol=1e-14)
    np.testing.assert_allclose(np.linalg.det(r), 1.0, atol=1e-14)
    v = rng.normal(size=(20, 3))
    rotated = quat.multiply(quat.multiply(u, np.concatenate((np.zeros((20, 1)), v), axis=1)), quat.conjugate(u))
    np.testing.assert_allclose(quat.rotate(u, v), rotated[:, 1:], atol=1e-14)
    np.testing.assert_allclose(quat.rotate_inverse(u, quat.rotate(u, v)), v, atol=1e-14)


def test_chunked_pivot_inversion_matches_lapack():
    rng = np.random.default_rng(5)
    k = 2 * CHUNK + 7
    a = rng.normal(size=(k, 6, 6))
    d = -(a @ np.swapaxes(a, 1, 2) + 1e-2 * np.eye(6))  # negative definite, like joint pivots
    np.testing.assert_allclose(inv_definite(d, -1.0), np.linalg.inv(d), rtol=1e-9, atol=1e-12)
    d[k - 1, 5, 5] = 1.0  # indefinite, in the last batch
    with pytest.raises(np.linalg.LinAlgError):
        inv_definite(d, -1.0)


@pytest.mark.parametrize("strain", ["rotation", "eq23"])
def test_evaluator_tables_equal_direct_formulas(strain):
    """JointEvaluator's packed gathers (all joints) and per-joint path (a few joints), the folded rest rotation
    (r̄⁰ q̄_p q_c = conj(q_p r⁰) q_c) and the constant tables for the bend/twist blocks give the direct formulas
    to 1e-12, also on the short-arc sign flip."""
    rng = np.random.default_rng(11)
    model = bent_model(rng, m=40)
    ev = JointEvaluator(model, strain=strain)
    jp, jc, inv_l = model.joint_parent, model.joint_child, 1.0 / model.joint_lengths
    flipped = 0
    for _ in range(3):  # the evaluator's buffers are reused between poses
        x = model.positions + 0.1 * rng.normal(size=model.positions.shape)
        q = quat.normalize(model.orientations + 0.8 * rng.normal(size=model.orientations.shape))
        c = ev.values(x, q).copy()
        rot_p, rot_c = (a.copy() for a in ev.rotation_columns())
        rp, rc = quat.to_matrix(q[jp]), quat.to_matrix(q[jc])
        stretch = (
            x[jp] - x[jc] + quat.rotate(q[jp], model.joint_point_parent) - quat.rotate(q[jc], model.joint_point_child)
        )
        e = quat.multiply(quat.conjugate(q[jp]), q[jc])
        if strain == "rotation":
            e = quat.multiply(quat.conjugate(model.rest_darboux), e)
            ls = np.where(e[:, 0] < 0.0, -inv_l, inv_l)
            bend = 2.0 * ls[:, None] * e[:, 1:]
            r0t = np.swapaxes(quat.to_matrix(model.rest_darboux), 1, 2)
        else:
            ls = inv_l
            bend = 2.0 * ls[:, None] * (e[:, 1:] - model.rest_darboux[:, 1:])
            r0t = np.broadcast_to(np.eye(3), rp.shape)
        flipped += int(np.sum(e[:, 0] < 0.0))
        k = quat.skew(e[:, 1:]) + e[:, 0, None, None] * np.eye(3)
        want_c = np.concatenate((stretch, bend), axis=1)
        want_p = np.concatenate(
            (-rp @ quat.skew(model.joint_point_parent), -ls[:, None, None] * np.swapaxes(k, 1, 2) @ r0t), axis=1
        )
        want_c_rot = np.concatenate((rc @ quat.skew(model.joint_point_child), ls[:, None, None] * k), axis=1)
        for got, want in ((c, want_c), (rot_p, want_p), (rot_c, want_c_rot)):
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.max(np.abs(want)))
        # a few joints (a Gauss–Seidel colour) take the per-joint path: the same rows
        few = np.array([3, 17, 29])
        sub_c, sub_p, sub_c_jac = evaluate(model, x, q, few, strain=strain)
        for got, want in ((sub_c, want_c), (sub_p[:, :, 3:], want_p), (sub_c_jac[:, :, 3:], want_c_rot)):
            np.testing.assert_allclose(got, want[few], rtol=0, atol=1e-12 * np.max(np.abs(want)))
    assert flipped > 0  # the short-arc sign s = −1 was exercised


def test_prediction_fast_paths_equal_formula():
    """begin_step with zero torque (no body-frame rotation of torques) and a non-contiguous set of free segments
    (gathered, not sliced) gives Algorithm 1's prediction, line 1–3, to round-off; pinned segments stay put."""
    model = chain(12)
    pinned = model.pinned.copy()
    pinned[6] = True
    model = model.copy_with(pinned=pinned)
    rng = np.random.default_rng(3)
    sim = Simulator(model, dt=0.01)
    sim.velocities = rng.normal(size=sim.velocities.shape) * (~pinned)[:, None]
    sim.angular_velocities = rng.normal(size=sim.angular_velocities.shape) * (~pinned)[:, None]
    for torque in (0.0, 1e-3):
        sim.torques[:] = torque
        x0, q0 = sim.positions.copy(), sim.orientations.copy()
        v0, w0 = sim.velocities.copy(), sim.angular_velocities.copy()
        sim.begin_step()
        dt, inertia, mass = sim.dt, model.inertia, model.masses[:, None]
        tb = quat.rotate_inverse(q0, sim.torques)
        w = w0 + dt * (tb - np.cross(w0, inertia * w0)) / inertia
        v = v0 + dt * (sim.forces + mass * sim.gravity) / mass
        free = ~pinned
        np.testing.assert_allclose(sim.positions[free], (x0 + dt * v)[free], rtol=0, atol=1e-14)
        np.testing.assert_allclose(sim.orientations[free], quat.integrate_body(q0, dt * w)[free], rtol=0, atol=1e-14)
        np.testing.assert_array_equal(sim.positions[pinned], x0[pinned])
        np.testing.assert_array_equal(sim.orientations[pinned], q0[pinned])
        sim._restore()
