"""Seamless loops: how long a tree warms up in a periodic wind, and the seam of the baked loop.

A damped tree driven by a wind of period T (``WindField(period=T)``) settles into a sway of period T: the
start-up transient is a free vibration, and damping makes it decay. The model's mass-proportional damping
(v' = −c v, c = the object's Damping [1/s]) makes every mode's amplitude fall at least as e^(−c t / 2); a damping
ratio ζ at a mode frequency f (the scene's Damping Ratio) as e^(−2π f ζ t) for that mode. Stiffer modes decay
faster still (the integrator's own damping), so the slowest rate bounds the warm-up: :func:`warmup_loops` takes
the whole loops that bring the transient under ``fraction`` of its size (0.1 % by default: at the default
Damping of 0.5/s, e^(−0.25 t) falls to 0.1 % in 27.6 s, 6 loops of 5 s). :class:`Warmup` stops earlier, at the
first loop that repeats itself (its seam under ``SETTLED_SEAM`` of a frame's motion): a stiff tree whose
integrator damps it more settles in one or two loops.

A loop bake keys frames start..start+N, frame start+N one period after frame start. :func:`close_seam` measures
the seam: the change from frame start+N to frame start (the rotation of each keyed segment, or a point's
displacement), rms over the segments, over the median of the same rms frame-to-frame change. Where the sway has
settled the ratio is small and the change is spread linearly over the loop (frame i moved by i/N of it), so frame
start+N equals frame start and the loop plays without a jump; the correction is measured and reported. Where it is
not (ratio above 1), the keys stay as simulated and the caller warns: the pre-roll was too short.

Only numpy and the solver's quaternions: tested without Blender.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..solver import quaternion as quat

SETTLED = 1e-3  # the transient's amplitude left after the longest warm-up, as a fraction of its start
SETTLED_SEAM = 0.1  # a warm-up loop whose seam is under this fraction of a frame's motion repeats itself
MOST_LOOPS = 200  # the automatic warm-up's cap, in loops


def decay_rate(damping: float, damping_ratio: tuple[float, float] | None = None) -> float:
    """The slowest decay rate [1/s] of a free vibration's amplitude: c/2 for mass-proportional damping c [1/s],
    2π f ζ for a damping ratio ζ at frequency f [Hz]."""
    if damping_ratio is not None:
        zeta, f = damping_ratio
        return 2.0 * math.pi * float(f) * float(zeta)
    return 0.5 * float(damping)


def warmup_loops(rate: float, period: float, fraction: float = SETTLED, owner: str = "the tree") -> int:
    """Whole loops of ``period`` [s] after which a transient decaying at ``rate`` [1/s] is below ``fraction``:
    ceil(ln(1/fraction) / (rate · period)), at least 1. ValueError when there is no damping to settle it."""
    if not rate > 0.0:
        raise ValueError(
            f"'{owner}' has no damping: its sway never settles into a loop. Set its Damping above 0, or turn "
            "Auto Pre-roll off and give the Pre-roll frames yourself"
        )
    loops = math.ceil(math.log(1.0 / fraction) / (rate * period) - 1e-9)
    return int(min(max(loops, 1), MOST_LOOPS))


@dataclass(frozen=True)
class Seam:
    """A loop's seam: ``ratio`` the change across it over the median frame-to-frame change; ``correction`` the
    largest change spread over the loop (rad for rotations, m for points; 0 when not blended); ``blended``."""

    ratio: float
    correction: float
    blended: bool


def _angles(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rotation angles [rad] between unit quaternions ``a`` and ``b`` (..., 4), either sign (atan2 of the relative
    rotation's parts: exact near 0, where arccos of the dot product loses half the digits)."""
    a, b = np.broadcast_arrays(a, b)
    r = quat.multiply_conjugate(a.reshape(-1, 4), b.reshape(-1, 4)).reshape(a.shape)
    return 2.0 * np.arctan2(np.linalg.norm(r[..., 1:], axis=-1), np.abs(r[..., 0]))


def _rms(x: np.ndarray) -> np.ndarray:
    return np.sqrt(np.mean(x * x, axis=-1)) if x.shape[-1] else np.zeros(x.shape[:-1])


def _ratio(seam: np.ndarray, steps: np.ndarray) -> float:
    """The rms seam change over the median rms frame-to-frame change (``seam`` (S,), ``steps`` (N, S)); inf when
    nothing moves but the seam."""
    scale = float(np.median(_rms(steps))) if steps.size else 0.0
    size = float(_rms(seam)) if seam.size else 0.0
    if scale > 0.0:
        return size / scale
    return 0.0 if size == 0.0 else math.inf


def rotation_seam(q: np.ndarray) -> float:
    """The seam ratio of orientations ``q`` (N + 1, S, 4), frame N one period after frame 0."""
    return _ratio(_angles(q[-1], q[0]), _angles(q[1:], q[:-1]))


def point_seam(x: np.ndarray) -> float:
    """The seam ratio of points ``x`` (N + 1, K, 3) [m] (NaN points, e.g. absent handles, left out)."""
    ok = np.all(np.isfinite(x), axis=(0, 2))
    x = x[:, ok]
    return _ratio(np.linalg.norm(x[-1] - x[0], axis=-1), np.linalg.norm(x[1:] - x[:-1], axis=-1))


class Warmup:
    """A loop's warm-up, loop by loop: :meth:`add` one sample (segment positions (S, 3) [m]) per simulated frame,
    from the first; True once the warm-up is over: the loop just finished repeats itself (its seam ratio at most
    ``SETTLED_SEAM``) and ``least`` loops are done, or ``most`` loops are done."""

    def __init__(self, frames: int, least: int, most: int):
        self.n, self.least, self.most = frames, least, max(least, most)
        self.samples: list[np.ndarray] = []
        self.loops = 0
        self.ratio = math.inf  # the last finished loop's seam

    def add(self, x: np.ndarray) -> bool:
        self.samples.append(np.asarray(x, dtype=float))
        if len(self.samples) <= self.n:
            return False
        self.loops += 1
        self.ratio = point_seam(np.array(self.samples))
        self.samples = self.samples[-1:]
        return self.loops >= self.most or (self.loops >= self.least and self.ratio <= SETTLED_SEAM)


def blend_rotations(q: np.ndarray) -> tuple[np.ndarray, float]:
    """``q`` (N + 1, S, 4) with the rotation δ = q_0 q_N⁻¹ spread over the frames (frame i turned by δ^(i/N)), so
    frame N equals frame 0; and the largest angle of δ [rad]."""
    n = q.shape[0] - 1
    last = np.where((np.sum(q[-1] * q[0], axis=-1) < 0.0)[:, None], -q[-1], q[-1])
    delta = quat.multiply(q[0], quat.conjugate(last))  # turns frame N onto frame 0 in world axes
    delta *= np.where(delta[:, :1] < 0.0, -1.0, 1.0)  # the short way round
    half = np.arccos(np.clip(delta[:, 0], -1.0, 1.0))  # θ/2
    axis = delta[:, 1:] / np.maximum(np.sin(half), 1e-300)[:, None]
    s = (np.arange(n + 1) / n)[:, None]  # (N + 1, 1)
    part = np.concatenate((np.cos(s * half)[..., None], np.sin(s * half)[..., None] * axis[None]), axis=-1)
    out = quat.normalize(quat.multiply(part, q))
    out[0] = out[-1] = q[0]  # exactly, not to rounding
    return out, float(2.0 * half.max()) if half.size else 0.0


def blend_points(x: np.ndarray) -> tuple[np.ndarray, float]:
    """``x`` (N + 1, K, 3) with x_0 − x_N spread over the frames (frame i moved by i/N of it); the largest
    correction [m]."""
    n = x.shape[0] - 1
    gap = x[0] - x[-1]
    out = x + (np.arange(n + 1) / n)[:, None, None] * gap[None]
    out[-1] = x[0]
    finite = np.isfinite(gap).all(axis=-1)
    return out.astype(x.dtype), float(np.linalg.norm(gap[finite], axis=-1).max()) if finite.any() else 0.0


def close_seam(record, limit: float = 1.0) -> Seam:
    """Measure the seam of a loop :class:`addon.bake_record.BakeRecord` (frames start..end, end one period after
    start) and, where its ratio is at most ``limit``, blend it away in place (bones, leaves, curve points)."""
    if record.kind == "armature":
        ratio = rotation_seam(record.q_seg)
        if ratio > limit:
            return Seam(ratio, 0.0, False)
        record.q_seg, correction = blend_rotations(record.q_seg)
        if record.leaf_frames is not None:
            record.leaf_frames = blend_points(record.leaf_frames)[0]
        return Seam(ratio, correction, True)
    ratio = point_seam(record.co[1:])  # row 0: the rest points
    if ratio > limit:
        return Seam(ratio, 0.0, False)
    correction = 0.0
    for key in ("co", "handle_left", "handle_right"):
        arr = getattr(record, key)
        blended, c = blend_points(arr[1:])
        setattr(record, key, np.concatenate((arr[:1], blended)))
        correction = max(correction, c)
    return Seam(ratio, correction, True)
