"""numba kernels of the compiled Newton iteration (imported by :mod:`solver.core.compiled` only, on first use).

One Newton iteration of Deul Eq. 22 on a forest of segments and joints, in two passes over working arrays in
elimination order (gathered by :mod:`solver.core.compiled`; docs/notes/compiled.md). :func:`newton_forward`,
leaves to root: each joint's values and Jacobian blocks (Eqs. 23, 25, 26, body-frame form of
:mod:`solver.core.joint_constraint`) made just before their first consumer is eliminated, and the block LDLᵀ
with the forward substitution (Baraff's order: each node has one neighbour left when eliminated, its parent:
no fill). :func:`backward`, root to leaves: the back substitution, updating each segment's pose and each
joint's λ as its unknowns are found. :func:`newton_forward` without substitution gives the values at the new
pose for the residual. A node's pivot pulls its children's updates (a CSR list): no array is cleared.

Pivots: a segment's is positive definite (mass plus the articulated inertia beyond it), a joint's negative
definite (−α̃ minus the compliance beyond it): each is factored as ``s D = L Δ Lᵀ`` with its sign s (L unit lower,
Δ > 0: no square roots). With ``V = L⁻¹ G`` (G = −H[node, parent]) the parent's pivot loses ``s Vᵀ Δ⁻¹ V`` and
the solve needs only L, Δ⁻¹ and V (G is overwritten by V). Pivots are written out on scalars (21 entries) to stay
in registers. A pivot not definite with its sign stops :func:`newton_forward`: it returns −(1 + its place).
"""

from __future__ import annotations

import importlib

import numpy as np

nb = importlib.import_module("numba")  # (imported by name: numba ships no type information)

# fused multiply-adds (no other fast-math: the pivots test for NaN, sums keep their order)
_JIT = dict(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})
# below this an entry of L or V is roundoff carried down a chain (products of ~1e-17 per joint), flushed to 0
# before it turns subnormal: subnormal arithmetic made a 10k-segment chain 4x slower per segment than a 1k one
_TINY = 1e-150


@nb.njit(inline="always", **_JIT)
def _ftz(v):
    return 0.0 if abs(v) < _TINY else v  # (NaN passes: the pivots' tests still see it)


@nb.njit(inline="always", **_JIT)
def _rotation(q, row, r):
    """``r = R(q[row])`` (3×3), q not quite unit (as quaternion.to_matrix); a row index, not a view (no refcount)."""
    w, x, y, z = q[row, 0], q[row, 1], q[row, 2], q[row, 3]
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


@nb.njit(inline="always", **_JIT)
def _conj_mul(a0, a1, a2, a3, q, row, out):
    """``out = ā ⊗ q[row]``."""
    b0, b1, b2, b3 = q[row, 0], q[row, 1], q[row, 2], q[row, 3]
    out[0] = a0 * b0 + a1 * b1 + a2 * b2 + a3 * b3
    out[1] = a0 * b1 - b0 * a1 - (a2 * b3 - a3 * b2)
    out[2] = a0 * b2 - b0 * a2 - (a3 * b1 - a1 * b3)
    out[3] = a0 * b3 - b0 * a3 - (a1 * b2 - a2 * b1)


@nb.njit(inline="always", **_JIT)
def _store(w, slot, transposed, translation, rot_pos, rot_bend, mask, i_):
    """``w[slot] = J`` (or ``Jᵀ`` if ``transposed``), ``J = [[translation, rot_pos], [0, rot_bend]]`` with its rows
    scaled by ``mask[i_]`` (``mask`` with 0 rows: every row kept)."""
    masked = mask.shape[0] > 0
    for i in range(3):
        f = mask[i_, i] if masked else 1.0
        g = mask[i_, 3 + i] if masked else 1.0
        for h in range(3):
            a, b, c = translation[i, h] * f, rot_pos[i, h] * f, rot_bend[i, h] * g
            if transposed:
                w[slot, h, i], w[slot, 3 + h, i], w[slot, h, 3 + i], w[slot, 3 + h, 3 + i] = a, b, 0.0, c
            else:
                w[slot, i, h], w[slot, i, 3 + h], w[slot, 3 + i, h], w[slot, 3 + i, 3 + h] = a, b, 0.0, c


@nb.njit(inline="always", **_JIT)
def _pull_rhs(k, sign, child_ptr, child_pos, w, lower, t, r):
    """Add the children's ``s_c V_cᵀ Δ_c⁻¹ t_c`` to the right-hand side ``r``."""
    for ci in range(child_ptr[k], child_ptr[k + 1]):
        c = child_pos[ci]
        sc = sign[c]
        for h in range(6):
            th = sc * lower[c, h * (h + 3) // 2] * t[c, h]
            for i in range(6):
                r[i] += w[c, h, i] * th


@nb.njit(inline="always", **_JIT)
def _forward_node(k, sign, child_ptr, child_pos, w, lower, t, r):
    """``t_k = L_k⁻¹ (r + Σ_c s_c V_cᵀ Δ_c⁻¹ t_c)`` with the factorisation in place (``r`` is overwritten)."""
    _pull_rhs(k, sign, child_ptr, child_pos, w, lower, t, r)
    for i in range(6):
        acc = r[i]
        row = i * (i + 1) // 2
        for h in range(i):
            acc -= lower[k, row + h] * t[k, h]
        t[k, i] = acc


@nb.njit(**_JIT)
def newton_forward(
    evaluate, refactor, substitute, x, q, lam, alpha, alpha_row, mass_diag, mass_row, sign, node_index, parent_pos,
    child_ptr, child_pos, eval_at, rotation_strain, joint, parent, child, point_parent, point_child, inv_l, rest,
    rest_strain, mask, frame, basis_t, slot_a, transposed_a, slot_b, transposed_b, c, w, lower, t,
):  # fmt: skip
    """The forward half of a Newton iteration, one pass over the nodes in elimination order (or the values alone).

    Joints: constants and ``lam`` in their elimination order (row i), ``alpha`` (α̃, in place or copied) in
    row ``alpha_row[i]``, ``c`` (m, 6) in row ``joint[i]``. With ``evaluate``, joint ``eval_at[k]``
    (−1: none) gets ``c`` of Eq. 23 at the pose and, with ``refactor``, its two Jacobian blocks written into
    ``w`` at their edge slots (−1: pinned side) just before node k, its first consumer, is eliminated: the
    blocks are used while in cache (without ``substitute`` the joints are evaluated in their order, the nodes
    not visited). ``rest`` (m, 4) the rest Darboux quaternions r⁰, ``rest_strain`` (m, 3) Eq. 23's rest strain
    (for "eq23"). Joint kinds (as :class:`~solver.core.joint_constraint.JointEvaluator`): ``mask`` (m, 6) the
    row masks (0 rows: every row kept), a dropped row has c = 0 and a zero Jacobian row; ``frame`` (m,) −1 or
    the row of ``basis_t`` (Bᵀ, 3×3) of a joint whose position rows are ``Bᵀ R_pᵀ (x_p + R_p p_p − x_c − R_c
    p_c)``.

    Nodes: ``sign`` +1 segment, −1 joint; ``node_index`` its row among the segments or the joints in their
    elimination order; parent's place and children's places (CSR); ``mass_diag`` (in place or copied) row
    ``mass_row[i]`` for segment i. With ``refactor``, the block LDLᵀ, per node ``s D = L Δ Lᵀ`` (L unit lower,
    Δ > 0 diagonal): ``lower`` (N, 21) gets L's lower triangle packed by rows with Δ⁻¹ on the diagonal, ``w``
    (N, 6, 6) its block G turned into V = L⁻¹ G; a segment without children keeps its diagonal mass as pivot
    (L = I, V = G). With ``substitute``, ``t`` (N, 6) gets the forward-substituted right-hand side L⁻¹ r,
    r = (0 per segment, C + α̃λ per joint).

    Returns ``‖c + α̃λ‖∞`` of the joints evaluated when not substituting, else 0; −(1 + place) of a bad pivot."""
    n = sign.shape[0]
    masked = mask.shape[0] > 0
    rp = np.empty((3, 3))
    rc = np.empty((3, 3))
    rr = np.empty((3, 3))  # R(r⁰)
    a = np.empty(4)
    e = np.empty(4)
    d = np.empty(3)
    local = np.empty(3)
    tr = np.empty((3, 3))  # translation columns of the parent's position rows (the child's: −tr)
    xr = np.empty((3, 3))  # rotation columns of the position rows
    br = np.empty((3, 3))  # rotation columns of the bend/twist rows
    tmp = np.empty((3, 3))
    r = np.empty(6)
    jacobians = refactor
    last_p = -1  # the parent segment of the joint evaluated last (its rotation is in rp)
    residual = 0.0
    # without substitution only the joints are visited, in their order (their constants' and C's rows)
    for k in range(n if substitute else joint.shape[0]):
        i_ = eval_at[k] if substitute else k
        if evaluate and i_ >= 0:
            j = joint[i_]
            p, kc = parent[i_], child[i_]
            f = frame[i_]
            if kc == last_p:  # a chain: this child is the last joint's parent, its rotation made already
                for i in range(3):
                    rc[i, 0], rc[i, 1], rc[i, 2] = rp[i, 0], rp[i, 1], rp[i, 2]
            else:
                _rotation(q, kc, rc)
            _rotation(q, p, rp)
            last_p = p
            for i in range(3):
                sd = x[p, i] - x[kc, i]
                for h in range(3):
                    sd += rp[i, h] * point_parent[i_, h] - rc[i, h] * point_child[i_, h]
                d[i] = sd
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
                _conj_mul(a[0], a[1], a[2], a[3], q, kc, e)
                ls = -inv_l[i_] if e[0] < 0.0 else inv_l[i_]
                for i in range(3):
                    c[j, 3 + i] = 2.0 * ls * e[1 + i]
            else:  # Eq. 23 literally
                _conj_mul(q[p, 0], q[p, 1], q[p, 2], q[p, 3], q, kc, e)
                ls = inv_l[i_]
                for i in range(3):
                    c[j, 3 + i] = 2.0 * ls * e[1 + i] - rest_strain[i_, i]
            if masked:
                for i in range(6):
                    c[j, i] *= mask[i_, i]
            if not substitute:
                for i in range(6):
                    v = abs(c[j, i] + alpha[alpha_row[i_], i] * lam[i_, i])
                    if v > residual or v != v:
                        residual = v
            if jacobians:
                # child block (sd/l)(w I + [u]×); parent block −(sd/l)(w I − [u]×) R(r⁰)ᵀ (R(r⁰) = I for "eq23")
                e0, e1, e2, e3 = e[0] * ls, e[1] * ls, e[2] * ls, e[3] * ls
                sa, sb = slot_a[i_], slot_b[i_]
                if f >= 0:  # tr = Bᵀ R_pᵀ
                    for i in range(3):
                        for h in range(3):
                            tr[i, h] = (
                                basis_t[f, i, 0] * rp[h, 0] + basis_t[f, i, 1] * rp[h, 1] + basis_t[f, i, 2] * rp[h, 2]
                            )
                else:
                    for i in range(3):
                        for h in range(3):
                            tr[i, h] = 1.0 if i == h else 0.0
                if sa >= 0:
                    if rotation_strain:
                        _rotation(rest, i_, rr)
                    else:
                        for i in range(3):
                            for h in range(3):
                                rr[i, h] = 1.0 if i == h else 0.0
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
                        br[0, col] = -(e0 * rr[col, 0] + e3 * rr[col, 1] - e2 * rr[col, 2])
                        br[1, col] = -(-e3 * rr[col, 0] + e0 * rr[col, 1] + e1 * rr[col, 2])
                        br[2, col] = -(e2 * rr[col, 0] - e1 * rr[col, 1] + e0 * rr[col, 2])
                    _store(w, sa, transposed_a[i_], tr, xr, br, mask, i_)
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
                    _store(w, sb, transposed_b[i_], tr, xr, br, mask, i_)
        if substitute:
            s = sign[k]
            idx = node_index[k]
            if not refactor:  # the forward substitution alone
                for i in range(6):
                    r[i] = 0.0 if s > 0.0 else c[joint[idx], i] + alpha[alpha_row[idx], i] * lam[idx, i]
                _forward_node(k, sign, child_ptr, child_pos, w, lower, t, r)
                continue
            if s > 0.0 and child_ptr[k] == child_ptr[k + 1]:  # a diagonal pivot
                for i in range(21):
                    lower[k, i] = 0.0
                for i in range(6):
                    lower[k, i * (i + 3) // 2] = 1.0 / mass_diag[mass_row[idx], i]
                    t[k, i] = 0.0
                continue
            d10 = d20 = d21 = d30 = d31 = d32 = d40 = d41 = d42 = d43 = d50 = d51 = d52 = d53 = d54 = 0.0
            if s > 0.0:
                d00, d11, d22 = mass_diag[mass_row[idx], 0], mass_diag[mass_row[idx], 1], mass_diag[mass_row[idx], 2]
                d33, d44, d55 = mass_diag[mass_row[idx], 3], mass_diag[mass_row[idx], 4], mass_diag[mass_row[idx], 5]
                r0 = r1 = r2 = r3 = r4 = r5 = 0.0
            else:
                ar = alpha_row[idx]
                d00, d11, d22 = -alpha[ar, 0], -alpha[ar, 1], -alpha[ar, 2]
                d33, d44, d55 = -alpha[ar, 3], -alpha[ar, 4], -alpha[ar, 5]
                jm = joint[idx]
                r0 = c[jm, 0] + alpha[ar, 0] * lam[idx, 0]
                r1 = c[jm, 1] + alpha[ar, 1] * lam[idx, 1]
                r2 = c[jm, 2] + alpha[ar, 2] * lam[idx, 2]
                r3 = c[jm, 3] + alpha[ar, 3] * lam[idx, 3]
                r4 = c[jm, 4] + alpha[ar, 4] * lam[idx, 4]
                r5 = c[jm, 5] + alpha[ar, 5] * lam[idx, 5]
            for ci in range(child_ptr[k], child_ptr[k + 1]):  # the children's Schur updates s_c V_cᵀ Δ_c⁻¹ V_c
                ch = child_pos[ci]
                sc = sign[ch]
                for h in range(6):
                    a0, a1, a2 = w[ch, h, 0], w[ch, h, 1], w[ch, h, 2]
                    a3, a4, a5 = w[ch, h, 3], w[ch, h, 4], w[ch, h, 5]
                    eh = sc * lower[ch, h * (h + 3) // 2]
                    th = eh * t[ch, h]
                    r0 += a0 * th
                    r1 += a1 * th
                    r2 += a2 * th
                    r3 += a3 * th
                    r4 += a4 * th
                    r5 += a5 * th
                    b0, b1, b2, b3, b4, b5 = eh * a0, eh * a1, eh * a2, eh * a3, eh * a4, eh * a5
                    d00 = d00 - b0 * a0
                    d10, d11 = d10 - b1 * a0, d11 - b1 * a1
                    d20, d21, d22 = d20 - b2 * a0, d21 - b2 * a1, d22 - b2 * a2
                    d30, d31, d32, d33 = d30 - b3 * a0, d31 - b3 * a1, d32 - b3 * a2, d33 - b3 * a3
                    d40, d41, d42, d43, d44 = d40 - b4 * a0, d41 - b4 * a1, d42 - b4 * a2, d43 - b4 * a3, d44 - b4 * a4
                    d50, d51, d52 = d50 - b5 * a0, d51 - b5 * a1, d52 - b5 * a2
                    d53, d54, d55 = d53 - b5 * a3, d54 - b5 * a4, d55 - b5 * a5
            # s·D = L Δ Lᵀ, column by column (u = L Δ below the diagonal)
            p0 = s * d00
            if not p0 > 0.0:
                return -(k + 1)
            q0 = 1.0 / p0
            u10 = s * d10
            l10 = _ftz(u10 * q0)
            u20 = s * d20
            l20 = _ftz(u20 * q0)
            u30 = s * d30
            l30 = _ftz(u30 * q0)
            u40 = s * d40
            l40 = _ftz(u40 * q0)
            u50 = s * d50
            l50 = _ftz(u50 * q0)
            p1 = s * d11 - u10 * l10
            if not p1 > 0.0:
                return -(k + 1)
            q1 = 1.0 / p1
            u21 = s * d21 - u20 * l10
            l21 = _ftz(u21 * q1)
            u31 = s * d31 - u30 * l10
            l31 = _ftz(u31 * q1)
            u41 = s * d41 - u40 * l10
            l41 = _ftz(u41 * q1)
            u51 = s * d51 - u50 * l10
            l51 = _ftz(u51 * q1)
            p2 = s * d22 - u20 * l20 - u21 * l21
            if not p2 > 0.0:
                return -(k + 1)
            q2 = 1.0 / p2
            u32 = s * d32 - u30 * l20 - u31 * l21
            l32 = _ftz(u32 * q2)
            u42 = s * d42 - u40 * l20 - u41 * l21
            l42 = _ftz(u42 * q2)
            u52 = s * d52 - u50 * l20 - u51 * l21
            l52 = _ftz(u52 * q2)
            p3 = s * d33 - u30 * l30 - u31 * l31 - u32 * l32
            if not p3 > 0.0:
                return -(k + 1)
            q3 = 1.0 / p3
            u43 = s * d43 - u40 * l30 - u41 * l31 - u42 * l32
            l43 = _ftz(u43 * q3)
            u53 = s * d53 - u50 * l30 - u51 * l31 - u52 * l32
            l53 = _ftz(u53 * q3)
            p4 = s * d44 - u40 * l40 - u41 * l41 - u42 * l42 - u43 * l43
            if not p4 > 0.0:
                return -(k + 1)
            q4 = 1.0 / p4
            u54 = s * d54 - u50 * l40 - u51 * l41 - u52 * l42 - u53 * l43
            l54 = _ftz(u54 * q4)
            p5 = s * d55 - u50 * l50 - u51 * l51 - u52 * l52 - u53 * l53 - u54 * l54
            if not p5 > 0.0:
                return -(k + 1)
            q5 = 1.0 / p5
            lower[k, 0] = q0
            lower[k, 1], lower[k, 2] = l10, q1
            lower[k, 3], lower[k, 4], lower[k, 5] = l20, l21, q2
            lower[k, 6], lower[k, 7], lower[k, 8], lower[k, 9] = l30, l31, l32, q3
            lower[k, 10], lower[k, 11], lower[k, 12], lower[k, 13], lower[k, 14] = l40, l41, l42, l43, q4
            lower[k, 15], lower[k, 16], lower[k, 17] = l50, l51, l52
            lower[k, 18], lower[k, 19], lower[k, 20] = l53, l54, q5
            t0 = r0
            t1 = r1 - l10 * t0
            t2 = r2 - l20 * t0 - l21 * t1
            t3 = r3 - l30 * t0 - l31 * t1 - l32 * t2
            t4 = r4 - l40 * t0 - l41 * t1 - l42 * t2 - l43 * t3
            t5 = r5 - l50 * t0 - l51 * t1 - l52 * t2 - l53 * t3 - l54 * t4
            t[k, 0], t[k, 1], t[k, 2], t[k, 3], t[k, 4], t[k, 5] = t0, t1, t2, t3, t4, t5
            if parent_pos[k] >= 0:  # V = L⁻¹ G in place, column by column
                for col in range(6):
                    g0 = _ftz(w[k, 0, col])
                    g1 = _ftz(w[k, 1, col] - l10 * g0)
                    g2 = _ftz(w[k, 2, col] - l20 * g0 - l21 * g1)
                    g3 = _ftz(w[k, 3, col] - l30 * g0 - l31 * g1 - l32 * g2)
                    g4 = _ftz(w[k, 4, col] - l40 * g0 - l41 * g1 - l42 * g2 - l43 * g3)
                    g5 = _ftz(w[k, 5, col] - l50 * g0 - l51 * g1 - l52 * g2 - l53 * g3 - l54 * g4)
                    w[k, 0, col], w[k, 1, col], w[k, 2, col] = g0, g1, g2
                    w[k, 3, col], w[k, 4, col], w[k, 5, col] = g3, g4, g5
    return residual


@nb.njit(**_JIT)
def forward_only(sign, node_index, child_ptr, child_pos, rhs_seg, rhs_joint, w, lower, t):
    """The forward substitution alone of ``H z = r`` (``rhs_seg`` with 0 rows: zero), with the factorisation
    of the last refactoring :func:`newton_forward`."""
    n = sign.shape[0]
    r = np.empty(6)
    for k in range(n):
        idx = node_index[k]
        if sign[k] > 0.0:
            for i in range(6):
                r[i] = rhs_seg[idx, i] if rhs_seg.shape[0] else 0.0
        else:
            for i in range(6):
                r[i] = rhs_joint[idx, i]
        _forward_node(k, sign, child_ptr, child_pos, w, lower, t, r)


@nb.njit(**_JIT)
def backward(sign, parent_pos, w, lower, t, node_rank, x, q, lam, update):
    """Back substitution, root to leaves: ``t`` becomes the solution z = s L⁻ᵀ Δ⁻¹ (t + V z_parent) in
    elimination order. With ``update``, each node's solution is applied at once to the working arrays in
    elimination order (row ``node_rank``): positions += Δx, orientations ← normalize(q + ½ q ⊗ (0, Δφ))
    (Eq. 27), λ += Δλ. Written on scalars and summed so that the parent's z enters in pairs and the unknown
    found last is subtracted last: the chain of dependent parents is the critical path (docs/notes/core.md)."""
    for k in range(sign.shape[0] - 1, -1, -1):
        pa = parent_pos[k]
        u0, u1, u2, u3, u4, u5 = t[k, 0], t[k, 1], t[k, 2], t[k, 3], t[k, 4], t[k, 5]
        if pa >= 0:  # + V z_parent, summed in pairs (the parent's z is the chain's latency)
            z0, z1, z2, z3, z4, z5 = t[pa, 0], t[pa, 1], t[pa, 2], t[pa, 3], t[pa, 4], t[pa, 5]
            u0 = (
                (u0 + w[k, 0, 0] * z0 + w[k, 0, 1] * z1)
                + (w[k, 0, 2] * z2 + w[k, 0, 3] * z3)
                + (w[k, 0, 4] * z4 + w[k, 0, 5] * z5)
            )
            u1 = (
                (u1 + w[k, 1, 0] * z0 + w[k, 1, 1] * z1)
                + (w[k, 1, 2] * z2 + w[k, 1, 3] * z3)
                + (w[k, 1, 4] * z4 + w[k, 1, 5] * z5)
            )
            u2 = (
                (u2 + w[k, 2, 0] * z0 + w[k, 2, 1] * z1)
                + (w[k, 2, 2] * z2 + w[k, 2, 3] * z3)
                + (w[k, 2, 4] * z4 + w[k, 2, 5] * z5)
            )
            u3 = (
                (u3 + w[k, 3, 0] * z0 + w[k, 3, 1] * z1)
                + (w[k, 3, 2] * z2 + w[k, 3, 3] * z3)
                + (w[k, 3, 4] * z4 + w[k, 3, 5] * z5)
            )
            u4 = (
                (u4 + w[k, 4, 0] * z0 + w[k, 4, 1] * z1)
                + (w[k, 4, 2] * z2 + w[k, 4, 3] * z3)
                + (w[k, 4, 4] * z4 + w[k, 4, 5] * z5)
            )
            u5 = (
                (u5 + w[k, 5, 0] * z0 + w[k, 5, 1] * z1)
                + (w[k, 5, 2] * z2 + w[k, 5, 3] * z3)
                + (w[k, 5, 4] * z4 + w[k, 5, 5] * z5)
            )
        # L packed by rows, Δ⁻¹ on the diagonal (0, 2, 5, 9, 14, 20); the unknown found last subtracted last
        u5 = u5 * lower[k, 20]
        u4 = u4 * lower[k, 14] - lower[k, 19] * u5
        u3 = u3 * lower[k, 9] - lower[k, 18] * u5 - lower[k, 13] * u4
        u2 = u2 * lower[k, 5] - lower[k, 17] * u5 - lower[k, 12] * u4 - lower[k, 8] * u3
        u1 = u1 * lower[k, 2] - lower[k, 16] * u5 - lower[k, 11] * u4 - lower[k, 7] * u3 - lower[k, 4] * u2
        u0 = (
            u0 * lower[k, 0]
            - lower[k, 15] * u5
            - lower[k, 10] * u4
            - lower[k, 6] * u3
            - lower[k, 3] * u2
            - lower[k, 1] * u1
        )
        sk = sign[k]
        u0, u1, u2, u3, u4, u5 = u0 * sk, u1 * sk, u2 * sk, u3 * sk, u4 * sk, u5 * sk
        t[k, 0], t[k, 1], t[k, 2], t[k, 3], t[k, 4], t[k, 5] = u0, u1, u2, u3, u4, u5
        if not update:
            continue
        r = node_rank[k]
        if sk > 0.0:
            x[r, 0] += u0
            x[r, 1] += u1
            x[r, 2] += u2
            h0, h1, h2 = 0.5 * u3, 0.5 * u4, 0.5 * u5
            w_, a, b, c = q[r, 0], q[r, 1], q[r, 2], q[r, 3]
            nw = w_ - (a * h0 + b * h1 + c * h2)
            na = a + (w_ * h0 + b * h2 - c * h1)
            nb_ = b + (w_ * h1 + c * h0 - a * h2)
            nc = c + (w_ * h2 + a * h1 - b * h0)
            inv = 1.0 / np.sqrt(nw * nw + na * na + nb_ * nb_ + nc * nc)
            q[r, 0], q[r, 1], q[r, 2], q[r, 3] = nw * inv, na * inv, nb_ * inv, nc * inv
        else:
            lam[r, 0] += u0
            lam[r, 1] += u1
            lam[r, 2] += u2
            lam[r, 3] += u3
            lam[r, 4] += u4
            lam[r, 5] += u5


@nb.njit(**_JIT)
def scatter_solution(sign, node_index, t, dx, dlam):
    """The solution in elimination order back to (segment, joint) order."""
    for k in range(sign.shape[0]):
        idx = node_index[k]
        out = dx if sign[k] > 0.0 else dlam
        for i in range(6):
            out[idx, i] = t[k, i]


@nb.njit(inline="always", **_JIT)
def _gather(src, index, dst):
    """``dst[i] = src[index[i]]``: model order to elimination order."""
    for i in range(index.shape[0]):
        s = index[i]
        for h in range(src.shape[1]):
            dst[i, h] = src[s, h]


@nb.njit(inline="always", **_JIT)
def _scatter(src, index, n, dst):
    """``dst[index[i]] = src[i]`` for the first ``n`` rows: elimination order back to model order."""
    for i in range(n):
        s = index[i]
        for h in range(src.shape[1]):
            dst[s, h] = src[i, h]


@nb.njit(**_JIT)
def gather_rows(src, index, dst):
    """:func:`_gather` alone."""
    _gather(src, index, dst)


@nb.njit(**_JIT)
def scatter_rows(src, index, n, dst):
    """:func:`_scatter` alone."""
    _scatter(src, index, n, dst)


@nb.njit(**_JIT)
def gather_state(x, q, lam, segments, joints, xe, qe, lam_e):
    """The pose (rows ``segments``) and λ (rows ``joints``) into the working arrays, in one call."""
    _gather(x, segments, xe)
    _gather(q, segments, qe)
    _gather(lam, joints, lam_e)


@nb.njit(**_JIT)
def scatter_state(xe, qe, lam_e, seg_row, joint_row, x, q, lam):
    """The free segments' pose and λ back to model order, in one call: written in model order (sequential writes,
    scattered reads), each row read from its row in elimination order (``seg_row``, −1: none; ``joint_row``)."""
    for s in range(min(seg_row.shape[0], x.shape[0])):
        e = seg_row[s]
        if e >= 0:
            x[s, 0], x[s, 1], x[s, 2] = xe[e, 0], xe[e, 1], xe[e, 2]
            q[s, 0], q[s, 1], q[s, 2], q[s, 3] = qe[e, 0], qe[e, 1], qe[e, 2], qe[e, 3]
    for j in range(joint_row.shape[0]):
        e = joint_row[j]
        for i in range(6):
            lam[j, i] = lam_e[e, i]


@nb.njit(inline="always", **_JIT)
def _fingerprint(words):
    """A 64-bit hash of the words (an array's bits as uint64), FNV-1a on words in four interleaved lanes (the
    multiplications do not wait on each other), then the lanes hashed: any one word changed changes it (each
    step is a bijection of the state); for whether an array changed, in one sequential read."""
    prime = np.uint64(1099511628211)
    h0 = h1 = h2 = h3 = np.uint64(14695981039346656037)
    n = words.shape[0]
    n4 = n - n % 4
    for i in range(0, n4, 4):
        h0 = (h0 ^ words[i]) * prime
        h1 = (h1 ^ words[i + 1]) * prime
        h2 = (h2 ^ words[i + 2]) * prime
        h3 = (h3 ^ words[i + 3]) * prime
    for i in range(n4, n):
        h0 = (h0 ^ words[i]) * prime
    return (((((h0 ^ h1) * prime) ^ h2) * prime) ^ h3) * prime


@nb.njit(**_JIT)
def fingerprints(a, b, c):
    """:func:`_fingerprint` of three word arrays, in one call."""
    return _fingerprint(a), _fingerprint(b), _fingerprint(c)


@nb.njit(**_JIT)
def residual_norm(c, alpha, alpha_row, lam):
    """``‖c + α̃λ‖∞`` (c and λ in the same row order, α̃ row ``alpha_row[j]`` for row j)."""
    out = 0.0
    for j in range(c.shape[0]):
        a = alpha_row[j]
        for i in range(6):
            v = abs(c[j, i] + alpha[a, i] * lam[j, i])
            if v > out or v != v:
                out = v
    return out
