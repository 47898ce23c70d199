"""Gravity pre-stress: rest Darboux vectors that make the modelled pose a static equilibrium.

A tree read from Sapling (or any rod drawn in its loaded shape) is the shape it has *under gravity*. Taking
that pose as the stress-free rest pose, as :class:`~solver.core.model.RodModel` does, makes the tree sag when the
simulation starts (how far: docs/notes/build.md). Here the rest Darboux
vectors are shifted instead, so that the joints already carry the load at the modelled pose.

A forest with one pinned segment per component is statically determinate: the wrench a joint transmits is
the total gravity wrench of the part of the tree beyond it (internal joint wrenches cancel, since the
constraint is invariant under rigid motions of both segments). XPBD's static equilibrium (Eq. 22 with
Δx = 0, seed 003) is ``Jᵀ λ + f = 0`` with ``C(x) = −α λ`` (λ as a force, α the unscaled compliance of
Eq. 24), so for each joint, with ``k`` its segment on the side away from the pin:

    J_kᵀ λ = −W_k,    W_k = (Σ m_i g,  R_kᵀ Σ m_i (x_i − x_k) × g)  over the segments beyond the joint,

and the bend/twist rows of ``C`` are set to ``−α λ`` by choosing the rest rotation (stretch rows have no
rest value; their compliance ~1e-10 m/N makes the stretch negligible). The Jacobian's bend/twist block
depends on the rest rotation through ``e``, so the solve is repeated a few times (a fixed point that
converges quadratically for strains ≪ 1).

Components with no pinned segment (free-falling) or with several (statically indeterminate, e.g. a rope
pinned at both ends) are left unchanged.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix, identity
from scipy.sparse.csgraph import breadth_first_order, connected_components
from scipy.sparse.linalg import spsolve_triangular

from ..core import joint_constraint
from ..core import quaternion as quat
from ..core.model import RodModel


def _away_side(model: RodModel):
    """For every tree joint, whether it is statically determinate (its component has exactly one pinned
    segment) and which of its two segments lies on the side away from the pin (``True``: the child).
    Also the BFS order and predecessor of every segment from the pins (−1 for a pin or an excluded one)."""
    n, m = model.n_segments, model.n_joints
    jp, jc = model.joint_parent, model.joint_child
    # A virtual root (index n) joined to every pin; BFS from it orients each determinate component.
    pins = np.flatnonzero(model.pinned)
    rows = np.concatenate((jp, jc, np.full(pins.size, n), pins))
    cols = np.concatenate((jc, jp, pins, np.full(pins.size, n)))
    graph = csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n + 1, n + 1))
    # Pins per component (ignoring the virtual root), to drop components with 0 or ≥ 2 pins.
    seg_graph = csr_matrix((np.ones(2 * m), (np.concatenate((jp, jc)), np.concatenate((jc, jp)))), shape=(n, n))
    _, label = connected_components(seg_graph, directed=False)
    pins_per_comp = np.bincount(label[pins], minlength=label.max() + 1)
    ok_seg = pins_per_comp[label] == 1
    order, pred = breadth_first_order(graph, n, directed=False, return_predecessors=True)
    order = order[1:]  # drop the virtual root
    pred = pred[:n].copy()
    pred[pred == n] = -1  # pins
    pred[pred < 0] = -1
    ok_joint = ok_seg[jp] & ok_seg[jc]
    child_away = pred[jc] == jp
    if np.any(ok_joint & ~child_away & (pred[jp] != jc)):
        raise ValueError("prestress: a tree joint is not on the BFS tree from the pin (model.loops should hold it)")
    return ok_joint, child_away, order, pred, ok_seg


def _subtree_sums(values: np.ndarray, order: np.ndarray, pred: np.ndarray, ok_seg: np.ndarray) -> np.ndarray:
    """Σ of ``values`` (n, k) over each segment's subtree (the segment and everything beyond it from the pin):
    one sparse triangular solve ``(I − C) s = v`` in BFS order, C the parent ← child incidence."""
    n = values.shape[0]
    rank = np.empty(n, np.int64)
    sel = order[ok_seg[order]]
    rank[sel] = np.arange(sel.size)
    child = sel[pred[sel] >= 0]
    c = csr_matrix((np.ones(child.size), (rank[pred[child]], rank[child])), shape=(sel.size, sel.size))
    a = (identity(sel.size, format="csr") - c).tocsr()  # upper triangular: parents precede children
    out = np.zeros_like(values, dtype=float)
    if sel.size:
        out[sel] = spsolve_triangular(a, values[sel], lower=False)
    return out


def beyond_joints(model: RodModel, values: np.ndarray):
    """Per tree joint, Σ of the per-segment ``values`` (n, k) over the segments on its far side from the pin.
    Returns (sums (m, k), the joint's segment on that side (m,), determinate (m,) bool: the joint's component
    has exactly one pinned segment; elsewhere the sums are 0)."""
    ok, child_away, order, pred, ok_seg = _away_side(model)
    k = np.where(child_away, model.joint_child, model.joint_parent)
    return _subtree_sums(np.asarray(values, dtype=float), order, pred, ok_seg)[k], k, ok


def gravity_prestress(
    model: RodModel,
    gravity=(0.0, 0.0, -9.81),
    *,
    strain: str = "rotation",
    iterations: int = 4,
    max_angle: float | None = None,
    info: dict | None = None,
) -> RodModel:
    """A copy of ``model`` whose rest Darboux quaternions make its pose a static equilibrium under
    ``gravity`` [m/s²] (module docstring). ``strain`` must match the Simulator's joint strain ("rotation",
    the default, or "eq23"). Returns the model unchanged if no joint is statically determinate.

    A joint too soft to hold its pose needs a rest rotation of 180° or more away from it: that raises
    ``ValueError``, unless ``max_angle`` [rad] is given, which caps every joint's pre-bend (such joints then
    sag from the modelled pose until they carry the rest of their load). ``info``, if given, receives
    ``clamped`` (how many joints were capped) and ``max_prebend_rad`` (the largest pre-bend applied)."""
    g = np.asarray(gravity, dtype=float).reshape(3)
    if not np.all(np.isfinite(g)):
        raise ValueError(f"gravity must be finite, got {gravity!r}")
    if info is not None:  # also when nothing is pre-stressed (no joints, none statically determinate)
        info.update(clamped=0, max_prebend_rad=0.0)
    if model.n_joints == 0:
        return model
    x, q = model.positions, model.orientations
    mass = model.masses
    sums, k, ok = beyond_joints(model, np.concatenate((mass[:, None], mass[:, None] * x), axis=1))
    if not np.any(ok):
        return model
    child_away = k == model.joint_child  # k: the segment beyond each joint
    m_sub, mx_sub = sums[:, 0], sums[:, 1:]
    force = m_sub[:, None] * g
    torque = np.cross(mx_sub - m_sub[:, None] * x[k], g)  # about x_k, world frame
    wrench = np.concatenate((force, quat.rotate_inverse(q[k], torque)), axis=1)
    alpha = joint_constraint.compliance(model, 1.0)[:, 3:]  # unscaled α of the bend/twist rows
    half_l = 0.5 * model.joint_lengths
    e0 = quat.multiply_conjugate(q[model.joint_parent], q[model.joint_child])  # q̄_p q_c at the pose
    rest = model.rest_darboux.copy()
    current = model
    for _ in range(iterations):
        ev = joint_constraint.JointEvaluator(current, strain=strain)
        ev.values(x, q)
        jp, jc, _, _ = ev.jacobians()
        jk = np.where(child_away[:, None, None], jc, jp)
        lam = np.linalg.solve(np.swapaxes(jk, 1, 2), -wrench[:, :, None])[:, :, 0]
        target = -alpha * lam[:, 3:]  # C_bend/twist = −α λ
        h = target * half_l[:, None]  # |h| = sin(θ/2), θ the pre-bend rotation
        norm = np.sqrt(np.sum(h * h, axis=1))
        if max_angle is not None:
            cap = np.sin(0.5 * min(float(max_angle), np.pi - 1e-6))
            over = ok & (norm > cap)
            h[over] *= (cap / norm[over])[:, None]
            norm = np.minimum(norm, cap)
        elif np.max(norm[ok], initial=0.0) >= 1.0:
            raise ValueError(
                "prestress: gravity bends a joint past 180° at the modelled pose; the model is "
                "too soft to hold this shape (raise the Young's modulus or the radii)"
            )
        if strain == "rotation":  # r̄ e0 = d = (√(1−|h|²), h)  ⇒  r = e0 d̄
            d = np.concatenate((np.sqrt(1.0 - np.sum(h * h, axis=1))[:, None], h), axis=1)
            new = quat.multiply(e0, quat.conjugate(d))
        else:  # Eq. 23: (2/l)(Im e0 − Im r) = target
            im = e0[:, 1:] - h
            new = np.concatenate((np.sqrt(np.clip(1.0 - np.sum(im * im, axis=1), 0.0, None))[:, None], im), axis=1)
        rest = np.where(ok[:, None], new, model.rest_darboux)
        current = model.with_rest_darboux(rest)
    if info is not None:
        info["clamped"] = int(np.sum(over)) if max_angle is not None else 0
        info["max_prebend_rad"] = float(2.0 * np.arcsin(np.max(norm[ok], initial=0.0)))
    return current
