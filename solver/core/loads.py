"""Point loads: forces applied at fixed points of segments every step (a weight hung from a branch tip)."""

from __future__ import annotations

import numpy as np

from . import quaternion as quat


class PointLoads:
    """Forces [N, world frame] at points [m, segment frame] of segments; :meth:`add_to` adds their forces and
    torques about the segment centres to a step's external loads."""

    def __init__(self, n_segments: int):
        self.n_segments = int(n_segments)
        self.clear()

    def clear(self) -> None:
        self.segments = np.zeros(0, np.int64)
        self.local_points = np.zeros((0, 3))
        self.forces = np.zeros((0, 3))

    def add(self, segment, local_point, force) -> None:
        """Apply ``force`` [N, world frame] at ``local_point`` [m, segment frame] of ``segment`` every step."""
        n = self.n_segments
        if isinstance(segment, (bool, np.bool_)) or int(segment) != segment or not 0 <= segment < n:
            raise ValueError(f"segment {segment!r} is not a segment index (0…{n - 1})")
        s = int(segment)
        p = np.asarray(local_point, dtype=float).reshape(3)
        f = np.asarray(force, dtype=float).reshape(3)
        if not (np.all(np.isfinite(p)) and np.all(np.isfinite(f))):
            raise ValueError(f"point load on segment {s}: point and force must be finite")
        self.segments = np.append(self.segments, s)
        self.local_points = np.vstack((self.local_points, p))
        self.forces = np.vstack((self.forces, f))

    def add_to(self, orientations: np.ndarray, forces: np.ndarray, torques: np.ndarray) -> None:
        """Add the loads' forces [N] and torques about the segment centres [N·m] (world frame) at ``orientations``
        into ``forces`` and ``torques`` (n, 3)."""
        if self.segments.size:
            arm = quat.rotate(orientations[self.segments], self.local_points)
            np.add.at(forces, self.segments, self.forces)
            np.add.at(torques, self.segments, np.cross(arm, self.forces))
