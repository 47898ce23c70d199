"""Poses read from Blender objects at the simulated frames: rotations out of world matrices, and the two
latest samples interpolated across a frame's substeps (pin objects, hooks, animated colliders, a moving
carrier); the scene's unit scale; whether an object can move during playback."""

from __future__ import annotations

import numpy as np

from ..solver import quaternion as quat


def unit_scale(scene) -> float:
    """Metres per Blender unit: the scene's Unit Scale (Scene > Units), or 1 with the unit system None
    (Blender then ignores the scale too)."""
    units = scene.unit_settings
    if units.system == "NONE":
        return 1.0
    scale = float(units.scale_length)
    if not (np.isfinite(scale) and scale > 0.0):
        raise ValueError(f"Scene '{scene.name}' has a Unit Scale of {scale}: give it a positive value")
    return scale


def metric(matrix, unit: float) -> np.ndarray:
    """A 4×4 world matrix as a map from object space to metres: ``S M`` with S = diag(unit, unit, unit, 1)
    (``unit``: metres per Blender unit, :func:`unit_scale`)."""
    m = np.array(matrix, dtype=float)
    if unit != 1.0:
        m[:3] *= unit
    return m


TRANSFORM_PATHS = ("location", "rotation_", "scale", "delta_")  # F-curve paths of an object's own transform


def action_fcurves(action) -> list:
    """The F-curves of ``action`` (None: none): ``Action.fcurves`` up to Blender 4.3, the channel bags of its
    layers' strips from 4.4."""
    if action is None:
        return []
    if hasattr(action, "fcurves"):
        return list(action.fcurves)
    return [fc for ly in action.layers for st in ly.strips for bag in st.channelbags for fc in bag.fcurves]


def animated(obj, paths: tuple[str, ...] = TRANSFORM_PATHS) -> bool:
    """True when ``obj``'s world matrix can change during playback: it or a parent has constraints or NLA tracks,
    or an F-curve or driver of its transform (``paths``; ``("",)``: any property), or of the bones of a parent
    armature it hangs on (parent type Bone). An empty action (Sapling gives its armature one) does not count."""
    child_on_bone = False
    while obj is not None:
        ad = obj.animation_data
        if len(obj.constraints) or (ad is not None and len(ad.nla_tracks)):
            return True
        if ad is not None:
            watched = paths + (("pose.bones",) if child_on_bone else ())
            if any(fc.data_path.startswith(watched) for fc in [*ad.drivers, *action_fcurves(ad.action)]):
                return True
        child_on_bone = obj.parent_type == "BONE"
        obj = obj.parent
    return False


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
