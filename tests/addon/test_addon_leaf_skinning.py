"""The leaves' skinning inversion (addon/leaf_skinning.py): base coordinates that the Armature modifier
deforms exactly onto the carried leaf vertices, on a synthetic tree with known base coordinates."""

from types import SimpleNamespace

import numpy as np

from solver import quaternion as quat


def _random_quaternions(rng, n, max_angle):
    axis = rng.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    angle = rng.uniform(0.0, max_angle, n)
    return np.concatenate((np.cos(angle / 2)[:, None], np.sin(angle / 2)[:, None] * axis), axis=1)


def _scene(rng):
    """Segments 0–2 carry bones 0–2 (bone 3 on segment 0 too), segments 3–5 are leaves; the leaves object has
    a world matrix; 12 vertices: one bone each, two bones, no weight (the identity), and one of no leaf."""
    n = 6
    rest = SimpleNamespace(positions=rng.normal(size=(n, 3)), orientations=_random_quaternions(rng, n, 1.0))
    now_x = rest.positions + 0.1 * rng.normal(size=(n, 3))
    now_q = quat.multiply(_random_quaternions(rng, n, 0.5), rest.orientations)
    bone_segment = np.array([0, 1, 2, 0])
    # (vertex, bone, weight): vertices 0–5 one bone, 6–8 two bones, 9–10 none, 11 no leaf (one bone)
    entries = [(0, 0, 1.0), (1, 0, 0.5), (2, 1, 1.0), (3, 1, 1.0), (4, 2, 0.7), (5, 3, 1.0)]
    entries += [(6, 0, 0.3), (6, 1, 0.7), (7, 1, 1.0), (7, 2, 1.0), (8, 2, 0.2), (8, 3, 0.6), (11, 2, 1.0)]
    entries += [(10, 1, 5e-5)]  # below Blender's 1e-4: no contribution
    wv, wb, w = (np.array(c) for c in zip(*entries, strict=True))
    matrix_world = np.eye(4)
    matrix_world[:3, :3] = quat.to_matrix(_random_quaternions(rng, 1, 1.0))[0] * 1.5
    matrix_world[:3, 3] = [0.3, -0.2, 1.0]
    base = rng.normal(size=(12, 3))  # the object-local base coordinates the inversion must find
    leaves = SimpleNamespace(
        co=base @ matrix_world[:3, :3].T + matrix_world[:3, 3],
        co_local=base.copy(),
        weight_vertex=wv.astype(np.int64),
        weight_bone=wb.astype(np.int64),
        weight=w.astype(float),
        matrix_world=matrix_world,
    )
    return rest, now_x, now_q, bone_segment, leaves, base


def _armature_modifier(leaves, base, bone_segment, rest, now_x, now_q):
    """World positions the Armature modifier gives the base coordinates: x = Σ w̃_b D_b(M x⁰) with
    D_b(x) = R_b R_b⁰ᵀ (x − c_b⁰) + c_b, the identity where the total weight is ≤ 1e-4."""
    m = leaves.matrix_world
    x0 = base @ m[:3, :3].T + m[:3, 3]
    out = x0.copy()
    for v in range(x0.shape[0]):
        rows = np.flatnonzero(leaves.weight_vertex == v)
        total = leaves.weight[rows].sum()
        if total <= 1e-4:
            continue
        out[v] = 0.0
        for r in rows:
            s = bone_segment[leaves.weight_bone[r]]
            motion = quat.to_matrix(now_q[s]) @ quat.to_matrix(rest.orientations[s]).T
            out[v] += leaves.weight[r] / total * (motion @ (x0[v] - rest.positions[s]) + now_x[s])
    return out


def test_base_coordinates_reproduce_the_known_base_to_1e_12(addon):
    skin = addon("leaf_skinning")
    rng = np.random.default_rng(3)
    rest, now_x, now_q, bone_segment, leaves, base = _scene(rng)
    deformed = _armature_modifier(leaves, base, bone_segment, rest, now_x, now_q)
    used = np.arange(11)  # vertex 11 belongs to no leaf
    seg = np.array([3, 3, 4, 4, 5, 5, 3, 4, 5, 3, 4])
    local = quat.rotate_inverse(now_q[seg], deformed[used] - now_x[seg])  # where the leaf segments carry them
    binding = (used, seg, local)
    blend = skin.leaf_blend(leaves, binding, bone_segment, rest)
    np.testing.assert_array_equal(blend["multi"], [6, 7, 8])  # the vertices of two bones solve per vertex
    out = skin.base_coordinates(leaves, binding, blend, now_x, now_q)
    np.testing.assert_allclose(out[used], base[used], rtol=0.0, atol=1e-12)
    assert np.array_equal(out[11], base[11])  # no leaf: its own coordinates, following its bone
    world = skin.vertices_world(leaves, binding, now_x, now_q)
    np.testing.assert_allclose(world[used], deformed[used], rtol=0.0, atol=1e-12)
    assert np.array_equal(world[11], leaves.co[11])


def test_solve3_and_pair_groups(addon):
    skin = addon("leaf_skinning")
    rng = np.random.default_rng(0)
    a = quat.to_matrix(_random_quaternions(rng, 50, 1.0)) + 0.1 * rng.normal(size=(50, 3, 3))
    b = rng.normal(size=(50, 3))
    np.testing.assert_allclose(skin.solve3(a, b), np.linalg.solve(a, b[:, :, None])[:, :, 0], rtol=1e-12, atol=1e-12)
    # pairs 0 and 2 of two vertices each, pair 1 of three; vertices 10–16, consecutive per group or not
    pair_of = np.array([0, 0, 1, 1, 1, 2, 2])
    vertex = np.array([10, 11, 12, 13, 14, 16, 15])
    local = rng.normal(size=(7, 3))
    groups = skin.pair_groups(pair_of, 3, vertex, local)
    assert [g[0].tolist() for g in groups] == [[0, 2], [1]]
    two, three = groups
    assert three[1] == slice(12, 15)  # consecutive: a block copy
    np.testing.assert_array_equal(two[1], [10, 11, 16, 15])
    np.testing.assert_array_equal(two[2][1], local[[5, 6]].T)  # (P, 3, m): pair 2's coordinates as columns
