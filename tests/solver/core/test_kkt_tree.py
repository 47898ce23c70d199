"""The linear-time tree solver against scipy's sparse direct solve of the same KKT matrix (Eq. 22)."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spl

from solver import RodModel, Simulator, TreeKKT
from solver.build.scenes import chain, random_tree
from solver.core import quaternion as quat
from solver.core.joint_constraint import evaluate


def assemble(sim):
    """Dense-free sparse H = [[M, −Jᵀ], [−J, −α̃]] over free segments and all joints."""
    m = sim.model
    c, jp, jc = evaluate(m, sim.positions, sim.orientations)
    nf, nj = sim.free_index.size, m.n_joints
    rows, cols, vals = [], [], []
    idx6 = np.arange(6)
    for i in range(nf):
        rows += list(6 * i + idx6)
        cols += list(6 * i + idx6)
        vals += list(sim._mass_diag_free[i])
    at = sim.alpha_tilde
    for j in range(nj):
        r = 6 * nf + 6 * j
        rows += list(r + idx6)
        cols += list(r + idx6)
        vals += list(-at[j])
        for s, jac in ((sim._seg_a[j], jp[j]), (sim._seg_b[j], jc[j])):
            if s < 0:
                continue
            for a in range(6):
                for b in range(6):
                    rows += [r + a, 6 * s + b]
                    cols += [6 * s + b, r + a]
                    vals += [-jac[a, b], -jac[a, b]]
    n = 6 * (nf + nj)
    return sp.csc_matrix((vals, (rows, cols)), shape=(n, n)), c


def star_model(k=9):
    """A hub segment with k children attached at different points along it (junctions anywhere)."""
    n = k + 2
    pos = np.zeros((n, 3))
    pos[0] = [0, 0, -1.0]
    q = np.tile([1.0, 0, 0, 0], (n, 1))
    parent = [0] + [1] * k
    child = list(range(1, n))
    pp = np.zeros((n - 1, 3))
    pp[0] = [0, 0, 0.5]
    pc = np.zeros((n - 1, 3))
    pc[0] = [0, 0, -0.5]
    for i in range(1, k + 1):
        z = -0.5 + i / (k + 1)
        d = np.array([np.cos(i), np.sin(i), 0.3])
        d /= np.linalg.norm(d)
        pos[i + 1] = [0, 0, z] + 0.25 * d
        q[i + 1] = quat.from_two_vectors(np.array([0, 0, 1.0]), d)
        pp[i] = [0, 0, z]
        pc[i] = [0, 0, -0.25]
    lengths = np.full(n, 0.5)
    lengths[:2] = 1.0
    pinned = np.zeros(n, bool)
    pinned[0] = True
    return RodModel.from_arrays(
        pos,
        q,
        lengths,
        0.02,
        700.0,
        joint_parent=parent,
        joint_child=child,
        joint_point_parent=pp,
        joint_point_child=pc,
        youngs_modulus=1e10,
        pinned=pinned,
    )


def pinned_both_ends():
    pts = np.zeros((12, 3))
    pts[:, 0] = np.linspace(0, 1, 12)
    from solver import rod_from_polyline

    return rod_from_polyline(pts, 0.01, 1e9, pinned=["start", "end"])


def two_component_forest():
    a = chain(7)
    b = random_tree(30, seed=5)
    n = a.n_segments
    return RodModel.from_arrays(
        np.vstack((a.positions, b.positions + 5)),
        np.vstack((a.orientations, b.orientations)),
        np.concatenate((a.lengths, b.lengths)),
        np.vstack((a.radii, b.radii)),
        1000.0,
        joint_parent=np.concatenate((a.joint_parent, b.joint_parent + n)),
        joint_child=np.concatenate((a.joint_child, b.joint_child + n)),
        joint_point_parent=np.vstack((a.joint_point_parent, b.joint_point_parent)),
        joint_point_child=np.vstack((a.joint_point_child, b.joint_point_child)),
        youngs_modulus=1e9,
        pinned=np.concatenate((a.pinned, b.pinned)),
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda: chain(40),
        lambda: random_tree(300, seed=1),
        star_model,
        pinned_both_ends,
        two_component_forest,
        lambda: random_tree(200, seed=2, branch_probability=0.9),
    ],
)
def test_tree_solve_matches_sparse_direct_solve(make):
    model = make()
    sim = Simulator(model, dt=1 / 60)
    sim.begin_step()
    rng = np.random.default_rng(0)
    # a generic pose and multipliers so that every block is non-trivial
    sim.positions += 1e-3 * rng.normal(size=sim.positions.shape) * (~model.pinned)[:, None]
    sim.orientations = quat.normalize(sim.orientations + 1e-2 * rng.normal(size=sim.orientations.shape))
    sim.lam = rng.normal(size=sim.lam.shape)
    h, c = assemble(sim)
    rhs_joint = c + sim.alpha_tilde * sim.lam
    rhs_seg = rng.normal(size=(sim.free_index.size, 6))
    ref = spl.spsolve(h, np.concatenate((rhs_seg.ravel(), rhs_joint.ravel())))
    kkt = TreeKKT(sim.free_index.size, sim._seg_a, sim._seg_b)
    _, jp, jc = evaluate(model, sim.positions, sim.orientations)
    kkt.factor(sim._mass_diag_free, sim.alpha_tilde, jp, jc)
    dx, dl = kkt.solve(rhs_seg, rhs_joint)
    got = np.concatenate((dx.ravel(), dl.ravel()))
    np.testing.assert_allclose(got, ref, rtol=1e-7, atol=1e-9 * np.max(np.abs(ref)))
    assert (
        np.linalg.norm(h @ got - np.concatenate((rhs_seg.ravel(), rhs_joint.ravel())))
        <= 1e-8 * np.linalg.norm(ref) * np.abs(h).max()
    )


def test_chain_needs_logarithmically_many_rounds_and_linear_fill():
    """Tree contraction: O(log n) vectorised rounds and at most one fill block per eliminated node."""
    for n in (100, 1000, 10000):
        model = chain(n)
        sim = Simulator(model)
        kkt = TreeKKT(sim.free_index.size, sim._seg_a, sim._seg_b)
        assert kkt.n_rounds <= 4 * np.log2(2 * n), (n, kkt.n_rounds)
        assert kkt.n_edges <= 2 * kkt.n_nodes


def test_unrolled_definite_inverse_matches_lapack_and_rejects_indefinite_blocks():
    from solver.core.definite_blocks import BATCH_MIN, inv_definite

    rng = np.random.default_rng(4)
    k = 3 * BATCH_MIN
    a = rng.normal(size=(k, 6, 6))
    d = a @ np.swapaxes(a, 1, 2) + 1e-3 * np.eye(6)
    d[:, :3, :3] *= 1e4  # badly scaled, like mass vs inertia rows
    sign = np.where(rng.random(k) < 0.5, 1.0, -1.0)
    d *= sign[:, None, None]
    np.testing.assert_allclose(inv_definite(d, sign), np.linalg.inv(d), rtol=1e-8, atol=1e-12)
    d[5] = np.diag([1.0, 1, 1, 1, 1, -1]) * sign[5]
    with pytest.raises(np.linalg.LinAlgError):
        inv_definite(d, sign)
