"""What :class:`~solver.contact.contacts.Contacts` keeps between its parts: the attributes its ``__init__``
(and :class:`~solver.contact.candidates.ContactCandidates`' topology) and ``begin_step`` set, declared with
their types once. Contacts is built from one base per concern (candidates, rows, response,
post_stabilise), each reading this state; the declarations set nothing at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..core.model import RodModel
    from .contact_kkt import JointRows


def step_length(sim) -> float:
    """The whole step Δt [s] (the implicit stage, 2Δt/3 for BDF2, is ``sim.step_context.stage_dt``)."""
    return float(sim.step_context.step_dt)


class ContactState:
    """The state of :class:`~solver.contact.contacts.Contacts` read by its bases."""

    # Contacts.__init__: options
    model: RodModel
    response: str
    self_contacts: str
    compliance: float
    direct_compliance: float
    collider_compliance: float
    direct_touch: float
    direct_enter: float
    direct_rounds: int
    direct_grow_rounds: int
    direct_max_move: float | None
    post_tolerance: float
    post_velocity: bool
    # Contacts.__init__: per segment, and the direct solves' records
    radius: np.ndarray
    _inv_mass: np.ndarray
    _inv_inertia: np.ndarray
    _self_segments: np.ndarray
    _excluded: np.ndarray
    damped_solves: int
    solve_log: list[tuple[int, bool]]
    friction_log: list[int]
    _joint_rows: JointRows | None
    _joint_rows_model: RodModel | None
    # ContactCandidates._vertex_table: the joint points of the self-colliding segments
    _succ: np.ndarray
    _pred: np.ndarray
    _vid_lo: np.ndarray
    _vid_hi: np.ndarray
    _v_other: np.ndarray
    # Contacts.begin_step: this step's contacts
    _start: tuple[np.ndarray, np.ndarray]
    sa: np.ndarray
    sb: np.ndarray
    za: np.ndarray
    zb: np.ndarray
    rest: np.ndarray
    mu: np.ndarray
    normal_impulse: np.ndarray
    tangent_impulse: np.ndarray
    _alpha_tilde: float
    _all: dict[str, Any]
    _first_solve: bool
    _xpbd_step: bool  # the schur method solves this step with XPBD's iteration (ContactResponse._restart_as_xpbd)
    _step_iterations: int  # Simulator iterations (project calls) in this step
    _t1: float
    _succ_all: np.ndarray | None
    _ss_states: tuple[np.ndarray, np.ndarray] | None
    line_search: int
    friction_rounds: int
    _warm_normal: np.ndarray
    _collider_of: np.ndarray
    _fast: np.ndarray  # segments the step's prediction moves by more than their radius (Contacts.begin_step)
    colliders: list
    # the schur method's joint step (ContactResponse._project_schur)
    geometric_stiffness: bool
    _last_joint_lam: np.ndarray
    _predicted: tuple[np.ndarray, np.ndarray]
    # its line search: (merit and Φ where the step started, the QP's friction bound, the iterate and impulses before
    # the step, the impulses after it, Δz, Δλ, step length)
    _schur_last: tuple | None

    @property
    def n_contacts(self) -> int:
        return int(self.sa.size)
