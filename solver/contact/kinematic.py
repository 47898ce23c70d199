"""Material points nothing can move: pinned segments, and the joint points of free segments held by a pinned one (a
trunk's base on its anchor). A contact row between those and a collider, or between two pinned segments, has no
motion to solve for; a ground plane through a trunk's base would otherwise keep one unsolvable row every step."""

from __future__ import annotations

import numpy as np


class KinematicPoints:
    """The model's kinematic material points for contact detection: ``pinned`` (n,) segments and the held joint
    points (``held_segments``, their axis coordinates ``held_z`` [m], sorted by segment); ``radius`` (n,) [m] the
    segments' capsule radii (a row within a radius of a held point along the axis is at it)."""

    def __init__(self, model, radius: np.ndarray):
        parent, child, pinned = model.joint_parent, model.joint_child, model.pinned
        by_parent, by_child = pinned[parent] & ~pinned[child], pinned[child] & ~pinned[parent]
        seg = np.concatenate((child[by_parent], parent[by_child]))
        z = np.concatenate((model.joint_point_child[by_parent, 2], model.joint_point_parent[by_child, 2]))
        order = np.argsort(seg, kind="stable")
        self.pinned = pinned
        self.held_segments, self.held_z = seg[order], z[order]
        self.radius = radius

    def movable(self, sa: np.ndarray, sb: np.ndarray, za: np.ndarray) -> np.ndarray:
        """(k,) bool: rows (segment ``sa`` at axis coordinate ``za`` [m] against segment ``sb``, −1 a collider) that
        something can move."""
        pinned = self.pinned
        moves = ~pinned[sa] | ((sb >= 0) & ~pinned[np.maximum(sb, 0)])
        held_seg, held_z = self.held_segments, self.held_z
        if held_seg.size:
            collider = sb < 0
            for side in ("left", "right"):  # up to two held points per segment (both its ends)
                i = np.searchsorted(held_seg, sa, side=side) - (side == "right")
                i = np.clip(i, 0, held_seg.size - 1)
                held = (held_seg[i] == sa) & (np.abs(za - held_z[i]) <= self.radius[sa])
                moves &= ~(collider & held)
        return moves
