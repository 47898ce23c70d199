"""The combined 6-D zero-stretch / bend / twist joint constraint of Deul Eq. 23, vectorised over joints.

Rotational degrees of freedom are body-frame rotation vectors ``δφ`` (``q ← q + G(q) δφ`` with G of
Eq. 27), so each segment's mass matrix is the diagonal ``diag(m, m, m, I1, I2, I3)`` of Eq. 28.

Bend/twist strain, ``strain=``:

* ``"rotation"`` (default): ``(2/l)·s·Im(e)`` with ``e = (q̄_p⁰ q_c⁰)* q̄_p q_c``, the rotation from
  the rest to the current relative orientation, in the rest-aligned child frame, and ``s = ±1``
  taking the short arc (q and −q are the same rotation). For a straight rest pose this is exactly
  Eq. 23, and to first order for small rest rotations; unlike Eq. 23 it stays isotropic for large
  rest rotations: at a 90° branch junction Eq. 23 makes a bend about the rest rotation's axis
  cos²45° = ½ as stiff (measured on a branch cantilever), which this form does not.
* ``"eq23"``: Eq. 23 literally, ``(2/l)·(Im(q̄_p q_c) − Im(q̄_p⁰ q_c⁰))``, as the authors' own code
  (benchmarks/vs_reference.py uses it to compare with that code on equal terms).
"""

from __future__ import annotations

import numpy as np

from . import quaternion as quat

STRAINS = ("rotation", "eq23")
_BASIS = np.concatenate((np.eye(3)[None], quat.skew(np.eye(3))))  # E_c with w I + [u]× = Σ_c e_c E_c
_K_TABLE = _BASIS.reshape(4, 9)  # e ↦ w I + [u]×, row-major
# right multiplication a ⊗ r = M(r) a, M(r) = Σ_j r_j _RIGHT[j]  (_RIGHT[j][c, i] = (e_i ⊗ e_j)_c)
_RIGHT = np.einsum("ijc->jci", quat.multiply(np.eye(4)[:, None, :], np.eye(4)[None, :, :])).reshape(4, 16)


def compliance(model, dt: float, index=slice(None)) -> np.ndarray:
    """Diagonal of the time-scaled compliance ``α̃ = α / Δt²`` of Eq. 24, shape (m, 6).

    Stretch rows: ``σ⁻¹`` [m/N]. Bend/twist rows: ``(K l)⁻¹`` [1/(N·m)]: Eq. 8 sums the energy density
    ``½ ΔΩᵀ K ΔΩ`` over joints; integrating over the joint's share ``l`` of the rod gives
    ``U = ½ l ΔΩᵀ K ΔΩ = ½ ΔΩᵀ α⁻¹ ΔΩ`` with ``α = (K l)⁻¹`` (this is what makes the cantilever match
    ``FL³/3EI``). Position rows of a joint with physical stretch: ``l/(κGA)``, ``l/(κGA)``, ``l/(EA)``
    (``model.position_compliance``). A row the joint's kind drops (``row_mask`` 0) gets α̃ = 1: with its C and
    Jacobian row zero its λ stays 0.
    """
    k = model.bend_twist_stiffness[index]
    length = model.joint_lengths[index]
    alpha = np.concatenate((model.position_compliance[index], 1.0 / (k * length[:, None])), axis=1)
    alpha = np.where(model.row_mask[index] > 0.0, alpha, dt * dt)
    return alpha / (dt * dt)


def _check_strain(strain: str) -> None:
    if strain not in STRAINS:
        raise ValueError(f"strain must be one of {STRAINS}, got {strain!r}")


def evaluate(model, positions, orientations, index=slice(None), with_jacobians: bool = True, strain: str = "rotation"):
    """Constraint values ``C`` (m, 6) and Jacobians ``J_parent``, ``J_child`` (m, 6, 6) (Eqs. 23, 25, 26).

    ``C[:, :3] = x_p + R_p p_p − x_c − R_c p_c`` [m] (zero stretch); ``C[:, 3:]`` [1/m] the bend/twist
    strain (module docstring). Jacobian columns are (translation, body-frame rotation).
    """
    _check_strain(strain)
    ev = JointEvaluator(_Subset(model, index), strain=strain)
    c = ev.values(positions, orientations).copy()
    if not with_jacobians:
        return c
    if not ev.constant_translation:
        return (c,) + tuple(jac.copy() for jac in ev.jacobians()[:2])
    return (c,) + tuple(_full_jacobian(rot, sign) for rot, sign in zip(ev.rotation_columns(), (1.0, -1.0), strict=True))


def _full_jacobian(rot: np.ndarray, sign: float, out: np.ndarray | None = None) -> np.ndarray:
    """``[[±I, X], [0, B]]`` (m, 6, 6) from the rotation columns ``[[X], [B]]`` (m, 6, 3)."""
    if out is None:
        out = np.zeros((rot.shape[0], 6, 6))
        out[:, :3, :3] = sign * np.eye(3)
    out[:, :, 3:] = rot
    return out


class _Subset:
    """The joint arrays of ``model`` (anything with RodModel's joint attribute names) at ``index``."""

    def __init__(self, model, index):
        for name in (
            "joint_parent",
            "joint_child",
            "joint_point_parent",
            "joint_point_child",
            "rest_darboux",
            "joint_lengths",
            "row_mask",
            "position_basis",
            "framed",
        ):
            setattr(self, name, getattr(model, name)[index])


class JointEvaluator:
    """:func:`evaluate` for every joint of a model, for the direct solver's Newton iterations.

    Constants (attachment cross-product matrices, the rest rotation folded into a 4×4 matrix per joint,
    tables that make the bend/twist blocks one small product, the constant ±I and zero blocks of the
    Jacobians) are computed once; position, orientation and rotation matrix of every segment are packed
    in one row so each side of the joints is one gather. The Jacobians are written into preallocated
    arrays together with their transposes, which the KKT assembly needs. ``values(x, q)`` returns ``C``
    (m, 6) and keeps what the Jacobians need; ``jacobians()`` then returns ``(J_parent, J_child,
    J_parentᵀ, J_childᵀ)`` (m, 6, 6) at that pose. Returned arrays are reused by the next call: copy them to keep them.

    Joint kinds (:data:`solver.core.model.JOINT_KINDS`): a dropped row has C = 0 and a zero Jacobian row. Joints
    with ``framed`` position rows (rails, physical stretch) state them in a basis B fixed in the parent segment,
    ``C = Bᵀ R_pᵀ (x_p + R_p p_p − x_c − R_c p_c)``; their translation columns ``±Bᵀ R_pᵀ`` vary with the pose
    (``constant_translation`` is False when any joint is framed).
    """

    def __init__(self, model, strain: str = "rotation"):
        _check_strain(strain)
        self.strain = strain
        self.parent = np.asarray(model.joint_parent)
        self.child = np.asarray(model.joint_child)
        self.point_parent = np.ascontiguousarray(model.joint_point_parent, dtype=float)
        self.point_child = np.ascontiguousarray(model.joint_point_child, dtype=float)
        self._inv_l = 1.0 / np.asarray(model.joint_lengths, dtype=float)
        rest = np.asarray(model.rest_darboux, dtype=float)
        self.rest = rest
        if strain != "rotation":
            self._rest_strain = (2.0 * self._inv_l)[:, None] * rest[:, 1:]
        mask = np.asarray(model.row_mask, dtype=float)
        self._mask = None if np.all(mask == 1.0) else mask
        framed = np.flatnonzero(np.asarray(model.framed))
        self._framed = framed if framed.size else None
        self.constant_translation = self._framed is None
        self._basis_t = np.ascontiguousarray(np.swapaxes(np.asarray(model.position_basis)[framed], 1, 2))  # Bᵀ
        self._local = np.zeros((framed.size, 3))  # R_pᵀ C of the framed joints at the last pose
        self._translation = np.zeros((framed.size, 3, 3))  # Bᵀ R_pᵀ (masked) at the last pose
        self._full = None  # (J_p, J_c, J_pᵀ, J_cᵀ), allocated on first use
        self._pack = np.empty((0, 16))  # per segment: x (3), q (4), R(q) (9)
        self._tables_made = False  # the per-joint tables of values(): ~0.9 kB per joint, unused by the compiled solver
        self._state: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None  # set by values()
        self._deferred: tuple[np.ndarray, np.ndarray] | None = None  # set by defer()

    def defer(self, positions: np.ndarray, orientations: np.ndarray) -> None:
        """The pose is evaluated elsewhere (the compiled solver, solver/core/compiled.py): the Jacobians, if
        asked for, are computed here at this pose (the arrays as they are then)."""
        self._state = None
        self._deferred = (positions, orientations)

    def _make_tables(self) -> None:
        """Per-joint constants and work arrays of :meth:`values`, made on its first call (the compiled solver
        evaluates joints itself and never needs them)."""
        m, rest = self.parent.shape[0], self.rest
        self._minus_skew_parent = -quat.skew(self.point_parent)  # ∂(R p)/∂δφ_body = −R [p]×
        self._skew_child = quat.skew(self.point_child)
        # Bend/twist blocks are linear in e = (w, u): B_child = (s/l)(w I + [u]×) = (s/l) e·_K_TABLE, and
        # B_parent = −(s/l) Kᵀ R(r⁰)ᵀ = (s/l) e·T per joint, T[c] = −E_cᵀ R(r⁰)ᵀ (E_0 = I, E_c = [e_c]×).
        if self.strain == "rotation":
            # e = r̄⁰ ⊗ q̄_p ⊗ q_c = conj(q_p ⊗ r⁰) ⊗ q_c: q_p ⊗ r⁰ = _rest_right q_p, a 4×4 matrix per joint
            self._rest_right = (rest @ _RIGHT).reshape(m, 4, 4)
            rest_t = np.swapaxes(quat.to_matrix(rest), 1, 2)
            self._b_parent_table = np.matmul(-np.swapaxes(_BASIS, 1, 2), rest_t[:, None]).reshape(m, 4, 9)
        else:
            self._b_parent_table = -np.swapaxes(_BASIS, 1, 2).reshape(4, 9)
        self._c = np.empty((m, 6))
        self._rot_parent = np.empty((m, 6, 3))
        self._rot_child = np.empty((m, 6, 3))
        self._tables_made = True

    def values(self, positions: np.ndarray, orientations: np.ndarray) -> np.ndarray:
        """``C`` (m, 6) of Eq. 23 at the pose; returns an internal array."""
        if not self._tables_made:
            self._make_tables()
        positions = np.asarray(positions, dtype=float)
        orientations = np.asarray(orientations, dtype=float)
        n, m = positions.shape[0], self.parent.shape[0]
        if 2 * m < n:  # a few joints (a Gauss–Seidel colour): rotation matrices of their segments only
            sides = np.concatenate((self.parent, self.child))
            g = np.empty((2 * m, 16))
            g[:, :3] = positions[sides]
            g[:, 3:7] = orientations[sides]
            g[:, 7:] = quat.to_matrix(g[:, 3:7]).reshape(2 * m, 9)
            gp, gc = g[:m], g[m:]
        else:  # all joints: each segment's rotation once, packed so each side is one gather
            if self._pack.shape[0] != n:
                self._pack = np.empty((n, 16))
            pack = self._pack
            pack[:, :3] = positions
            pack[:, 3:7] = orientations
            pack[:, 7:] = quat.to_matrix(orientations).reshape(n, 9)
            gp, gc = pack[self.parent], pack[self.child]
        rp, rc = gp[:, 7:].reshape(m, 3, 3), gc[:, 7:].reshape(m, 3, 3)
        c = self._c
        self._deferred = None
        stretch = gp[:, :3] - gc[:, :3]
        stretch += np.einsum("kij,kj->ki", rp, self.point_parent)
        stretch -= np.einsum("kij,kj->ki", rc, self.point_child)
        if self._framed is not None:
            f = self._framed
            self._local = np.einsum("kji,kj->ki", rp[f], stretch[f])  # R_pᵀ C
            stretch[f] = np.einsum("kij,kj->ki", self._basis_t, self._local)
        c[:, :3] = stretch
        if self.strain == "rotation":
            a = np.einsum("kij,kj->ki", self._rest_right, gp[:, 3:7])  # q_p ⊗ r⁰
            e = quat.multiply_conjugate(a, gc[:, 3:7])  # (q_p r⁰)‾ q_c = r̄⁰ q̄_p q_c
            ls = np.where(e[:, 0] < 0.0, -self._inv_l, self._inv_l)  # (1/l)·s, s the short-arc sign
            np.multiply((2.0 * ls)[:, None], e[:, 1:], out=c[:, 3:])
        else:
            e = quat.multiply_conjugate(gp[:, 3:7], gc[:, 3:7])  # q̄_p q_c
            ls = self._inv_l
            np.multiply((2.0 * ls)[:, None], e[:, 1:], out=c[:, 3:])
            c[:, 3:] -= self._rest_strain
        if self._mask is not None:
            c *= self._mask
        self._state = (rp, rc, e, ls)
        return c

    def rotation_columns(self):
        """The varying part of the Jacobians at the pose of the last :meth:`values` call: their rotation
        columns ``(J_parent[:, :, 3:], J_child[:, :, 3:])``, each (m, 6, 3) = ``[[X], [B]]`` (stretch rows
        X = ∓R[p]×, bend/twist rows B); the translation columns are the constants ``[±I; 0]``."""
        if self._state is None and self._deferred is not None:
            self.values(*self._deferred)
        if self._state is None:
            raise RuntimeError("JointEvaluator.rotation_columns called before values")
        rp, rc, e, ls = self._state
        m = e.shape[0]
        rot_p, rot_c = self._rot_parent, self._rot_child
        np.matmul(rp, self._minus_skew_parent, out=rot_p[:, :3])  # ∂(R p)/∂δφ_body = −R [p]×
        np.matmul(rc, self._skew_child, out=rot_c[:, :3])
        # q_p ← q_p ⊗ (1, δφ/2) gives δe = (0, −R(r⁰)ᵀδφ/2) ⊗ e; q_c ← q_c ⊗ (1, δφ/2) gives δe = e ⊗ (0, δφ/2):
        # the body-frame forms of Eqs. 10, 11 times G(q) of Eq. 27. With K = w I + [u]× (e = (w, u)) the child
        # block is (s/l) K and the parent block −(s/l) Kᵀ R(r⁰)ᵀ (R(r⁰) = I for "eq23", where e = q̄_p q_c):
        # both linear in (s/l) e, so one small product each with the constant tables of __init__.
        es = e * ls[:, None]
        rot_c[:, 3:] = (es @ _K_TABLE).reshape(m, 3, 3)
        if self.strain == "rotation":
            rot_p[:, 3:] = np.einsum("kc,kcj->kj", es, self._b_parent_table).reshape(m, 3, 3)
        else:
            rot_p[:, 3:] = (es @ self._b_parent_table).reshape(m, 3, 3)
        if self._framed is not None:  # rows Bᵀ R_pᵀ C: parent rotation Bᵀ [R_pᵀ C − p_p]×, child Bᵀ R_pᵀ R_c [p_c]×
            f = self._framed
            rp_t = np.swapaxes(rp[f], 1, 2)
            rot_p[f, :3] = self._basis_t @ quat.skew(self._local - self.point_parent[f])
            rot_c[f, :3] = self._basis_t @ (rp_t @ rot_c[f, :3])
            self._translation = self._basis_t @ rp_t
            if self._mask is not None:
                self._translation *= self._mask[f, :3, None]
        if self._mask is not None:
            rot_p *= self._mask[:, :, None]
            rot_c *= self._mask[:, :, None]
        return rot_p, rot_c

    def jacobians(self):
        """``(J_parent, J_child, J_parentᵀ, J_childᵀ)`` (m, 6, 6) at the pose of the last :meth:`values` call."""
        rot_p, rot_c = self.rotation_columns()
        if self._full is None:
            self._full = [_full_jacobian(np.zeros_like(rot_p), sign) for sign in (1.0, -1.0, 1.0, -1.0)]
        jp, jc, jpt, jct = self._full
        for jac, jac_t, rot, sign in ((jp, jpt, rot_p, 1.0), (jc, jct, rot_c, -1.0)):
            jac[:, :, 3:] = rot
            jac_t[:, 3:, :] = np.swapaxes(rot, 1, 2)
            if self._framed is not None:
                jac[self._framed, :3, :3] = sign * self._translation
                jac_t[self._framed, :3, :3] = sign * np.swapaxes(self._translation, 1, 2)
        return jp, jc, jpt, jct
