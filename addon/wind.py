"""Scene wind for the solver: Blender's Wind and Turbulence force fields and the add-on's own storm.

Mapping (documented in the README):

* **Wind field** → :class:`solver.air.wind.WindField`: mean speed [m/s] = Strength × *Field Speed*
  (scene setting, m/s per unit of strength, default 1), direction = the field object's +Z axis,
  origin = its location; shape Plane → falloff measured along +Z from the field's plane, shape Point
  with falloff Sphere/Cone → spherical, Tube → cylindrical; Falloff Power, Min/Max Distance as set
  (Falloff Power 0 without Max Distance: factor 1 everywhere, no falloff computed);
  Noise n → gusts with intensity 0.1·n (std/mean); Seed → seed. Flow is ignored: our wind is
  always an air velocity, drag makes it a force.
* **Turbulence field** → spatially coherent turbulence with standard deviation Strength × *Field
  Speed* [m/s] and length scale Size, around the field's location with the same falloff.
* **Storm** (scene setting): calm → peak → calm over frames, gusts and turbulence as fractions of
  the mean speed, a power-law height profile (exponent 0.143, reference height 10 m above the scene
  floor z = 0).

Lengths (field positions, Min/Max Distance, Size) are in scene units and become metres with the scene's
Unit Scale (1 Blender unit = Unit Scale m); speeds are m/s whatever the unit scale.

Fields are read at every simulated frame when they are animated (strength, noise, transform), so
keyframed gusts and turning fields work in Simulate and Bake.

A loop bake (Bake > Loop) blows a wind that repeats with the loop's period (``WindField(period=T)``): the
fields as they are at the start frame, the storm at its peak speed with its gusts and turbulence. An
animated wind field cannot repeat and is refused by name.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..solver import AerodynamicDrag, WindField, WindSum
from ..solver import storm as storm_speed
from .frames import animated, unit_scale
from .settings import wind_spec
from .spec import StormSpec

GUST_PER_NOISE = 0.1  # gust intensity (std/mean) per unit of a Wind field's Noise
# Bake > Named Actions: steady gusty winds, the storm's direction, profile, turbulence length and seed with
# (speed [m/s] at 10 m, gust intensity, turbulence intensity); SCENE is the scene's own wind as set
NAMED_WINDS = {"CALM": (3.0, 0.35, 0.2), "BREEZE": (8.0, 0.3, 0.15), "STORM": (25.0, 0.25, 0.15)}


def _falloff(field, unit: float) -> dict:
    if field.falloff_power == 0.0 and not field.use_max_distance:
        # (1 + r − r_min)^0 = 1 everywhere: the same factor without a distance per segment and frame
        return dict(falloff="none")
    if field.shape == "PLANE":
        kind = "plane"
    elif field.falloff_type == "TUBE":
        kind = "tube"
    else:
        kind = "sphere"  # Sphere, and Cone approximated by a sphere
    return dict(
        falloff=kind,
        falloff_power=float(field.falloff_power),
        min_distance=unit * float(field.distance_min) if field.use_min_distance else 0.0,
        max_distance=unit * float(field.distance_max) if field.use_max_distance else math.inf,
    )


def _frame_of(obj, unit: float):
    m = np.array(obj.matrix_world)
    z = m[:3, 2]
    n = np.linalg.norm(z)
    if not n > 0:
        raise ValueError(f"Force field '{obj.name}' has a zero scale: its direction (+Z) is undefined")
    return unit * m[:3, 3], z / n


class SceneWind:
    """The wind of a scene as one solver wind (``velocity(points, t)``), refreshed frame by frame."""

    def __init__(  # noqa: PLR0913 (the wind's parts, as from_scene reads them)
        self, scene, field_objects, storm: bool, period: float | None = None, steady: bool = False, preset=None
    ):
        self.scene = scene  # its wind settings are read again at every frame (Field Speed may change live)
        self.field_objects = field_objects
        self.use_storm = storm
        self.animated = any(animated(o, paths=("",)) for o in field_objects)  # strength, noise, … and transform
        self.unit = unit_scale(scene)  # metres per Blender unit
        self.fields: list[WindField | None] = [None] * len(field_objects)
        self.storm = None
        self.wind = WindSum([])
        self.fps = scene.render.fps / scene.render.fps_base
        self.period = period  # [s] of a loop bake's wind, or None
        self.steady = steady  # the start frame's fields and the storm's peak (a loop's or a named action's wind)
        self.preset = preset  # (speed, gusts, turbulence) of a named action's wind, or None
        if self.steady:
            moving = [o.name for o in field_objects if animated(o, paths=("",))]
            if moving:
                raise ValueError(
                    f"Loop: the wind field '{moving[0]}' is animated, and a loop needs a wind that repeats: "
                    "remove its animation or turn Loop off"
                )

    @classmethod
    def from_scene(cls, scene, loop: bool = False, periodic: bool = True, preset: str | None = None):
        """The scene's wind, or None when there is none (no drag is added then). ``loop``: a loop bake's wind,
        repeating with the Loop Length's period (``periodic`` False: the same steady wind, not repeating).
        ``preset``: a named action's wind (a key of ``NAMED_WINDS``: the storm's shape at its speed, no force
        fields; "SCENE" or None: the scene's own)."""
        ws = wind_spec(scene)
        if preset in NAMED_WINDS:
            period = ws.period if loop and periodic else None
            return cls(scene, [], True, period, steady=True, preset=NAMED_WINDS[preset])
        objs = []
        if ws.use_force_fields:
            objs = [
                o
                for o in scene.objects
                if o.field is not None
                and o.field.type in {"WIND", "TURBULENCE"}
                and not o.hide_viewport
                and o.field.strength != 0.0
            ]
        if not objs and not ws.use_storm:
            return None
        return cls(scene, objs, ws.use_storm, ws.period if loop and periodic else None, steady=loop)

    def read(self, scene, frame: int, t: float, first: bool = False) -> None:
        """Parameters at ``frame`` (the scene is evaluated at that frame), simulation time ``t`` [s]."""
        ws = wind_spec(self.scene)
        scale, unit = ws.field_speed_scale, self.unit
        if first:
            self.start_frame, self.start_t = frame, t
        elif self.steady:
            return  # a loop's wind is the start frame's, repeating
        for i, obj in enumerate(self.field_objects):
            f = obj.field
            origin, direction = _frame_of(obj, unit)
            if f.type == "WIND":
                params = dict(
                    speed=f.strength * scale,
                    direction=direction,
                    origin=origin,
                    gust_intensity=GUST_PER_NOISE * f.noise,
                    seed=int(f.seed),
                    period=self.period,
                    **_falloff(f, unit),
                )
            else:
                params = dict(
                    speed=0.0,
                    direction=direction,
                    origin=origin,
                    turbulence_speed=abs(f.strength) * scale,
                    turbulence_length=max(unit * float(f.size), 1e-3),
                    seed=int(f.seed),
                    period=self.period,
                    **_falloff(f, unit),
                )
            self.fields[i] = WindField(**params)
        if self.use_storm and (first or self.storm is None):
            self.storm = self._storm(ws.storm)
        self.wind.winds[:] = [w for w in self.fields + [self.storm] if w is not None]

    def _storm(self, ss: StormSpec):
        sec = lambda frame: self.start_t + (frame - self.start_frame) / self.fps  # noqa: E731
        a = math.radians(ss.direction)
        frames = ss.frames
        if not all(x <= y for x, y in itertools.pairwise(frames)):
            raise ValueError("Storm frames must be in order: start ≤ peak start ≤ peak end ≤ end")
        t0, t1, t2, t3 = (sec(f) for f in frames)
        peak, gusts, turbulence = self.preset or (ss.peak_speed, ss.gusts, ss.turbulence)
        return WindField(  # a loop blows the peak, repeating
            speed=peak if self.steady else lambda t: storm_speed(t, t0, t1, t2, t3, peak),
            direction=(math.cos(a), math.sin(a), 0.0),
            profile="power",
            reference_height=10.0,
            ground_height=0.0,
            gust_intensity=gusts,
            turbulence_intensity=turbulence,
            turbulence_length=ss.turbulence_length,
            seed=ss.seed,
            period=self.period,
        )

    def drag(self, model, drag_coefficient: float = 1.2):
        """The aerodynamic force field on ``model`` for :attr:`Simulator.force_fields`."""
        return AerodynamicDrag(model, self.wind, cd_branch=drag_coefficient)
