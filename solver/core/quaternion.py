"""Vectorised unit-quaternion algebra.

Quaternions are arrays ``(..., 4)`` in scalar-first order ``(w, x, y, z)``.
All functions broadcast over leading axes; none loops in Python.
"""

from __future__ import annotations

import numpy as np


def _bilinear_table(terms) -> np.ndarray:
    """(16, k) table T with ``out[c] = Σ T[4i + j, c] a_i b_j`` from ``terms[c] = [(sign, i, j), …]``."""
    table = np.zeros((16, len(terms)))
    for c, row in enumerate(terms):
        for sign, i, j in row:
            table[4 * i + j, c] += sign
    return table


# Products are written as bilinear forms: the outer products a_i b_j of all items times a constant table, a
# single BLAS matrix product, instead of ~30 elementwise numpy calls (per-call overhead dominates small arrays).
_HAMILTON = _bilinear_table(
    [
        [(1, 0, 0), (-1, 1, 1), (-1, 2, 2), (-1, 3, 3)],
        [(1, 0, 1), (1, 1, 0), (1, 2, 3), (-1, 3, 2)],
        [(1, 0, 2), (-1, 1, 3), (1, 2, 0), (1, 3, 1)],
        [(1, 0, 3), (1, 1, 2), (-1, 2, 1), (1, 3, 0)],
    ]
)
_HAMILTON_CONJ_A = _HAMILTON * np.repeat([1.0, -1.0, -1.0, -1.0], 4)[:, None]  # ā ⊗ b
_HAMILTON_PURE_B = _HAMILTON.reshape(4, 4, 4)[:, 1:, :].reshape(12, 4)  # a ⊗ (0, v)
# R(q)·|q|², homogeneous quadratic in q, row-major 3×3, and |q|² as a tenth column
_ROTATION = _bilinear_table(
    [
        [(1, 0, 0), (1, 1, 1), (-1, 2, 2), (-1, 3, 3)],
        [(1, 1, 2), (1, 2, 1), (-1, 0, 3), (-1, 3, 0)],
        [(1, 1, 3), (1, 3, 1), (1, 0, 2), (1, 2, 0)],
        [(1, 1, 2), (1, 2, 1), (1, 0, 3), (1, 3, 0)],
        [(1, 0, 0), (-1, 1, 1), (1, 2, 2), (-1, 3, 3)],
        [(1, 2, 3), (1, 3, 2), (-1, 0, 1), (-1, 1, 0)],
        [(1, 1, 3), (1, 3, 1), (-1, 0, 2), (-1, 2, 0)],
        [(1, 2, 3), (1, 3, 2), (1, 0, 1), (1, 1, 0)],
        [(1, 0, 0), (-1, 1, 1), (-1, 2, 2), (1, 3, 3)],
        [(1, 0, 0), (1, 1, 1), (1, 2, 2), (1, 3, 3)],
    ]
)


def _bilinear(a: np.ndarray, b: np.ndarray, table: np.ndarray) -> np.ndarray:
    outer = np.einsum("...i,...j->...ij", a, b)  # (twice as fast as broadcasting a[..., :, None] * b)
    lead = outer.shape[:-2]
    return (outer.reshape(-1, outer.shape[-2] * outer.shape[-1]) @ table).reshape(lead + (table.shape[1],))


_CROSS = np.zeros((9, 3))
_CROSS[[5, 7, 6, 2, 1, 3], [0, 0, 1, 1, 2, 2]] = [1.0, -1.0, 1.0, -1.0, 1.0, -1.0]  # a × b from a_i b_j


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a × b`` for 3-vectors ``(..., 3)`` (numpy.cross without its per-call overhead)."""
    return _bilinear(np.asarray(a, dtype=float), np.asarray(b, dtype=float), _CROSS)


def multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a ⊗ b``."""
    return _bilinear(np.asarray(a, dtype=float), np.asarray(b, dtype=float), _HAMILTON)


def multiply_conjugate(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``ā ⊗ b`` (the rotation from ``a`` to ``b`` in ``a``'s frame, for unit quaternions)."""
    return _bilinear(np.asarray(a, dtype=float), np.asarray(b, dtype=float), _HAMILTON_CONJ_A)


def conjugate(q: np.ndarray) -> np.ndarray:
    """Conjugate ``q̄`` (the inverse of a unit quaternion)."""
    out = np.array(q, dtype=float, copy=True)
    out[..., 1:] *= -1.0
    return out


def normalize(q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, dtype=float)
    return q / np.sqrt(np.einsum("...i,...i->...", q, q))[..., None]


def to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices ``R(q)`` of shape ``(..., 3, 3)`` (q need not be normalised exactly)."""
    q = np.asarray(q, dtype=float)
    r = _bilinear(q, q, _ROTATION)
    return (r[..., :9] / r[..., 9:]).reshape(q.shape[:-1] + (3, 3))


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors ``v (..., 3)`` by unit quaternions ``q (..., 4)``: ``R(q) v``."""
    return np.einsum("...ij,...j->...i", to_matrix(q), np.asarray(v, dtype=float))


def rotate_inverse(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``R(q)ᵀ v``: a world vector expressed in the body frame of ``q``."""
    return np.einsum("...ji,...j->...i", to_matrix(q), np.asarray(v, dtype=float))


def skew(v: np.ndarray) -> np.ndarray:
    """Cross-product matrices ``[v]×`` of shape ``(..., 3, 3)``."""
    v = np.asarray(v, dtype=float)
    out = np.zeros(v.shape[:-1] + (3, 3))
    out[..., 0, 1] = -v[..., 2]
    out[..., 0, 2] = v[..., 1]
    out[..., 1, 0] = v[..., 2]
    out[..., 1, 2] = -v[..., 0]
    out[..., 2, 0] = -v[..., 1]
    out[..., 2, 1] = v[..., 0]
    return out


def integrate_body(q: np.ndarray, dphi_body: np.ndarray) -> np.ndarray:
    """Apply a small body-frame rotation: ``normalize(q + ½ q ⊗ (0, Δφ))``.

    This is ``q + G(q) Δφ`` with ``G`` of Deul Eq. 27, used for predictions and position updates.
    """
    q = np.asarray(q, dtype=float)
    return normalize(q + _bilinear(q, 0.5 * np.asarray(dphi_body, dtype=float), _HAMILTON_PURE_B))


def body_rotation_vector(q_old: np.ndarray, q_new: np.ndarray) -> np.ndarray:
    """Body-frame rotation taking ``q_old`` to ``q_new``, as ``2·Im(q̄_old q_new)`` on the short arc.

    Inverse of :func:`integrate_body` to first order; used for the angular-velocity update.
    """
    d = multiply_conjugate(q_old, q_new)
    return np.where(d[..., :1] < 0.0, -2.0, 2.0) * d[..., 1:]


def from_two_vectors(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Shortest-arc unit quaternions rotating directions ``a`` onto ``b`` (both ``(..., 3)``)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    c = np.cross(a, b)
    d = np.sum(a * b, axis=-1, keepdims=True)
    q = np.concatenate((1.0 + d, c), axis=-1)
    # Antiparallel: rotate by π about any axis perpendicular to a.
    anti = (1.0 + d[..., 0]) < 1e-12
    if np.any(anti):
        aa = np.broadcast_to(a, q.shape[:-1] + (3,))[anti]
        helper = np.where(np.abs(aa[:, :1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]])
        axis = np.cross(aa, helper)
        axis /= np.linalg.norm(axis, axis=-1, keepdims=True)
        q[anti] = np.concatenate((np.zeros((axis.shape[0], 1)), axis), axis=-1)
    return normalize(q)


def from_matrix(m: np.ndarray) -> np.ndarray:
    """Unit quaternions of rotation matrices ``(..., 3, 3)`` (Shepperd's method, vectorised)."""
    m = np.asarray(m, dtype=float)
    tr = np.trace(m, axis1=-2, axis2=-1)
    diag = np.diagonal(m, axis1=-2, axis2=-1)
    cand = np.stack((tr, diag[..., 0], diag[..., 1], diag[..., 2]), axis=-1)
    k = np.argmax(cand, axis=-1)
    q = np.empty(m.shape[:-2] + (4,))
    m00, m11, m22 = diag[..., 0], diag[..., 1], diag[..., 2]
    m01, m02, m10 = m[..., 0, 1], m[..., 0, 2], m[..., 1, 0]
    m12, m20, m21 = m[..., 1, 2], m[..., 2, 0], m[..., 2, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        s0 = np.sqrt(np.maximum(1.0 + tr, 0.0)) * 2.0
        q0 = np.stack((0.25 * s0, (m21 - m12) / s0, (m02 - m20) / s0, (m10 - m01) / s0), -1)
        s1 = np.sqrt(np.maximum(1.0 + m00 - m11 - m22, 0.0)) * 2.0
        q1 = np.stack(((m21 - m12) / s1, 0.25 * s1, (m01 + m10) / s1, (m02 + m20) / s1), -1)
        s2 = np.sqrt(np.maximum(1.0 + m11 - m00 - m22, 0.0)) * 2.0
        q2 = np.stack(((m02 - m20) / s2, (m01 + m10) / s2, 0.25 * s2, (m12 + m21) / s2), -1)
        s3 = np.sqrt(np.maximum(1.0 + m22 - m00 - m11, 0.0)) * 2.0
        q3 = np.stack(((m10 - m01) / s3, (m02 + m20) / s3, (m12 + m21) / s3, 0.25 * s3), -1)
    allq = np.stack((q0, q1, q2, q3), axis=-2)
    q = np.take_along_axis(allq, k[..., None, None], axis=-2)[..., 0, :]
    q = normalize(q)
    return np.where(q[..., :1] < 0.0, -q, q)
