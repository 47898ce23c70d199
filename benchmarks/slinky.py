"""Deul Fig. 1 / §5: a 500-segment helical Slinky walks down a staircase (dt = 10 ms, 3 KKT/GS iterations).

A steel helix (50 coils of 10 segments, coils touching at rest) starts arched from the top step to
the next one. Contacts (solver/collision.py) against the steps (Box colliders) and a floor (Plane),
and coil–coil self-collision, are solved in the Gauss–Seidel phase of every Newton iteration.

Keys: ``stairs_descended`` (steps the trailing end of the Slinky went down: both end coils are on that
step or lower), ``max_penetration_m`` (deepest overlap over the run, measured exactly each step against
the steps and between non-neighbouring segments, independent of the generated contacts),
``wire_radius_m``, ``ms_per_step`` (median), ``end_flips`` (times the trailing end passed over the
leading one: a walk, not a slide), ``diverged_at_s`` (the run stops once an overlap exceeds 10 wire
radii: coils have passed through each other). Targets: stairs_descended ≥ 3, max_penetration_m ≤ 0.1
wire radius.

Status: NOT MET (session 3). Contacts are now ``self_contacts="points"`` (one row per physical contact
point, solver/collision.py) solved with ``response="direct"`` (joints + contact normal rows in one SuperLU
solve per iteration, primal–dual active set, solver/contact_kkt.py), frictionless (``direct_friction=False``).
Measured (steel wire r = 0.7 mm, 50 coils × 10 segments, arch start, 3 iterations, dt = 10 ms):

* Resting stack (``start="stack"``), no friction: after each of the first 6 steps every contact row is
  met (≥ −1e-7 m) and the exact capsule gaps stay ≥ −0.022 mm (0.03 r); 8 active-set rounds with both
  kinds of change per round are needed (one kind per round, or 4 rounds, leaves rows 0.3–1.3 mm deep).
* Arch, frictionless: gaps ≥ −0.0014 mm (0.002 r) to t = 0.09 s, −0.21 mm (0.3 r) at 0.10–0.12 s,
  back to ≈ 0 at 0.13–0.19 s; without friction the two ends slide together on the steps (x 0.07/0.33 →
  0.28/0.29 m by 0.24 s), the arch collapses onto itself and coils pass through each other at ~0.25 s.
  Median step 275 ms (500–1800 contacts, up to 8 factorisations per iteration).
* With friction (Gauss–Seidel friction sweep before each direct solve, ``direct_friction=True``) it
  diverges at 0.05–0.08 s: the sweep's local moves (one segment's mass) break joints (bend residual
  0.1 → 1.4) and push coils into others faster than the direct solve restores them. Friction rows belong
  in the direct solve (sticking rows, cone clamp by an active set), not done.
* Contact generation: the old capsule pairs found each contact point ~3 times (and pairs two coils
  apart); "points" gives one vertex–vertex row where joint points face each other on near-parallel rods,
  a joint point against the other axis otherwise (two rows per overlapping chord pair), one row where
  segments cross inside; margin a quarter of the two radii plus the points' predicted relative motion.
  Crossing rods meeting at joint points get two point-on-axis rows (two balls would be unstable).
* 10 segments per coil: chords of a 35 mm coil sag 1.7 mm (> the wire diameter) from the helix; 25 coils
  × 20 segments diverged earlier (0.06 s) from the same arch, not investigated further.

Next: friction inside the direct solve; a start at rest tilted by atan(pitch / coil diameter) and pushed
over the edge; cost (one factorisation reused across active-set rounds by low-rank updates).

    python3 benchmarks/slinky.py --json      # last stdout line: one JSON object
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from solver import RodModel, Simulator  # noqa: E402
from solver import quaternion as quat  # noqa: E402
from solver.collision import Contacts  # noqa: E402
from solver.colliders import Box, Plane  # noqa: E402


def helix_along(axis_point, tangent, normal, coils: int, per_coil: int, coil_radius: float) -> np.ndarray:
    """Points of a helix wound about an axis curve given at every helix point: the axis point, its unit
    tangent and a unit normal (k, 3); the helix angle advances 2π/per_coil per point."""
    binormal = np.cross(tangent, normal)
    phi = 2.0 * np.pi * np.arange(coils * per_coil + 1) / per_coil
    return axis_point + coil_radius * (np.cos(phi)[:, None] * normal + np.sin(phi)[:, None] * binormal)


def segment_frames(points: np.ndarray, axis_points: np.ndarray):
    """Centres and orientations of the segments of a helix polyline, with one rule for every pose:
    local z along the wire, local x toward the helix axis. Rest and arched pose then share material
    frames, so their joint Darboux vectors differ only by the arch's bending."""
    t = points[1:] - points[:-1]
    t /= np.linalg.norm(t, axis=1)[:, None]
    mid = 0.5 * (points[1:] + points[:-1])
    inward = 0.5 * (axis_points[1:] + axis_points[:-1]) - mid
    x = inward - np.sum(inward * t, axis=1)[:, None] * t
    x /= np.linalg.norm(x, axis=1)[:, None]
    y = np.cross(t, x)
    return mid, quat.from_matrix(np.stack((x, y, t), axis=2))


def arch_axis(u: np.ndarray, x0: float, x1: float, z0: float, z1: float, lift: float):
    """Axis of the arched Slinky: from (x0, z0) going up, over, and down onto (x1, z1), in the xz plane.
    Returns points, unit tangents and unit normals (in-plane, toward the arch's inside) at u ∈ [0, 1]."""
    th = np.pi * u
    half = 0.5 * (x1 - x0)
    pts = np.stack((x0 + half * (1 - np.cos(th)), 0 * th, z0 + (z1 - z0) * u + lift * np.sin(th)), axis=1)
    tan = np.stack((half * np.pi * np.sin(th), 0 * th, (z1 - z0) + lift * np.pi * np.cos(th)), axis=1)
    tan /= np.linalg.norm(tan, axis=1)[:, None]
    nrm = np.cross(tan, [0.0, 1.0, 0.0])
    return pts, tan, nrm


def run(coils: int = 50, per_coil: int = 10, coil_radius: float = 0.035, wire_radius: float = 0.0007,
        steps_count: int = 5, rise: float = 0.06, run_m: float = 0.2, seconds: float = 10.0, dt: float = 0.01,
        iterations: int = 3, friction: float = 0.4, self_friction: float = 0.1, sweeps: int = 1, pre_sweeps: int = 0,
        lift: float = 0.12, damping: float = 0.2, start: str = "arch", youngs_modulus: float = 200e9,
        torsion_modulus: float = 80e9, density: float = 7850.0, max_colours: int = 32, response: str = "direct",
        self_contacts: str = "points", margin=None, verbose: bool = False) -> dict:
    n_pts = coils * per_coil + 1
    # Rest shape: coils stacked with a pitch of one wire diameter plus 2 % (they touch but do not overlap).
    pitch = 2.0 * wire_radius * 1.02
    u = np.arange(n_pts) / (n_pts - 1)
    rest_axis = np.stack((0 * u, 0 * u, u * pitch * coils), axis=1)
    z_hat = np.tile([0.0, 0.0, 1.0], (n_pts, 1))
    rest = helix_along(rest_axis, z_hat, np.tile([1.0, 0.0, 0.0], (n_pts, 1)), coils, per_coil, coil_radius)
    centres, frames = segment_frames(rest, rest_axis)
    joints = np.arange(n_pts - 2)
    model = RodModel.from_arrays(centres, frames, np.linalg.norm(np.diff(rest, axis=0), axis=1), wire_radius, density,
                                 joint_parent=joints, joint_child=joints + 1, youngs_modulus=youngs_modulus,
                                 torsion_modulus=torsion_modulus)
    # Initial pose: arched from the middle of the top step onto the middle of the next one.
    axis, tan, nrm = arch_axis(u, 0.5 * run_m, 1.5 * run_m, wire_radius, -rise + wire_radius, lift)
    arched_x, arched_q = segment_frames(helix_along(axis, tan, nrm, coils, per_coil, coil_radius), axis)

    stairs = [Box((k * run_m + 0.5 * run_m if k < steps_count else 0.5 * (k * run_m + 4.0), 0.0, -k * rise - 1.0),
                  (0.5 * run_m if k < steps_count else 0.5 * (4.0 - k * run_m), 1.0, 1.0)) for k in range(steps_count + 1)]
    floor_z = -steps_count * rise
    colliders = stairs + [Plane((0, 0, 1), floor_z - 1e-3)]
    sim = Simulator(model, dt=dt, max_iterations=iterations, tolerance=0.0, damping=damping)
    if start == "arch":
        sim.positions[:] = arched_x
        sim.orientations[:] = arched_q
    else:                                   # the stack standing on the top step
        sim.positions[:] = model.positions + [0.5 * run_m, 0.0, wire_radius * 1.01]
    contacts = Contacts(model, colliders, friction=friction, self_collision=True, self_friction=self_friction,
                        sweeps=sweeps, pre_sweeps=pre_sweeps, max_colours=max_colours,
                        response=response, self_contacts=self_contacts, margin=margin)
    sim.gs_constraints.append(contacts)

    def step_under(x):
        return int(np.clip(np.floor(x / run_m), 0, steps_count))

    n_steps = int(round(seconds / dt))
    worst = 0.0
    times = []
    lead = np.sign(sim.positions[-1, 0] - sim.positions[0, 0])
    flips = 0
    trail_step = []
    diverged_at = None
    for _ in range(n_steps):
        t0 = time.perf_counter()
        sim.step()
        times.append(time.perf_counter() - t0)
        self_gap, col_gap = contacts.surface_gaps(sim)
        worst = max(worst, -min(self_gap, col_gap, 0.0))
        ends_x = sim.positions[[0, -1], 0]
        new_lead = np.sign(ends_x[1] - ends_x[0])
        if new_lead != lead and new_lead != 0:
            flips += 1
            lead = new_lead
        trail_step.append(min(step_under(ends_x[0]), step_under(ends_x[1])))
        if verbose:
            print(f"t {sim.time:.2f} contacts {contacts.n_contacts} active {contacts.n_active} self_gap {self_gap*1e3:.4f} "
                  f"col_gap {col_gap*1e3:.4f} mm  ms {times[-1]*1e3:.0f}  ends_x {ends_x}", flush=True)
        if worst > 10.0 * wire_radius:          # coils have passed through each other: stop, report it
            diverged_at = sim.time
            trail_step.pop()                    # the exploded pose says nothing about the stairs
            break
    return {
        "stairs_descended": int(trail_step[-1]) if trail_step else 0,
        "max_penetration_m": worst,
        "wire_radius_m": wire_radius,
        "max_penetration_over_wire_radius": worst / wire_radius,
        "ms_per_step": 1e3 * float(np.median(times)),
        "end_flips": flips,
        "segments": model.n_segments,
        "dt_s": dt,
        "iterations": iterations,
        "seconds": seconds,
        "simulated_s": sim.time,
        "diverged_at_s": diverged_at,
        "contacts_last_step": contacts.n_contacts,
        "com_drop_m": float(-(sim.positions[:, 2].mean() - arched_x[:, 2].mean())),
        "target_met": bool(diverged_at is None and trail_step and trail_step[-1] >= 3 and worst <= 0.1 * wire_radius),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    result = run(seconds=args.seconds)
    if not args.json:
        for key, value in result.items():
            print(f"{key:32s} {value}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
