"""Inverses of many small symmetric definite blocks (the KKT pivots), vectorised across blocks.

LAPACK's batched ``numpy.linalg.inv`` costs a few µs per 6×6 block in call overhead. Here one
Cholesky factorisation ``A = L Lᵀ`` and ``A⁻¹ = L⁻ᵀ L⁻¹`` are unrolled over the block's entries,
each step one numpy operation over all blocks at once (struct-of-arrays). Cholesky is backward
stable for definite matrices, which the KKT pivots of Eq. 22 are (segment pivots positive, joint
pivots negative: the matrix is quasi-definite).
"""
from __future__ import annotations

import numpy as np

BATCH_MIN = 48   # below this many blocks LAPACK's per-block call is cheaper than ~200 numpy calls


def inv_definite(blocks: np.ndarray, sign: np.ndarray) -> np.ndarray:
    """``blocks⁻¹`` for ``(k, n, n)`` symmetric blocks, each positive (``sign = +1``) or negative
    (``sign = −1``) definite. Raises ``numpy.linalg.LinAlgError`` if a block is not definite."""
    k, n, _ = blocks.shape
    if k < BATCH_MIN:
        return np.linalg.inv(blocks)
    s = sign.astype(float)
    a = np.ascontiguousarray((blocks * s[:, None, None]).transpose(1, 2, 0))   # (n, n, k), positive definite
    l = [[None] * n for _ in range(n)]
    for j in range(n):
        d = a[j, j].copy()
        for p in range(j):
            d -= l[j][p] * l[j][p]
        if not np.all(d > 0.0):
            raise np.linalg.LinAlgError("a KKT pivot block is not definite")
        l[j][j] = np.sqrt(d)
        inv_ljj = 1.0 / l[j][j]
        for i in range(j + 1, n):
            v = a[i, j].copy()
            for p in range(j):
                v -= l[i][p] * l[j][p]
            l[i][j] = v * inv_ljj
    # L⁻¹ (lower triangular) by forward substitution
    li = [[None] * n for _ in range(n)]
    for i in range(n):
        li[i][i] = 1.0 / l[i][i]
        for j in range(i):
            v = l[i][j] * li[j][j]
            for p in range(j + 1, i):
                v += l[i][p] * li[p][j]
            li[i][j] = -v * li[i][i]
    out = np.empty((k, n, n))
    for i in range(n):
        for j in range(i + 1):
            # (L⁻ᵀ L⁻¹)_ij = Σ_{p ≥ i} Li[p][i] Li[p][j]   (j ≤ i)
            v = li[i][i] * li[i][j]
            for p in range(i + 1, n):
                v += li[p][i] * li[p][j]
            v *= s
            out[:, i, j] = v
            out[:, j, i] = v
    return out
