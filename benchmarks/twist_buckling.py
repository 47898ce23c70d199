"""Greenhill twist buckling: a straight rod (L = 1 m, r = 1 cm, E = 100 MPa, G = E/2.6, 40 segments, no gravity)
clamped at one end and held at the other by a rail (a clamp that slides along the rod's axis), whose anchor is
turned about the axis at a constant rate, so the rod is twisted with no axial force. A lateral load of 1e-4 N at
mid-span is the imperfection.

The straight rod becomes unstable at Greenhill's critical twisting moment; for clamped ends with free axial
sliding M_c = 2·4.4934·EI/L = 8.9868·EI/L = 2.861·π·EI/L, 4.4934 the first positive root of tan x = x
(Greenhill 1883; Timoshenko & Gere, Theory of Elastic Stability, 2nd ed. 1961, §2.18, built-in ends), i.e. at
the total twist φ_c = M_c L/(GJ) = 8.9868 (1 + ν) for a round section. Measured: below φ_c the mid-span
deflection under the imperfection load grows as w₀/(1 − (φ/φ_c)²) (Southwell), fitted on the part of the ramp
where it grew from 1.5 to 10 times its untwisted value; the twist at which it first reaches 1 cm; and the
shape the rod buckles into, when the deflection reaches 10 cm (before the rod, with no self-contact, passes
through itself): its writhe (Gauss integral of the centre line closed far along the axis), its twist (the sum
of the joints' twist angles) and Lk − (Tw + Wr) against the imposed linking number −φ/2π (Călugăreanu), and
the turning of the cross-axis displacement along the rod (a helix turns monotonically).

    python3 benchmarks/twist_buckling.py --json      # last stdout line: one JSON object
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _common  # noqa: E402

from solver import Simulator, rod_from_polyline  # noqa: E402
from solver.core import quaternion as quat  # noqa: E402

LENGTH, RADIUS, E, NU, DENSITY = 1.0, 0.01, 1e8, 0.3, 1000.0
G = E / (2.0 * (1.0 + NU))
TAN_ROOT = 4.493409457909064  # first positive root of tan x = x
GREENHILL_CLAMPED = 2.0 * TAN_ROOT  # M_c L / EI for clamped ends, free axial sliding
LOAD = 1e-4  # N, lateral imperfection at mid-span


def greenhill_twist(nu: float = NU) -> float:
    """φ_c = M_c L / (GJ) [rad]: with EI/GJ = E/(2G) = 1 + ν for a round section."""
    return GREENHILL_CLAMPED * (1.0 + nu)


def twisted_rod(n_segments: int = 40):
    """The rod: segment 0 the rail's anchor over [−l, 0], segments 1…n the rod over [0, L], segment n + 1 the
    clamp's anchor over [L, L + l]; the two end joints stand for half a segment each (as the cantilever's)."""
    seg = LENGTH / n_segments
    x = np.linspace(-seg, LENGTH + seg, n_segments + 3)
    model = rod_from_polyline(
        np.stack((x, 0 * x, 0 * x), 1), RADIUS, E, G, DENSITY, start="rail", start_axis=(0.0, 0.0, 1.0), end="clamp"
    )
    jl = model.joint_lengths.copy()
    jl[[0, -1]] = 0.5 * seg
    return model.copy_with(joint_lengths=jl)


def twist_driver(model, angle):
    """The kinematic driver: the rail's anchor turned by ``angle(t)`` [rad] about the rod's axis (+x)."""
    pins = np.flatnonzero(model.pinned)
    x0, q0 = model.positions[pins].copy(), model.orientations[pins].copy()

    def drive(t):
        a = angle(t)
        q = q0.copy()
        q[0] = quat.multiply(np.array([np.cos(a / 2), np.sin(a / 2), 0.0, 0.0]), q0[0])
        return x0, q

    return drive


def centre_line(sim) -> np.ndarray:
    """The rod's centre line: the joint points from the rail to the clamp (n + 1, 3)."""
    m = sim.model
    r = quat.to_matrix(sim.orientations[m.joint_child])
    return sim.positions[m.joint_child] + np.einsum("kij,kj->ki", r, m.joint_point_child)


def joint_twist(sim) -> np.ndarray:
    """Each joint's twist angle [rad]: the d3 component of the relative rotation's vector."""
    m = sim.model
    e = quat.multiply(
        quat.conjugate(quat.multiply(sim.orientations[m.joint_parent], m.rest_darboux)),
        sim.orientations[m.joint_child],
    )
    e *= np.where(e[:, :1] < 0.0, -1.0, 1.0)
    half = np.arctan2(np.linalg.norm(e[:, 1:], axis=1), e[:, 0])
    axis = e[:, 1:] / np.maximum(np.linalg.norm(e[:, 1:], axis=1), 1e-300)[:, None]
    return 2.0 * half * axis[:, 2]


def writhe(points: np.ndarray) -> float:
    """Writhe of a closed polygon (the exact segment–segment Gauss integral, Klenin & Langowski 2000)."""
    p = np.asarray(points, dtype=float)
    n = p.shape[0]
    a, b = p, np.roll(p, -1, axis=0)
    total = 0.0
    for i in range(n):
        j = np.arange(i + 2, n) if i > 0 else np.arange(2, n - 1)
        if j.size == 0:
            continue
        p1, p2 = a[i], b[i]
        p3, p4 = a[j], b[j]
        r13, r14, r23, r24 = p3 - p1, p4 - p1, p3 - p2, p4 - p2
        n1 = np.cross(r13, r14)
        n2 = np.cross(r14, r24)
        n3 = np.cross(r24, r23)
        n4 = np.cross(r23, r13)
        ns = [v / np.maximum(np.linalg.norm(v, axis=1), 1e-300)[:, None] for v in (n1, n2, n3, n4)]
        omega = sum(
            np.arcsin(np.clip(np.sum(u * v, axis=1), -1.0, 1.0)) for u, v in zip(ns, ns[1:] + ns[:1], strict=True)
        )
        sign = np.sign(np.einsum("kj,kj->k", np.cross(p4 - p3, np.broadcast_to(p2 - p1, p4.shape)), r13))
        total += float(np.sum(omega * sign))
    return 2.0 * total / (4.0 * np.pi)


def closed_writhe(line: np.ndarray, far: float = 1e3) -> float:
    """Writhe of the open centre line closed by straight lines along the axis (±x) to ``far`` [m] and a
    rectangle there (its share vanishes as ``far`` grows)."""
    x0, x1 = line[0], line[-1]
    out = np.array([[x1[0] + far, x1[1], x1[2]], [x1[0] + far, far, 0.0], [x0[0] - far, far, 0.0]])
    back = np.array([[x0[0] - far, x0[1], x0[2]]])
    return writhe(np.concatenate((line, out, back)))


def helix_measures(sim, phi: float) -> dict:
    """The shape at the total twist ``phi``: writhe, twist, Lk − (Tw + Wr) in turns, the turning of the
    cross-axis displacement along the rod, the largest deflection and how far the rail's end slid in."""
    line = centre_line(sim)
    # along the line (rail to clamp) the frame turns from +φ back to 0: the imposed linking number is −φ/2π
    tw = float(np.sum(joint_twist(sim)) / (2 * np.pi))
    wr = closed_writhe(line)
    lk = -phi / (2 * np.pi)
    inner = slice(3, -3)  # the cross-axis displacement vanishes at the clamps: its angle is defined inside
    turn = np.unwrap(np.arctan2(line[inner, 2], line[inner, 1]))
    return {
        "linking_turns_imposed": lk,
        "twist_turns": tw,
        "writhe_turns": wr,
        "lk_minus_tw_plus_wr": lk - (tw + wr),
        "max_deflection_m": float(np.max(np.hypot(line[:, 1], line[:, 2]))),
        "end_slide_m": float(LENGTH - (line[-1, 0] - line[0, 0])),
        "helix_turns_along_rod": float((turn[-1] - turn[0]) / (2 * np.pi)),
        "helix_monotonic": bool(np.all(np.diff(turn) > 0) or np.all(np.diff(turn) < 0)),
    }


def run(n_segments: int = 40, rate: float = 0.25, dt: float = 1 / 240, shape_at: float = 0.1) -> dict:
    """Settle 1 s under the imperfection load, then twist at ``rate`` [rad/s] until the mid-span deflection is
    ``shape_at`` [m] (module docstring)."""
    model = twisted_rod(n_segments)
    phi_g = greenhill_twist()
    settle = 1.0
    sim = Simulator(
        model, dt=dt, max_iterations=10, tolerance=1e-10, gravity=(0.0, 0.0, 0.0),
        kinematic=twist_driver(model, lambda t: rate * max(t - settle, 0.0)),
    )  # fmt: skip
    mid = n_segments // 2 + 1  # segment next to mid-span (index 0 is the anchor)
    sim.forces[mid] = (0.0, LOAD, 0.0)
    for _ in range(int(round(settle / dt))):
        sim.step()
    w0 = float(np.max(np.hypot(*centre_line(sim)[:, 1:].T)))
    steps = int(round(2.0 * phi_g / rate / dt))
    phi = np.zeros(steps)
    deflection = np.zeros(steps)
    start = time.process_time()
    for k in range(steps):
        sim.step()
        phi[k] = rate * (sim.time - settle)
        deflection[k] = np.max(np.hypot(*centre_line(sim)[:, 1:].T))
        if deflection[k] > shape_at:
            break
    cpu = time.process_time() - start
    shape = helix_measures(sim, phi[k])
    phi, deflection = phi[: k + 1], deflection[: k + 1]
    # Southwell: w (1 − φ²/φ_c²) = w₀, i.e. w = w₀ + (w φ²)/φ_c², linear in w φ², fitted where w grew 1.5…10×
    fit = (deflection > 1.5 * w0) & (deflection < 10.0 * w0)
    slope, intercept = np.polyfit(deflection[fit] * phi[fit] ** 2, deflection[fit], 1)
    phi_southwell = float(1.0 / np.sqrt(slope))
    reached = np.flatnonzero(deflection > 0.01 * LENGTH)
    phi_1cm = float(phi[reached[0]]) if reached.size else float("nan")
    return {
        "n_segments": n_segments,
        "dt_s": dt,
        "twist_rate_rad_s": rate,
        "greenhill_critical_twist_rad": phi_g,
        "critical_twist_southwell_rad": phi_southwell,
        "southwell_rel_error": phi_southwell / phi_g - 1.0,
        "southwell_points": int(np.sum(fit)),
        "southwell_w0_fit_over_settled": float(intercept / w0),
        # the twisting moment there, GJ sin(θ)/l at an interior joint (twist θ = φ l/L, J = 2I), over Greenhill's M_c
        "critical_moment_southwell_rel_error": float(
            2.0 * G * np.sin(phi_southwell / n_segments) * n_segments / (E * GREENHILL_CLAMPED) - 1.0
        ),
        "twist_at_1cm_deflection_rad": phi_1cm,
        "twist_at_1cm_rel_error": phi_1cm / phi_g - 1.0,
        "shape_twist_rad": float(phi[-1]),
        **shape,
        "cpu_s_ramp": cpu,
        "compiled": sim.compiled,
    }


def main() -> None:
    args = _common.arguments(__doc__).parse_args()
    _common.report(run(), args.json)


if __name__ == "__main__":
    main()
