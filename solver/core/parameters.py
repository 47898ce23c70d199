"""The checks of the Simulator's parameters: each returns the value to keep or raises a ValueError naming it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def count(name: str, value, low: int) -> int:
    """``value`` as an int, or ValueError naming ``name`` unless it is an integer ≥ ``low``."""
    if int(value) != value or value < low:
        raise ValueError(f"{name} must be an integer ≥ {low}, got {value}")
    return int(value)


def finite_non_negative(name: str, value, unit: str = "") -> float:
    """``value`` as a float, or ValueError naming ``name`` (in ``unit``) unless it is finite and ≥ 0."""
    if not (np.isfinite(value) and value >= 0.0):
        raise ValueError(f"{name} must be finite and ≥ 0{unit}, got {value}")
    return float(value)


def solver_name(name: str, value) -> str:
    """``"kkt"`` (the direct solver) or ``"gs"`` (Gauss–Seidel)."""
    if value not in ("kkt", "gs"):
        raise ValueError(f"{name} must be 'kkt' or 'gs', got {value!r}")
    return value


def acceleration(name: str, value) -> np.ndarray:
    """A finite 3-vector [m/s²]."""
    g = np.asarray(value, dtype=float)
    if g.shape != (3,) or not np.all(np.isfinite(g)):
        raise ValueError(f"{name} must be a finite 3-vector in m/s², got {value!r}")
    return g


def time_step(name: str, value) -> float:
    """A finite time step > 0 [s]."""
    value = float(value)
    if not (np.isfinite(value) and value > 0.0):
        raise ValueError(f"{name} must be a finite time step > 0 s, got {value}")
    return value


class Setting:
    """A validated :class:`~solver.core.timestep.Simulator` parameter: kept as ``_<name>``, every assignment goes
    through ``check(name, value)`` (a ValueError naming the parameter, or the value to keep)."""

    def __init__(self, check: Callable[[str, Any], Any]):
        self.check = check

    def __set_name__(self, owner, name: str) -> None:
        self.name, self.attr = name, "_" + name

    def __get__(self, obj, owner=None) -> Any:
        return self if obj is None else getattr(obj, self.attr)

    def __set__(self, obj, value) -> None:
        setattr(obj, self.attr, self.check(self.name, value))
