"""The interface every contact solver strategy meets (:class:`ContactSolver`), the record the strategies share with
``Contacts`` (:class:`SolveLog`), and the checks their frozen options run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from ...core import parameters

if TYPE_CHECKING:
    from ..rows import StepRows


@dataclass
class SolveLog:
    """What the direct solves did since the contacts were made: ``solve_log`` (rounds, converged) per solve,
    ``friction_log`` per solve with friction rows the rounds that checked sticking rows against the Coulomb box
    (0: the normal active set never settled), ``damped_solves``: solves scaled down (``max_move``) or halved by a
    line search."""

    solve_log: list[tuple[int, bool]] = field(default_factory=list)
    friction_log: list[int] = field(default_factory=list)
    damped_solves: int = 0


@runtime_checkable
class ContactSolver(Protocol):
    """A contact solver strategy, made by ``Contacts`` from its options with the rows' geometry and the shared
    :class:`SolveLog` (``Strategy(options, geometry, log)``). Per step: ``begin_step`` once the step's rows exist,
    ``project`` once per Simulator iteration (moves the pose, accumulates the rows' impulses, returns its residual
    [m]), ``end_step`` before the step's report. ``joint_point_rows``: the strategy wants one row per joint point
    against a collider (the Newton methods); ``direct``: its rows solve with the joints (friction states in
    ``StepRows.sliding``); ``solves_joints(rows)``: the Simulator leaves the joints' step to it this iteration;
    ``gap_batches(rows)``: the batches ``Contacts.gaps`` measures; ``post_defaults``: (compliance [m/N], rounds,
    grow rounds) of the post-stabilisation solve unless its options set them; ``row_compliance(env)``: each row's
    compliance during the step [m/N] by the collider mask ``env`` (post-stabilisation leaves a compliant row's own
    sink)."""

    options: object
    joint_point_rows: bool
    direct: bool

    def begin_step(self, sim, rows: StepRows) -> None: ...

    def project(self, sim, rows: StepRows) -> float: ...

    def end_step(self, sim, rows: StepRows) -> None: ...

    def solves_joints(self, rows: StepRows) -> bool: ...

    def gap_batches(self, rows: StepRows) -> list[dict]: ...

    def row_compliance(self, env: np.ndarray) -> np.ndarray: ...

    @property
    def post_defaults(self) -> tuple[float, int, int]: ...


def check_count(owner: str, name: str, count, low: int) -> None:
    """The Simulator's own integer check (``core.parameters.count``), naming the option as ``owner.name``."""
    parameters.count(f"{owner}.{name}", count, low)


def check_compliance(owner: str, name: str, value, positive: bool = True) -> None:
    if value is None:
        return
    if not (np.isfinite(value) and (value > 0.0 if positive else value >= 0.0)):
        raise ValueError(f"{owner}.{name} must be finite and {'>' if positive else '≥'} 0 m/N, got {value}")
