"""Pins and the carrier, as numbers (no bpy): the joints of a pinned segment, and the kinematic poses that follow
the carrier and the pin objects.

A *carrier* (a tree's armature, a plain curve's own object) moves the rods' root clamps by its motion since the
model was read, ``x(t) = M(t) M(t_read)⁻¹ x(rest)``; a *pin object* (Pin To, a curve's Hook modifier) moves its
segment by ``x(t) = M(t) M(t₀)⁻¹ x(rest)``. M are 4×4 world matrices in metres (:func:`addon.frames.metric`).
"""

from __future__ import annotations

import numpy as np

from ..solver import JOINT_KINDS
from ..solver import quaternion as quat
from .frames import rigid, rotation

WORLD_AXES = {"ROD": None, "X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}
PIN_HINGE_TOLERANCE = np.radians(5.0)  # a Pin Joint hinge's world axis to the held rod's nearest section axis
CARRIER_TOLERANCE = 1e-5  # on |MᵀM − I| of the carrier's motion (float32 matrices of a turning carrier: < 1e-6)


def pin_joints(model, pinned, segs, kind: str = "CLAMP", axis: str = "ROD"):
    """``model`` with the segments ``segs`` pinned (by Pin To and hooks) and their joints to free neighbours of
    the kind ``kind`` (a Pin Joint identifier, "CLAMP", "BALL", …) about the world ``axis`` (a Pin Axis
    identifier); the rest Darboux vectors kept (a Straight rest shape stays straight)."""
    changes: dict = {"pinned": pinned}
    if kind != "CLAMP":
        arrays = model.input_joint_arrays()
        jp, jc = arrays["joint_parent"], arrays["joint_child"]
        held = np.zeros(model.n_segments, bool)
        held[segs] = True
        at = np.flatnonzero((held[jp] & ~pinned[jc]) | (held[jc] & ~pinned[jp]))
        kinds = np.array(arrays.get("joint_kind", np.zeros(jp.size, np.int64)))
        axes = np.array(arrays.get("joint_axis", np.tile([0.0, 0.0, 1.0], (jp.size, 1))))
        kinds[at] = JOINT_KINDS.index(kind.lower())
        world = WORLD_AXES[axis]
        for j in at:
            axes[j] = pin_axis(kind, world, model.orientations[jp[j]], model.orientations[jc[j]])
        changes.update(joint_kind=kinds, joint_axis=axes)
    new = model.copy_with(**changes)
    same = new.n_joints == model.n_joints and np.array_equal(new.joint_input_index, model.joint_input_index)
    return new.with_rest_darboux(model.rest_darboux) if same else new


def pin_axis(kind: str, world, parent_q, child_q) -> np.ndarray:
    """``joint_axis`` of a pin joint: a rail's world direction in the parent's frame; a hinge's section axis of
    the child within PIN_HINGE_TOLERANCE of the world axis (else ValueError); along the rod when ``world`` is
    None."""
    if world is None or kind not in ("RAIL", "HINGE"):
        return np.array([0.0, 0.0, 1.0])
    if kind == "RAIL":
        return quat.rotate_inverse(parent_q, np.asarray(world, float))
    local = quat.rotate_inverse(child_q, np.asarray(world, float))
    i = int(np.argmax(np.abs(local)))
    angle = float(np.arccos(min(1.0, abs(local[i]))))
    if angle > PIN_HINGE_TOLERANCE:
        raise ValueError(
            f"Pin Joint 'Hinge': the world axis is {np.degrees(angle):.0f}° from every section axis of the rod "
            "where it is held; choose the axis nearer the rod's own frame, Along Rod, or a Ball joint"
        )
    out = np.zeros(3)
    out[i] = 1.0
    return out


def carrier_motion(now: np.ndarray, rest: np.ndarray, name: str):
    """The carrier's motion from its world matrix ``rest`` (where the model was read) to ``now`` (4×4 [m]):
    (translation (3,) [m], unit quaternion (4,)), None when ``now`` is exactly ``rest``. ValueError when the
    motion is no rotation and translation (the carrier ``name`` scales, mirrors or shears)."""
    if np.array_equal(now, rest):
        return None  # the exact rest arrays: a carrier back at rest changes nothing
    rel = now @ np.linalg.inv(rest)
    a = rel[:3, :3]
    if np.abs(a.T @ a - np.eye(3)).max() > CARRIER_TOLERANCE or np.linalg.det(a) < 0.0:
        raise ValueError(
            f"'{name}' changes its scale (or mirrors or shears) during the simulation: Stiff Rods "
            "follows a carrier that moves and turns; keep its scale constant"
        )
    return rigid(rel)


def kinematic_poses(rest_x, rest_q, motion, slots, pin_now, pin_start) -> tuple[np.ndarray, np.ndarray]:
    """Poses (positions (k, 3) [m], quaternions (k, 4)) of the kinematic segments, rest at ``rest_x``,
    ``rest_q``: all moved by the carrier's ``motion`` (:func:`carrier_motion`), then the segment
    ``slots[i]`` of pin i moved instead by its object's motion from ``pin_start[i]`` to ``pin_now[i]`` (4×4)."""
    x, q = rest_x.copy(), rest_q.copy()
    if motion is not None:
        t, r = motion
        r = np.broadcast_to(r, q.shape)
        x, q = quat.rotate(r, x) + t, quat.multiply(r, q)
    for slot, now, m0 in zip(slots, pin_now, pin_start, strict=True):
        rel = now @ np.linalg.inv(m0)
        x[slot] = rel[:3, :3] @ rest_x[slot] + rel[:3, 3]
        r = quat.from_matrix(rotation(rel)[None])[0]
        q[slot] = quat.multiply(r[None], rest_q[slot][None])[0]
    return x, q


def seen_from_carrier(x: np.ndarray, q: np.ndarray, motion) -> tuple[np.ndarray, np.ndarray]:
    """Positions (n, 3) [m] and orientations (n, 4) moved back by the carrier's ``motion`` (None: ``x``, ``q``
    themselves), so what rides on the carrier takes them in its frame as it was read."""
    if motion is None:
        return x, q
    t, r = motion
    r = np.broadcast_to(r, q.shape)
    return quat.rotate_inverse(r, x - t), quat.multiply_conjugate(r, q)
