"""Natural frequencies and modal damping of a rod model linearised about its initial pose: each branch's first
bending mode with its parent held still (:func:`branch_modes`), and the whole forest's first modes
(:func:`tree_modes`).

The linearised model. A free segment k moves by a small world translation δx_k and rotation δθ_k; with the
segments joined in a rooted tree, every such motion is reached by giving each joint a a relative rotation ψ_a
about its world point P_a and a relative translation u_a, each carried by the joint's child and everything
below it:

    δθ_k = Σ_a ψ_a,   δx_k = Σ_a (ψ_a × (X_k − P_a) + u_a)   (a over the joints from the clamp down to k).

These 6 coordinates per joint are those in which the joints' energy is diagonal: Deul Eq. 23's bend/twist strain
is ψ in the child's rest frame over the Darboux length l, and its compliance α = (K l)⁻¹ on that strain
(:func:`solver.core.joint_constraint.compliance`) is the rotational flexibility l / (E I₁, E I₂, G J) on ψ
(rotational stiffness E I / l per joint); the position rows' compliance (``model.position_compliance``,
``stretch_compliance`` by default) is the translational flexibility on u, in the joint's position basis. With T
the map above and M = diag(m, m, m, I₁, I₂, I₃) per segment (Deul Eq. 28, rotations in the body frame), the
generalised eigenproblem K φ = ω² Tᵀ M T φ is, with ψ = K^{1/2} φ and the factor B = M^{1/2} T K^{−1/2},
Bᵀ B ψ = ω⁻² ψ: the first modes are the largest eigenvalues of BᵀB. B needs only flexibilities (√α, never a
stiffness 1/α, so the near-rigid stretch rows stay harmless) and is sparse (one 6×6 block per segment and
joint above it); BᵀB is taken dense for small problems and as an operator for eigsh otherwise.

Neglected: gravity's pre-stress (the geometric stiffness of the joints' forces λ at rest: under its own weight
a hanging branch, in tension, sways slightly faster, a standing trunk, in compression, slightly slower), the
loop-closing constraints (``model.loops``) and the offset of a drawn rest shape from the initial pose
(``rest="straight"``): the model is linearised about its initial pose as an unloaded one. Joints that drop a
row (ball, hinge, rail) leave a motion without elastic restoring force, so they are refused inside a problem.

Damping: the Simulator's mass-proportional damping c [1/s] (``Simulator.damping``) is Rayleigh α damping, C = c M,
so every mode keeps its shape and decays with ζ = c / (2ω). The integrator adds its own (Euler: ζ ≈ ωΔt/2):
:meth:`BranchModes.stepped_damping_ratio` gives the ratio a simulation at Δt shows.

Measured (tests/solver/test_branch_modes.py): Deul's cantilever (L = 10 m, r = 0.5 m, 50 segments) 1.3959 Hz
against Euler–Bernoulli's 1.3990 Hz (−0.22 %: the sections' rotary inertia −0.15 %, the rest the joints'
position compliance and the discretisation; a slender beam converges as 1/n², −0.030 % at 40 segments); a
tapered 20-segment branch within 0.12–0.33 % of an independent finite-element beam (tip radius r₀ … r₀/20), a
sharp cone within 0.3 % of Kirchhoff's; free vibrations simulated with bdf2 within 0.07 % in frequency and in
damping ratio. A Sapling-like tree of 5,641 segments in 641 branches, with 5,244 leaves: all branches in 4.6 s,
the whole tree's first six modes in 4.3 s (one core; 2.7 s and 2.0 s without the leaves).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, eigsh

from ..core import quaternion as quat
from ..core.integrator import discrete_mode

DENSE_LIMIT = 300  # unknowns (6 per joint) up to which BᵀB is formed dense and solved by LAPACK (eigsh above)


@dataclass(frozen=True)
class BranchModes:
    """Per branch: ``frequency_hz`` (b,) the first natural frequency [Hz] with the branch's parent held still,
    ``damping_ratio`` (b,) ζ = c / (2ω) under the mass-proportional ``damping`` c [1/s], and ``segments`` the
    segments each problem included (the branch, and with ``with_children`` everything it carries)."""

    frequency_hz: np.ndarray
    damping_ratio: np.ndarray
    segments: list
    damping: float

    def stepped_damping_ratio(self, dt: float, integrator: str = "euler") -> np.ndarray:
        """The damping ratio (b,) each branch's first mode shows when stepped by the Simulator's ``integrator``
        at ``dt`` [s] with this damping: c/(2ω) plus the integrator's own
        (:func:`solver.core.integrator.discrete_mode`)."""
        omega = 2.0 * np.pi * self.frequency_hz
        return np.array([discrete_mode(integrator, float(w), dt, self.damping)[0] for w in omega])


@dataclass(frozen=True)
class TreeModes:
    """The first modes of a whole model: ``frequency_hz`` (k,) ascending [Hz], ``damping_ratio`` (k,) c/(2ω),
    ``displacement`` (k, n, 3) each mode's translation of every segment's centre (world frame, pinned segments
    0), scaled to a largest length of 1."""

    frequency_hz: np.ndarray
    damping_ratio: np.ndarray
    displacement: np.ndarray


def _parent_joints(model) -> np.ndarray:
    """The tree joint whose child each segment is (n,), −1 for none; ValueError if a segment is the child of two
    (the problem needs a rooted tree)."""
    n = model.n_segments
    counts = np.bincount(model.joint_child, minlength=n)
    if np.any(counts > 1):
        s = int(np.argmax(counts > 1))
        raise ValueError(f"segment {s} is the child of {int(counts[s])} joints: modes need a rooted tree")
    parent_joint = np.full(n, -1, np.int64)
    parent_joint[model.joint_child] = np.arange(model.n_joints)
    return parent_joint


def _check_problem(model, segs: np.ndarray, joints: np.ndarray) -> None:
    """Every segment of a problem hangs from a joint that keeps all six rows."""
    if np.any(joints < 0):
        s = int(segs[np.argmax(joints < 0)])
        raise ValueError(f"segment {s} is free and hangs from no joint: it has rigid-body modes")
    dropped = np.any(model.row_mask[joints] == 0.0, axis=1)
    if np.any(dropped):
        j = int(joints[np.argmax(dropped)])
        raise ValueError(f"joint {j} drops a row (ball, hinge or rail): no elastic first mode through it")


def _joint_flexibility(model, joints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Square roots of the world-frame flexibilities (j, 3, 3) of the joints' rotation ψ [1/√(N·m)] and
    translation u [√(m/N)] (module docstring): R_c diag(√(l/K)) R_cᵀ, and B_w diag(√α) B_wᵀ with B_w the position
    basis in the world (the parent's frame rotated for framed joints)."""
    r_child = quat.to_matrix(model.orientations[model.joint_child[joints]])
    rot = np.sqrt(model.joint_lengths[joints, None] / model.bend_twist_stiffness[joints])
    f_rot = np.einsum("jab,jb,jcb->jac", r_child, rot, r_child)
    basis = model.position_basis[joints]
    framed = model.framed[joints]
    if np.any(framed):
        r_parent = quat.to_matrix(model.orientations[model.joint_parent[joints[framed]]])
        basis = basis.copy()
        basis[framed] = r_parent @ basis[framed]
    pos = np.sqrt(model.position_compliance[joints])
    f_pos = np.einsum("jab,jb,jcb->jac", basis, pos, basis)
    return f_rot, f_pos


def _ancestor_pairs(local_parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (segment k, joint a) with a on the path from k up to its clamp: a's child is k or an ancestor of k
    (joints indexed by their child; ``local_parent`` −1 where the parent is held still). One pass per tree
    level, vectorised over the segments."""
    ks, anc = [], []
    k = np.arange(local_parent.size)
    a = k.copy()
    while k.size:
        ks.append(k)
        anc.append(a)
        a = local_parent[a]
        keep = a >= 0
        k, a = k[keep], a[keep]
    return np.concatenate(ks), np.concatenate(anc)


def _factor(model, segs: np.ndarray, parent_joint: np.ndarray, rigid_leaves: bool) -> sp.bsr_matrix:
    """B = M^{1/2} T K^{−1/2} (6d, 6d) of the free segments ``segs`` (d,), each carried by its parent joint,
    the segments outside ``segs`` held still (module docstring); with ``rigid_leaves`` the leaves' joints have
    no flexibility (their columns are zero), so a leaf rides rigidly on its segment."""
    joints = parent_joint[segs]
    _check_problem(model, segs, joints)
    local = np.full(model.n_segments, -1, np.int64)
    local[segs] = np.arange(segs.size)
    local_parent = local[model.joint_parent[joints]]
    k, a = _ancestor_pairs(local_parent)
    f_rot, f_pos = _joint_flexibility(model, joints)
    if rigid_leaves:
        leaf = model.leaf[segs]
        f_rot[leaf] = 0.0
        f_pos[leaf] = 0.0
    ja = joints[a]
    pivot = model.positions[model.joint_child[ja]] + quat.rotate(
        model.orientations[model.joint_child[ja]], model.joint_point_child[ja]
    )
    arm = model.positions[segs[k]] - pivot  # X_k − P_a
    sqrt_m = np.sqrt(model.masses[segs])[k, None, None]
    body = np.swapaxes(quat.to_matrix(model.orientations[segs]), 1, 2) * np.sqrt(model.inertia[segs])[:, :, None]
    blocks = np.zeros((k.size, 6, 6))
    # ψ × d = −[d]× ψ: the columns of −[d]× F are F's columns crossed with d
    blocks[:, :3, :3] = sqrt_m * np.cross(f_rot[a], arm[:, :, None], axis=1)
    blocks[:, :3, 3:] = sqrt_m * f_pos[a]
    blocks[:, 3:, :3] = np.einsum("pij,pjc->pic", body[k], f_rot[a])  # body-frame rotation rows, × √I
    order = np.argsort(k, kind="stable")  # block rows by segment: B in block-sparse row form
    indptr = np.concatenate(([0], np.cumsum(np.bincount(k, minlength=segs.size))))
    size = 6 * segs.size
    return sp.bsr_matrix((blocks[order], a[order], indptr), shape=(size, size))


def _largest(factor: sp.bsr_matrix, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``count`` largest eigenvalues of BᵀB (descending: ω⁻² [s²] of the lowest modes) and their vectors."""
    size = factor.shape[1]
    count = min(count, size)
    if size <= DENSE_LIMIT:
        dense = factor.toarray()
        vals, vecs = scipy.linalg.eigh(dense.T @ dense, subset_by_index=[size - count, size - 1])
    else:
        transpose = factor.T  # (once: a BSR transpose per product would cost more than the product)
        gram = LinearOperator((size, size), matvec=lambda v: transpose @ (factor @ v), dtype=float)
        vals, vecs = eigsh(gram, k=min(count, size - 1), which="LA")
    order = np.argsort(vals)[::-1]
    return vals[order], vecs[:, order]


def _frequency_and_ratio(inverse_omega2: np.ndarray, damping: float) -> tuple[np.ndarray, np.ndarray]:
    omega = 1.0 / np.sqrt(inverse_omega2)
    return omega / (2.0 * np.pi), damping / (2.0 * omega)


def _children(model) -> sp.csr_matrix:
    """Segment → child segments through the tree joints, (n, n) CSR."""
    n = model.n_segments
    ones = np.ones(model.n_joints, bool)
    return sp.csr_matrix((ones, (model.joint_parent, model.joint_child)), shape=(n, n))


def _carried(children: sp.csr_matrix, seeds: np.ndarray) -> np.ndarray:
    """``seeds`` and every segment below them (one pass per tree level)."""
    seen = np.zeros(children.shape[0], bool)
    frontier = np.unique(seeds)
    while frontier.size:
        seen[frontier] = True
        below = children[frontier].indices
        frontier = np.unique(below[~seen[below]])
    return np.flatnonzero(seen)


def branch_modes(
    model, branches, *, damping: float = 0.0, with_children: bool = True, rigid_leaves: bool = True
) -> BranchModes:
    """The first natural frequency [Hz] and modal damping ratio of each branch of ``model`` (a RodModel), its
    parent held still.

    ``branches``: a sequence of segment-index arrays, one per branch (``BranchMap.span_segment`` of
    :func:`solver.build.tree_from_branches`). A branch's base is clamped where it hangs from a segment outside
    it (or from a pinned anchor). With ``with_children`` (the default) the problem includes everything the
    branch carries (its sub-branches and leaves: the mode a shader sways it by, its twigs riding along);
    without, the branch alone (its sub-branches neither load nor stiffen it). ``rigid_leaves`` (the default):
    the leaves (``model.leaf``) ride rigidly on their segments, as mass only, so that a leaf fluttering on its
    petiole, often slower than a twig's sway, is not taken for the branch's first mode. ``damping``: the Simulator's
    mass-proportional damping c [1/s]; ζ = c / (2ω). Pinned segments are held still. One eigenproblem per branch
    (module docstring for the model and what it neglects)."""
    parent_joint = _parent_joints(model)
    children = _children(model) if with_children else None
    free = ~model.pinned
    inverse, included = [], []
    for branch in branches:
        segs = np.unique(np.asarray(branch, np.int64))
        if children is not None:
            segs = _carried(children, segs)
        segs = segs[free[segs]]
        if segs.size == 0:
            raise ValueError("a branch has no free segment")
        vals, _ = _largest(_factor(model, segs, parent_joint, rigid_leaves), 1)
        inverse.append(vals[0])
        included.append(segs)
    freq, ratio = _frequency_and_ratio(np.array(inverse), float(damping))
    return BranchModes(freq, ratio, included, float(damping))


def tree_modes(model, count: int = 4, *, damping: float = 0.0, rigid_leaves: bool = False) -> TreeModes:
    """The ``count`` lowest modes of the whole ``model`` (its pinned segments held still): frequencies [Hz],
    damping ratios c/(2ω) under the mass-proportional ``damping`` c [1/s], and shapes (segment translations).
    ``rigid_leaves``: the leaves ride rigidly on their segments (as in :func:`branch_modes`); by default their
    joints flex, and their flutter modes are among the tree's."""
    parent_joint = _parent_joints(model)
    segs = np.flatnonzero(~model.pinned)
    factor = _factor(model, segs, parent_joint, rigid_leaves)
    vals, vecs = _largest(factor, int(count))
    freq, ratio = _frequency_and_ratio(vals, float(damping))
    motion = (factor @ vecs).T.reshape(vals.size, segs.size, 6)[:, :, :3]  # M^{1/2} T φ: √m δx
    motion = motion / np.sqrt(model.masses[segs])[None, :, None]
    shape = np.zeros((vals.size, model.n_segments, 3))
    shape[:, segs] = motion
    scale = np.max(np.linalg.norm(shape, axis=2), axis=1)
    return TreeModes(freq, ratio, shape / scale[:, None, None])
