"""Bone maps as numbers (no bpy): which segment drives each bone, and pose-bone rotations from segment motion."""

from __future__ import annotations

import numpy as np

from ..solver import quaternion as quat


def bone_segments(span_segment, bone_span) -> np.ndarray:
    """The segment (B,) of every bone: ``span_segment[branch][span]`` (tree_from_branches' map) of each bone's
    (branch, span) ``bone_span`` (B, 2)."""
    return np.array([span_segment[b][k] for b, k in bone_span], dtype=np.int64)


class BoneRotations:
    """Pose-bone rotations from the world orientations of the bones' segments.

    ``q_rest`` (B, 4): the segments' rest orientations; ``bone_rest`` (B, 4): each bone's rest frame
    (Bone.matrix_local); ``bone_parent`` (B,) indices or −1; ``armature_rotation`` (4,). A bone's pose
    rotation is the segment's rotation since rest, d = q q_rest⁻¹, taken into armature space
    (a⁻¹ d a), relative to its parent's (bones inherit their parent's motion), in the bone's rest frame
    (Q⁻¹ … Q). Multiplied out that is ``L (q_p⁻¹ q) R`` with constants per bone
    L = Q⁻¹ a⁻¹ q_rest,p and R = q_rest⁻¹ a Q (q_p, q_rest,p: the parent's segment; 1 for a root bone),
    so a call costs three quaternion products."""

    def __init__(self, q_rest, bone_rest, bone_parent, armature_rotation):
        q_rest = np.asarray(q_rest, dtype=float)
        self.parent = np.asarray(bone_parent, dtype=np.int64)
        self.root = self.parent < 0
        self._gather = np.maximum(self.parent, 0)
        qa = np.broadcast_to(np.asarray(armature_rotation, dtype=float), q_rest.shape)
        rest = np.asarray(bone_rest, dtype=float)
        q_rest_parent = q_rest[self._gather]
        q_rest_parent[self.root] = [1.0, 0.0, 0.0, 0.0]
        self._left = quat.multiply(quat.multiply(quat.conjugate(rest), quat.conjugate(qa)), q_rest_parent)
        self._right = quat.multiply(quat.multiply(quat.conjugate(q_rest), qa), rest)

    def __call__(self, q_now) -> np.ndarray:
        """Pose rotations (…, B, 4) for segment orientations ``q_now`` (…, B, 4); sign chosen for continuous
        keys (w ≥ 0)."""
        q_now = np.asarray(q_now, dtype=float)
        q_parent = q_now[..., self._gather, :].copy()
        q_parent[..., self.root, :] = [1.0, 0.0, 0.0, 0.0]
        left = np.broadcast_to(self._left, q_now.shape)
        right = np.broadcast_to(self._right, q_now.shape)
        local = quat.multiply(quat.multiply(left, quat.multiply_conjugate(q_parent, q_now)), right)
        np.negative(local, out=local, where=local[..., :1] < 0.0)
        return local


def rotation_matrices(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (n, 3, 3) of quaternions ``q`` (n, 4) (normalised here), as ``quat.to_matrix`` gives them,
    in elementwise products: the per-tick paths call it on thousands of rows, where to_matrix's (n, 16) @ (16, 10)
    product goes to a threaded BLAS that takes up to 10 ms on a loaded machine instead of 0.2."""
    q = np.asarray(q, dtype=float)
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    s = 2.0 / (w * w + x * x + y * y + z * z)
    xs, ys, zs = x * s, y * s, z * s
    xx, yy, zz, xy, xz, yz = x * xs, y * ys, z * zs, x * ys, x * zs, y * zs
    wx, wy, wz = w * xs, w * ys, w * zs
    out = np.empty((q.shape[0], 3, 3))
    out[:, 0, 0], out[:, 0, 1], out[:, 0, 2] = 1.0 - (yy + zz), xy - wz, xz + wy
    out[:, 1, 0], out[:, 1, 1], out[:, 1, 2] = xy + wz, 1.0 - (xx + zz), yz - wx
    out[:, 2, 0], out[:, 2, 1], out[:, 2, 2] = xz - wy, yz + wx, 1.0 - (xx + yy)
    return out


def local_quaternions(q_now, q_rest, bone_rest, bone_parent, armature_rotation) -> np.ndarray:
    """Pose-bone rotations (…, B, 4) of :class:`BoneRotations` in one call."""
    return BoneRotations(q_rest, bone_rest, bone_parent, armature_rotation)(q_now)
