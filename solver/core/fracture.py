"""Brittle fracture of branch joints: a joint whose bending strain passes the wood's rupture strain breaks.

Bending strain at a joint [–]: ``ε = r · |κ|`` with ``r`` the joint's larger section semi-axis [m] and ``κ``
[1/m] the elastic bend curvature, the bend rows of the constraint value ``C`` (Deul Eq. 23: strain
relative to the rest Darboux vector, which for a pre-stressed tree includes gravity's share). A wooden
twig bent to ``ε ≈ MOR/E`` fails; green wood breaks at about 1–2 % (modulus of rupture 40–60 MPa over E of
a few GPa for young shoots; Niklas, *Plant Biomechanics*, 1992, ch. 7), which is the default range.

:class:`Fracture` is a ``Simulator.post_step`` hook: after each step it removes every watched joint over
the limit (``Simulator.remove_joints``); what hung on it falls freely from then on. ``broken`` lists
(time [s], joint's input index) of every break; ``attached(sim)`` tells which segments still hang on a
pinned one.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from . import joint_constraint

RUPTURE_STRAIN = 0.02


class Fracture:
    """Break joints of ``sim.model`` whose bending strain exceeds ``rupture_strain`` [–]. ``watch``: which
    joints may break, a callable ``model -> (m,) bool`` evaluated on the current model (default: joints
    between two non-leaf segments, i.e. wood; leaves stay on their petioles)."""

    def __init__(self, rupture_strain: float = RUPTURE_STRAIN, watch=None):
        rupture_strain = float(rupture_strain)
        if not (np.isfinite(rupture_strain) and rupture_strain > 0.0):
            raise ValueError(f"rupture_strain must be finite and > 0, got {rupture_strain}")
        self.rupture_strain = rupture_strain
        self.watch = watch if watch is not None else (lambda m: ~(m.leaf[m.joint_parent] | m.leaf[m.joint_child]))
        self.broken: list[tuple[float, int]] = []

    def strain(self, sim) -> np.ndarray:
        """Bending strain (m,) of every tree joint at the simulator's current pose."""
        m = sim.model
        c = joint_constraint.evaluate(m, sim.positions, sim.orientations, with_jacobians=False)
        return m.joint_radii.max(axis=1) * np.hypot(c[:, 3], c[:, 4])

    def __call__(self, sim) -> None:
        if sim.model.n_joints == 0:
            return
        over = np.flatnonzero(self.watch(sim.model) & (self.strain(sim) > self.rupture_strain))
        if over.size:
            self.broken += [(sim.time, int(i)) for i in sim.model.joint_input_index[over]]
            sim.remove_joints(over)


def attached(model) -> np.ndarray:
    """(n,) bool: the segments connected to a pinned segment through the model's joints (tree and loops)."""
    n = model.n_segments
    a = np.concatenate((model.joint_parent, model.loops.joint_parent))
    b = np.concatenate((model.joint_child, model.loops.joint_child))
    graph = coo_matrix((np.ones(a.size), (a, b)), shape=(n, n))
    _, label = connected_components(graph, directed=False)
    return np.isin(label, label[model.pinned])
