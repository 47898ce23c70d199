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

``--method semismooth`` or ``--method schur`` runs everything with that ``Contacts(direct_method=)`` (default: the
active set; ``schur``: a box QP on the contact Schur complement per Newton iteration, the method that meets the
capstan's targets, docs/notes/contacts.md).

Over all runs: steps that hit the iteration cap (≤ 1 %), median and largest iterations per step, deepest
penetration over the radius, and the contact report of the steps (sticking/sliding counts, unconverged
steps), from ``Contacts.reports``.

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

from solver import Capsule, Contacts, Plane, Simulator, rod_from_polyline  # noqa: E402

G = 9.81
MAX_ITERATIONS = 50
TOLERANCE = 1e-6


def _stats(contacts: Contacts, radius: float) -> dict:
    reps = contacts.reports
    its = np.array([r.iterations for r in reps])
    return dict(
        steps=len(reps),
        cap_steps=int(sum(r.hit_cap for r in reps)),
        unconverged=int(sum(not r.converged for r in reps)),
        median_iterations=float(np.median(its)) if its.size else 0.0,
        max_iterations=int(its.max(initial=0)),
        penetration_r=float(max((r.max_penetration for r in reps), default=0.0) / radius),
        sticking_max=int(max((r.sticking for r in reps), default=0)),
        sliding_max=int(max((r.sliding for r in reps), default=0)),
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


def incline(degrees: float, mu: float = 0.5, seconds: float = 2.0, dt: float = 1 / 200, **contact_options) -> dict:
    """A rod on an inclined plane; returns the slide s(t) [m] of its centre of mass, the fitted
    acceleration, the analytic one (0 when it sticks) and the contact statistics."""
    th = np.radians(degrees)
    r = 0.01
    down = np.array([np.cos(th), 0.0, -np.sin(th)])
    normal = np.array([np.sin(th), 0.0, np.cos(th)])
    pts = np.linspace(0, 0.2, 6)[:, None] * down + r * normal
    model = rod_from_polyline(pts, r, 1e9)
    sim = Simulator(model, dt=dt, max_iterations=MAX_ITERATIONS, tolerance=TOLERANCE)
    contacts = Contacts(model, [Plane(normal, 0.0)], friction=mu, response="direct", **contact_options)
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
    return out | _stats(contacts, r)


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


def _capstan_scene(wrap: float, mu: float, m1: float, m2: float, dt: float, **contact_options):
    """The rope of :func:`capstan_rope` over the cylinder with end blocks m1 (load) and m2 (hold) pulled along the
    ends' tangents by their weights; returns the simulator, its contacts, the model and the tangents and counts."""
    r, cyl, density = 0.003, 0.05, 1150.0
    pts, t1, t2, counts = capstan_rope(
        wrap, r, cyl, joints=contact_options.get("direct_method") in ("semismooth", "schur")
    )
    model = rod_from_polyline(pts, r, 1e6, density=density, rest="straight")
    dens = model.densities.copy()
    vol = model.masses / model.densities
    dens[0], dens[-1] = m1 / vol[0], m2 / vol[-1]
    model = model.copy_with(densities=dens)
    sim = Simulator(model, dt=dt, max_iterations=MAX_ITERATIONS, tolerance=TOLERANCE, gravity=(0.0, 0.0, 0.0))
    sim.forces[0] = m1 * G * t1
    sim.forces[-1] = m2 * G * t2
    cylinder = Capsule((0.0, -0.3, 0.0), (0.0, 0.3, 0.0), cyl, friction=mu)
    contacts = Contacts(model, [cylinder], friction=mu, response="direct", **contact_options)
    sim.gs_constraints.append(contacts)
    return sim, contacts, model, t1, counts


def drape(seconds: float = 0.5, dt: float = 1 / 200, **contact_options) -> dict:
    """The frictionless rope over the cylinder (θ = π, equal 1 kg end blocks): the load end's slide [m], the largest
    rise of kinetic energy minus the end loads' work over a step [J], the deepest exact surface overlap over the
    radius, and the contact statistics."""
    r = 0.003
    sim, contacts, model, t1, _ = _capstan_scene(np.pi, 0.0, 1.0, 1.0, dt, **contact_options)
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
    return out | _stats(contacts, r)


def capstan(mu: float, wrap: float, ratio: float, seconds: float = 2.0, dt: float = 1 / 200, **contact_options) -> dict:
    """The capstan with m₁ = ratio · e^{μθ} · m₂ (m₂ = 1 kg); returns the load end's slide s(t) along its
    tangent, the fitted acceleration, the analytic one (0 when it holds) and the contact statistics."""
    r, cyl, density = 0.003, 0.05, 1150.0
    e = np.exp(mu * wrap)
    m2 = float(contact_options.pop("block", 1.0))
    m1 = ratio * e * m2
    sim, contacts, model, t1, (n1, n_arc, n2) = _capstan_scene(wrap, mu, m1, m2, dt, **contact_options)
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
    return out | _stats(contacts, r)


def _worst(values) -> float:
    """The largest value, NaN (a failed run) counting as infinite."""
    return float(max((v if np.isfinite(v) else np.inf for v in values), default=0.0))


def slides_of(runs, kind: str):
    return [(k, r) for k, r in runs if k == kind and r["analytic"] > 0.0]


def run_all(hold_seconds: float = 2.0, method: str = "active_set") -> dict:
    runs = []
    opt = dict(direct_method=method)
    for deg in (20.0, 35.0, 60.0):
        runs.append(("incline", incline(deg, seconds=hold_seconds if deg < 26.0 else 0.4, **opt)))
    for mu in (0.2, 0.5):
        for wrap in (np.pi / 2, np.pi, 2 * np.pi):
            runs.append(("capstan", capstan(mu, wrap, 0.8, seconds=hold_seconds, **opt)))
            runs.append(("capstan", capstan(mu, wrap, 1.25, seconds=0.4, **opt)))
    draped = drape(min(hold_seconds, 0.5), **opt)
    steps = sum(r["steps"] for _, r in runs) + draped["steps"]
    caps = sum(r["cap_steps"] for _, r in runs) + draped["cap_steps"]
    holds = [r for _, r in runs if r["analytic"] == 0.0]
    slides = [r for _, r in runs if r["analytic"] > 0.0]
    return dict(
        method=method,
        runs=[dict(kind=k) | r for k, r in runs],
        drape=draped,
        failed_runs=sum(bool(r["failed"]) for _, r in runs),
        worst_creep_m=_worst(abs(r["slide"]) for r in holds),
        worst_incline_error=_worst(abs(r.get("error", np.nan)) for k, r in slides_of(runs, "incline")),
        worst_capstan_error=_worst(abs(r.get("error", np.nan)) for k, r in slides_of(runs, "capstan")),
        cap_share=caps / max(steps, 1),
        unconverged_share=sum(r["unconverged"] for _, r in runs) / max(steps, 1),
        median_iterations=float(np.median([r["median_iterations"] for _, r in runs])),
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
        "--method", choices=("active_set", "semismooth", "schur"), default="active_set", help="direct_method"
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
        for key in (k for k in result if k not in ("runs", "drape")):
            yield f"{key:>24}: {result[key]}"

    _common.report(result, args.json, summary=summary())


if __name__ == "__main__":
    main()
