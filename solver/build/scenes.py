"""Reference scenes shared by tests and benchmarks (pure numpy): the Deul §5 cantilever, chains, random trees."""

from __future__ import annotations

import numpy as np

from ..core import quaternion as quat
from ..core.model import DEFAULT_STRETCH_COMPLIANCE, RodModel, cross_section_moments, rod_from_polyline


def cantilever(
    n_segments: int = 50,
    length: float = 10.0,
    radius: float = 0.5,
    youngs_modulus: float = 1e9,
    density: float = 1000.0,
    torsion_modulus: float | None = None,
    stretch_compliance: float = DEFAULT_STRETCH_COMPLIANCE,
) -> RodModel:
    """A beam along +x over [0, L], clamped at x = 0 (Deul §5: L = 10 m, r = 0.5 m, E = 1 GPa, 50 segments).

    Segment 0 is a pinned anchor over [−l, 0] (l = L / n, the segment length); segments 1…n are the beam.
    The clamp joint at x = 0 stands for the beam's first half segment only, so its Darboux length is l/2
    (midpoint rule).
    """
    seg_len = length / n_segments
    pts = np.zeros((n_segments + 2, 3))
    pts[:, 0] = np.linspace(-seg_len, length, n_segments + 2)
    model = rod_from_polyline(
        pts, radius, youngs_modulus, torsion_modulus, density, pinned=["start"], stretch_compliance=stretch_compliance
    )
    jl = model.joint_lengths.copy()
    jl[0] = 0.5 * seg_len
    return model.copy_with(joint_lengths=jl)


def cantilever_tip_deflection(
    force: float, length: float = 10.0, radius: float = 0.5, youngs_modulus: float = 1e9
) -> float:
    """Euler–Bernoulli tip deflection ``F L³ / (3 E I)`` [m] of a clamped circular beam under a tip load."""
    i1, _, _ = cross_section_moments(np.array([radius, radius]))
    return force * length**3 / (3.0 * youngs_modulus * i1)


def cantilever_period(
    length: float = 10.0, radius: float = 0.5, youngs_modulus: float = 1e9, density: float = 1000.0
) -> float:
    """First bending period [s] of a clamped–free Euler–Bernoulli beam: ``2π / (β₁² √(EI/ρA))``, β₁L = 1.8751."""
    i1, _, _ = cross_section_moments(np.array([radius, radius]))
    area = np.pi * radius**2
    beta = 1.87510407 / length
    return 2.0 * np.pi / (beta**2 * np.sqrt(youngs_modulus * i1 / (density * area)))


def chain(
    n_segments: int,
    segment_length: float = 0.1,
    radius: float = 0.01,
    youngs_modulus: float = 1e9,
    density: float = 1000.0,
) -> RodModel:
    """A straight horizontal rod of ``n_segments`` with its first segment pinned."""
    pts = np.zeros((n_segments + 1, 3))
    pts[:, 0] = np.arange(n_segments + 1) * segment_length
    return rod_from_polyline(pts, radius, youngs_modulus, None, density, pinned=["start"])


def random_tree(
    n_segments: int,
    seed: int = 0,
    segment_length: float = 0.1,
    radius: float = 0.01,
    youngs_modulus: float = 1e9,
    density: float = 1000.0,
    branch_probability: float = 0.3,
) -> RodModel:
    """A random tree: segment 0 is a pinned root; each later segment continues its parent's tip or,
    with ``branch_probability``, branches off a random earlier segment at a random point along it.
    Built level by level (vectorised), so 10⁵ segments take well under a second."""
    rng = np.random.default_rng(seed)
    n = int(n_segments)
    parent = np.arange(-1, n - 1)
    branch = rng.random(n) < branch_probability
    branch[0] = False
    parent[branch] = (rng.random(int(branch.sum())) * np.flatnonzero(branch)).astype(np.int64)
    along = np.where(branch, rng.uniform(-0.4, 0.4, n), 0.5) * segment_length
    dirs = rng.normal(size=(n, 3))
    dirs[:, 2] = np.abs(dirs[:, 2]) + 1.0
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    q = quat.from_two_vectors(np.array([0.0, 0.0, 1.0]), dirs)
    attach_world = np.zeros((n, 3))
    pos = np.zeros((n, 3))
    depth = np.zeros(n, np.int64)
    # depth by pointer jumping-free level sweep: parents precede children
    for _ in range(n):
        todo = depth[1:] == 0
        if not np.any(todo):
            break
        idx = 1 + np.flatnonzero(todo)
        ready = (parent[idx] == 0) | (depth[parent[idx]] > 0)
        idx = idx[ready]
        depth[idx] = depth[parent[idx]] + 1
    for d in range(1, int(depth.max()) + 1):
        idx = np.flatnonzero(depth == d)
        p = parent[idx]
        local = np.zeros((idx.size, 3))
        local[:, 2] = along[idx]
        attach_world[idx] = pos[p] + quat.rotate(q[p], local)
        pos[idx] = attach_world[idx] + 0.5 * segment_length * dirs[idx]
    kids = np.arange(1, n)
    par = parent[1:]
    pp = np.zeros((n - 1, 3))
    pp[:, 2] = along[1:]
    pc = np.zeros((n - 1, 3))
    pc[:, 2] = -0.5 * segment_length
    pinned = np.zeros(n, bool)
    pinned[0] = True
    return RodModel.from_arrays(
        pos,
        q,
        segment_length,
        radius,
        density,
        joint_parent=par,
        joint_child=kids,
        joint_point_parent=pp,
        joint_point_child=pc,
        youngs_modulus=youngs_modulus,
        pinned=pinned,
    )
