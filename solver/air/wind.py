"""Wind: air velocity fields u(x, t) [m/s] that :mod:`solver.air.drag` turns into forces on segments.

A *wind* is any object with ``velocity(points (k, 3) [m], t [s]) -> (k, 3) [m/s]``. This module has
:class:`WindField` (mean wind × height profile × gusts + coherent turbulence, with Blender-style
falloff), :class:`WindSum` (superposition) and :func:`storm` (a calm → storm → calm speed curve).

Everything random is drawn once from the seed when the field is built (random Fourier modes), so a
field is a deterministic function of (x, t): the same seed gives the same wind in every run, in any
call order, and evaluation is a few matrix products over all points at once.

* Mean wind: ``speed(t)`` [m/s] at the reference height along the unit ``direction(t)``; both may be
  constants or callables of t.
* Height profile (z is world up, measured from ``ground_height``): ``"uniform"`` 1; ``"power"``
  (z / z_ref)^α (α = 0.143 ≈ 1/7, open terrain); ``"log"`` ln(z / z0) / ln(z_ref / z0) with roughness
  length z0 (0 below z0). It scales the whole local velocity, turbulence included, so the turbulence
  intensity σ/U is the same at every height and the air is still at the ground.
* Gusts: the speed is multiplied by ``max(0, 1 + I_g g(t))``, g a unit-variance sum of 16 cosines with
  frequencies log-uniform in [¼, 4] × ``gust_frequency`` [Hz] and random phases; uniform in space.
* Turbulence: u'(x, t) = σ Σ_k a e_k cos(k·(x − D(t)) − ω_k t + φ_k) with wavevectors k ~ N(0, I/L²),
  unit e_k ⊥ k (divergence-free modes), a = √(6/N): each component has unit variance on average and
  the correlation E[u'(x)·u'(x+r)] / E[|u'|²] = exp(−|r|²/(2L²)), L = ``turbulence_length`` [m]:
  branches closer than L move together, branches several L apart independently. The pattern is
  carried by the mean wind (Taylor's frozen turbulence: D(t) = ∫₀ᵗ speed·direction ds) and its eddies
  also evolve in place at about the gust frequency (ω_k = 2π f_g × U(½, 3/2)), so turbulence without
  a mean wind still moves. σ = ``turbulence_intensity`` × |speed(t)| + ``turbulence_speed`` [m/s].
* Falloff, as Blender's force fields (``effector_falloff``): distance r from ``origin`` — ``"sphere"``
  |x − o|, ``"tube"`` the distance from the line through o along the direction, ``"plane"`` the
  distance |(x − o)·d| from the plane through o normal to the direction — and factor 0 beyond
  ``max_distance``, 1 inside ``min_distance``, else (1 + r − r_min)^(−``falloff_power``). ``"none"``: 1.
* Periodic wind (``period`` T [s], for seamless loops): every frequency is a harmonic of 1/T, so
  u(x, t + T) = u(x, t), and the field is still one function of (x, t) (trees in a forest sway
  coherently). It needs a constant mean speed and direction. Gusts are a sum of the harmonics n/T over the
  band [¼, 4] × ``gust_frequency``, each with the free field's variance on its log-width (the first harmonic
  also carries the slower part), so their intensity over one period is ``gust_intensity``.
  Each turbulence mode keeps its wavevector k (the spatial correlation is unchanged); its eddy frequency
  ω_k is shifted so that its whole temporal frequency U k·d + ω_k, frozen advection included, is the
  nearest multiple of 2π/T (a shift of at most π/T; modes that round to 0 stand still).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

PROFILES = ("uniform", "power", "log")
FALLOFFS = ("none", "sphere", "tube", "plane")
GUST_MODES = 16
ADVECTION_STEP = 0.05  # s: grid of the advection integral D(t) when speed or direction vary in time


def _finite_positive(name: str, value, allow_zero: bool = False) -> float:
    value = float(value)
    ok = np.isfinite(value) and (value >= 0.0 if allow_zero else value > 0.0)
    if not ok:
        raise ValueError(f"{name} must be a finite number {'≥' if allow_zero else '>'} 0, got {value}")
    return value


def _unit(name: str, v) -> np.ndarray:
    d = np.asarray(v, dtype=float).reshape(-1)
    if d.shape != (3,) or not np.all(np.isfinite(d)):
        raise ValueError(f"{name} must be a finite 3-vector, got {v!r}")
    n = float(np.linalg.norm(d))
    if not n > 0.0:
        raise ValueError(f"{name} must not be the zero vector")
    return d / n


def as_points(points) -> np.ndarray:
    """``points`` as a finite (k, 3) float array; ValueError naming the first bad row."""
    p = np.asarray(points, dtype=float)
    if p.ndim != 2 or p.shape[1] != 3:
        raise ValueError(f"points: expected shape (k, 3), got {p.shape}")
    bad = np.flatnonzero(~np.all(np.isfinite(p), axis=1))
    if bad.size:
        raise ValueError(f"points[{int(bad[0])}] is not finite (NaN or inf)")
    return p


def storm(t, start: float, peak_start: float, peak_end: float, end: float, peak_speed: float):
    """Wind speed [m/s] of a storm: 0 before ``start``, a smooth (C¹, 3s² − 2s³) rise to ``peak_speed``
    at ``peak_start``, held until ``peak_end``, a smooth fall to 0 at ``end`` [s]. Works on arrays of t."""
    times = [float(x) for x in (start, peak_start, peak_end, end)]
    if not all(np.isfinite(times)):
        raise ValueError(f"storm times must be finite, got {times}")
    if not (times[0] <= times[1] <= times[2] <= times[3]):
        raise ValueError(f"storm times must be ordered start ≤ peak_start ≤ peak_end ≤ end, got {times}")
    peak_speed = float(peak_speed)
    if not np.isfinite(peak_speed):
        raise ValueError(f"peak_speed must be finite, got {peak_speed}")
    t = np.asarray(t, dtype=float)

    def ramp(a, b):  # 0 before a, 1 after b
        if b <= a:
            return (t >= a).astype(float)
        s = np.clip((t - a) / (b - a), 0.0, 1.0)
        return s * s * (3.0 - 2.0 * s)

    v = peak_speed * (ramp(times[0], times[1]) - ramp(times[2], times[3]))
    return float(v) if v.ndim == 0 else v


class WindField:
    """A wind: mean speed and direction (constants or callables of t), height profile, gusts, coherent
    turbulence and falloff (see the module docstring for the formulas). Units: m, s, m/s, Hz.

    ``turbulence_speed`` [m/s] is an absolute turbulence standard deviation added to
    ``turbulence_intensity`` × mean speed (a Blender Turbulence field has turbulence but no mean wind).
    ``modes``: number of turbulence Fourier modes (more: closer to the ideal correlation, slower).
    ``period`` [s]: a wind that repeats with this period (seamless loops), or None.
    """

    def __init__(  # noqa: PLR0913 (the public keyword options of a wind, each checked by a _set_* method)
        self,
        speed: float | Callable[[float], float] = 0.0,
        direction: Sequence[float] | Callable[[float], Sequence[float]] = (1.0, 0.0, 0.0),
        *,
        profile: str = "uniform",
        reference_height: float = 10.0,
        ground_height: float = 0.0,
        power_exponent: float = 0.143,
        roughness_length: float = 0.1,
        gust_intensity: float = 0.0,
        gust_frequency: float = 0.2,
        turbulence_intensity: float = 0.0,
        turbulence_length: float = 5.0,
        turbulence_speed: float = 0.0,
        seed: int = 0,
        origin=(0.0, 0.0, 0.0),
        falloff: str = "none",
        falloff_power: float = 0.0,
        min_distance: float = 0.0,
        max_distance: float = math.inf,
        modes: int = 64,
        period: float | None = None,
    ):
        self._set_mean(speed, direction)
        self._set_profile(profile, reference_height, ground_height, power_exponent, roughness_length)
        self._set_fluctuations(
            gust_intensity, gust_frequency, turbulence_intensity, turbulence_speed, turbulence_length, seed
        )
        self._set_falloff(origin, falloff, falloff_power, min_distance, max_distance)
        if int(modes) != modes or modes < 1:
            raise ValueError(f"modes must be an integer ≥ 1, got {modes!r}")
        self._draw_modes(int(modes))
        self.period = None if period is None else _finite_positive("period", period)
        if self.period is not None:
            self._make_periodic(self.period)

    def _set_mean(self, speed, direction) -> None:
        """The mean speed [m/s] and direction: each a callable of time or a constant (one of the two is None)."""
        self._speed: Callable[[float], float] | None
        self._speed_const: float | None
        self._direction: Callable[[float], Sequence[float]] | None
        self._direction_const: np.ndarray | None
        if callable(speed):
            self._speed, self._speed_const = speed, None
        else:
            s = float(speed)
            if not np.isfinite(s):
                raise ValueError(f"speed must be finite (m/s) or a callable t -> m/s, got {speed!r}")
            self._speed, self._speed_const = None, s
        if callable(direction):
            self._direction, self._direction_const = direction, None
        else:
            self._direction, self._direction_const = None, _unit("direction", direction)

    def _set_profile(self, profile, reference_height, ground_height, power_exponent, roughness_length) -> None:
        if profile not in PROFILES:
            raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
        self.profile = profile
        self.reference_height = _finite_positive("reference_height", reference_height)
        self.ground_height = float(ground_height)
        if not np.isfinite(self.ground_height):
            raise ValueError(f"ground_height must be finite, got {ground_height}")
        self.power_exponent = _finite_positive("power_exponent", power_exponent, allow_zero=True)
        self.roughness_length = _finite_positive("roughness_length", roughness_length)
        if profile == "log" and not self.roughness_length < self.reference_height:
            raise ValueError(
                f"roughness_length ({self.roughness_length} m) must be below reference_height "
                f"({self.reference_height} m) for the log profile"
            )

    def _set_fluctuations(
        self, gust_intensity, gust_frequency, turbulence_intensity, turbulence_speed, turbulence_length, seed
    ) -> None:
        self.gust_intensity = _finite_positive("gust_intensity", gust_intensity, allow_zero=True)
        self.gust_frequency = _finite_positive("gust_frequency", gust_frequency)
        self.turbulence_intensity = _finite_positive("turbulence_intensity", turbulence_intensity, allow_zero=True)
        self.turbulence_speed = _finite_positive("turbulence_speed", turbulence_speed, allow_zero=True)
        self.turbulence_length = _finite_positive("turbulence_length", turbulence_length)
        if isinstance(seed, (bool, np.bool_)) or int(seed) != seed or seed < 0:
            raise ValueError(f"seed must be an integer ≥ 0, got {seed!r}")
        self.seed = int(seed)

    def _set_falloff(self, origin, falloff, falloff_power, min_distance, max_distance) -> None:
        self.origin = np.asarray(origin, dtype=float).reshape(-1)
        if self.origin.shape != (3,) or not np.all(np.isfinite(self.origin)):
            raise ValueError(f"origin must be a finite 3-vector in m, got {origin!r}")
        if falloff not in FALLOFFS:
            raise ValueError(f"falloff must be one of {FALLOFFS}, got {falloff!r}")
        self.falloff = falloff
        self.falloff_power = _finite_positive("falloff_power", falloff_power, allow_zero=True)
        self.min_distance = _finite_positive("min_distance", min_distance, allow_zero=True)
        self.max_distance = float(max_distance)
        if not self.max_distance > self.min_distance:
            raise ValueError(f"max_distance ({max_distance} m) must exceed min_distance ({min_distance} m)")

    def _draw_modes(self, n: int) -> None:
        """Random modes, drawn once; gusts and turbulence from independent streams of the seed."""
        rng_g = np.random.default_rng([self.seed, 0])
        self._gust_freq = self.gust_frequency * np.exp(rng_g.uniform(np.log(0.25), np.log(4.0), GUST_MODES))
        self._gust_phase = rng_g.uniform(0.0, 2.0 * np.pi, GUST_MODES)
        self._gust_amp = np.full(GUST_MODES, math.sqrt(2.0 / GUST_MODES))
        rng_t = np.random.default_rng([self.seed, 1])
        k = rng_t.normal(size=(n, 3)) / self.turbulence_length  # 1/m
        e = np.cross(k, rng_t.normal(size=(n, 3)))
        e /= np.linalg.norm(e, axis=1, keepdims=True)
        self._k = k
        self._amp_dir = math.sqrt(6.0 / n) * e  # a e_k, (n, 3)
        self._omega = 2.0 * np.pi * self.gust_frequency * rng_t.uniform(0.5, 1.5, n)
        self._phase = rng_t.uniform(0.0, 2.0 * np.pi, n)
        # D at t = 0, ±h, ±2h, … (cached; only for a time-varying mean wind)
        self._adv_grid = {1.0: np.zeros((1, 3)), -1.0: np.zeros((1, 3))}

    def _make_periodic(self, period: float) -> None:
        """Every frequency a harmonic of 1/``period`` [s] (see the module docstring)."""
        if self._speed_const is None or self._direction_const is None:
            raise ValueError("a periodic wind needs a constant speed and direction (not callables of t)")
        f = 1.0 / period
        self._periodic_gusts(period)
        advect = self._speed_const * (self._k @ self._direction_const)  # rad/s of the frozen advection
        harmonic = 2.0 * np.pi * f * np.round((advect + self._omega) / (2.0 * np.pi * f))
        self._omega = harmonic - advect

    def _periodic_gusts(self, period: float) -> None:
        """Gusts on the harmonics n/T of the band [¼, 4] × gust_frequency: each harmonic carries the free field's
        variance on its log-width [n − ½, n + ½] (the first also what lies below it), random phases."""
        lo, hi = 0.25 * self.gust_frequency * period, 4.0 * self.gust_frequency * period  # in harmonics
        n = np.arange(1, max(1, round(hi)) + 1, dtype=float)
        bottom = np.where(n == 1.0, min(lo, 0.5), np.maximum(n - 0.5, lo))
        width = np.log(np.maximum(np.minimum(n + 0.5, max(hi, 1.5)), bottom) / bottom)
        keep = width > 0.0
        self._gust_freq = n[keep] / period
        self._gust_amp = np.sqrt(2.0 * width[keep] / width[keep].sum())  # variance Σ a²/2 = 1
        self._gust_phase = np.random.default_rng([self.seed, 2]).uniform(0.0, 2.0 * np.pi, int(keep.sum()))

    # ------------------------------------------------------------------ time functions
    def mean_speed(self, t: float) -> float:
        """Mean wind speed [m/s] at the reference height at time t [s] (before gusts)."""
        if self._speed_const is not None:
            return self._speed_const
        assert self._speed is not None  # __init__ sets one of the two
        s = float(self._speed(t))
        if not np.isfinite(s):
            raise ValueError(f"speed({t}) returned {s}: the wind speed must be finite (m/s)")
        return s

    def direction_at(self, t: float) -> np.ndarray:
        """Unit wind direction at time t [s]."""
        if self._direction_const is not None:
            return self._direction_const
        assert self._direction is not None  # __init__ sets one of the two
        return _unit(f"direction({t})", self._direction(t))

    def gust_factor(self, t: float) -> float:
        """``max(0, 1 + I_g g(t))``: the gust multiplier of the mean speed (1 without gusts)."""
        if self.gust_intensity == 0.0:
            return 1.0
        g = float(self._gust_amp @ np.cos(2.0 * np.pi * self._gust_freq * t + self._gust_phase))
        return max(0.0, 1.0 + self.gust_intensity * float(g))

    def advection(self, t: float) -> np.ndarray:
        """D(t) = ∫₀ᵗ speed(s) direction(s) ds [m]: how far the mean wind has carried the turbulence."""
        if self._speed_const is not None and self._direction_const is not None:
            return self._speed_const * t * self._direction_const
        h = ADVECTION_STEP
        sign = 1.0 if t >= 0.0 else -1.0
        # trapezoid on a fixed grid (cached, extended on demand): the same D(t) whatever the call order
        need = int(math.floor(abs(t) / h)) + 1
        grid = self._adv_grid[sign]
        if grid.shape[0] <= need:
            ts = sign * h * np.arange(grid.shape[0] - 1, need + 1)
            u = np.array([self.mean_speed(s) * self.direction_at(s) for s in ts])
            steps = np.cumsum(0.5 * sign * h * (u[1:] + u[:-1]), axis=0)
            grid = self._adv_grid[sign] = np.vstack((grid, grid[-1] + steps))
        i = int(math.floor(abs(t) / h))
        frac = abs(t) / h - i
        return grid[i] + frac * (grid[i + 1] - grid[i])

    # ------------------------------------------------------------------ space functions
    def profile_factor(self, z) -> np.ndarray:
        """Height profile factor at world heights ``z`` [m] (1 at the reference height)."""
        z = np.asarray(z, dtype=float) - self.ground_height
        if self.profile == "uniform":
            return np.ones_like(z)
        if self.profile == "power":
            return (np.maximum(z, 0.0) / self.reference_height) ** self.power_exponent
        z0 = self.roughness_length
        return np.log(np.maximum(z, z0) / z0) / math.log(self.reference_height / z0)

    def falloff_factor(self, points, t: float = 0.0) -> np.ndarray:
        """Blender force-field falloff at ``points`` (k, 3) [m]: 1 for ``falloff="none"``."""
        p = as_points(points)
        if self.falloff == "none":
            return np.ones(p.shape[0])
        rel = p - self.origin
        if self.falloff == "sphere":
            r = np.linalg.norm(rel, axis=1)
        else:
            d = self.direction_at(t)
            along = rel @ d
            r = np.abs(along) if self.falloff == "plane" else np.linalg.norm(rel - along[:, None] * d, axis=1)
        f = (1.0 + np.maximum(r - self.min_distance, 0.0)) ** (-self.falloff_power)
        return np.where(r > self.max_distance, 0.0, f)

    def turbulence(self, points, t: float) -> np.ndarray:
        """The unit-σ turbulent velocity pattern at ``points`` (k, 3) and time t (before σ, profile, falloff)."""
        p = as_points(points)
        phase = (p - self.advection(t)) @ self._k.T + (self._phase - self._omega * t)
        return np.cos(phase) @ self._amp_dir

    def velocity(self, points, t: float) -> np.ndarray:
        """Air velocity [m/s] at ``points`` (k, 3) [m] and time ``t`` [s], shape (k, 3)."""
        p = as_points(points)
        t = float(t)
        if not np.isfinite(t):
            raise ValueError(f"t must be finite (s), got {t}")
        speed = self.mean_speed(t)
        d = self.direction_at(t)
        scale = self.profile_factor(p[:, 2]) * self.falloff_factor(p, t)
        u = (speed * self.gust_factor(t)) * d[None, :]
        sigma = self.turbulence_intensity * abs(speed) + self.turbulence_speed
        if sigma > 0.0:
            u = u + sigma * self.turbulence(p, t)
        return scale[:, None] * u


class WindSum:
    """The sum of several winds (``winds``: a list, may be changed in place)."""

    def __init__(self, winds):
        self.winds = list(winds)
        for i, w in enumerate(self.winds):
            if not callable(getattr(w, "velocity", None)):
                raise ValueError(f"winds[{i}] has no velocity(points, t) method")

    def velocity(self, points, t: float) -> np.ndarray:
        p = as_points(points)
        u = np.zeros_like(p)
        for w in self.winds:
            u += w.velocity(p, t)
        return u
