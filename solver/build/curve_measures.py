"""Shape measures of a polyline centerline used to compare rod models (writhe, end-to-end distance)."""

from __future__ import annotations

import numpy as np


def writhe(points) -> float:
    """Writhe of a polyline (K, 3): the Gauss double integral, summed exactly per pair of non-adjacent
    segments as the signed solid angle of Klenin & Langowski (2000), vectorised over pairs.

    For a closed curve it is the classical writhe; for an open rod it is the same integral over the
    open curve (a single plectonemic loop gives |Wr| ≈ 1, a planar curve 0)."""
    p = np.asarray(points, dtype=float)
    n = p.shape[0] - 1
    i, j = np.triu_indices(n, k=2)
    p1, p2, p3, p4 = p[i], p[i + 1], p[j], p[j + 1]
    r13, r14, r23, r24 = p3 - p1, p4 - p1, p3 - p2, p4 - p2

    def unit(a):
        nrm = np.linalg.norm(a, axis=1, keepdims=True)
        return np.divide(a, nrm, out=np.zeros_like(a), where=nrm > 1e-300)

    n1, n2 = unit(np.cross(r13, r14)), unit(np.cross(r14, r24))
    n3, n4 = unit(np.cross(r24, r23)), unit(np.cross(r23, r13))

    def asin_dot(a, b):
        return np.arcsin(np.clip(np.einsum("ij,ij->i", a, b), -1.0, 1.0))

    omega = asin_dot(n1, n2) + asin_dot(n2, n3) + asin_dot(n3, n4) + asin_dot(n4, n1)
    sign = np.sign(np.einsum("ij,ij->i", np.cross(p4 - p3, p2 - p1), r13))
    return float(2.0 * np.sum(omega * sign) / (4.0 * np.pi))
