"""Contact solver strategies, one per module, behind one interface (:class:`~.base.ContactSolver`), each with its
frozen options: :class:`GaussSeidelOptions` (the default), :class:`ActiveSetOptions`, :class:`SchurOptions`, and
the experimental :class:`~.experimental.TreeResponseOptions` and :class:`~.experimental.SemismoothOptions`.
:func:`make_solver` turns options (or a method's name) into the strategy."""

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


def method_options(method) -> object:
    """Options for ``method``: an options object as it is, a name of :data:`METHODS` as its default options, None
    as :class:`GaussSeidelOptions`."""
    if method is None:
        return GaussSeidelOptions()
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
