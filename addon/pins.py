"""Which segments are kinematic, and the poses that drive them, read from the carrier and pin objects given.

Root clamps (anchor segments of ``Pinned Root``) ride on the *carrier*: the tree's armature, or a plain curve's
own object. When it can move (keys or drivers of its transform, NLA tracks or constraints, on it or a parent:
:func:`addon.frames.animated`) its world matrix M is read at every simulated frame and the clamps follow its
motion since the model was read, ``x(t) = M(t) M(t_read)⁻¹ x(rest)`` (a carrier that changes its scale, or
mirrors or shears, is refused). A *pin object* (the object setting ``Pin To``) holds the segment nearest to its
origin, and every Hook modifier of a plain curve holds the segment nearest to its hooked control points: these
segments follow their object's world transform, ``x(t) = M(t) M(t₀)⁻¹ x(rest)`` with t₀ the start frame. Both
are interpolated linearly across a frame's substeps. The numbers are :mod:`addon.kinematics`'.
"""

from __future__ import annotations

import numpy as np

from ..solver import nearest_segments
from . import kinematics
from .frames import FramePoses, animated, metric
from .reader import hook_targets


class PinSet:
    """The pins of one model ``model`` read from ``src`` (reader.TreeSource): its carrier and, on a plain curve,
    the hooks; ``pins`` (Pin To object or None, Pin Joint, Pin Axis: settings.pin_settings, which may be set
    again before a start); ``unit`` metres per Blender unit."""

    def __init__(self, model, src, pins: tuple, unit: float):
        self.base = model
        self.src, self.unit = src, unit
        self.pin_object, self.pin_joint, self.pin_axis = pins
        self.carrier = src.armature or src.curve
        self.carrier_rest = metric(self.carrier.matrix_world, unit)  # where the model was read
        self._choose()

    def _targets(self):
        """(object, world point [m]) of every pin: the pin object's origin, each hook's first hooked point."""
        out = []
        if self.pin_object is not None:
            out.append((self.pin_object, metric(self.pin_object.matrix_world, self.unit)[:3, 3]))
        if self.src.armature is None:
            out += hook_targets(self.src.curve, self.unit)
        return out

    def _choose(self) -> None:
        """Pin the segments nearest to the targets where they are now (the scene is at the start frame)."""
        m = self.base
        targets = self._targets()
        segs = [int(nearest_segments(p[None], m.positions, m.orientations, m.lengths)[0]) for _, p in targets]
        pinned = m.pinned.copy()
        pinned[segs] = True
        self.model = kinematics.pin_joints(m, pinned, segs, self.pin_joint, self.pin_axis) if segs else m
        self.objects = [o for o, _ in targets]
        self.segments = np.array(segs, dtype=np.int64)
        order = np.flatnonzero(pinned)  # the simulator's kinematic order
        self._slot = np.searchsorted(order, self.segments)
        self.rest_x = self.model.positions[order].copy()
        self.rest_q = self.model.orientations[order].copy()
        self.driven = bool(segs)
        self.carried = animated(self.carrier)
        # the carrier's motion since carrier_rest: (translation (3,) [m], unit quaternion (4,)); None: none
        self.carrier_motion: tuple[np.ndarray, np.ndarray] | None = None
        self._m0 = [metric(o.matrix_world, self.unit) for o in self.objects]
        self._frames = FramePoses(*self._current_poses())

    def _current_poses(self) -> tuple[np.ndarray, np.ndarray]:
        now = [metric(o.matrix_world, self.unit) for o in self.objects]
        return kinematics.kinematic_poses(self.rest_x, self.rest_q, self.carrier_motion, self._slot, now, self._m0)

    def read(self, t: float, first: bool = False) -> None:
        """Take the carrier's and the pin objects' poses of the frame at time ``t`` [s] (the scene is at that
        frame). ``first``: the simulation starts here, so the pins' poses now are the ones that hold the rest
        shape."""
        if first:
            self._choose()
        if self.carried:
            now = metric(self.carrier.matrix_world, self.unit)
            self.carrier_motion = kinematics.carrier_motion(now, self.carrier_rest, self.carrier.name)
        self._frames.read(t, *self._current_poses(), first=first)

    def driver(self, t: float):
        return self._frames.at(t)
