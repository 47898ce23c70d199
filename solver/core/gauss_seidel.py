"""The XPBD non-linear Gauss–Seidel baseline (Deul Eq. 21 with one 6-D block per joint, Eq. 20 updates).

Joints are split once per topology into colours whose joints share no free segment; one iteration
visits the colours in turn and solves all joints of a colour at once (each exactly as Eq. 21 with
immediate position updates). Within a colour the joints are independent, so this is Gauss–Seidel in
a multicolour order (for a chain: red–black), which has the same asymptotic convergence as the
sequential order for these consistently ordered systems, without a Python loop per joint.
"""

from __future__ import annotations

import numpy as np

from . import joint_constraint
from . import quaternion as quat


def colour_joints(seg_a: np.ndarray, seg_b: np.ndarray) -> list[np.ndarray]:
    """Greedy colouring: joints sharing a free segment (index ≥ 0) get different colours."""
    m = seg_a.shape[0]
    used: dict[int, set[int]] = {}
    colour = np.empty(m, dtype=np.int64)
    for j in range(m):
        taken = set()
        for s in (int(seg_a[j]), int(seg_b[j])):
            if s >= 0:
                taken |= used.setdefault(s, set())
        c = 0
        while c in taken:
            c += 1
        colour[j] = c
        for s in (int(seg_a[j]), int(seg_b[j])):
            if s >= 0:
                used[s].add(c)
    return [np.flatnonzero(colour == c) for c in range(int(colour.max()) + 1)] if m else []


def gauss_seidel_iteration(model, positions, orientations, lam, alpha_tilde, inv_mass_diag, colours) -> None:
    """One sweep over all joints, updating ``positions``, ``orientations`` and ``lam`` in place.

    ``inv_mass_diag`` (n, 6) is zero for pinned segments, so they never move.
    """
    for js in colours:
        c, j_p, j_c = joint_constraint.evaluate(model, positions, orientations, js)
        p, ch = model.joint_parent[js], model.joint_child[js]
        wp, wc = inv_mass_diag[p], inv_mass_diag[ch]
        s = (j_p * wp[:, None, :]) @ np.swapaxes(j_p, 1, 2) + (j_c * wc[:, None, :]) @ np.swapaxes(j_c, 1, 2)
        idx = np.arange(6)
        s[:, idx, idx] += alpha_tilde[js]
        rhs = -c - alpha_tilde[js] * lam[js]
        dlam = np.linalg.solve(s, rhs[:, :, None])[:, :, 0]
        lam[js] += dlam
        for seg, jac, w in ((p, j_p, wp), (ch, j_c, wc)):
            dx = w * (np.swapaxes(jac, 1, 2) @ dlam[:, :, None])[:, :, 0]
            positions[seg] += dx[:, :3]
            orientations[seg] = quat.integrate_body(orientations[seg], dx[:, 3:])
