"""BDF2's start of stage: the two-step backward differentiation formula as XPBD's implicit stage from (x̂, v̂).

x_{n+1} − x̂ = h v_{n+1}, v_{n+1} − v̂ = h a(x_{n+1}) with h = 2Δt/3, x̂ = (4x_n − x_{n−1})/3 and
v̂ = (4v_n − v_{n−1})/3 (Hairer & Wanner, *Solving ODEs II*, §V.1). Orientations on the group: q̂ = q_n·exp(φ/3),
φ the body rotation from q_{n−1} to q_n; ω̂ = (4ω_n − ω_{n−1})/3 (body frame).
"""

from __future__ import annotations

import numpy as np

from . import quaternion as quat
from .state import State


def exp_body(q: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """``q·exp(φ)``: ``q`` turned by the body-frame rotation vector ``φ`` exactly (angle |φ|)."""
    angle = np.linalg.norm(phi, axis=-1, keepdims=True)
    half = 0.5 * angle
    sinc = np.where(angle > 1e-12, np.sin(half) / np.where(angle > 1e-12, angle, 1.0), 0.5)
    return quat.normalize(quat.multiply(q, np.concatenate((np.cos(half), sinc * phi), axis=-1)))


def log_body(q_old: np.ndarray, q_new: np.ndarray) -> np.ndarray:
    """Body-frame rotation vector φ with ``q_new = q_old·exp(φ)`` on the short arc: the inverse of :func:`exp_body`
    (:func:`quaternion.body_rotation_vector` is 2 sin(|φ|/2) long, its inverse to first order only)."""
    d = quat.multiply_conjugate(q_old, q_new)
    d = np.where(d[..., :1] < 0.0, -d, d)
    s = np.linalg.norm(d[..., 1:], axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, d[..., :1])
    return d[..., 1:] * np.where(s > 1e-12, angle / np.where(s > 1e-12, s, 1.0), 2.0)


def stage_start(x, q, v, w, previous: State) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x̂, q̂, v̂, ω̂) from the state now (x_n, q_n, v_n, ω_n) and ``previous`` (the state at t − Δt)."""
    x0 = (4.0 * x - previous.positions) / 3.0
    q0 = exp_body(q, log_body(previous.orientations, q) / 3.0)
    v0 = (4.0 * v - previous.velocities) / 3.0
    w0 = (4.0 * w - previous.angular_velocities) / 3.0
    return x0, q0, v0, w0


def history_applies(history: tuple | None, now: tuple, dt: float) -> State | None:
    """The state before the last step, from ``history`` = (that state, the step's Δt, the arrays it left), if the
    step had this ``dt`` and ``now`` (x, q, v, ω) are still the arrays it left (not changed between steps by the
    caller, e.g. velocities zeroed); else None."""
    if history is None:
        return None
    previous, step_dt, left = history
    if step_dt != dt or not all(a is b or np.array_equal(a, b) for a, b in zip(now, left, strict=True)):
        return None
    return previous
