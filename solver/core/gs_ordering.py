"""Orders of a non-linear Gauss–Seidel sweep over the constraints of a single rod, as batches.

A sweep is a list of batches; a batch is a list of ``(kind, indices)`` whose constraints share no
variable, so projecting them all at once (vectorised) is exactly the same as projecting them one
after the other. Two orders:

- ``bilateral``: the rod's constraints in their natural order along the rod, visited alternately
  from both ends towards the middle — the bilateral interleaving of Kugelstadt & Schömer §7 (Fig. 4),
  Umetani et al.'s "bidirectional ordering". Consecutive constraints of this order touch the same
  variables, so the batches hold at most the two constraints taken from opposite ends: a sweep
  costs about M/2 vectorised calls for M constraints (the order is sequential by nature).
- ``colored``: each constraint kind in turn, split greedily into colours whose constraints share no
  variable (for a chain: even/odd, red–black). A few large vectorised calls per sweep; the same
  fixed point, a different (multicolour) Gauss–Seidel order.
"""

from __future__ import annotations

import numpy as np

ORDERINGS = ("bilateral", "colored")


def bilateral_sequence(sequence: list) -> list:
    """``[c0, c1, …, c_{M-1}]`` → ``[c0, c_{M-1}, c1, c_{M-2}, …]``."""
    out = []
    lo, hi = 0, len(sequence) - 1
    while lo <= hi:
        out.append(sequence[lo])
        if hi != lo:
            out.append(sequence[hi])
        lo, hi = lo + 1, hi - 1
    return out


def _to_batches(groups: list[list[tuple[str, int]]]) -> list[list[tuple[str, np.ndarray]]]:
    batches = []
    for group in groups:
        by_kind: dict[str, list[int]] = {}
        for kind, i in group:
            by_kind.setdefault(kind, []).append(i)
        batches.append([(k, np.asarray(v, dtype=np.int64)) for k, v in by_kind.items()])
    return batches


def sequential_batches(order: list[tuple[str, int]], variables: dict[str, np.ndarray]) -> list:
    """Cut a sequential order into maximal runs of variable-disjoint constraints (exactly equivalent)."""
    groups: list[list[tuple[str, int]]] = []
    current: list[tuple[str, int]] = []
    used: set[int] = set()
    for kind, i in order:
        v = set(int(x) for x in variables[kind][i])
        if current and v & used:
            groups.append(current)
            current, used = [], set()
        current.append((kind, i))
        used |= v
    if current:
        groups.append(current)
    return _to_batches(groups)


def colored_batches(kinds: list[str], variables: dict[str, np.ndarray], active: dict[str, np.ndarray]) -> list:
    """Per kind (in the given order), greedy colours of constraints that share no variable."""
    groups: list[list[tuple[str, int]]] = []
    for kind in kinds:
        colours: list[tuple[list, set]] = []
        for i in np.flatnonzero(active[kind]):
            v = set(int(x) for x in variables[kind][i])
            for members, used in colours:
                if not (v & used):
                    members.append((kind, int(i)))
                    used |= v
                    break
            else:
                colours.append(([(kind, int(i))], set(v)))
        groups.extend(members for members, _ in colours)
    return _to_batches(groups)


def build_sweep(
    ordering: str,
    natural_order: list[tuple[str, int]],
    kinds: list[str],
    variables: dict[str, np.ndarray],
    active: dict[str, np.ndarray],
) -> list:
    """The batches of one sweep for ``ordering`` (see the module doc); inactive constraints are left out."""
    if ordering not in ORDERINGS:
        raise ValueError(f"ordering must be one of {ORDERINGS}, got {ordering!r}")
    if ordering == "colored":
        return colored_batches(kinds, variables, active)
    seq = [(k, i) for k, i in natural_order if active[k][i]]
    return sequential_batches(bilateral_sequence(seq), variables)
