"""Contact solver strategies, one per module, behind one interface (:class:`~.base.ContactSolver`), each with its
frozen options; :func:`make_solver` turns options (or a method's name) into the strategy. What each is for:

- :class:`SchurOptions` (the default): the joints and contacts solved together, the contact impulses from a convex
  QP on the contact Schur complement over the joints' tree factorisation; XPBD's fixed point where only colliders
  touch, Newton's method on the implicit step with rod–rod contact and in impacts. Its steps converge on the closed
  forms, the drops and the knot; on the Slinky 3 % and on a rope pile 15 % end at the iteration cap
  (docs/notes/contacts.md). It needs the Simulator's direct solver (``solver="kkt"``) and a model with joints.
- :class:`GaussSeidelOptions`: XPBD's projection per row (Deul Eq. 21) at a fixed cost per iteration, with no
  convergence guarantee; what ``Contacts()`` falls back to where the default cannot run (``solver="gs"``, a model
  without joints).
- :class:`ActiveSetOptions`: joints and contact rows in one sparse solve with a primal–dual active set and a damped
  Newton step (``max_move``): Deul's fixed 3 iterations per step on the Slinky. It cycles where the schur method
  converges (the capstan).
- experimental (:mod:`.experimental`, kept for comparison): :class:`~.experimental.TreeResponseOptions`,
  :class:`~.experimental.SemismoothOptions`."""

from __future__ import annotations

from .active_set import ActiveSet, ActiveSetOptions
from .base import ContactSolver, SolveLog
from .experimental import Semismooth, SemismoothOptions, TreeResponse, TreeResponseOptions
from .gauss_seidel import GaussSeidel, GaussSeidelOptions
from .schur import Schur, SchurOptions

STRATEGIES = {
    GaussSeidelOptions: GaussSeidel,
    TreeResponseOptions: TreeResponse,
    ActiveSetOptions: ActiveSet,
    SemismoothOptions: Semismooth,
    SchurOptions: Schur,
}
# a method by name, with its default options
METHODS = {
    "gauss_seidel": GaussSeidelOptions,
    "active_set": ActiveSetOptions,
    "schur": SchurOptions,
    "tree": TreeResponseOptions,
    "semismooth": SemismoothOptions,
}
# Contacts() without a method: Newton's method on joints and contacts together, the one that converges on every
# contact benchmark (docs/notes/contacts.md); where the Simulator has no tree factorisation to eliminate over
# (solver="gs", or a model without joints) Contacts falls back to FALLBACK_METHOD
DEFAULT_METHOD = "schur"
FALLBACK_METHOD = "gauss_seidel"


def method_options(method) -> object:
    """Options for ``method``: an options object as it is, a name of :data:`METHODS` as its default options, None
    as the default method's (:data:`DEFAULT_METHOD`)."""
    if method is None:
        return METHODS[DEFAULT_METHOD]()
    if isinstance(method, str):
        if method not in METHODS:
            raise ValueError(
                f"method must be one of {', '.join(map(repr, METHODS))} or an options object, got {method!r}"
            )
        return METHODS[method]()
    if type(method) not in STRATEGIES:
        raise ValueError(f"method must be a name or one of {', '.join(t.__name__ for t in STRATEGIES)}, got {method!r}")
    return method


def make_solver(options, geometry, log: SolveLog) -> ContactSolver:
    """The strategy of ``options`` (from :func:`method_options`) on the rows' ``geometry``."""
    return STRATEGIES[type(options)](options, geometry, log)


__all__ = [
    "ActiveSet",
    "ActiveSetOptions",
    "ContactSolver",
    "DEFAULT_METHOD",
    "FALLBACK_METHOD",
    "GaussSeidel",
    "GaussSeidelOptions",
    "METHODS",
    "Schur",
    "SchurOptions",
    "Semismooth",
    "SemismoothOptions",
    "SolveLog",
    "TreeResponseOptions",
    "TreeResponse",
    "make_solver",
    "method_options",
]
