"""Side by side with PyElastica: wall time and accuracy of Stiff Rods' contact (``Contacts(method="schur")``) and
PyElastica 1.0's on three scenes built the same way in both, each solver at its own recommended time step.

PyElastica is an optional benchmark dependency; run this in its own venv so that its numpy/numba do not replace the
versions the tests use (our solver needs only numpy, scipy and numba, and is imported from this checkout):

    /root/.pyenv/versions/3.11.7/bin/python -m venv .venvs/pyelastica
    .venvs/pyelastica/bin/pip install numpy scipy numba pyelastica
    OMP_NUM_THREADS=1 .venvs/pyelastica/bin/python benchmarks/vs_pyelastica.py --json
    OMP_NUM_THREADS=1 .venvs/pyelastica/bin/python benchmarks/vs_pyelastica.py --quick --scenes capstan,crossing
    OMP_NUM_THREADS=1 .venvs/pyelastica/bin/python benchmarks/vs_pyelastica.py --quick --profile pile

Scenes (PyElastica's build: benchmarks/_elastica_scenes.py):

- Capstan: contact_closed_forms.py's rope (r = 3 mm, E = 1 MPa, 1150 kg/m³) wrapped θ = π over the fixed cylinder
  (R = 5 cm), μ = 0.5, end blocks m₂ = 0.05 kg and m₁ = 0.8 e^{μθ} m₂ (hold, 2 s; ``--quick`` 0.5 s) or 1.25 e^{μθ} m₂
  (slide, 0.4 s), pulled along the ends' tangents by their weights, no gravity. Light blocks (not the 1 kg of
  contact_closed_forms.py) because PyElastica's rope is extensible: its stretch and shear stiffness are raised
  to 5 MPa (the most its step allows), which keeps it within 2 % of our inextensible rope. Errors: the hold's
  creep (the slide of the top of the wrap along the cylinder, which the ends' stretch does not move) and the
  slide's acceleration (load end, fitted over 0.1–0.4 s) against the capstan equation with the rope's inertia
  (contact_closed_forms.py).
- Crossing: contact_closed_forms.py's two clamped–rail beams (span 1 m, 41 segments, E = 0.1 GPa, r_A = 6 mm,
  r_B = 5 mm) crossing at their middles, frictionless, P = 0.1 N at A's middle ramped over 0.2 s, damping
  40/s, run to rest (kinetic energy < 1e-14 J after 0.4 s, or 2 s). Errors: the contact force and both middles'
  deflections against Euler–Bernoulli, F = P k_B / (k_A + k_B), δ = F / k_B, k = 192 E I / L³.
- Pile: a rope (r = 2.5 mm, E = 1 MPa, 1000 kg/m³, straight at rest, 1 cm elements) coiled in 3 turns
  (helix R = 4 cm, pitch 4 r) dropped from 2 cm onto the floor z = 0 (μ = 0.3; our self-contact has μ = 0.3,
  PyElastica's is frictionless), damping 2/s, 1.5 s (``--quick`` 0.1 s: the coil lands at 0.06 s). No closed
  form: the deepest penetration over the run in radii (exact capsule distances between non-neighbouring
  segments and to the floor, the same code for both, every 1/200 s) and how far from rest it ends (largest
  speed, m/s).

Time steps: ours 1/200 s on every scene (the closed forms' step; for the pile too: the coil lands at 0.63 m/s,
3 mm = 1.3 r per step, inside what contact_drop.py detects without pass-through at 10 m/s). PyElastica: its user
guide's dt = 0.01·dx (s/m), dx its shortest element (https://docs.cosseratrods.org/en/latest/guide/discretization.html),
lowered where its explicit step diverges (benchmarks/_elastica_scenes.py ``guide_dt``): 5.2e-5 s (capstan),
1.9e-5 s (crossing: 0.01·dx diverged), 9.6e-5 s (pile). Contact stiffness and friction: _elastica_scenes.py.
Why not a longer step of ours on the capstan: its slide error grows with Δt (our implicit Euler's numerical damping):
−6.9 % at 1/200 s, −9.5 % at 1/100 s, −19 % at 1/50 s (BDF2: −6.4 %, −7.5 %), against PyElastica's −4.6 %, while
the hold's creep stays ~1e-6 m at all of them; already at 1/200 s our slide is the less accurate of the two.

Measured (2 shared cores, load 2–4 from other jobs; docs/notes/contacts.md): full capstan ratio 0.94 with
``--repeat 3`` (ours 4.67 s, PyElastica 4.96 s; pairs 0.91–0.95) since contact's row sets test membership with a
marker array, against 1.03 just before it in the same machine state; with the compiled disk QP alone 1.08 with
``--repeat 5`` alternated (ours 5.88 s, PyElastica 5.46 s; pairs 1.01–1.20), 1.01 and 1.13 with ``--repeat 3``;
CPU time (``time.process_time``, steady under load) ours 5.23 s, PyElastica 4.74 s: 1.10. Creep 2.0e-6 m, slide
−6.9 % (PyElastica 2.4e-2 m, −4.6 %). Before the compiled disk QP: 1.90 (13.3 s against 7.0 s; CPU 8.94 s against
4.83 s). Crossing 0.09 (ours 4.35 s, F
+2e-6, δ +0.11 %; PyElastica 43.6 s, F −1.9 %, δ −7.3 %, not at rest after 2 s); ``--quick`` pile (0.1 s) 134 (ours
141 s for 20 steps, 0.088 r deep, 8 of them XPBD, 2 at the cap, median 15.5 iterations; PyElastica 1.06 s, 0.13 r).
Capstan and crossing: 649 steps, none at the cap or XPBD, median 2 iterations. A 0.3 s pile: ratio 258 (ours 591 s,
44 of 60 steps XPBD, 18 at the cap, median 29.5 iterations, 0.088 r; PyElastica 2.3 s, 0.57 r).

Wall times: the stepping alone (``time.perf_counter``, measurements outside it), after a short warm-up run of
every scene on both sides (numba compiles), OMP_NUM_THREADS=1; ``--repeat N`` runs the two sides alternately and
quotes medians (``wall_runs_s`` every run, ``ratio_pairs`` each adjacent pair's ratio). Ratios are ours /
PyElastica's (target ≤ 1.0), reported as they are. Our ``cap_share``, ``median_iterations`` and ``xpbd_fraction``
pool the scenes' ``Contacts.reports``.

    python3 benchmarks/vs_pyelastica.py --json      # last stdout line: one JSON object
"""

from __future__ import annotations

import cProfile
import logging
import os
import pstats
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common  # noqa: E402
import _elastica_scenes as pe  # noqa: E402
from contact_closed_forms import capstan_rope, clamped_beam, join_rods  # noqa: E402

from solver import Capsule, Contacts, Plane, Simulator, rod_from_polyline  # noqa: E402
from solver.core import quaternion as quat  # noqa: E402

G = 9.81
DT = 1 / 200
METHOD = "schur"
ROPE = dict(r=0.003, cyl=0.05, density=1150.0, youngs_modulus=1e6)
CAPSTAN = dict(mu=0.5, wrap=np.pi, block=0.05, stretch_modulus=5e6)
BEAMS = dict(n=41, ra=0.006, rb=0.005, E=1e8, load=0.1, span=1.0, damping=40.0)
PILE = dict(r=0.0025, E=1e6, density=1000.0, mu=0.3, damping=2.0)


def _simulator(model, **kw) -> Simulator:
    return Simulator(model, dt=DT, max_iterations=50, tolerance=1e-6, **kw)


def _timed_steps(sim, seconds: float, sample) -> float:
    """Step ``sim`` for ``seconds``, calling ``sample()`` after every step outside the timing (True: stop);
    returns the wall time [s] of the steps."""
    wall = 0.0
    for _ in range(int(round(seconds / sim.dt))):
        start = time.perf_counter()
        sim.step()
        wall += time.perf_counter() - start
        if sample():
            break
    return wall


def capstan_analytic(ratio: float) -> tuple[float, float, float]:
    """m₁, m₂ [kg] and the load end's acceleration [m/s²] by the capstan equation with the rope's inertia (the
    straight parts less the end blocks' segments, and λ R (e^{μθ} − 1)/μ for the wrap); 0 when it holds."""
    mu, wrap, m2 = CAPSTAN["mu"], CAPSTAN["wrap"], CAPSTAN["block"]
    e = np.exp(mu * wrap)
    m1 = ratio * e * m2
    lam = ROPE["density"] * np.pi * ROPE["r"] ** 2
    rho = lam * (0.2 - 0.02)  # each straight end: 0.2 m in 0.02 m segments, the last one the block
    inertia = m1 + rho + (m2 + rho) * e + lam * (ROPE["cyl"] + ROPE["r"]) * (e - 1.0) / mu
    return m1, m2, max((m1 - m2 * e) * G / inertia, 0.0)


def ours_capstan(ratio: float, seconds: float) -> dict:
    """Our rope over the cylinder (contact_closed_forms.py's build, joint points on the surface for the schur
    method's rows); the load end's and the wrap top's slide [m] every step, the wall time and the contacts."""
    r, cyl = ROPE["r"], ROPE["cyl"]
    m1, m2, _ = capstan_analytic(ratio)
    pts, t1, t2, _ = capstan_rope(CAPSTAN["wrap"], r, cyl, joints=True)
    model = rod_from_polyline(pts, r, ROPE["youngs_modulus"], density=ROPE["density"], rest="straight")
    dens = model.densities.copy()
    vol = model.masses / model.densities
    dens[0], dens[-1] = m1 / vol[0], m2 / vol[-1]
    model = model.copy_with(densities=dens)
    sim = _simulator(model, gravity=(0.0, 0.0, 0.0))
    sim.forces[0], sim.forces[-1] = m1 * G * t1, m2 * G * t2
    cylinder = Capsule((0.0, -0.3, 0.0), (0.0, 0.3, 0.0), cyl, friction=CAPSTAN["mu"])
    contacts = Contacts(model, [cylinder], friction=CAPSTAN["mu"], method=METHOD)
    sim.gs_constraints.append(contacts)
    top = int(np.argmax(sim.positions[:, 2]))
    x0, phi0 = sim.positions[0].copy(), np.arctan2(sim.positions[top, 0], sim.positions[top, 2])
    ts, load, wrap = [0.0], [0.0], [0.0]

    def sample():
        p = sim.positions[top]
        ts.append(sim.time)
        load.append(float((sim.positions[0] - x0) @ t1))
        wrap.append(float((np.arctan2(p[0], p[2]) - phi0) * (cyl + r)))
        return False

    wall = _timed_steps(sim, seconds, sample)
    return dict(t=np.array(ts), load=np.array(load), wrap=np.array(wrap), wall_s=wall, dt=DT, contacts=[contacts])


def theirs_capstan(ratio: float, seconds: float) -> dict:
    m1, m2, _ = capstan_analytic(ratio)
    pts, t1, t2, _ = capstan_rope(CAPSTAN["wrap"], ROPE["r"], ROPE["cyl"], joints=False)
    return pe.capstan(pts, t1, t2, m1, m2, CAPSTAN["mu"], seconds, CAPSTAN["stretch_modulus"], **ROPE)


def _accel(t: np.ndarray, s: np.ndarray, t0: float = 0.1, t1: float = 0.4) -> float:
    """Acceleration [m/s²] of a quadratic least-squares fit of s(t) over [t0, t1]."""
    w = (t >= t0 - 1e-9) & (t <= t1 + 1e-9)
    return float(2.0 * np.polyfit(t[w], s[w], 2)[0]) if w.sum() > 3 else float("nan")


def capstan_scene(hold_s: float, run) -> dict:
    """The hold (0.8 e^{μθ}) and the slide (1.25 e^{μθ}) with ``run(ratio, seconds)``: the hold's creep [m] (top of
    the wrap; the load end's beside it), the slide's acceleration error, the wall time of both."""
    hold, slide = run(0.8, hold_s), run(1.25, 0.4)
    analytic = capstan_analytic(1.25)[2]
    accel = _accel(slide["t"], slide["load"])
    return dict(
        wall_s=hold["wall_s"] + slide["wall_s"],
        dt=hold["dt"],
        creep_m=float(abs(hold["wrap"][-1])),
        creep_load_end_m=float(abs(hold["load"][-1])),
        accel=accel,
        accel_analytic=float(analytic),
        accel_error=float(accel / analytic - 1.0),
        contacts=[c for x in (hold, slide) for c in x.get("contacts", [])],
    )


def beam_solution() -> tuple[float, float]:
    """Euler–Bernoulli contact force F [N] and deflection δ [m] of the crossing."""
    k_a, k_b = (192.0 * BEAMS["E"] * np.pi * r**4 / 4.0 / BEAMS["span"] ** 3 for r in (BEAMS["ra"], BEAMS["rb"]))
    force = BEAMS["load"] * k_b / (k_a + k_b)
    return float(force), float(force / k_b)


def ours_crossing(seconds: float = 2.0) -> dict:
    """contact_closed_forms.py's crossing() with the schur method and a wall clock."""
    b = BEAMS
    beam_b = clamped_beam((1.0, 0.0, 0.0), (0.0, 0.0, 0.0), b["span"], b["n"], b["rb"], b["E"])
    beam_a = clamped_beam((0.0, 1.0, 0.0), (0.0, 0.0, b["ra"] + b["rb"]), b["span"], b["n"], b["ra"], b["E"])
    model = join_rods(beam_b, beam_a)
    mid_b, mid_a = beam_b.n_segments // 2, beam_b.n_segments + beam_a.n_segments // 2
    sim = _simulator(model, gravity=(0.0, 0.0, 0.0))
    sim.damping = b["damping"]
    contacts = Contacts(model, friction=0.0, self_collision=True, method=METHOD)
    sim.gs_constraints.append(contacts)
    z0 = sim.positions[:, 2].copy()

    def sample():
        sim.forces[mid_a] = (0.0, 0.0, -b["load"] * min(1.0, sim.time / 0.2))
        return sim.time > 0.4 and sim.kinetic_energy() < 1e-14

    sample()
    wall = _timed_steps(sim, seconds, sample)
    sag = z0 - sim.positions[:, 2]
    return dict(
        force=float(contacts.normal_impulse.sum() / sim.dt**2),
        deflection_a=float(sag[mid_a]),
        deflection_b=float(sag[mid_b]),
        wall_s=wall,
        dt=DT,
        contacts=[contacts],
    )


def crossing_scene(run) -> dict:
    out = run()
    force, deflection = beam_solution()
    return out | dict(
        force_error=out["force"] / force - 1.0,
        deflection_a_error=out["deflection_a"] / deflection - 1.0,
        deflection_b_error=out["deflection_b"] / deflection - 1.0,
        force_analytic=force,
        deflection_analytic=deflection,
    )


def chain_penetration(nodes: np.ndarray) -> float:
    """Deepest penetration [m] of a rope given by its nodes (PyElastica's elements)."""
    return pe.capsule_penetration(nodes[:-1], nodes[1:], PILE["r"])


def ours_pile(seconds: float) -> dict:
    p = PILE
    model = rod_from_polyline(pe.coil(p["r"]), p["r"], p["E"], density=p["density"], rest="straight")
    sim = _simulator(model, damping=p["damping"])
    contacts = Contacts(model, [Plane((0.0, 0.0, 1.0), 0.0)], friction=p["mu"], self_collision=True, method=METHOD)
    sim.gs_constraints.append(contacts)
    half = np.zeros((model.n_segments, 3))
    half[:, 2] = 0.5 * model.lengths
    deepest = [0.0]

    def sample():
        axis = quat.rotate(sim.orientations, half)
        deepest[0] = max(deepest[0], pe.capsule_penetration(sim.positions - axis, sim.positions + axis, p["r"]))
        return False

    wall = _timed_steps(sim, seconds, sample)
    speed = float(np.linalg.norm(sim.velocities, axis=1).max())
    return dict(penetration=deepest[0], final_speed=speed, wall_s=wall, dt=DT, contacts=[contacts])


def theirs_pile(seconds: float) -> dict:
    p = PILE
    return pe.pile(pe.coil(p["r"]), p["r"], p["E"], p["density"], p["mu"], p["damping"], seconds, chain_penetration)


def pile_scene(run, seconds: float) -> dict:
    out = run(seconds)
    return out | dict(penetration_r=out["penetration"] / PILE["r"])


def scene_runs(quick: bool) -> dict:
    """Each scene's (ours, PyElastica's) runs, as callables of no arguments."""
    hold_s, pile_s = (0.5, 0.1) if quick else (2.0, 1.5)
    return dict(
        capstan=(lambda: capstan_scene(hold_s, ours_capstan), lambda: capstan_scene(hold_s, theirs_capstan)),
        crossing=(lambda: crossing_scene(ours_crossing), lambda: crossing_scene(lambda: pe.crossing(**BEAMS))),
        pile=(lambda: pile_scene(ours_pile, pile_s), lambda: pile_scene(theirs_pile, pile_s)),
    )


def warm_up(scenes) -> None:
    """Short runs of every scene on both sides, so numba's compilation is outside the timed runs."""
    for name in scenes:
        if name == "capstan":
            ours_capstan(1.25, 0.02), theirs_capstan(1.25, 0.002)
        elif name == "crossing":
            ours_crossing(0.02), pe.crossing(**BEAMS | dict(n=5), seconds=0.002)
        else:
            ours_pile(0.02), theirs_pile(0.002)


def report_stats(contacts) -> dict:
    """cap_share, median_iterations and xpbd_fraction over the steps of ``contacts`` (a list)."""
    reps = [r for c in contacts for r in c.reports]
    its = [r.iterations for r in reps]
    n = max(len(reps), 1)
    return dict(
        steps=len(reps),
        cap_share=sum(r.hit_cap for r in reps) / n,
        median_iterations=float(np.median(its)) if its else 0.0,
        xpbd_fraction=sum(r.xpbd for r in reps) / n,
    )


def _median_runs(ours, theirs, repeat: int) -> tuple[dict, dict]:
    """``repeat`` runs of each side, alternated (ours, PyElastica's, ours, …: a change in the shared machine's load
    falls on both): the first run of each with its wall time the median of its runs, and every run's wall time
    (``wall_runs_s``)."""
    runs: tuple[list, list] = ([], [])
    for _ in range(repeat):
        for side, run in zip(runs, (ours, theirs), strict=True):
            side.append(run())
    out = []
    for side in runs:
        first = side[0]
        first["wall_runs_s"] = [float(r["wall_s"]) for r in side]
        first["wall_s"] = float(np.median(first["wall_runs_s"]))
        out.append(first)
    return out[0], out[1]


def _clean(d: dict) -> dict:
    return {k: (float(v) if isinstance(v, np.floating) else v) for k, v in d.items() if not isinstance(v, np.ndarray)}


def run_all(scenes, quick: bool, repeat: int) -> dict:
    warm_up(scenes)
    runs, result, contacts = scene_runs(quick), {}, []
    for name in scenes:
        ours, theirs = _median_runs(*runs[name], repeat)
        mine = ours.pop("contacts")
        contacts += mine
        theirs.pop("contacts", None)
        result[f"ratio_{name}"] = ours["wall_s"] / theirs["wall_s"]
        pairs = [a / b for a, b in zip(ours["wall_runs_s"], theirs["wall_runs_s"], strict=True)]
        result[name] = dict(ours=_clean(ours) | report_stats(mine), pyelastica=_clean(theirs), ratio_pairs=pairs)
    return result | report_stats(contacts)


def profile(scene: str, quick: bool) -> None:
    """cProfile of our run of ``scene`` (after warm-up): the top 10 by own time and by cumulative time, to stderr."""
    warm_up([scene])
    prof = cProfile.Profile()
    prof.runcall(scene_runs(quick)[scene][0])
    for key in ("tottime", "cumulative"):
        pstats.Stats(prof, stream=sys.stderr).sort_stats(key).print_stats(10)


def main() -> None:
    ap = _common.arguments(__doc__)
    ap.add_argument("--quick", action="store_true", help="short runs: 0.5 s hold, 0.1 s pile")
    ap.add_argument("--scenes", default="capstan,crossing,pile", help="comma-separated subset")
    ap.add_argument("--repeat", type=int, default=1, help="runs per solver and scene; wall times are medians")
    ap.add_argument("--profile", choices=("capstan", "crossing", "pile"), help="cProfile our run of one scene")
    args = ap.parse_args()
    logging.getLogger("solver.contact").setLevel(logging.ERROR)  # counted in the reports instead
    if args.profile:
        profile(args.profile, args.quick)
        return
    scenes = [s for s in args.scenes.split(",") if s]
    result = run_all(scenes, args.quick, args.repeat)
    result |= dict(method=METHOD, quick=args.quick, omp_threads=os.environ.get("OMP_NUM_THREADS"))

    def summary():
        for name in scenes:
            o, t = result[name]["ours"], result[name]["pyelastica"]
            ratio = result[f"ratio_{name}"]
            yield f"{name}: ratio {ratio:.2f}  ours {o['wall_s']:.2f} s  PyElastica {t['wall_s']:.2f} s"
            for label, d in (("ours", o), ("PyElastica", t)):
                errors = {k: v for k, v in d.items() if k.endswith(("error", "_m", "_r", "speed"))}
                yield f"    {label:10s} dt {d['dt']:.2e}  " + "  ".join(f"{k} {v:.3g}" for k, v in errors.items())
        yield f"cap_share {result['cap_share']:.4f}  median_iterations {result['median_iterations']}  " + (
            f"xpbd_fraction {result['xpbd_fraction']:.4f}"
        )

    _common.report(result, args.json, summary=summary())


if __name__ == "__main__":
    main()
