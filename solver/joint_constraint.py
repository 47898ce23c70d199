"""The combined 6-D zero-stretch / bend / twist joint constraint of Deul Eq. 23, vectorised over joints.

Rotational degrees of freedom are body-frame rotation vectors ``δφ`` (``q ← q + G(q) δφ`` with G of
Eq. 27), so each segment's mass matrix is the diagonal ``diag(m, m, m, I1, I2, I3)`` of Eq. 28.
"""
from __future__ import annotations

import numpy as np

from . import quaternion as quat


def compliance(model, dt: float, index=slice(None)) -> np.ndarray:
    """Diagonal of the time-scaled compliance ``α̃ = α / Δt²`` of Eq. 24, shape (m, 6).

    Stretch rows: ``σ⁻¹`` [m/N]. Bend/twist rows: ``(K l)⁻¹`` [1/(N·m)]: Eq. 8 sums the energy density
    ``½ ΔΩᵀ K ΔΩ`` over joints; integrating over the joint's share ``l`` of the rod gives
    ``U = ½ l ΔΩᵀ K ΔΩ = ½ ΔΩᵀ α⁻¹ ΔΩ`` with ``α = (K l)⁻¹`` (this is what makes the cantilever match
    ``FL³/3EI``).
    """
    k = model.bend_twist_stiffness[index]
    l = model.joint_lengths[index]
    s = model.stretch_compliance[index]
    alpha = np.concatenate((np.repeat(s[:, None], 3, axis=1), 1.0 / (k * l[:, None])), axis=1)
    return alpha / (dt * dt)


def evaluate(model, positions, orientations, index=slice(None), with_jacobians: bool = True):
    """Constraint values ``C`` (m, 6) and Jacobians ``J_parent``, ``J_child`` (m, 6, 6) (Eqs. 23, 25, 26).

    ``C[:, :3] = x_p + R_p p_p − x_c − R_c p_c`` [m] (zero stretch). ``C[:, 3:] = (2/l)·s·Im(ē)`` [1/m]
    with ``e = (q̄_p⁰ q_c⁰)* q̄_p q_c``, the rotation from the rest to the current relative
    orientation, in the rest-aligned child frame, and ``s = ±1`` taking the short arc (q and −q are
    the same rotation). For a straight rest pose this is exactly Eq. 23's ``(2/l) Im[q̄_p q_c −
    q̄_p⁰ q_c⁰]``, and to first order for small rest rotations. Unlike Eq. 23 it stays isotropic for
    large rest rotations: at a 90° branch junction Eq. 23 makes a bend about the rest rotation's axis
    cos²45° = ½ as stiff (measured on a branch cantilever), which this form does not.
    Jacobian columns are (translation, body-frame rotation).
    """
    jp = model.joint_parent[index]
    jc = model.joint_child[index]
    qp, qc = orientations[jp], orientations[jc]
    ap = quat.rotate(qp, model.joint_point_parent[index])
    ac = quat.rotate(qc, model.joint_point_child[index])
    r0 = model.rest_darboux[index]
    e = quat.multiply(quat.conjugate(r0), quat.multiply(quat.conjugate(qp), qc))
    s = np.where(e[:, 0] < 0.0, -1.0, 1.0)
    inv_l = 1.0 / model.joint_lengths[index]
    c = np.empty((jp.shape[0], 6))
    c[:, :3] = positions[jp] + ap - positions[jc] - ac
    c[:, 3:] = (2.0 * inv_l * s)[:, None] * e[:, 1:]
    if not with_jacobians:
        return c
    m = jp.shape[0]
    eye = np.eye(3)
    w = e[:, 0, None, None]
    ux = quat.skew(e[:, 1:])
    rp = quat.to_matrix(qp)
    rc = quat.to_matrix(qc)
    j_p = np.zeros((m, 6, 6))
    j_c = np.zeros((m, 6, 6))
    j_p[:, :3, :3] = eye
    j_c[:, :3, :3] = -eye
    # ∂(R p)/∂δφ_body = −R [p]×
    j_p[:, :3, 3:] = -rp @ quat.skew(model.joint_point_parent[index])
    j_c[:, :3, 3:] = rc @ quat.skew(model.joint_point_child[index])
    # q_p ← q_p ⊗ (1, δφ/2) gives δe = (0, −R(r⁰)ᵀδφ/2) ⊗ e; q_c ← q_c ⊗ (1, δφ/2) gives δe = e ⊗ (0, δφ/2):
    # the body-frame forms of Eqs. 10, 11 times G(q) of Eq. 27.
    ls = (inv_l * s)[:, None, None]
    j_p[:, 3:, 3:] = -ls * ((w * eye - ux) @ np.swapaxes(quat.to_matrix(r0), 1, 2))
    j_c[:, 3:, 3:] = ls * (w * eye + ux)
    return c, j_p, j_c
