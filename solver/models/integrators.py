"""Explicit and semi-implicit integrators of Cioacă & Cărămizaru (seed 004), for x'' = a(x, v).

Every integrator is ``step(x, v, h, accel, memory) -> (x_new, v_new)`` with ``accel(x, v)`` the
acceleration [m/s²] and ``memory`` a dict the integrator may keep between steps (Verlet keeps the
previous position). ``INTEGRATORS[name]`` gives the function, the seed's claim "symplectic" (its
Table 1), the order of accuracy and the acceleration evaluations per step.

Readings of the seed where its text is ambiguous (its Table 2 is garbled):
- ``midpoint``: v₁ = v + h a(x, v); x₁ = x + h (v + v₁)/2 — second order in x, first in v, as the
  seed describes the "Midpoint family".
- ``symplectic_midpoint``: drift–kick–drift with the force at the midpoint position,
  x½ = x + h/2 v; v₁ = v + h a(x½, v); x₁ = x½ + h/2 v₁ (position Störmer–Verlet: symplectic for
  conservative forces, one evaluation).
- ``half_step`` (the explicit midpoint rule of Hairer, Nørsett & Wanner): x½ = x + h/2 v,
  v½ = v + h/2 a(x, v); v₁ = v + h a(x½, v½); x₁ = x + h v½.
- ``modified_half_step`` (the seed's Table 2): v½ = v + h/2 a(x, v); x½ = x + h/2 v½ (semi-implicit);
  v₁ = v + h a(x½, v½); x₁ = x + h v½.
- ``verlet`` (Verlet 1967): x₁ = 2x − x₋₁ + h² a(x, v); v₁ = (x₁ − x)/h.
- ``forest_ruth``: the fourth-order symplectic composition of Forest & Ruth 1990 (θ = 1/(2 − ∛2)).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Accel = Callable[[np.ndarray, np.ndarray], np.ndarray]


def explicit_euler(x, v, h, accel: Accel, memory):
    return x + h * v, v + h * accel(x, v)


def symplectic_euler(x, v, h, accel: Accel, memory):
    v1 = v + h * accel(x, v)
    return x + h * v1, v1


def midpoint(x, v, h, accel: Accel, memory):
    v1 = v + h * accel(x, v)
    return x + 0.5 * h * (v + v1), v1


def symplectic_midpoint(x, v, h, accel: Accel, memory):
    xh = x + 0.5 * h * v
    v1 = v + h * accel(xh, v)
    return xh + 0.5 * h * v1, v1


def half_step(x, v, h, accel: Accel, memory):
    xh = x + 0.5 * h * v
    vh = v + 0.5 * h * accel(x, v)
    return x + h * vh, v + h * accel(xh, vh)


def modified_half_step(x, v, h, accel: Accel, memory):
    vh = v + 0.5 * h * accel(x, v)
    xh = x + 0.5 * h * vh
    return x + h * vh, v + h * accel(xh, vh)


def verlet(x, v, h, accel: Accel, memory):
    a = accel(x, v)
    prev = memory.get("x_prev")
    if prev is None or memory.get("h") != h or prev.shape != x.shape:
        prev = x - h * v + 0.5 * h * h * a  # Taylor start: x(−h)
    x1 = 2.0 * x - prev + h * h * a
    memory["x_prev"], memory["h"] = x, h
    return x1, (x1 - x) / h


_FR_THETA = 1.0 / (2.0 - 2.0 ** (1.0 / 3.0))


def forest_ruth(x, v, h, accel: Accel, memory):
    t = _FR_THETA
    x = x + 0.5 * t * h * v
    v = v + t * h * accel(x, v)
    x = x + 0.5 * (1.0 - t) * h * v
    v = v + (1.0 - 2.0 * t) * h * accel(x, v)
    x = x + 0.5 * (1.0 - t) * h * v
    v = v + t * h * accel(x, v)
    return x + 0.5 * t * h * v, v


def rk4(x, v, h, accel: Accel, memory):
    k1x, k1v = v, accel(x, v)
    k2x, k2v = v + 0.5 * h * k1v, accel(x + 0.5 * h * k1x, v + 0.5 * h * k1v)
    k3x, k3v = v + 0.5 * h * k2v, accel(x + 0.5 * h * k2x, v + 0.5 * h * k2v)
    k4x, k4v = v + h * k3v, accel(x + h * k3x, v + h * k3v)
    return (x + h / 6.0 * (k1x + 2 * k2x + 2 * k3x + k4x), v + h / 6.0 * (k1v + 2 * k2v + 2 * k3v + k4v))


@dataclass(frozen=True)
class Integrator:
    step: Callable
    symplectic_claimed: bool  # the seed's Table 1 column
    order: int  # order of accuracy (global error ~ h^order)
    evaluations: int  # accelerations per step


INTEGRATORS: dict[str, Integrator] = {
    "explicit_euler": Integrator(explicit_euler, False, 1, 1),
    "symplectic_euler": Integrator(symplectic_euler, True, 1, 1),
    "midpoint": Integrator(midpoint, False, 1, 1),
    "half_step": Integrator(half_step, False, 2, 2),
    "verlet": Integrator(verlet, True, 2, 1),
    "forest_ruth": Integrator(forest_ruth, True, 4, 3),
    "symplectic_midpoint": Integrator(symplectic_midpoint, True, 2, 1),
    "rk4": Integrator(rk4, False, 4, 4),
    "modified_half_step": Integrator(modified_half_step, False, 2, 2),
}


def get_integrator(name: str) -> Integrator:
    if name not in INTEGRATORS:
        raise ValueError(f"integrator must be one of {sorted(INTEGRATORS)}, got {name!r}")
    return INTEGRATORS[name]


def step_map_jacobian_det(name: str, accel: Accel, x: float, v: float, h: float, eps: float = 1e-6) -> float:
    """det ∂(x₁, v₁)/∂(x, v) of one step of a scalar system: 1 for a symplectic (area-preserving) map.

    Verlet's state (x, v) stands for (x, x₋₁ = x − h v), the two positions its step maps."""
    step = get_integrator(name).step

    def run(xs, vs):
        xs, vs = np.array([xs]), np.array([vs])
        return step(xs, vs, h, accel, {"x_prev": xs - h * vs, "h": h})

    cols = []
    for dx, dv in ((eps, 0.0), (0.0, eps)):
        xp, vp = run(x + dx, v + dv)
        xm, vm = run(x - dx, v - dv)
        cols.append(((xp - xm)[0] / (2 * eps), (vp - vm)[0] / (2 * eps)))
    return float(cols[0][0] * cols[1][1] - cols[1][0] * cols[0][1])
