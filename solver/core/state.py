"""The state of a rod forest at one time: what a step advances (warp's ``State``, beside the constant
:class:`~solver.core.model.RodModel` and the stepper :class:`~solver.core.timestep.Simulator`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import quaternion as quat


class NonFiniteStateError(FloatingPointError):
    """A step produced NaN or inf; the simulator state was left as it was before the step."""


@dataclass
class StepReport:
    iterations: int  # Newton (KKT) or Gauss–Seidel iterations taken
    residual: float  # ‖C + α̃λ‖∞ at the end of the step (Chebyshev norm of b, Eq. 22)


@dataclass
class State:
    """Pose, velocities and joint multipliers of ``n`` segments and ``m`` tree joints at ``time`` [s].

    ``positions`` (n, 3) [m] and ``orientations`` (n, 4) unit quaternions (w, x, y, z), world frame;
    ``velocities`` (n, 3) [m/s] world frame; ``angular_velocities`` (n, 3) [rad/s] body frame; ``lam`` (m, 6)
    the joints' Lagrange multipliers λ of the last solve (Deul Eq. 22) [N, N·m]."""

    positions: np.ndarray
    orientations: np.ndarray
    velocities: np.ndarray
    angular_velocities: np.ndarray
    lam: np.ndarray
    time: float = 0.0

    def copy(self) -> State:
        """A copy that shares no array with this state."""
        return State(
            self.positions.copy(),
            self.orientations.copy(),
            self.velocities.copy(),
            self.angular_velocities.copy(),
            self.lam.copy(),
            float(self.time),
        )

    @classmethod
    def at_rest(cls, model) -> State:
        """``model``'s initial pose, at rest, with λ = 0 and time 0."""
        n = model.n_segments
        return cls(
            model.positions.copy(),
            model.orientations.copy(),
            np.zeros((n, 3)),
            np.zeros((n, 3)),
            np.zeros((model.n_joints, 6)),
            0.0,
        )

    def checked_arrays(self, n_segments: int, n_joints: int) -> dict[str, np.ndarray]:
        """This state's arrays as float64 copies keyed by name, or ValueError naming one whose shape does not fit
        ``n_segments`` segments and ``n_joints`` joints."""
        n, m = n_segments, n_joints
        shapes = {"positions": (n, 3), "orientations": (n, 4), "velocities": (n, 3), "angular_velocities": (n, 3)}
        shapes["lam"] = (m, 6)
        arrays = {name: np.array(getattr(self, name), dtype=float) for name in shapes}
        for name, shape in shapes.items():
            if arrays[name].shape != shape:
                raise ValueError(f"state.{name}: expected shape {shape}, got {arrays[name].shape}")
        return arrays


def first_non_finite(arrays) -> int | None:
    """The first row (segment) holding NaN or inf in any of ``arrays`` (each (n, k)), or None if all are finite."""
    # one sum per array is a cheap test (NaN and inf propagate); only a failed test looks for the row
    if np.isfinite(sum(float(np.sum(arr)) for arr in arrays)):
        return None
    finite = np.ones(arrays[0].shape[0], bool)
    for arr in arrays:
        finite &= np.all(np.isfinite(arr), axis=1)
    return None if np.all(finite) else int(np.flatnonzero(~finite)[0])


def kinetic_energy(model, velocities, angular_velocities, segments=None) -> float:
    """Kinetic energy [J] of the free segments, or of the free ones among ``segments`` ((n,) bool mask)."""
    free = ~model.pinned if segments is None else ~model.pinned & np.asarray(segments, bool)
    lin = 0.5 * np.sum(model.masses[free] * np.sum(velocities[free] ** 2, axis=1))
    ang = 0.5 * np.sum(model.inertia[free] * angular_velocities[free] ** 2)
    return float(lin + ang)


def momentum(model, state: State) -> tuple[np.ndarray, np.ndarray]:
    """Total linear [kg·m/s] and angular momentum about the origin [kg·m²/s] of the free segments."""
    free = ~model.pinned
    p = model.masses[free, None] * state.velocities[free]
    l_spin = quat.rotate(state.orientations[free], model.inertia[free] * state.angular_velocities[free])
    return p.sum(axis=0), (np.cross(state.positions[free], p) + l_spin).sum(axis=0)
