"""Deul Fig. 6: a soft rod under torsion forms plectonemes, with self-collision.

The rod is clamped at both ends. The left clamp moves toward the right one while it turns ``--turns``
full times about the rod axis; then both are held. Twist turns into writhe (Lk = Tw + Wr): the rod
coils into plectonemes, whose strands press on each other, so segment–segment contacts (solver/
contact/) must keep them apart.

Keys: ``writhe`` (Gauss double integral over the centreline polyline, exact per segment pair),
``min_surface_gap_m`` (smallest surface distance between the capsules of segments more than
``exclude_hops`` joints apart, exact, every step of the run; negative is penetration), ``turns``,
``radius_m``, ``ms_per_step``, ``max_joint_gap_m`` (largest zero-stretch violation at a joint: how
far the KKT/GS alternation is from converged in the tight coils), contact counts, and the contact solve's
convergence over the steps with contact rows: ``cap_share`` (at the iteration cap), ``median_iterations``,
``xpbd_fraction`` (steps the schur method solved with XPBD's iteration), ``method`` (the strategy that ran).
Targets: |writhe| ≥ 2 and min_surface_gap_m ≥ −0.1 r.

The contacts use ``Contacts()``'s default method (the schur method: at most ``--iterations`` 30 Newton iterations
to a tolerance of 1e-6 m); ``--method gauss_seidel`` runs the Gauss–Seidel contacts with 2 sweeps at a fixed 5
iterations per step (the tolerance 1e-9 is never met there: every step runs all 5).

    python3 benchmarks/knot.py --json      # last stdout line: one JSON object
    python3 benchmarks/knot.py --method gauss_seidel --json
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _common  # noqa: E402

from solver import Simulator, rod_from_polyline  # noqa: E402
from solver.contact import Contacts, DetectionOptions, GaussSeidelOptions  # noqa: E402
from solver.core import quaternion as quat  # noqa: E402


def writhe(points: np.ndarray) -> float:
    """Writhe of the polyline ``points`` (k, 3): ``Wr = (1/4π) ΣΣ_{i≠j} Ω_ij`` with the exact solid angle
    Ω_ij of two straight segments (Klenin & Langowski 2000), i.e. the Gauss double integral."""
    p1, p2 = points[:-1], points[1:]
    m = p1.shape[0]
    i, j = np.triu_indices(m, k=2)
    a1, a2, b1, b2 = p1[i], p2[i], p1[j], p2[j]
    r13, r14, r23, r24 = b1 - a1, b2 - a1, b1 - a2, b2 - a2

    def unit(v):
        n = np.linalg.norm(v, axis=1)
        return v / np.where(n > 1e-300, n, 1.0)[:, None]

    n1, n2 = unit(np.cross(r13, r14)), unit(np.cross(r14, r24))
    n3, n4 = unit(np.cross(r24, r23)), unit(np.cross(r23, r13))
    asin = lambda u, v: np.arcsin(np.clip(np.sum(u * v, axis=1), -1.0, 1.0))  # noqa: E731
    omega = asin(n1, n2) + asin(n2, n3) + asin(n3, n4) + asin(n4, n1)
    sign = np.sign(np.sum(np.cross(b2 - b1, a2 - a1) * r13, axis=1))
    return float(2.0 * np.sum(omega * sign) / (4.0 * np.pi))


def centreline(sim) -> np.ndarray:
    """Axis end points of the segments of a single rod (k + 1, 3) [m]."""
    half = np.zeros((sim.model.n_segments, 3))
    half[:, 2] = 0.5 * sim.model.lengths
    axis = quat.rotate(sim.orientations, half)
    return np.vstack((sim.positions[:1] - axis[:1], sim.positions + axis))


def run(
    segments: int = 100,
    length: float = 1.0,
    radius: float = 0.005,
    turns: float = 10.0,
    approach: float = 0.6,
    twist_seconds: float = 8.0,
    hold_seconds: float = 2.0,
    dt: float = 0.002,
    youngs_modulus: float = 2e6,
    iterations: int = 30,
    damping: float = 10.0,
    method: str | None = None,
    tolerance: float = 1e-6,
    stop: float | None = None,
) -> dict:
    pts = np.zeros((segments + 1, 3))
    pts[:, 0] = np.linspace(0.0, length, segments + 1)
    model = rod_from_polyline(pts, radius, youngs_modulus, youngs_modulus / 3.0, 1100.0, pinned=["start", "end"])
    x_start, x_end = model.positions[0].copy(), model.positions[-1].copy()
    q_start, q_end = model.orientations[0].copy(), model.orientations[-1].copy()
    axis_turn = np.array([1.0, 0.0, 0.0])

    def clamps(t):
        u = min(t / twist_seconds, 1.0)
        u = u * u * (3.0 - 2.0 * u)  # smooth start and stop
        angle = 2.0 * np.pi * turns * u
        spin = np.concatenate(([np.cos(0.5 * angle)], np.sin(0.5 * angle) * axis_turn))
        pos = np.stack((x_start + approach * length * u * axis_turn, x_end))
        return pos, np.stack((quat.multiply(spin, q_start), q_end))

    sim = Simulator(
        model,
        dt=dt,
        max_iterations=iterations,
        tolerance=tolerance,
        gravity=(0.0, 0.0, 0.0),
        damping=damping,
        kinematic=clamps,
    )
    contacts = Contacts(
        model,
        self_collision=True,
        method=GaussSeidelOptions(sweeps=2) if method == "gauss_seidel" else method,
        detection=DetectionOptions(self_friction=0.1),
    )
    sim.gs_constraints.append(contacts)
    # A tiny transverse kick breaks the symmetry of the straight rod (as any real rod's imperfection does).
    rng = np.random.default_rng(0)
    sim.velocities[1:-1, 1:] = 1e-3 * rng.normal(size=(segments - 2, 2))
    steps = int(round((twist_seconds + hold_seconds if stop is None else stop) / dt))
    min_gap = np.inf
    joint_gap = 0.0
    contacts_max = 0
    t0 = time.perf_counter()
    for _ in range(steps):
        sim.step()
        contacts_max = max(contacts_max, contacts.n_active)
        min_gap = min(min_gap, contacts.surface_gaps(sim)[0])
        joint_gap = max(joint_gap, float(np.max(np.abs(sim.constraint_residual()[:, :3]))))
    wall = time.perf_counter() - t0
    wr = writhe(centreline(sim))
    return {
        "writhe": wr,
        "min_surface_gap_m": min_gap,
        "min_surface_gap_over_radius": min_gap / radius,
        "turns": turns,
        "radius_m": radius,
        "segments": segments,
        "end_distance_m": float(np.linalg.norm(sim.positions[-1] - sim.positions[0])),
        "max_joint_gap_m": joint_gap,
        "dt_s": dt,
        "iterations": iterations,
        "steps": steps,
        "ms_per_step": 1e3 * wall / steps,
        "max_active_contacts": contacts_max,
        "target_met": bool(abs(wr) >= 2.0 and min_gap >= -0.1 * radius),
        "method": type(contacts.solver.options).__name__,
        "tolerance": tolerance,
    } | _common.contact_convergence(contacts.reports)


def main() -> None:
    ap = _common.arguments(__doc__)
    ap.add_argument("--segments", type=int, default=100)
    ap.add_argument("--turns", type=float, default=10.0)
    ap.add_argument(
        "--method", choices=("schur", "gauss_seidel"), default=None, help="Contacts(method=); default: its default"
    )
    ap.add_argument("--seconds", type=float, default=None, help="stop after this many simulated seconds (a profile)")
    args = ap.parse_args()
    gauss_seidel = dict(method="gauss_seidel", iterations=5, tolerance=1e-9)
    options = gauss_seidel if args.method == "gauss_seidel" else dict(method=args.method)
    result = run(segments=args.segments, turns=args.turns, stop=args.seconds, **options)
    _common.report(result, args.json, "{:28s} {}")


if __name__ == "__main__":
    main()
