"""numba kernels of the compiled Newton iteration (imported by :mod:`solver.core.compiled` only, on first use).

One Newton iteration of Deul Eq. 22 on a forest of segments and joints, in three passes over arrays laid out
in elimination order: the joints' constraint values and Jacobian blocks (Eqs. 23, 25, 26 in the body-frame
form of :mod:`solver.core.joint_constraint`); a leaves-to-root block LDLᵀ with the forward substitution
(Baraff's order: every node has exactly one neighbour left when it is eliminated, its parent, so there is no
fill); the back substitution, with each segment's position and orientation and each joint's λ updated as
its unknowns are found. A node's pivot pulls the updates of its children (a CSR list), so no array is
cleared per iteration.

Pivots: a segment's is positive definite (its mass plus the articulated inertia beyond it), a joint's
negative definite (−α̃ minus the compliance beyond it): each is factored as ``s D = L Lᵀ`` with its sign s
(Cholesky, backward stable). With ``W = L⁻¹ G`` (G = −H[node, parent], a Jacobian block or its transpose)
the parent's pivot loses ``s WᵀW`` and the solve needs only L and W: G is overwritten by W.

Kernels return 0 on success, or 1 + the elimination position of a pivot that is not definite with its sign.
"""

from __future__ import annotations

import importlib

import numpy as np

nb = importlib.import_module("numba")  # (imported by name: numba ships no type information)

_JIT = dict(cache=True, nogil=True, error_model="numpy")


@nb.njit(**_JIT)
def _rotation(q, r):
    """``r = R(q)`` (3×3), q need not be normalised exactly (as quaternion.to_matrix)."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    inv = 1.0 / (w * w + x * x + y * y + z * z)
    r[0, 0] = (w * w + x * x - y * y - z * z) * inv
    r[0, 1] = (x * y + y * x - w * z - z * w) * inv
    r[0, 2] = (x * z + z * x + w * y + y * w) * inv
    r[1, 0] = (x * y + y * x + w * z + z * w) * inv
    r[1, 1] = (w * w - x * x + y * y - z * z) * inv
    r[1, 2] = (y * z + z * y - w * x - x * w) * inv
    r[2, 0] = (x * z + z * x - w * y - y * w) * inv
    r[2, 1] = (y * z + z * y + w * x + x * w) * inv
    r[2, 2] = (w * w - x * x - y * y + z * z) * inv


@nb.njit(**_JIT)
def _conj_mul(a, b, out):
    """``out = ā ⊗ b``."""
    out[0] = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]
    out[1] = a[0] * b[1] - b[0] * a[1] - (a[2] * b[3] - a[3] * b[2])
    out[2] = a[0] * b[2] - b[0] * a[2] - (a[3] * b[1] - a[1] * b[3])
    out[3] = a[0] * b[3] - b[0] * a[3] - (a[1] * b[2] - a[2] * b[1])


@nb.njit(**_JIT)
def _store(g, transposed, translation, rot_pos, rot_bend, mask, i_):
    """``g = J`` (or ``Jᵀ`` if ``transposed``), ``J = [[translation, rot_pos], [0, rot_bend]]`` with its rows
    scaled by ``mask[i_]`` (``mask`` with 0 rows: every row kept)."""
    masked = mask.shape[0] > 0
    for i in range(6):
        f = mask[i_, i] if masked else 1.0
        for h in range(6):
            if i < 3:
                v = translation[i, h] if h < 3 else rot_pos[i, h - 3]
            else:
                v = 0.0 if h < 3 else rot_bend[i - 3, h - 3]
            if transposed:
                g[h, i] = v * f
            else:
                g[i, h] = v * f


@nb.njit(**_JIT)
def evaluate_joints(
    x, q, lam, alpha, joint, parent, child, point_parent, point_child, inv_l, rest, rest_strain, rotation_strain,
    mask, frame, basis_t, c, with_jacobians, blocks, slot_a, transposed_a, slot_b, transposed_b,
):  # fmt: skip
    """``c`` (m, 6) of Eq. 23 at the pose and, with ``with_jacobians``, each joint's two Jacobian blocks
    written into ``blocks`` at their edge slots (−1: pinned side). The joint constants are given in the
    order ``joint`` (joint indices: the elimination order, so the blocks are written in order); ``rest``
    (m, 4) the rest Darboux quaternions r⁰, ``rest_strain`` (m, 3) Eq. 23's rest strain (for "eq23").
    Joint kinds (as :class:`~solver.core.joint_constraint.JointEvaluator`): ``mask`` (m, 6) the row masks
    (0 rows: every row kept), a dropped row has c = 0 and a zero Jacobian row; ``frame`` (m,) −1 or the
    row of ``basis_t`` (Bᵀ, 3×3) of a joint whose position rows are ``Bᵀ R_pᵀ (x_p + R_p p_p − x_c − R_c p_c)``.
    Returns ``‖c + α̃λ‖∞``."""
    m = joint.shape[0]
    masked = mask.shape[0] > 0
    rp = np.empty((3, 3))
    rc = np.empty((3, 3))
    r0 = np.empty((3, 3))
    a = np.empty(4)
    e = np.empty(4)
    d = np.empty(3)
    local = np.empty(3)
    tr = np.empty((3, 3))  # translation columns of the parent's position rows (the child's: −tr)
    xr = np.empty((3, 3))  # rotation columns of the position rows
    br = np.empty((3, 3))  # rotation columns of the bend/twist rows
    tmp = np.empty((3, 3))
    residual = 0.0
    for i_ in range(m):
        j = joint[i_]
        p, k = parent[i_], child[i_]
        f = frame[i_]
        _rotation(q[p], rp)
        _rotation(q[k], rc)
        for i in range(3):
            s = x[p, i] - x[k, i]
            for h in range(3):
                s += rp[i, h] * point_parent[i_, h] - rc[i, h] * point_child[i_, h]
            d[i] = s
        if f >= 0:  # rows Bᵀ R_pᵀ d
            for i in range(3):
                local[i] = rp[0, i] * d[0] + rp[1, i] * d[1] + rp[2, i] * d[2]
            for i in range(3):
                c[j, i] = basis_t[f, i, 0] * local[0] + basis_t[f, i, 1] * local[1] + basis_t[f, i, 2] * local[2]
        else:
            for i in range(3):
                c[j, i] = d[i]
        if rotation_strain:  # e = (q_p ⊗ r⁰)‾ ⊗ q_c, short arc
            w0, x0, y0, z0 = rest[i_, 0], rest[i_, 1], rest[i_, 2], rest[i_, 3]
            pw, px, py, pz = q[p, 0], q[p, 1], q[p, 2], q[p, 3]
            a[0] = pw * w0 - px * x0 - py * y0 - pz * z0
            a[1] = pw * x0 + px * w0 + py * z0 - pz * y0
            a[2] = pw * y0 - px * z0 + py * w0 + pz * x0
            a[3] = pw * z0 + px * y0 - py * x0 + pz * w0
            _conj_mul(a, q[k], e)
            ls = -inv_l[i_] if e[0] < 0.0 else inv_l[i_]
            for i in range(3):
                c[j, 3 + i] = 2.0 * ls * e[1 + i]
        else:  # Eq. 23 literally
            _conj_mul(q[p], q[k], e)
            ls = inv_l[i_]
            for i in range(3):
                c[j, 3 + i] = 2.0 * ls * e[1 + i] - rest_strain[i_, i]
        if masked:
            for i in range(6):
                c[j, i] *= mask[i_, i]
        for i in range(6):
            v = abs(c[j, i] + alpha[j, i] * lam[j, i])
            if v > residual or v != v:
                residual = v
        if not with_jacobians:
            continue
        # child block (s/l)(w I + [u]×); parent block −(s/l)(w I − [u]×) R(r⁰)ᵀ (R(r⁰) = I for "eq23")
        e0, e1, e2, e3 = e[0] * ls, e[1] * ls, e[2] * ls, e[3] * ls
        sa, sb = slot_a[i_], slot_b[i_]
        if f >= 0:  # tr = Bᵀ R_pᵀ
            for i in range(3):
                for h in range(3):
                    tr[i, h] = basis_t[f, i, 0] * rp[h, 0] + basis_t[f, i, 1] * rp[h, 1] + basis_t[f, i, 2] * rp[h, 2]
        else:
            for i in range(3):
                for h in range(3):
                    tr[i, h] = 1.0 if i == h else 0.0
        if sa >= 0:
            if rotation_strain:
                _rotation(rest[i_], r0)
            else:
                for i in range(3):
                    for h in range(3):
                        r0[i, h] = 1.0 if i == h else 0.0
            if f >= 0:  # Bᵀ [R_pᵀ d − p_p]×
                v0 = local[0] - point_parent[i_, 0]
                v1 = local[1] - point_parent[i_, 1]
                v2 = local[2] - point_parent[i_, 2]
                for i in range(3):
                    b0, b1, b2 = basis_t[f, i, 0], basis_t[f, i, 1], basis_t[f, i, 2]
                    xr[i, 0] = b1 * v2 - b2 * v1
                    xr[i, 1] = b2 * v0 - b0 * v2
                    xr[i, 2] = b0 * v1 - b1 * v0
            else:
                pp0, pp1, pp2 = point_parent[i_, 0], point_parent[i_, 1], point_parent[i_, 2]
                for i in range(3):  # −R_p [p]×
                    xr[i, 0] = rp[i, 2] * pp1 - rp[i, 1] * pp2
                    xr[i, 1] = rp[i, 0] * pp2 - rp[i, 2] * pp0
                    xr[i, 2] = rp[i, 1] * pp0 - rp[i, 0] * pp1
            for col in range(3):  # −K' R0ᵀ, K' = w I − [u]×
                br[0, col] = -(e0 * r0[col, 0] + e3 * r0[col, 1] - e2 * r0[col, 2])
                br[1, col] = -(-e3 * r0[col, 0] + e0 * r0[col, 1] + e1 * r0[col, 2])
                br[2, col] = -(e2 * r0[col, 0] - e1 * r0[col, 1] + e0 * r0[col, 2])
            _store(blocks[sa], transposed_a[i_], tr, xr, br, mask, i_)
        if sb >= 0:
            pc0, pc1, pc2 = point_child[i_, 0], point_child[i_, 1], point_child[i_, 2]
            for i in range(3):  # R_c [p]×
                xr[i, 0] = rc[i, 1] * pc2 - rc[i, 2] * pc1
                xr[i, 1] = rc[i, 2] * pc0 - rc[i, 0] * pc2
                xr[i, 2] = rc[i, 0] * pc1 - rc[i, 1] * pc0
            if f >= 0:  # Bᵀ R_pᵀ R_c [p]×
                for i in range(3):
                    for h in range(3):
                        tmp[i, h] = tr[i, 0] * xr[0, h] + tr[i, 1] * xr[1, h] + tr[i, 2] * xr[2, h]
                for i in range(3):
                    for h in range(3):
                        xr[i, h] = tmp[i, h]
            for i in range(3):
                for h in range(3):
                    tr[i, h] = -tr[i, h]
            br[0, 0], br[0, 1], br[0, 2] = e0, -e3, e2  # w I + [u]×
            br[1, 0], br[1, 1], br[1, 2] = e3, e0, -e1
            br[2, 0], br[2, 1], br[2, 2] = -e2, e1, e0
            _store(blocks[sb], transposed_b[i_], tr, xr, br, mask, i_)
    return residual


@nb.njit(**_JIT)
def _pull(k, sign, child_ptr, child_pos, w, t, d, r, with_pivot):
    """Subtract the children's Schur updates ``s_c W_cᵀ W_c`` from the pivot ``d`` (lower triangle) and add
    ``s_c W_cᵀ t_c`` to the right-hand side ``r``."""
    for ci in range(child_ptr[k], child_ptr[k + 1]):
        c = child_pos[ci]
        sc = sign[c]
        for i in range(6):
            acc = 0.0
            for h in range(6):
                acc += w[c, h, i] * t[c, h]
            r[i] += sc * acc
        if with_pivot:
            for i in range(6):
                for j in range(i + 1):
                    acc = 0.0
                    for h in range(6):
                        acc += w[c, h, i] * w[c, h, j]
                    d[i, j] -= sc * acc


@nb.njit(**_JIT)
def _forward(lk, r, out):
    """``out = L⁻¹ r`` (L lower, its diagonal stored inverted)."""
    for i in range(6):
        s = r[i]
        for h in range(i):
            s -= lk[i, h] * out[h]
        out[i] = s * lk[i, i]


@nb.njit(**_JIT)
def _backward(lk, u, sign, out):
    """``out = sign · L⁻ᵀ u``."""
    for i in range(5, -1, -1):
        s = u[i]
        for h in range(i + 1, 6):
            s -= lk[h, i] * out[h]
        out[i] = s * lk[i, i]
    for i in range(6):
        out[i] *= sign


@nb.njit(**_JIT)
def factor_forward(
    sign, node_index, parent_pos, child_ptr, child_pos, mass_diag, alpha, rhs_seg, rhs_joint, w, lower, t
):  # fmt: skip
    """Block LDLᵀ in elimination order with the forward substitution: ``lower`` (N, 6, 6) gets each pivot's
    Cholesky factor (lower triangle, diagonal inverted), ``w`` (N, 6, 6) its block G (written by
    :func:`evaluate_joints`) turned into W = L⁻¹ G, ``t`` (N, 6) the forward-substituted right-hand side.
    ``rhs_seg`` may have 0 rows (zero). A segment without children keeps its diagonal mass as pivot."""
    n = sign.shape[0]
    d = np.empty((6, 6))
    r = np.empty(6)
    has_seg_rhs = rhs_seg.shape[0] > 0
    for k in range(n):
        s = sign[k]
        idx = node_index[k]
        if s > 0.0 and child_ptr[k] == child_ptr[k + 1]:  # a diagonal pivot: L = M^½
            for i in range(6):
                inv = 1.0 / np.sqrt(mass_diag[idx, i])
                lower[k, i, i] = inv
                t[k, i] = rhs_seg[idx, i] * inv if has_seg_rhs else 0.0
                if parent_pos[k] >= 0:
                    for col in range(6):
                        w[k, i, col] *= inv
            continue
        for i in range(6):
            for j in range(i + 1):
                d[i, j] = 0.0
        if s > 0.0:
            for i in range(6):
                d[i, i] = mass_diag[idx, i]
                r[i] = rhs_seg[idx, i] if has_seg_rhs else 0.0
        else:
            for i in range(6):
                d[i, i] = -alpha[idx, i]
                r[i] = rhs_joint[idx, i]
        _pull(k, sign, child_ptr, child_pos, w, t, d, r, True)
        for j in range(6):  # Cholesky of s·D, the diagonal stored inverted
            acc = s * d[j, j]
            for h in range(j):
                acc -= lower[k, j, h] * lower[k, j, h]
            if not acc > 0.0:
                return k + 1
            inv = 1.0 / np.sqrt(acc)
            lower[k, j, j] = inv
            for i in range(j + 1, 6):
                acc = s * d[i, j]
                for h in range(j):
                    acc -= lower[k, i, h] * lower[k, j, h]
                lower[k, i, j] = acc * inv
        for i in range(6):  # t = L⁻¹ r
            acc = r[i]
            for h in range(i):
                acc -= lower[k, i, h] * t[k, h]
            t[k, i] = acc * lower[k, i, i]
        if parent_pos[k] >= 0:
            for i in range(6):  # W = L⁻¹ G in place, row by row
                for col in range(6):
                    acc = w[k, i, col]
                    for h in range(i):
                        acc -= lower[k, i, h] * w[k, h, col]
                    w[k, i, col] = acc * lower[k, i, i]
    return 0


@nb.njit(**_JIT)
def forward_only(sign, node_index, child_ptr, child_pos, rhs_seg, rhs_joint, w, lower, t):
    """The forward substitution alone, with the factorisation of the last :func:`factor_forward`."""
    n = sign.shape[0]
    d = np.empty((6, 6))
    r = np.empty(6)
    for k in range(n):
        idx = node_index[k]
        if sign[k] > 0.0:
            for i in range(6):
                r[i] = rhs_seg[idx, i] if rhs_seg.shape[0] else 0.0
        else:
            for i in range(6):
                r[i] = rhs_joint[idx, i]
        _pull(k, sign, child_ptr, child_pos, w, t, d, r, False)
        _forward(lower[k], r, t[k])


@nb.njit(**_JIT)
def backward(sign, parent_pos, w, lower, t):
    """Back substitution, root to leaves: ``t`` becomes the solution z in elimination order."""
    u = np.empty(6)
    z = np.empty(6)
    for k in range(sign.shape[0] - 1, -1, -1):
        pa = parent_pos[k]
        wk = w[k]
        for i in range(6):
            acc = t[k, i]
            if pa >= 0:
                for h in range(6):
                    acc += wk[i, h] * t[pa, h]
            u[i] = acc
        _backward(lower[k], u, sign[k], z)
        for i in range(6):
            t[k, i] = z[i]


@nb.njit(**_JIT)
def apply_update(sign, node_index, free_index, t, x, q, lam):
    """Positions += Δx, orientations ← normalize(q + ½ q ⊗ (0, Δφ)) (Eq. 27), λ += Δλ."""
    for k in range(sign.shape[0]):
        idx = node_index[k]
        if sign[k] > 0.0:
            s = free_index[idx]
            x[s, 0] += t[k, 0]
            x[s, 1] += t[k, 1]
            x[s, 2] += t[k, 2]
            h0, h1, h2 = 0.5 * t[k, 3], 0.5 * t[k, 4], 0.5 * t[k, 5]
            w_, a, b, c = q[s, 0], q[s, 1], q[s, 2], q[s, 3]
            nw = w_ - (a * h0 + b * h1 + c * h2)
            na = a + (w_ * h0 + b * h2 - c * h1)
            nb_ = b + (w_ * h1 + c * h0 - a * h2)
            nc = c + (w_ * h2 + a * h1 - b * h0)
            inv = 1.0 / np.sqrt(nw * nw + na * na + nb_ * nb_ + nc * nc)
            q[s, 0], q[s, 1], q[s, 2], q[s, 3] = nw * inv, na * inv, nb_ * inv, nc * inv
        else:
            for i in range(6):
                lam[idx, i] += t[k, i]


@nb.njit(**_JIT)
def scatter_solution(sign, node_index, t, dx, dlam):
    """The solution in elimination order back to (segment, joint) order."""
    for k in range(sign.shape[0]):
        idx = node_index[k]
        out = dx if sign[k] > 0.0 else dlam
        for i in range(6):
            out[idx, i] = t[k, i]


@nb.njit(**_JIT)
def same_pose(x, q, x_saved, q_saved):
    """Whether the pose equals the saved copy, element for element."""
    if x.shape[0] != x_saved.shape[0]:
        return False
    for i in range(x.shape[0]):
        for j in range(3):
            if x[i, j] != x_saved[i, j]:
                return False
        for j in range(4):
            if q[i, j] != q_saved[i, j]:
                return False
    return True


@nb.njit(**_JIT)
def copy_pose(x, q, x_saved, q_saved):
    for i in range(x.shape[0]):
        for j in range(3):
            x_saved[i, j] = x[i, j]
        for j in range(4):
            q_saved[i, j] = q[i, j]


@nb.njit(**_JIT)
def residual_norm(c, alpha, lam):
    """``‖c + α̃λ‖∞``."""
    out = 0.0
    for j in range(c.shape[0]):
        for i in range(6):
            v = abs(c[j, i] + alpha[j, i] * lam[j, i])
            if v > out or v != v:
                out = v
    return out
