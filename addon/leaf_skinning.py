"""The leaves mesh's vertices from the leaf segments, and their inversion through the Armature modifier (no bpy).

Every leaf vertex rides on its leaf segment: ``binding = (used (U,) vertex indices, seg (U,) leaf segments,
local (U, 3) [m] coordinates in the segment's frame)``. To play leaves back with plain Blender, the mesh's
base coordinates are written such that the tree's Armature modifier (bones following their segments) deforms
them exactly onto the carried vertices: :func:`base_coordinates` inverts the modifier per vertex.

``leaves`` is a :class:`addon.reader.LeafMesh`: ``co`` (V, 3) world [m], ``co_local`` (V, 3) object-local,
``weight_vertex``/``weight_bone``/``weight`` (the vertex groups as triples), ``matrix_world`` (4×4 [m]).
"""

from __future__ import annotations

import numpy as np

from ..solver import quaternion as quat
from .bone_maps import rotation_matrices

NO_WEIGHT = 1e-4  # Blender's threshold for "no contribution" of a vertex's total weight


def carried_vertices(binding, positions, orientations, rows=slice(None)) -> np.ndarray:
    """World positions [m] of the leaf vertices ``binding[0][rows]`` carried by their leaf segments."""
    _, seg, local = binding
    return positions[seg[rows]] + quat.rotate(orientations[seg[rows]], local[rows])


def vertices_world(leaves, binding, positions, orientations) -> np.ndarray:
    """World positions (V, 3) [m] of every vertex: a leaf's carried by its leaf segment, a vertex of no leaf at
    rest."""
    out = leaves.co.copy()
    out[binding[0]] = carried_vertices(binding, positions, orientations)
    return out


def leaf_blend(leaves, binding, bone_segment, model) -> dict:
    """What :func:`base_coordinates` needs per topology. A leaf vertex with one bone (all of Sapling's) has
    the map ``P_b (R_l local + c_l) + o_b`` of its bone b and its leaf segment l: one 3×3 matrix and offset per
    (leaf segment, bone) pair, so a frame costs one product per pair and one per vertex. A vertex of no weight
    takes the identity as its bone; vertices of several bones keep the per-vertex blend (a sparse weight
    matrix) and solve. ``bone_segment`` (B,): each bone's segment; ``model``: the rest model (drawn pose)."""
    from scipy import sparse

    lm = leaves
    used, seg, local = binding
    n = lm.co.shape[0]
    total = np.bincount(lm.weight_vertex, lm.weight, minlength=n)
    count = np.bincount(lm.weight_vertex[lm.weight > 0], minlength=n)
    bone_seg, col = np.unique(bone_segment[lm.weight_bone], return_inverse=True)
    col = col.ravel()
    moved = total[used] > NO_WEIGHT
    single = ~moved | (count[used] == 1)
    bone = np.full(n, bone_seg.size, dtype=np.int64)  # index bone_seg.size: the identity (no motion)
    one = (lm.weight > 0) & (count[lm.weight_vertex] == 1) & (total[lm.weight_vertex] > NO_WEIGHT)
    bone[lm.weight_vertex[one]] = col[one]
    pair_key = seg[single] * (bone_seg.size + 1) + bone[used[single]]
    pairs, pair_of = np.unique(pair_key, return_inverse=True)
    multi = np.flatnonzero(~single)
    row = np.full(n, -1, dtype=np.int64)
    row[used[multi]] = np.arange(multi.size)
    keep = row[lm.weight_vertex] >= 0
    vertex = lm.weight_vertex[keep]
    blend = sparse.csr_matrix(
        (lm.weight[keep] / total[vertex], (row[vertex], col[keep])), shape=(multi.size, bone_seg.size)
    )
    single_index = np.flatnonzero(single)
    return dict(
        binding=binding,
        model=model,
        bone_seg=bone_seg,
        # the drawn pose of the bones' segments, D_b's rest side: R_b⁰ᵀ and c_b⁰
        rest_rotation_t=quat.to_matrix(model.orientations[bone_seg]).transpose(0, 2, 1),
        rest_position=model.positions[bone_seg],
        pair_seg=pairs // (bone_seg.size + 1),
        pair_bone=pairs % (bone_seg.size + 1),
        groups=pair_groups(pair_of.ravel(), pairs.size, used[single_index], local[single_index]),
        multi=multi,
        blend=blend,
        inverse=np.linalg.inv(lm.matrix_world),
    )


def base_coordinates(leaves, binding, blend: dict, positions, orientations) -> np.ndarray:
    """Leaves-mesh coordinates (V, 3), object-local, that the Armature modifier deforms exactly onto the
    carried vertices for segment ``positions`` (n, 3) [m] and ``orientations`` (n, 4). The modifier moves a
    vertex by the weighted mean of its bones' motions, ``x = Σ w̃_b D_b(x⁰)`` with ``D_b(x) = R_b R_b⁰ᵀ (x −
    c_b⁰) + c_b`` (w̃ normalised; a vertex with total weight ≤ 1e-4 stays): an affine map ``A x⁰ + t``,
    inverted here per vertex. ``blend``: :func:`leaf_blend`. Vertices of no leaf keep their own coordinates."""
    b = blend
    used = binding[0]
    s = b["bone_seg"]
    motion = rotation_matrices(orientations[s]) @ b["rest_rotation_t"]
    shift = positions[s] - np.einsum("wij,wj->wi", motion, b["rest_position"])  # D_b(x) = motion x + shift
    inv = b["inverse"]
    out = leaves.co_local.astype(float)
    # one bone: base = D_b⁻¹(x) = motionᵀ (x − shift) (a rotation), object-local: P_b x + o_b
    p = np.concatenate((inv[:3, :3] @ motion.transpose(0, 2, 1), inv[None, :3, :3]))
    o = inv[:3, 3] - np.einsum("wij,wj->wi", p, np.concatenate((shift, np.zeros((1, 3)))))
    ps, pb = b["pair_seg"], b["pair_bone"]
    c = p[pb] @ rotation_matrices(orientations[ps])
    d = np.einsum("pij,pj->pi", p[pb], positions[ps]) + o[pb]
    for pair, vertex, loc in b["groups"]:  # pairs of m vertices: one (3, 3) @ (3, m) product per pair
        out[vertex] = (c[pair] @ loc + d[pair][:, :, None]).transpose(0, 2, 1).reshape(-1, 3)
    multi = b["multi"]
    if multi.size:
        x = carried_vertices(binding, positions, orientations, multi)
        at = b["blend"] @ np.concatenate((motion.reshape(-1, 9), shift), axis=1)  # (vertices, 9 + 3): A, t
        base = solve3(at[:, :9].reshape(-1, 3, 3), x - at[:, 9:])
        out[used[multi]] = base @ inv[:3, :3].T + inv[:3, 3]
    return out


def pair_groups(pair_of: np.ndarray, n_pairs: int, vertex: np.ndarray, local: np.ndarray) -> list:
    """The vertices of each (leaf segment, bone) pair gathered by how many a pair has (a leaf's 4–8, mostly
    the same), so one batched product per group moves them: per count m, (pairs (P,), their vertices' rows
    (P m,) in pair order, or a slice when those are consecutive, local coordinates (P, 3, m)) of the vertices
    ``vertex`` with pair ``pair_of`` and coordinates ``local``."""
    by_pair = np.argsort(pair_of, kind="stable")
    count = np.bincount(pair_of, minlength=n_pairs)
    start = np.concatenate(([0], np.cumsum(count)[:-1]))
    groups = []
    for m in np.unique(count[count > 0]):
        pair = np.flatnonzero(count == m)
        rows = by_pair[start[pair][:, None] + np.arange(m)]
        order = np.argsort(vertex[rows[:, 0]], kind="stable")  # a leaf's vertices are mostly consecutive
        pair, rows = pair[order], rows[order]
        target = vertex[rows].ravel()
        if target.size and np.array_equal(target, np.arange(target[0], target[0] + target.size)):
            target = slice(int(target[0]), int(target[0]) + target.size)  # a block copy, not a scatter
        groups.append((pair, target, np.ascontiguousarray(local[rows].transpose(0, 2, 1))))
    return groups


def solve3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solutions x (n, 3) of ``a x = b`` for (n, 3, 3) matrices by the adjugate (a blend of rotations is well
    conditioned): several times faster than numpy.linalg.solve's batched LU on small matrices."""
    r0, r1, r2 = a[:, 0], a[:, 1], a[:, 2]
    c0, c1, c2 = quat.cross(r1, r2), quat.cross(r2, r0), quat.cross(r0, r1)  # columns of det(a) a⁻¹
    det = np.einsum("ni,ni->n", r0, c0)
    return (c0 * b[:, :1] + c1 * b[:, 1:2] + c2 * b[:, 2:]) / det[:, None]
