"""Inverses of many small symmetric definite blocks (the KKT pivots), vectorised across blocks.

LAPACK's batched ``numpy.linalg.inv`` costs about 0.6 µs per 6×6 block in per-call overhead, and an
entry-by-entry unrolled factorisation costs hundreds of numpy calls. Here a 6×6 block
``[[P, Q], [Qᵀ, R]]`` is inverted by one block-Cholesky step on 3×3 blocks: ``P⁻¹`` and the Schur
complement ``S = R − Qᵀ P⁻¹ Q`` are inverted in closed form (adjugate / determinant), and the rest
is four stacked 3×3 products, about 0.25 µs per block. For a definite block this is block LDLᵀ
without pivoting, which is backward stable; the KKT pivots of Eq. 22 are definite (segment pivots
positive, joint pivots negative: the matrix is quasi-definite).
"""

from __future__ import annotations

import itertools
import os

import numpy as np

# Below BATCH_MIN blocks LAPACK (numpy.linalg.inv) beats the ~60 µs of numpy calls of the batched path. Its cost
# per 6×6 block depends on BLAS threading (measured with OpenBLAS on 2 cores): 0.65 µs single-threaded
# (OMP_NUM_THREADS=1, crossover ~160 blocks), 3–5 µs with threads (synchronisation; crossover ~20 blocks).
_ONE_BLAS_THREAD = any(os.environ.get(v) == "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"))
BATCH_MIN = 160 if _ONE_BLAS_THREAD else 24
CHUNK = 2048  # blocks per batch (≈ 0.6 MB per 6×6 array: the temporaries stay in the L2 cache)


def _inv3_symmetric(m: np.ndarray, sign, out: np.ndarray) -> bool:
    """``out = m⁻¹`` for symmetric (k, 3, 3) blocks (upper triangle read); True iff every ``sign·m`` is
    positive definite (leading minors ``s·a``, ``a d − b²`` and ``s·det`` all > 0)."""
    a, b, c = m[:, 0, 0], m[:, 0, 1], m[:, 0, 2]
    d, e, f = m[:, 1, 1], m[:, 1, 2], m[:, 2, 2]
    c00 = d * f - e * e
    c01 = c * e - b * f
    c02 = b * e - c * d
    det = a * c00 + b * c01 + c * c02
    c11 = a * f - c * c
    c12 = b * c - a * e
    c22 = a * d - b * b
    ok = bool(np.all(sign * a > 0.0) and np.all(c22 > 0.0) and np.all(sign * det > 0.0))
    r = 1.0 / det
    out[:, 0, 0] = c00 * r
    out[:, 1, 1] = c11 * r
    out[:, 2, 2] = c22 * r
    c01 *= r
    c02 *= r
    c12 *= r
    out[:, 0, 1] = c01
    out[:, 1, 0] = c01
    out[:, 0, 2] = c02
    out[:, 2, 0] = c02
    out[:, 1, 2] = c12
    out[:, 2, 1] = c12
    return ok


def inv_definite(blocks: np.ndarray, sign, out: np.ndarray | None = None) -> np.ndarray:
    """``blocks⁻¹`` for ``(k, 6, 6)`` symmetric blocks, each positive (``sign = +1``) or negative
    (``sign = −1``) definite; ``sign`` is a scalar or (k,). Writes into ``out`` if given. Raises
    ``numpy.linalg.LinAlgError`` if a block is not definite with its sign."""
    k, n, _ = blocks.shape
    if out is None:
        out = np.empty((k, n, n))
    if n != 6 or k < BATCH_MIN:  # (only a singular block raises here: definiteness is not checked)
        out[:] = np.linalg.inv(blocks)
        return out
    sign = np.asarray(sign, dtype=float)
    if sign.ndim:
        sign = sign.reshape(k)
    if k > 2 * CHUNK:  # equal batches, so that the ~20 passes over the blocks stay in cache
        bounds = np.linspace(0, k, -(-k // CHUNK) + 1).astype(int)
        for lo, hi in itertools.pairwise(bounds):
            inv_definite(blocks[lo:hi], sign[lo:hi] if sign.ndim else sign, out[lo:hi])
        return out
    p, q, r = blocks[:, :3, :3], blocks[:, :3, 3:], blocks[:, 3:, 3:]
    pinv = np.empty((k, 3, 3))
    ok = _inv3_symmetric(p, sign, pinv)
    w = np.matmul(np.swapaxes(q, 1, 2), pinv)  # Qᵀ P⁻¹ (= Tᵀ, T = P⁻¹ Q)
    s = r - w @ q  # Schur complement R − Qᵀ P⁻¹ Q
    sinv = out[:, 3:, 3:]
    ok &= _inv3_symmetric(s, sign, sinv)
    if not ok:
        raise np.linalg.LinAlgError("a KKT pivot block is not definite")
    u = np.matmul(np.swapaxes(w, 1, 2), sinv)  # T S⁻¹
    np.negative(u, out=out[:, :3, 3:])
    np.negative(np.swapaxes(u, 1, 2), out=out[:, 3:, :3])
    np.add(pinv, u @ w, out=out[:, :3, :3])  # P⁻¹ + T S⁻¹ Tᵀ
    return out
