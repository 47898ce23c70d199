"""Poses read from Blender objects at the simulated frames: rotations out of world matrices, and the two
latest samples interpolated across a frame's substeps (pin objects, hooks, animated colliders)."""

from __future__ import annotations

import numpy as np

from ..solver.core import quaternion as quat


def rotation(matrix) -> np.ndarray:
    """The 3×3 rotation part of a 4×4 world matrix, its columns' scale removed."""
    m = np.array(matrix)[:3, :3]
    return m / np.linalg.norm(m, axis=0, keepdims=True)


def rigid(matrix) -> tuple[np.ndarray, np.ndarray]:
    """Translation (3,) and unit quaternion (4,) of a 4×4 world matrix (scale removed; a shear by the
    nearest rotation, the polar factor)."""
    u, _, vt = np.linalg.svd(rotation(matrix))
    return np.array(matrix)[:3, 3].copy(), quat.from_matrix((u @ vt)[None])[0]


class FramePoses:
    """The two latest poses (positions (…, 3) [m], unit quaternions (…, 4)) read at simulated frames, and
    the pose in between at any time: positions linearly, rotations by normalised lerp on the short arc."""

    def __init__(self, x, q, t: float = 0.0):
        self._prev = self._last = (t, x, q)

    def read(self, t: float, x, q, first: bool = False) -> None:
        """The pose at time ``t`` [s]; ``first``: the simulation starts here (no earlier sample)."""
        now = (t, x, q)
        self._prev = now if first else self._last
        self._last = now

    def at(self, t: float):
        (t0, x0, q0), (t1, x1, q1) = self._prev, self._last
        a = 1.0 if t1 <= t0 else float(np.clip((t - t0) / (t1 - t0), 0.0, 1.0))
        q1 = np.where(np.sum(q0 * q1, axis=-1, keepdims=True) < 0, -q1, q1)
        return (1 - a) * x0 + a * x1, quat.normalize((1 - a) * q0 + a * q1)
