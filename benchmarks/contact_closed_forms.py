"""Contact with Coulomb friction against the closed forms of mechanics.

Inclined plane: a rod (0.2 m, r = 1 cm, 5 segments) along the fall line of a plane tilted by θ, μ = 0.5
(tan θ = μ at 26.6°), released at rest, Δt = 1/200 s. Below the cone (θ = 20°) it must stick: creep of
the centre of mass ≤ 1 mm in 2 s. Above (θ = 35°, 60°) it slides with a = g (sin θ − μ cos θ): the
acceleration is the quadratic fit of the slide distance over 0.1–0.4 s (within 2 %).

Capstan: a rope (r = 3 mm, nylon-like 1150 kg/m³, E = 1 MPa, straight rest shape) wrapped by θ ∈ {π/2, π,
2π} (a helix of pitch 4 r, so the turns of 2π do not touch) around a fixed cylinder (Capsule collider,
R = 5 cm, axis y) with μ ∈ {0.2, 0.5}; its two straight ends (0.2 m) carry end blocks (segments of 1 kg
and m₁) pulled along the ends' tangents by m g (no gravity on the rope itself). It must hold while
m₁/m₂ ≤ e^{μθ} (run at 0.8 e^{μθ}: creep of the load end ≤ 1 mm in 2 s) and slide beyond (run at
1.25 e^{μθ}): the load end's acceleration, fitted over 0.1–0.4 s, within 5 % of

    a = (F₁ − F₂ e^{μθ}) / (m₁ + ρ₁ + (m₂ + ρ₂) e^{μθ} + λ R (e^{μθ} − 1)/μ),

the two end blocks with the rope's own mass: ρᵢ the straight parts' segments, λ R (e^{μθ} − 1)/μ the
wrapped part (from dT/dφ = μ T + λ R a along the arc; the centripetal λ v² is below 1 % here).

Frictionless drape: the capstan's rope (θ = π) over the same cylinder with μ = 0 and equal end blocks (1 kg): a
neutral equilibrium. It must stay (slide ≤ 1 mm), gain no energy (kinetic energy minus the end loads' work,
largest rise over a step), and stay out of the cylinder by the exact capsule distance (≤ 0.05 r deep).

Crossing rods: two clamped–clamped beams (span 1 m, 41 segments, E = 0.1 GPa, r_A = 6 mm, r_B = 5 mm, one end
of each on a rail along the rod so bending pulls no axial force) cross at their middles, A on B, frictionless, no
gravity; a load P = 0.1 N at A's middle presses A onto B. At rest, the contact force Σλ_n/Δt² and both middles'
deflections against Euler–Bernoulli with k = 192 E I / L³: F = P k_B / (k_A + k_B), δ_A = δ_B = F / k_B (within
2 %; the single beam's own discretisation error is reported beside them). At n = 41 and 51 segments, run for 2 s
(1 s with ``--quick``): both rods' whole deflected shapes against the beams under F and P − F,
``shape_error_over_L`` = max |z − z_beam| / L (target ≤ ``single_beam_shape_error_over_L`` + 2e-4, the single beam
B under P against its own beam solution), and ``contact_drift_elements``, the contact point's largest sideways
move in elements (target ≤ 0.01). Measured (schur, smooth centrelines): 6.9e-6 and 4.4e-6 (single beam 2.2e-5,
1.4e-5), drift 1.6e-5 and 2.0e-5 elements.

``--method`` runs everything with that ``Contacts(method=)`` (default ``schur``: a QP with the Coulomb disks on the
contact Schur complement per Newton iteration, Coulomb's bound by Newton's method, the joints' step with their
geometric stiffness, which meets the 12 capstan targets with none of the ``--quick`` steps at the cap,
docs/notes/contacts.md; ``gauss_seidel``, ``active_set``, ``semismooth``).

Every run and the whole report: ``cap_share`` (steps that hit the iteration cap, ≤ 1 %), ``median_iterations``
(over every step of every run), ``xpbd_fraction`` (steps the schur method solved with XPBD's iteration), largest
iterations per step, deepest penetration over the radius, and the contact report of the steps (sticking/sliding
counts, unconverged steps), from ``Contacts.reports``.

    python3 benchmarks/contact_closed_forms.py --json      # last stdout line: one JSON object
    python3 benchmarks/contact_closed_forms.py --quick     # 0.5 s holds instead of 2 s
    python3 benchmarks/contact_closed_forms.py --quick --method semismooth
    python3 benchmarks/contact_closed_forms.py --method schur
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

# one BLAS thread, before numpy loads its pool: the schur method's dense Cholesky factorisations of a few hundred rows
# ran 50–75 times slower with threads on a shared, loaded machine
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _common  # noqa: E402

from solver import Capsule, Contacts, Plane, RodModel, Simulator, rod_from_polyline  # noqa: E402
from solver.contact import SchurOptions, SemismoothOptions  # noqa: E402
from solver.contact.solvers import method_options  # noqa: E402
from solver.core import quaternion as quat  # noqa: E402

G = 9.81
MAX_ITERATIONS = 50
TOLERANCE = 1e-6


def contact_stats(contacts: Contacts, radius: float) -> dict:
    """Per-step statistics of ``contacts.reports``: steps, steps at the iteration cap, unconverged steps, median and
    largest Newton iterations, the median of the steps' last residuals [m], the deepest penetration the rows saw
    over ``radius``, the most sticking and sliding rows in a step, the steps the schur method solved with XPBD's
    iteration (its Newton matrix indefinite, or half the iterations unconverged: ``ContactReport.xpbd``)."""
    reps = contacts.reports
    its = np.array([r.iterations for r in reps])
    return dict(
        steps=len(reps),
        cap_steps=int(sum(r.hit_cap for r in reps)),
        unconverged=int(sum(not r.converged for r in reps)),
        median_iterations=float(np.median(its)) if its.size else 0.0,
        max_iterations=int(its.max(initial=0)),
        residual_median_m=float(np.median([r.residual for r in reps])) if reps else 0.0,
        penetration_r=float(max((r.max_penetration for r in reps), default=0.0) / radius),
        sticking_max=int(max((r.sticking for r in reps), default=0)),
        sliding_max=int(max((r.sliding for r in reps), default=0)),
        xpbd_steps=int(sum(r.xpbd for r in reps)),
        cap_share=float(np.mean([r.hit_cap for r in reps])) if reps else 0.0,
        xpbd_fraction=float(np.mean([r.xpbd for r in reps])) if reps else 0.0,
        iterations=its.tolist(),  # every step's, for the median over all runs (``run_all`` keeps only that)
    )


def _accel(t: np.ndarray, s: np.ndarray, t0: float = 0.1, t1: float = 0.4) -> float:
    """Acceleration [m/s²] of a quadratic least-squares fit of s(t) over [t0, t1]."""
    w = (t >= t0 - 1e-12) & (t <= t1 + 1e-12)
    return float(2.0 * np.polyfit(t[w], s[w], 2)[0])


def _advance(sim, steps: int, t: np.ndarray, s: np.ndarray, measure) -> str:
    """Step ``sim`` ``steps`` times, recording time and ``measure()`` in ``t``/``s``; returns "" or, if a step
    failed (a singular solve, a non-finite state), the error, with the rest of ``s`` NaN."""
    for i in range(steps):
        try:
            sim.step()
        except (FloatingPointError, np.linalg.LinAlgError, RuntimeError) as exc:
            s[i + 1 :] = np.nan
            return f"step {i + 1}: {exc}"[:160]
        t[i + 1], s[i + 1] = sim.time, measure()
    return ""


def incline(degrees: float, mu: float = 0.5, seconds: float = 2.0, dt: float = 1 / 200, method="active_set") -> dict:
    """A rod on an inclined plane; returns the slide s(t) [m] of its centre of mass, the fitted
    acceleration, the analytic one (0 when it sticks) and the contact statistics. ``method``: the contacts'
    solver (``Contacts(method=)``: a name or options; here and below)."""
    th = np.radians(degrees)
    r = 0.01
    down = np.array([np.cos(th), 0.0, -np.sin(th)])
    normal = np.array([np.sin(th), 0.0, np.cos(th)])
    pts = np.linspace(0, 0.2, 6)[:, None] * down + r * normal
    model = rod_from_polyline(pts, r, 1e9)
    sim = Simulator(model, dt=dt, max_iterations=MAX_ITERATIONS, tolerance=TOLERANCE)
    contacts = Contacts(model, [Plane(normal, 0.0)], friction=mu, method=method)
    sim.gs_constraints.append(contacts)
    x0 = sim.positions.mean(axis=0)
    steps = int(round(seconds / dt))
    t, s = np.zeros(steps + 1), np.zeros(steps + 1)
    failed = _advance(sim, steps, t, s, lambda: (sim.positions.mean(axis=0) - x0) @ down)
    analytic = max(G * (np.sin(th) - mu * np.cos(th)), 0.0)
    out = dict(degrees=degrees, mu=mu, analytic=float(analytic), slide=float(s[-1]), failed=failed)
    if analytic > 0.0 and not failed:
        out["accel"] = _accel(t, s)
        out["error"] = out["accel"] / analytic - 1.0
    return out | contact_stats(contacts, r)


def capstan_rope(
    wrap: float, r: float = 0.003, cyl: float = 0.05, straight: float = 0.2, block: float = 1.0, joints: bool = False
):
    """Polyline of the rope: straight end 1 (load), the helix over the cylinder's top, straight end 2 (hold);
    returns the points, the two ends' outward unit tangents and the segments' counts (end 1, arc, end 2).
    ``joints``: the joint points touch the cylinder (the semismooth method's rows), else the chords' middles."""
    pitch = 4.0 * r / (2.0 * np.pi)  # y per radian
    n_arc = max(int(np.ceil(wrap / 0.1)), 4)
    phi = np.linspace(-wrap / 2, wrap / 2, n_arc + 1)
    # Touching where the method's rows are: the active set has rows at the chords' middles, and vertices on R + r
    # put every middle R(1 − cos(Δφ/2)) ≈ 0.02 r into the cylinder, which the inextensible rope cannot leave
    # without pulling its ends round (hundreds of newtons in the first steps); the semismooth method has rows at
    # the joint points only, and joints 0.02 r off the surface cannot close onto it while friction holds the rope
    rr = (cyl + r) if joints else (cyl + r) / np.cos(0.5 * (phi[1] - phi[0]))
    arc = np.stack((rr * np.sin(phi), pitch * phi, rr * np.cos(phi)), axis=1)
    # the helix's tangent d(arc)/dφ where the rope leaves it: the straight ends continue it without a kink (a kink
    # of the axial slope, pitch/R against pitch, pushed the rows where the rope leaves along the cylinder's axis)
    t_hi = np.array([rr * np.cos(phi[-1]), pitch, -rr * np.sin(phi[-1])])  # leaving at +θ/2 (load side)
    t_lo = -np.array([rr * np.cos(phi[0]), pitch, -rr * np.sin(phi[0])])  # leaving at −θ/2 (hold side)
    t_hi, t_lo = t_hi / np.linalg.norm(t_hi), t_lo / np.linalg.norm(t_lo)
    n_st = int(round(straight / 0.02))
    s = np.linspace(0.0, straight, n_st + 1)[1:]
    end1 = arc[-1] + s[:, None] * t_hi
    end2 = arc[0] + s[:, None] * t_lo
    pts = np.vstack((end1[::-1], arc[::-1], end2))
    return pts, t_hi, t_lo, (n_st, n_arc, n_st)


def _joint_point_rows(method) -> bool:
    """Whether ``method``'s rows are one per joint point against a collider (the Newton methods)."""
    return isinstance(method_options(method), (SemismoothOptions, SchurOptions))


def _capstan_scene(wrap: float, mu: float, m1: float, m2: float, dt: float, method="active_set"):
    """The rope of :func:`capstan_rope` over the cylinder with end blocks m1 (load) and m2 (hold) pulled along the
    ends' tangents by their weights; returns the simulator, its contacts, the model and the tangents and counts."""
    r, cyl, density = 0.003, 0.05, 1150.0
    pts, t1, t2, counts = capstan_rope(wrap, r, cyl, joints=_joint_point_rows(method))
    model = rod_from_polyline(pts, r, 1e6, density=density, rest="straight")
    dens = model.densities.copy()
    vol = model.masses / model.densities
    dens[0], dens[-1] = m1 / vol[0], m2 / vol[-1]
    model = model.copy_with(densities=dens)
    sim = Simulator(model, dt=dt, max_iterations=MAX_ITERATIONS, tolerance=TOLERANCE, gravity=(0.0, 0.0, 0.0))
    sim.forces[0] = m1 * G * t1
    sim.forces[-1] = m2 * G * t2
    cylinder = Capsule((0.0, -0.3, 0.0), (0.0, 0.3, 0.0), cyl, friction=mu)
    contacts = Contacts(model, [cylinder], friction=mu, method=method)
    sim.gs_constraints.append(contacts)
    return sim, contacts, model, t1, counts


def drape(seconds: float = 0.5, dt: float = 1 / 200, method="active_set") -> dict:
    """The frictionless rope over the cylinder (θ = π, equal 1 kg end blocks): the load end's slide [m], the largest
    rise of kinetic energy minus the end loads' work over a step [J], the deepest exact surface overlap over the
    radius, and the contact statistics."""
    r = 0.003
    sim, contacts, model, t1, _ = _capstan_scene(np.pi, 0.0, 1.0, 1.0, dt, method)
    x0 = sim.positions[0].copy()
    steps = int(round(seconds / dt))
    t, s = np.zeros(steps + 1), np.zeros(steps + 1)
    energy, deepest = [sim.kinetic_energy() - float(np.sum(sim.forces * sim.positions))], 0.0

    def measure():
        nonlocal deepest
        energy.append(sim.kinetic_energy() - float(np.sum(sim.forces * sim.positions)))
        deepest = max(deepest, -contacts.surface_gaps(sim)[1])
        return (sim.positions[0] - x0) @ t1

    failed = _advance(sim, steps, t, s, measure)
    rise = float(np.max(np.diff(energy), initial=0.0))
    out = dict(slide=float(s[-1]), energy_rise=rise, overlap_r=float(deepest / r), failed=failed)
    return out | contact_stats(contacts, r)


def capstan(
    mu: float,
    wrap: float,
    ratio: float,
    seconds: float = 2.0,
    dt: float = 1 / 200,
    method="active_set",
    block: float = 1.0,
) -> dict:
    """The capstan with m₁ = ratio · e^{μθ} · m₂ (m₂ = ``block`` kg); returns the load end's slide s(t) along its
    tangent, the fitted acceleration, the analytic one (0 when it holds) and the contact statistics."""
    r, cyl, density = 0.003, 0.05, 1150.0
    e = np.exp(mu * wrap)
    m2 = float(block)
    m1 = ratio * e * m2
    sim, contacts, model, t1, (n1, n_arc, n2) = _capstan_scene(wrap, mu, m1, m2, dt, method)
    x0 = sim.positions[0].copy()
    steps = int(round(seconds / dt))
    t, s = np.zeros(steps + 1), np.zeros(steps + 1)
    failed = _advance(sim, steps, t, s, lambda: (sim.positions[0] - x0) @ t1)
    masses = model.masses
    rho1, rho2 = masses[1:n1].sum(), masses[-n2:-1].sum()
    lam = density * np.pi * r * r
    inertia = m1 + rho1 + (m2 + rho2) * e + lam * (cyl + r) * (e - 1.0) / mu
    analytic = max((m1 * G - m2 * G * e) / inertia, 0.0)
    out = dict(mu=mu, wrap=float(wrap), ratio=ratio, analytic=float(analytic), slide=float(s[-1]), failed=failed)
    if analytic > 0.0 and not failed:
        out["accel"] = _accel(t, s)
        out["error"] = out["accel"] / analytic - 1.0
    return out | contact_stats(contacts, r)


def clamped_beam(axis, centre, length: float, n: int, r: float, youngs_modulus: float, density: float = 1000.0):
    """A straight rod of ``n`` segments (n odd: a segment's centre at the span's middle) over ``length`` along
    ``axis`` about ``centre``, clamped at one end and clamped on a rail along the rod at the other (so bending
    pulls no axial force, which an inextensible rod between two fixed clamps would carry): the clamped–clamped
    beam, k = 192 E I / L³ at its middle. Two anchor segments outside the span; the end joints stand for half a
    segment (midpoint rule, as ``solver.build.scenes.cantilever``)."""
    seg = length / n
    s = np.linspace(-0.5 * length - seg, 0.5 * length + seg, n + 3)
    pts = np.asarray(centre, float) + s[:, None] * np.asarray(axis, float)
    model = rod_from_polyline(pts, r, youngs_modulus, density=density, start="clamp", end="rail")
    jl = model.joint_lengths.copy()
    jl[0] = jl[-1] = 0.5 * seg
    return model.copy_with(joint_lengths=jl)


def join_rods(*parts) -> RodModel:
    """One model of several rods (each keeps its own joints, kinds and anchors)."""
    offsets = np.cumsum([0] + [p.n_segments for p in parts])[:-1]
    joints = [p.input_joint_arrays() for p in parts]
    shifted = ("joint_parent", "joint_child")
    arrays = {
        k: np.concatenate([j[k] + (o if k in shifted else 0) for j, o in zip(joints, offsets, strict=True)])
        for k in joints[0]
    }

    def cat(name):
        return np.concatenate([getattr(p, name) for p in parts])

    fields = ("positions", "orientations", "lengths", "radii", "densities")
    return RodModel.from_arrays(*(cat(f) for f in fields), pinned=cat("pinned"), **arrays)


def beam_sag(x, span: float, load: float, youngs_modulus: float, radius: float):
    """Deflection [m] of a clamped–clamped beam (I = π r⁴ / 4) under a point load at its middle, at x [m] from a
    clamp: w = P ξ² (3 L − 4 ξ) / (48 E I), ξ = min(x, L − x) (Euler–Bernoulli; P L³ / (192 E I) at the middle)."""
    xi = np.minimum(x, span - x)
    return load * xi**2 * (3.0 * span - 4.0 * xi) / (48.0 * youngs_modulus * np.pi * radius**4 / 4.0)


def _shape_error(sag, first: int, n: int, span: float, load: float, youngs_modulus: float, radius: float) -> float:
    """max |z − z_beam| / L over the n span segments of a :func:`clamped_beam` whose first segment is ``first``
    (its anchor), at their centres ((k − ½) L / n from the clamp)."""
    x = (np.arange(1, n + 1) - 0.5) * span / n
    return float(
        np.max(np.abs(sag[first + 1 : first + n + 1] - beam_sag(x, span, load, youngs_modulus, radius))) / span
    )


def _contact_point(sim, contacts) -> np.ndarray | None:
    """The contact point [m] (3,) of the step's active rows, λ_n-weighted (each row's a side at its axis coordinate);
    None without contact."""
    rows = contacts.rows
    act = rows.normal_impulse > 0.0
    if not act.any():
        return None
    seg, z, lam = rows.sa[act], rows.za[act], rows.normal_impulse[act]
    axis = quat.rotate(sim.orientations[seg], np.tile([0.0, 0.0, 1.0], (seg.size, 1)))
    return lam @ (sim.positions[seg] + z[:, None] * axis) / lam.sum()


def _settle(model, loaded, load: float, dt: float, contacts=None, seconds=None):
    """Load ``loaded`` by P ramped over 0.2 s (mass-proportional damping 40/s, no gravity) and run to rest, or for
    ``seconds`` [s]; returns the simulator, the deflections z₀ − z [m], the error ("" if none) and the largest
    sideways distance [m] of the contact point (:func:`_contact_point`) from where it started (the origin)."""
    sim = Simulator(model, dt=dt, max_iterations=MAX_ITERATIONS, tolerance=TOLERANCE, gravity=(0, 0, 0))
    sim.damping = 40.0
    if contacts is not None:
        sim.gs_constraints.append(contacts)
    z0 = sim.positions[:, 2].copy()
    failed, drift = "", 0.0
    for _ in range(int(round((2.0 if seconds is None else seconds) / dt))):
        sim.forces[loaded] = (0.0, 0.0, -load * min(1.0, sim.time / 0.2))
        failed = _advance(sim, 1, np.zeros(2), np.zeros(2), lambda: 0.0)
        point = None if contacts is None or failed else _contact_point(sim, contacts)
        if point is not None:
            drift = max(drift, float(np.max(np.abs(point[:2]))))
        if failed or (seconds is None and sim.time > 0.4 and sim.kinetic_energy() < 1e-14):
            break
    return sim, z0 - sim.positions[:, 2], failed, drift


def crossing(  # noqa: PLR0913 (the scene's parameters)
    n: int = 41,
    radius_a: float = 0.006,
    radius_b: float = 0.005,
    youngs_modulus: float = 1e8,
    load: float = 0.1,
    span: float = 1.0,
    dt: float = 1 / 200,
    method="active_set",
    seconds=None,
) -> dict:
    """Two crossing clamped–clamped beams (:func:`clamped_beam`, span 1 m, n segments, E = 0.1 GPa): B along x, A
    along y on top of it, touching at both middles, frictionless, no gravity; a load P at A's middle (ramped over
    0.2 s, mass-proportional damping 40/s) presses A onto B. Run to rest (or for ``seconds``); returns the contact
    force F = Σλ_n / Δt² and the two middles' deflections, against the Euler–Bernoulli springs k = 192 E I / L³
    (I = π r⁴ / 4): F = P k_B / (k_A + k_B), δ_A = δ_B = F / k_B; both rods' whole shapes against the beams under
    F and P − F (:func:`beam_sag`, ``shape_error_over_L``), the single beam B under P (the discretisation's own
    error, ``single_beam_error`` at the middle and ``single_beam_shape_error_over_L``), the contact point's largest
    sideways drift in elements (``contact_drift_elements``); and the contact statistics."""
    beam_b = clamped_beam((1.0, 0.0, 0.0), (0.0, 0.0, 0.0), span, n, radius_b, youngs_modulus)
    beam_a = clamped_beam((0.0, 1.0, 0.0), (0.0, 0.0, radius_a + radius_b), span, n, radius_a, youngs_modulus)
    mid_b = beam_b.n_segments // 2
    k_a, k_b = (192.0 * youngs_modulus * np.pi * r**4 / 4.0 / span**3 for r in (radius_a, radius_b))
    force = load * k_b / (k_a + k_b)
    _, alone, _, _ = _settle(beam_b, mid_b, load, dt)
    model = join_rods(beam_b, beam_a)
    mid_a = beam_b.n_segments + beam_a.n_segments // 2
    contacts = Contacts(model, friction=0.0, self_collision=True, method=method)
    sim, sag, failed, drift = _settle(model, mid_a, load, dt, contacts, seconds)
    measured = float(contacts.normal_impulse.sum() / sim.dt**2)
    shape = (
        _shape_error(sag, 0, n, span, force, youngs_modulus, radius_b),
        _shape_error(sag, beam_b.n_segments, n, span, load - force, youngs_modulus, radius_a),
    )
    out = dict(
        n=n,
        load=load,
        force=measured,
        force_analytic=float(force),
        force_error=measured / force - 1.0,
        deflection_a=float(sag[mid_a]),
        deflection_b=float(sag[mid_b]),
        deflection_analytic=float(force / k_b),
        deflection_a_error=float(sag[mid_a] * k_b / force - 1.0),
        deflection_b_error=float(sag[mid_b] * k_b / force - 1.0),
        single_beam_error=float(alone[mid_b] * k_b / load - 1.0),
        shape_error_over_L=max(shape),
        single_beam_shape_error_over_L=_shape_error(alone, 0, n, span, load, youngs_modulus, radius_b),
        contact_drift_elements=drift * n / span,  # over ``time``
        time=float(sim.time),
        failed=failed,
    )
    return out | contact_stats(contacts, radius_b)


def _worst(values) -> float:
    """The largest value, NaN (a failed run) counting as infinite."""
    return float(max((v if np.isfinite(v) else np.inf for v in values), default=0.0))


def slides_of(runs, kind: str):
    return [(k, r) for k, r in runs if k == kind and r["analytic"] > 0.0]


def run_all(hold_seconds: float = 2.0, method: str = "schur") -> dict:
    runs = []
    opt = dict(method=method)
    for deg in (20.0, 35.0, 60.0):
        runs.append(("incline", incline(deg, seconds=hold_seconds if deg < 26.0 else 0.4, **opt)))
    for mu in (0.2, 0.5):
        for wrap in (np.pi / 2, np.pi, 2 * np.pi):
            runs.append(("capstan", capstan(mu, wrap, 0.8, seconds=hold_seconds, **opt)))
            runs.append(("capstan", capstan(mu, wrap, 1.25, seconds=0.4, **opt)))
    draped = drape(min(hold_seconds, 0.5), **opt)
    drift_seconds = 2.0 if hold_seconds >= 2.0 else 1.0  # the contact's drift over 2 s (1 s in --quick)
    crossed = {f"crossing_{n}": crossing(n, method=method, seconds=drift_seconds) for n in (41, 51)}
    every = [r for _, r in runs] + [draped, *crossed.values()]
    its = np.concatenate([r.pop("iterations") for r in every])
    steps = max(its.size, 1)
    holds = [r for _, r in runs if r["analytic"] == 0.0]
    slides = [r for _, r in runs if r["analytic"] > 0.0]
    return dict(
        method=method,
        runs=[dict(kind=k) | r for k, r in runs],
        drape=draped,
        **crossed,
        failed_runs=sum(bool(r["failed"]) for r in every),
        worst_creep_m=_worst(abs(r["slide"]) for r in holds),
        worst_incline_error=_worst(abs(r.get("error", np.nan)) for k, r in slides_of(runs, "incline")),
        worst_capstan_error=_worst(abs(r.get("error", np.nan)) for k, r in slides_of(runs, "capstan")),
        worst_crossing_shape_error_over_L=_worst(r["shape_error_over_L"] for r in crossed.values()),
        worst_contact_drift_elements=_worst(r["contact_drift_elements"] for r in crossed.values()),
        cap_share=sum(r["cap_steps"] for r in every) / steps,
        xpbd_fraction=sum(r["xpbd_steps"] for r in every) / steps,
        unconverged_share=sum(r["unconverged"] for r in every) / steps,
        median_iterations=float(np.median(its)) if its.size else 0.0,
        worst_penetration_r=max(r["penetration_r"] for _, r in runs),
        n_slides=len(slides),
    )


def _finite(value):
    """``value`` with every NaN or infinite float (a failed run) as None, so the JSON is strict."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def _number(value) -> float:
    return float("nan") if value is None else float(value)


def main() -> None:
    ap = _common.arguments(__doc__)
    ap.add_argument("--quick", action="store_true", help="0.5 s holds instead of 2 s")
    ap.add_argument(
        "--method",
        choices=("schur", "gauss_seidel", "active_set", "semismooth"),
        default="schur",
        help="Contacts(method=)",
    )
    args = ap.parse_args()
    logging.getLogger("solver.contact").setLevel(logging.ERROR)  # counted in the result instead
    start = time.process_time()
    result = run_all(0.5 if args.quick else 2.0, args.method)
    result["cpu_s"] = round(time.process_time() - start, 1)
    result = _finite(result)

    def summary():
        for r in result["runs"]:
            what = f"{r['kind']:8s} " + (
                f"θ={r['degrees']:4.0f}°" if r["kind"] == "incline" else f"μ={r['mu']} θ={r['wrap']:.2f} x{r['ratio']}"
            )
            fit = f" a={r['accel']:.4f} vs {r['analytic']:.4f} ({100 * r['error']:+.2f} %)" if "accel" in r else ""
            fit += f" FAILED {r['failed']}" if r["failed"] else ""
            yield (
                f"{what:32s} slide {1e3 * _number(r['slide']):9.3f} mm{fit}  cap {r['cap_steps']}/{r['steps']}"
                f"  median it {r['median_iterations']:.0f}  pen {r['penetration_r']:.3f} r"
                f"  stick/slide {r['sticking_max']}/{r['sliding_max']}"
            )
        d = result["drape"]
        yield (
            f"{'drape    μ=0 θ=3.14 x1':32s} slide {1e3 * _number(d['slide']):9.3f} mm  energy rise "
            f"{_number(d['energy_rise']):.2e} J  overlap {_number(d['overlap_r']):.3f} r  cap {d['cap_steps']}/"
            f"{d['steps']}  median it {d['median_iterations']:.0f}" + (f" FAILED {d['failed']}" if d["failed"] else "")
        )
        crossings = [k for k in result if k.startswith("crossing_")]
        for c in (result[k] for k in crossings):
            yield (
                f"{'crossing n=' + str(c['n']) + ' P=' + str(c['load']) + ' N':32s} F {c['force']:.5f} vs "
                f"{c['force_analytic']:.5f} N ({100 * _number(c['force_error']):+.3f} %)  δ_A "
                f"{100 * _number(c['deflection_a_error']):+.3f} %  δ_B {100 * _number(c['deflection_b_error']):+.3f} %"
                f"  single beam {100 * c['single_beam_error']:+.3f} %  shape/L {_number(c['shape_error_over_L']):.2e}"
                f" (single beam {c['single_beam_shape_error_over_L']:.2e})  drift "
                f"{_number(c['contact_drift_elements']):.4f} el  cap {c['cap_steps']}/{c['steps']}  median it "
                f"{c['median_iterations']:.0f}  xpbd {c['xpbd_steps']}"
                + (f" FAILED {c['failed']}" if c["failed"] else "")
            )
        for key in (k for k in result if k not in ["runs", "drape", *crossings]):
            yield f"{key:>33}: {result[key]}"

    _common.report(result, args.json, summary=summary())


if __name__ == "__main__":
    main()
