"""The game skeleton's fit (addon/skin_fit.py, no bpy): exact recovery of linear blend skinning data, the
constraints glTF needs (≤ 4 influences, w ≥ 0, Σ w = 1), and on a simulated tree in wind an error that vanishes
at the full bone count and falls with the budget."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from solver import AerodynamicDrag, Simulator, WindField, quaternion, tree_from_branches

ROOT = Path(__file__).resolve().parents[2]
BUDGETS = (8, 32, 64, 128)


@pytest.fixture(scope="module")
def sf(addon):
    return addon("skin_fit")


def random_rigid(rng, shape):
    """Random rigid transforms (*shape, 3, 4) with translations of ~1 m."""
    q = quaternion.normalize(rng.normal(size=(*shape, 4)))
    return np.concatenate((quaternion.to_matrix(q), rng.normal(size=(*shape, 3, 1))), axis=-1)


def lbs_reference(m, rest, dense_w):
    """Σ_b W[v, b] (R_b(f) v⁰ + t_b(f)), written out with a dense weight matrix (V, B)."""
    moved = np.einsum("fbij,vj->fbvi", m[..., :3], rest) + m[:, :, None, :, 3]
    return np.einsum("vb,fbvi->fvi", dense_w, moved)


def test_kabsch_recovers_a_known_rigid_motion(sf):
    rng = np.random.default_rng(1)
    t = random_rigid(rng, (5,))
    src = rng.normal(size=(5, 30, 3))
    dst = np.einsum("fij,fnj->fni", t[..., :3], src) + t[:, None, :, 3]
    np.testing.assert_allclose(sf.kabsch(rng.uniform(0.1, 1.0, (5, 30)), src, dst), t, atol=1e-12)
    np.testing.assert_allclose(
        sf.compose(t, sf.rigid_inverse(t))[..., :3], np.broadcast_to(np.eye(3), (5, 3, 3)), atol=1e-14
    )


def test_known_sparse_skin_is_recovered_exactly(sf):
    """LBS data from 6 bones, 30 frames and random ≤ 4-bone convex weights: the fit returns those weights and
    reproduces the positions to ~1e-9 m."""
    rng = np.random.default_rng(2)
    bones, count, frames = 6, 400, 30
    m = random_rigid(rng, (frames, bones))
    rest = rng.normal(size=(count, 3))
    dense = np.zeros((count, bones))
    for v in range(count):  # test data, not the code under test
        support = rng.choice(bones, size=rng.integers(1, 5), replace=False)
        dense[v, support] = rng.dirichlet(np.ones(support.size))
    target = lbs_reference(m, rest, dense)
    cand = np.broadcast_to(np.arange(bones), (count, bones)).copy()
    indices, weights = sf.fit_weights(m, rest, target, cand)
    recovered = np.zeros_like(dense)
    np.add.at(recovered, (np.arange(count)[:, None], indices), weights)
    np.testing.assert_allclose(recovered, dense, atol=1e-9)
    assert np.abs(lbs_reference(m, rest, recovered) - target).max() < 1e-9


def test_bone_selection_maps_every_bone_to_a_chosen_ancestor(sf):
    rng = np.random.default_rng(3)
    n = 300
    parent = np.concatenate(([-1], rng.integers(0, np.arange(1, n))))
    heads = rng.normal(size=(n, 3))
    skel = sf.Skeleton(
        parent, rng.uniform(0.1, 1.0, n), heads, heads + 0.1, np.zeros((n, 3, 4)), np.zeros((1, n, 3, 4))
    )
    sel = sf.select_bones(skel, 20, cost="size")
    assert sel.chosen.size == 20 and sel.chosen[0] == 0 and sel.parent[0] == -1
    assert np.array_equal(sel.bone_of[sel.chosen], np.arange(20))
    chosen = set(sel.chosen.tolist())
    for k in range(n):  # walk up: the first chosen bone met is the one k maps to
        a = k
        while a not in chosen:
            a = parent[a]
        assert sel.chosen[sel.bone_of[k]] == a
    assert np.array_equal(sel.parent[1:], sel.bone_of[parent[sel.chosen[1:]]])
    assert np.all(sel.parent[1:] < np.arange(1, 20))  # parents come first


def test_module_imports_without_bpy():
    code = (
        "import sys; sys.modules['bpy'] = None; sys.path.insert(0, 'tests/addon'); import importlib;"
        "from conftest import load_package; importlib.import_module(load_package() + '.addon.skin_fit')"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


# --- a simulated tree in wind, its tube mesh following the segments rigidly (the full rig) -----------------


def make_branches(seed=0, children=6):
    """A trunk (5 m, 20 spans), 6 branches on it and 6 twigs on each branch: 386 segments."""
    rng = np.random.default_rng(seed)

    def polyline(base, direction, length, n, r0):
        t = np.linspace(0.0, 1.0, n)[:, None]
        d = np.asarray(direction) / np.linalg.norm(direction)
        return base + length * t * d + 0.1 * length * t**2 * np.array([0, 0, 1.0]), np.linspace(r0, 0.25 * r0, n)

    branches, parents = [polyline(np.zeros(3), (0, 0, 1), 5.0, 21, 0.12)], [None]
    for b in (0, *range(1, children + 1)):
        pts, rad = branches[b]
        for _ in range(children):
            span = int(rng.integers((len(pts) - 1) // 3, len(pts) - 2))
            ang = rng.uniform(0, 2 * np.pi)
            length = 0.45 * np.linalg.norm(pts[-1] - pts[0]) * rng.uniform(0.6, 1.0)
            direction = (np.cos(ang), np.sin(ang), rng.uniform(0.2, 0.8))
            branches.append(polyline(pts[span], direction, length, max(4, 2 * len(pts) // 3), 0.7 * rad[span]))
            parents.append((b, span))
    return branches, parents


def tube(sf, model, rest, poses, sides=6):
    """Two rings of ``sides`` vertices at each segment's ends, carried rigidly by the segment."""
    ang = np.arange(sides) * 2 * np.pi / sides
    r, half = model.radii[:, :1], 0.5 * model.lengths[:, None]
    ring = lambda z: np.stack((r * np.cos(ang), r * np.sin(ang), np.broadcast_to(z, r.shape[:1] + (sides,))), -1)  # noqa: E731
    local = np.concatenate((ring(-half), ring(half)), axis=1).reshape(-1, 3)
    bone = np.repeat(np.arange(model.n_segments), 2 * sides)
    return sf.MeshMotion(sf.transform_points(rest[bone], local), sf.transform_points(poses[:, bone], local), bone)


@pytest.fixture(scope="module")
def tree(sf):
    """(skeleton, mesh, height): 2 s at 30 fps in a gusty 20 m/s wind."""
    branches, parents = make_branches()
    model, _ = tree_from_branches(branches, parents=parents, youngs_modulus=3e9, density=700.0)
    sim = Simulator(model, dt=1 / 30)
    wind = WindField(20.0, (1, 0.3, 0), gust_intensity=0.5, turbulence_intensity=0.3)
    sim.force_fields.append(AerodynamicDrag(model, wind))
    poses = []
    for _ in range(60):
        sim.step()
        poses.append(np.concatenate((quaternion.to_matrix(sim.orientations), sim.positions[:, :, None]), -1))
    rest = np.concatenate((quaternion.to_matrix(model.orientations), model.positions[:, :, None]), -1)
    parent = np.full(model.n_segments, -1)
    parent[model.joint_child] = model.joint_parent
    axis = 0.5 * model.lengths[:, None] * rest[:, :, 2]
    skel = sf.Skeleton(parent, model.masses, rest[..., 3] - axis, rest[..., 3] + axis, rest, np.array(poses))
    mesh = tube(sf, model, rest, skel.poses)
    assert np.linalg.norm(mesh.frames - mesh.rest, axis=-1).max() > 0.3  # the tree sways (m)
    return skel, mesh, float(np.ptp(mesh.rest[:, 2]))


@pytest.fixture(scope="module")
def rigs(sf, tree):
    skel, mesh, _ = tree
    return {b: sf.fit_game_rig(skel, mesh, b, sf.FitOptions(iterations=2)) for b in (*BUDGETS, skel.parent.size)}


def test_full_budget_reproduces_the_simulation(tree, rigs):
    skel, _, _ = tree
    rig = rigs[skel.parent.size]
    assert rig.selection.chosen.size == skel.parent.size
    assert rig.errors[0]["max_error_m"] < 1e-9


def test_error_falls_with_the_budget(rigs, tree):
    """Measured (RMS / max [mm], 386-segment tree of 6.5 m, 60 frames, sway up to ~1 m): 8 bones 3.3 / 64,
    32: 0.79 / 15, 64: 0.11 / 1.2, 128: 0.029 / 0.39."""
    _, _, height = tree
    rms = [rigs[b].errors[-1]["rms_error_m"] for b in BUDGETS]
    top = [rigs[b].errors[-1]["max_error_m"] for b in BUDGETS]
    print({b: (round(r * 1e3, 3), round(t * 1e3, 2)) for b, r, t in zip(BUDGETS, rms, top, strict=True)})
    assert np.all(np.diff(rms) < 0) and np.all(np.diff(top) < 0)
    assert rms[-1] < 1e-3 * height and top[-1] < 1e-3 * height  # 128 bones: ≤ 0.1 % of the height


def test_ssdr_iterations_never_increase_the_error(rigs):
    """Both SSDR steps are exact minimisers of the same squared error (block coordinate descent)."""
    for rig in rigs.values():
        sq = np.array([e["rms_error_m"] for e in rig.errors]) ** 2
        assert np.all(np.diff(sq) <= 1e-12 + 1e-9 * sq[:-1])


def test_every_vertex_has_at_most_four_convex_influences(rigs):
    for budget, rig in rigs.items():
        assert rig.indices.shape == rig.weights.shape == (rig.indices.shape[0], 4)
        assert np.all(rig.weights >= 0.0) and np.allclose(rig.weights.sum(1), 1.0, atol=1e-12)
        assert rig.indices.min() >= 0 and rig.indices.max() < min(budget, rig.selection.chosen.size)
        assert rig.poses.shape[1] == rig.selection.chosen.size <= budget
        r = rig.poses[..., :3]
        np.testing.assert_allclose(r @ np.swapaxes(r, -1, -2), np.broadcast_to(np.eye(3), r.shape), atol=1e-9)
