"""The parts of the schur method's Newton step (:mod:`solver.contact.solvers.schur`): the implicit step's momentum
residual and incremental potential, the joints' lumped geometric stiffness, the rows' responses through the joints'
factorisation, and the rod–rod rows' lateral curvature by the Woodbury identity.
"""

from __future__ import annotations

import numpy as np

from ...core import quaternion as quat
from ..rows import rows_times

# The largest eigenvalue σ of K^½ W H⁻¹ Wᵀ K^½ (:func:`lateral_woodbury`) from which the schur method's Newton matrix
# with the contact rows' lateral curvature counts as indefinite (σ ≥ 1) or within 10 % of it
UNSTABLE_FROM = 0.9


def incremental_potential(inertia, joint_c, joint_alpha, c_rows, alpha_rows, k, bound_t) -> float:
    """Φ(z) [kg·m²], the implicit step's incremental potential whose stationary points are the step's solutions with
    compliant rows: ``inertia`` ½|z − ẑ|²_M, each joint row's ½ C²/α̃ (``joint_c``, ``joint_alpha`` (m, 6)), each
    normal row's penalty ½ min(C, 0)²/α̃ (the first ``k`` of ``c_rows``/``alpha_rows``: its impulse max(0, −C/α̃)),
    and each friction row's Huber function of its slip C_t with the bound b of its box (``bound_t``, the rows after
    the normals): C_t²/(2α̃) up to |C_t| = α̃b, then b|C_t| − α̃b²/2 (the compliant row's impulse is C_t/α̃ clamped to
    ±b, Tresca's law with b = μλ̄_n)."""
    joints = 0.5 * float(np.sum(joint_c * joint_c / joint_alpha))
    c_n, a_n = c_rows[:k], alpha_rows[:k]
    pen = np.minimum(c_n, 0.0)
    normals = 0.5 * float(np.sum(pen * pen / a_n))
    c_t, a_t = np.abs(c_rows[k:]), alpha_rows[k:]
    b = np.asarray(bound_t, float)
    quadratic = c_t <= a_t * b
    friction = float(np.sum(np.where(quadratic, 0.5 * c_t * c_t / a_t, b * c_t - 0.5 * a_t * b * b)))
    return inertia + joints + normals + friction


def inertia_potential(sim, predicted) -> float:
    """½ (z − ẑ)ᵀ M (z − ẑ) of the free segments [kg·m²]: positions from the prediction ẑ (``StepRows.predicted``),
    rotations as body rotation vectors (the momentum residual's g is its gradient)."""
    f = sim.free_index
    x_pred, q_pred = predicted
    mass = sim.step_context.mass_diag
    dx = sim.positions[f] - x_pred[f]
    dphi = quat.body_rotation_vector(q_pred[f], sim.orientations[f])
    return 0.5 * float(np.sum(mass[:, :3] * dx * dx) + np.sum(mass[:, 3:] * dphi * dphi))


def momentum_residual(sim, predicted) -> np.ndarray:
    """g = M (z − ẑ) − Jᵀλ of the free segments (n_free, 6) [kg·m; body-frame rotations kg·m²]: the implicit
    step's momentum balance with the joints' impulses, ẑ the prediction (``StepRows.predicted``), rotations as
    the Simulator reads them back (``body_rotation_vector``). The contact rows' −Gᵀλ_c is added by the caller."""
    f = sim.free_index
    x_pred, q_pred = predicted
    mass = sim.step_context.mass_diag
    g = np.empty((f.size, 6))
    g[:, :3] = mass[:, :3] * (sim.positions[f] - x_pred[f])
    g[:, 3:] = mass[:, 3:] * quat.body_rotation_vector(q_pred[f], sim.orientations[f])
    if sim.model.n_joints:
        joints = sim.step_context.joints
        _, _, jpt, jct = joints.jacobians()
        seg_a, seg_b = joints.segment_sides
        for segs, jac_t in ((seg_a, jpt), (seg_b, jct)):
            ok = segs >= 0
            np.add.at(g, segs[ok], -np.einsum("kij,kj->ki", jac_t[ok], sim.lam[ok]))
    return g


def lumped_geometric_stiffness(sim, lam: np.ndarray) -> np.ndarray:
    """The joints' geometric stiffness K = Σ_j ∂²(λ_jᵀ C_j)/∂z², lumped to a diagonal (n_free, 6) that is
    positive by construction: the Euclidean norm of each column of K (Andrews, Teichmann & Kry 2017,
    "Geometric Stiffness for Real-time Constrained Multibody Dynamics", Comput. Graph. Forum 36(2): 235–246).

    The point rows C = x_p + R_p p_p − x_c − R_c p_c are linear in the positions; their curvature is in the
    body rotations: with u = Rᵀ f the row's force on a side in its body frame and p its joint point,
    ∂²(−f·R exp([φ]×) p)/∂φ² = (u·p) I − ½(u pᵀ + p uᵀ) [kg·m² with λ in N·s²]: a link pulled outwards at its
    joint point (tension, u·p > 0) is stiff against turning. The bend/twist rows' curvature (bending moment
    over length) is left out: for a rope it is orders of magnitude below the tension's."""
    model = sim.model
    out = np.zeros((sim.free_index.size, 6))
    if model.n_joints == 0 or not np.any(lam[:, :3]):
        return out
    joints = sim.step_context.joints
    _, _, jpt, jct = joints.jacobians()
    seg_a, seg_b = joints.segment_sides
    for segs, seg_all, jac_t, point in (
        (seg_a, model.joint_parent, jpt, model.joint_point_parent),
        (seg_b, model.joint_child, jct, model.joint_point_child),
    ):
        force = np.einsum("kij,kj->ki", jac_t[:, :3, :3], lam[:, :3])  # the point rows' force, world frame
        u = quat.rotate_inverse(sim.orientations[seg_all], force)
        k = np.einsum("ki,ki->k", u, point)[:, None, None] * np.eye(3) - 0.5 * (
            u[:, :, None] * point[:, None, :] + point[:, :, None] * u[:, None, :]
        )
        ok = segs >= 0
        np.add.at(out[:, 3:6], segs[ok], np.linalg.norm(k[ok], axis=1))  # a view: adds into out
    return out


def unit_responses(sim, joints, fa, fb, ga, gb):
    """H⁻¹ Jᵀ e_r for rows r with free indices ``fa``/``fb`` (−1: none) and gradients ``ga``/``gb`` (k, 6): the
    pose's (k, n_free, 6) and the joints' (k, n_joints, 6) response to a unit impulse on each row, one tree solve of
    the factorised ``joints`` (:class:`~solver.core.hooks.JointSystem`) per row (as ``loop_closing`` applies loop
    joints through the tree)."""
    n_free = sim.free_index.size
    if fa.size == 0:
        return np.zeros((0, n_free, 6)), np.zeros((0,) + sim.lam.shape)
    zero_joint = np.zeros_like(sim.lam)
    force = np.zeros((n_free, 6))  # one right-hand side, set and cleared per row (the solve only reads it)
    poses, joint_parts = [], []
    for r, (a, b) in enumerate(zip(fa.tolist(), fb.tolist(), strict=True)):
        if a >= 0:
            force[a] += ga[r]
        if b >= 0:
            force[b] += gb[r]
        dx, dl = joints.solve(force, zero_joint)
        poses.append(dx)
        joint_parts.append(dl)
        force[a if a >= 0 else b] = 0.0
        force[b if b >= 0 else a] = 0.0
    return np.stack(poses), np.stack(joint_parts)


def lateral_woodbury(geo, sim, joints, b, geometry, lam_n, contact_rows, dz_joint):
    """The rod–rod rows' lateral curvature (:meth:`RowGeometry.lateral_curvature`: unit rows W along the
    directions e, weights κ = λ_n/(n·d)) in the schur method's Newton matrix: H + Wᵀ D W with D = −diag(κ), the
    exact Jacobian of the rows' forces λ_n n (their normals turn with the points), through the joints' tree
    factorisation of H by the Woodbury identity, (H + WᵀDW)⁻¹ = H⁻¹ − H⁻¹Wᵀ A⁻¹ W H⁻¹ with
    A = W H⁻¹ Wᵀ + D⁻¹ = K^-½ (K^½ W H⁻¹ Wᵀ K^½ − I) K^-½ (K = diag(κ); one tree solve per direction).

    H is positive definite (the masses, K̃ ≥ 0, the joints' compliances), so H + WᵀDW is positive definite
    exactly where every eigenvalue σ of K^½ W H⁻¹ Wᵀ K^½ is below 1 (Haynsworth's inertia additivity): the
    curvature then stays below the step's inertia and joints along every direction, the incremental potential
    Φ has a local minimiser near the iterate and the contact QP's matrix S − (W H⁻¹ Gᵀ)ᵀ A⁻¹ W H⁻¹ Gᵀ is
    positive definite. At σ ≥ 1 the stack is unstable within the step (two wires stacked under load: σ grows
    with λ_n/(n·d), as Δt² for a given force): Φ is not convex there and the implicit step is a saddle, which
    the Newton method descending Φ cannot converge to (a Slinky's stacked coils cycled at the iteration cap; a
    rod across a rod at Δt = 40 ms was thrown off in one step). Returns ``"unstable"`` where the largest σ
    reaches ``UNSTABLE_FROM``, None without curvature rows, else A⁻¹ W H⁻¹ Gᵀ (``coupling``), A⁻¹ W Δz_J
    (``joint``), G H⁻¹ Wᵀ (``s_gw``) and the directions' responses H⁻¹ Wᵀ (``resp_x``, ``resp_l``)."""
    wa, wb, wga, wgb, kappa = geo.lateral_curvature(sim, b, geometry, lam_n)
    if kappa.size == 0:
        return None
    resp_x, resp_l = unit_responses(sim, joints, wa, wb, wga, wgb)
    sa_r, sb_r, ga_r, gb_r = contact_rows
    s_gw = np.zeros((sa_r.size, kappa.size))
    for segs, grads in ((sa_r, ga_r), (sb_r, gb_r)):
        ok = segs >= 0
        s_gw[ok] += np.einsum("jik,ik->ij", resp_x[:, segs[ok]], grads[ok])
    s_ww = np.zeros((kappa.size, kappa.size))
    for segs, grads in ((wa, wga), (wb, wgb)):
        ok = segs >= 0
        s_ww[ok] += np.einsum("jik,ik->ij", resp_x[:, segs[ok]], grads[ok])
    w_dz = rows_times(wa, wb, wga, wgb, dz_joint)
    root = np.sqrt(kappa)
    sigma, vec = np.linalg.eigh(root[:, None] * (0.5 * (s_ww + s_ww.T)) * root[None, :])
    if sigma[-1] >= UNSTABLE_FROM:
        return "unstable"
    kv = root[:, None] * vec
    a_inv = (kv / (sigma - 1.0)[None, :]) @ kv.T  # A⁻¹ = K^½ V diag(1/(σ − 1)) Vᵀ K^½
    return dict(coupling=a_inv @ s_gw.T, joint=a_inv @ w_dz, s_gw=s_gw, resp_x=resp_x, resp_l=resp_l)
