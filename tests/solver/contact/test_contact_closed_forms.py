"""Contact with Coulomb friction against closed forms (benchmarks/contact_closed_forms.py builds the scenes), and
the per-step contact report (``Contacts.last_report``)."""

import logging
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import contact_closed_forms as closed  # noqa: E402

from solver import Plane, Simulator, rod_from_polyline  # noqa: E402
from solver.contact.contacts import Contacts  # noqa: E402
from solver.contact.solvers import SemismoothOptions  # noqa: E402

G = 9.81


def test_a_rod_below_the_friction_cone_creeps_less_than_a_millimetre_in_two_seconds():
    """tan 20° = 0.36 < μ = 0.5: static friction holds the rod (creep ≤ 1 mm in 2 s); no step hits the cap."""
    run = closed.incline(20.0, mu=0.5, seconds=2.0)
    assert not run["failed"]
    assert abs(run["slide"]) <= 1e-3
    assert run["cap_steps"] == 0 and run["unconverged"] == 0
    assert run["sliding_max"] == 0 and run["sticking_max"] > 0


@pytest.mark.parametrize("degrees", [35.0, 60.0])
def test_a_rod_above_the_friction_cone_slides_at_g_sin_minus_mu_cos(degrees):
    """Kinetic friction: a = g (sin θ − μ cos θ) within 2 % (quadratic fit of the slide over 0.1–0.4 s)."""
    run = closed.incline(degrees, mu=0.5, seconds=0.4)
    th = np.radians(degrees)
    expect = G * (np.sin(th) - 0.5 * np.cos(th))
    assert run["accel"] == pytest.approx(expect, rel=0.02)
    assert run["cap_steps"] == 0
    assert run["sliding_max"] > 0 and run["sticking_max"] == 0


def slope(degrees, **sim_options):
    th = np.radians(degrees)
    r = 0.01
    down, normal = np.array([np.cos(th), 0, -np.sin(th)]), np.array([np.sin(th), 0, np.cos(th)])
    model = rod_from_polyline(np.linspace(0, 0.2, 6)[:, None] * down + r * normal, r, 1e9)
    sim = Simulator(model, dt=1 / 200, **sim_options)
    contacts = Contacts(model, [Plane(normal, 0.0)], friction=0.5, method="active_set")
    sim.gs_constraints.append(contacts)
    return sim, contacts


def test_the_contact_report_counts_rows_iterations_and_friction_states():
    """Each step's report: its rows are the step's contacts, its iterations the Simulator's, and on a 20° slope
    every pushing contact sticks, on a 60° slope every one slides."""
    for degrees, state in ((20.0, "sticking"), (60.0, "sliding")):
        sim, contacts = slope(degrees, max_iterations=10, tolerance=1e-6)
        for _ in range(5):
            report = sim.step()
            rep = contacts.last_report
            assert rep.iterations == report.iterations
            assert rep.rows == contacts.n_contacts and rep.active == contacts.n_active > 0
            assert getattr(rep, state) == rep.active
            assert rep.converged and not rep.hit_cap and rep.settled
        assert len(contacts.reports) == 5


def test_a_step_that_does_not_converge_says_so_and_is_logged(caplog):
    """One iteration with tolerance 0 cannot converge: the report says it hit the cap and did not converge,
    and the step is logged once."""
    sim, contacts = slope(20.0, max_iterations=1, tolerance=0.0)
    with caplog.at_level(logging.WARNING, logger="solver.contact"):
        sim.step()
        sim.step()
    rep = contacts.last_report
    assert rep.hit_cap and not rep.converged and rep.iterations == 1
    assert sum("did not converge" in r.getMessage() for r in caplog.records) == 2


def test_a_frictionless_rope_over_a_cylinder_converges_with_the_semismooth_newton_method():
    """The capstan's rope over the cylinder (θ = π) without friction and with equal 1 kg end blocks, a neutral
    equilibrium, in 50 steps: with ``method="semismooth"`` every step converges to 1e-6 m within 20
    iterations (measured: median 7, at most 9), the rope stays (slide ≤ 1 mm; measured 3 µm), gains no energy
    (kinetic energy minus the end loads' work rises by < 1 mJ in any step; the semismooth solve without its
    fixes gained 30 mJ in 12 steps and then diverged) and stays out of the cylinder by the exact capsule distance
    (≤ 0.05 r; measured 0.021 r, the chords' sagitta between the joint points that touch). The active set needs
    the 50-iteration cap in 99 of 100 steps here."""
    run = closed.drape(0.25, method="semismooth")
    assert not run["failed"]
    assert run["cap_steps"] == 0 and run["unconverged"] == 0 and run["max_iterations"] <= 20
    assert abs(run["slide"]) <= 1e-3
    assert run["energy_rise"] < 1e-3
    assert run["overlap_r"] <= 0.05


def test_the_semismooth_method_holds_a_rod_below_the_friction_cone_and_slides_it_above():
    """The inclined plane with ``method="semismooth"``: at 20° (tan θ < μ = 0.5) no creep (≤ 1 mm in
    0.5 s; measured 0), at 35° and 60° a = g (sin θ − μ cos θ) within 2 % (measured 1e-14), no step at the cap."""
    hold = closed.incline(20.0, mu=0.5, seconds=0.5, method="semismooth")
    assert not hold["failed"] and abs(hold["slide"]) <= 1e-3
    assert hold["cap_steps"] == 0 and hold["unconverged"] == 0
    for degrees in (35.0, 60.0):
        run = closed.incline(degrees, mu=0.5, seconds=0.4, method="semismooth")
        th = np.radians(degrees)
        assert run["accel"] == pytest.approx(G * (np.sin(th) - 0.5 * np.cos(th)), rel=0.02)
        assert run["cap_steps"] == 0


def test_the_schur_method_meets_the_incline_and_the_frictionless_drape():
    """``method="schur"`` (one box QP on the contact Schur complement per Newton iteration): the 20° incline
    holds (≤ 1 mm in 0.5 s; measured 0.4 µm), the 35° and 60° ones slide at g (sin θ − μ cos θ) within 2 % (measured
    5e-14), and the frictionless drape stays (≤ 1 mm; measured 0.2 µm in 0.5 s), gains no energy (< 1 mJ per step;
    measured 2e-9 J, 0.19 mJ with ``geometric_stiffness=False``) and stays out of the cylinder (≤ 0.05 r; the chords'
    sagitta 0.021 r), no step at the cap."""
    hold = closed.incline(20.0, mu=0.5, seconds=0.5, method="schur")
    assert not hold["failed"] and abs(hold["slide"]) <= 1e-3 and hold["cap_steps"] == 0
    for degrees in (35.0, 60.0):
        run = closed.incline(degrees, mu=0.5, seconds=0.4, method="schur")
        th = np.radians(degrees)
        assert run["accel"] == pytest.approx(G * (np.sin(th) - 0.5 * np.cos(th)), rel=0.02)
        assert run["cap_steps"] == 0
    drape = closed.drape(0.25, method="schur")
    assert not drape["failed"] and drape["cap_steps"] == 0
    assert abs(drape["slide"]) <= 1e-3 and drape["energy_rise"] < 1e-3 and drape["overlap_r"] <= 0.05


# (μ, θ): measured creep over 0.5 s with the schur method, 0.7–11 µm (benchmarks/contact_closed_forms.py --quick)
@pytest.mark.parametrize("mu, wrap", [(0.2, np.pi / 2), (0.2, np.pi), (0.5, np.pi / 2), (0.5, np.pi)])
def test_the_schur_method_holds_a_rope_on_a_cylinder_below_e_to_the_mu_theta(mu, wrap):
    """The capstan at a load of 0.8 e^{μθ} times the holding mass: static friction holds the rope. The target, creep
    ≤ 1 mm in 2 s, over 0.5 s as ≤ 0.25 mm, ≤ 1 % of the steps at the 50-iteration cap (measured none), ≤ 0.05 r into
    the cylinder. (θ = 2π, 2 s each, in the benchmark.)"""
    assert_capstan_holds(closed.capstan(mu, wrap, 0.8, seconds=0.5, method="schur"), creep_m=0.25e-3)


# measured errors of the acceleration: μ 0.2: +1.2 % (π/2), +1.4 % (π); μ 0.5, π/2: +0.3 %; no step at the cap
@pytest.mark.parametrize("mu, wrap", [(0.2, np.pi / 2), (0.2, np.pi), (0.5, np.pi / 2)])
def test_the_schur_method_slides_a_rope_on_a_cylinder_at_the_analytic_acceleration(mu, wrap):
    """The capstan at 1.25 e^{μθ}: the rope slides with the acceleration of the capstan equation (the end blocks and
    the rope's own inertia) within 5 %, ≤ 1 % of the steps at the cap."""
    assert_capstan_slides(closed.capstan(mu, wrap, 1.25, seconds=0.4, method="schur"))


def test_the_schur_method_slides_a_rope_half_round_a_cylinder_at_mu_one_half():
    """μ 0.5, θ = π at 1.25 e^{μθ} (measured +0.38 %, no step at the cap): the friction of a sliding row is on the
    Coulomb cone along its slip; the per-tangent box alone gave −5.6 %, the wrapped rope zig-zagging along the
    cylinder's axis with ±μλ_n of axial friction at every other row."""
    run = closed.capstan(0.5, np.pi, 1.25, seconds=0.4, method="schur")
    assert_capstan_slides(run)
    assert run["error"] == pytest.approx(0.0, abs=0.02)


@pytest.mark.parametrize("load", [0.8, 1.25])
def test_the_default_contacts_converge_on_every_step_of_a_capstan(load):
    """``Contacts()`` without a method on the capstan (μ 0.5, θ = π, 0.8 and 1.25 e^{μθ}): every step converges to the
    Simulator's tolerance (1e-6 m) below its 50-iteration cap, and the rope holds or slides by the capstan equation.
    Gauss–Seidel, the default before, capped every contact step of this scene and neither held nor slid right."""
    run = closed.capstan(0.5, np.pi, load, seconds=0.3, method=None)
    assert run["cap_steps"] == 0 and run["unconverged"] == 0
    if load < 1.0:
        assert_capstan_holds(run, creep_m=0.25e-3)
    else:
        assert_capstan_slides(run)


def test_the_schur_method_converges_where_a_taut_rope_leaves_the_cylinder():
    """μ 0.5, θ = π, sliding at 1.25 e^{μθ}, the first 0.1 s: with the joints' geometric stiffness in H and the
    momentum residual on the right-hand side (``geometric_stiffness``, the default) every step converges to 1e-6 m
    within 10 iterations (measured: median 5, at most 6); Deul's joint step (``geometric_stiffness=False``) needs a
    median of 12 and up to 21 here, and 9 of 80 steps hit the 50-iteration cap over 0.4 s."""
    run = closed.capstan(0.5, np.pi, 1.25, seconds=0.1, method="schur")
    assert not run["failed"] and run["cap_steps"] == 0 and run["unconverged"] == 0
    assert run["max_iterations"] <= 10


def test_the_lumped_geometric_stiffness_is_the_hessian_of_a_tensioned_joint():
    """A straight two-segment rod with its joint's impulse λ along the rod (tension): the lumped diagonal equals the
    Hessian of −λ·C (C the joint's point rows) in each side's body rotations, by central differences of the joint
    evaluator under q·exp(φ): T·l/2 about the two transverse axes, 0 about the axis; compression gives the same
    magnitudes (column norms are positive by construction)."""
    from solver.contact.solvers.schur_newton import lumped_geometric_stiffness
    from solver.core import joint_constraint
    from solver.core.timestep import _exp_body

    length = 0.02
    model = rod_from_polyline(np.array([[0.0, 0.0, 0.0], [0.0, 0.0, length], [0.0, 0.0, 2 * length]]), 0.003, 1e6)
    sim = Simulator(model, dt=1 / 200, gravity=(0.0, 0.0, 0.0))
    lam = np.zeros((1, 6))
    # λ on the parent: the force pulling it towards the child, along +z (the parent's joint point is at +l/2)
    lam[0, 2] = 2.5e-4
    stiff = lumped_geometric_stiffness(sim, lam)

    def energy(side, phi):
        q = sim.orientations.copy()
        q[side] = _exp_body(q[side], phi)
        c, _, _ = joint_constraint.evaluate(model, sim.positions, q)
        return -float(lam[0, :3] @ c[0, :3])

    h = 1e-4
    for side in (0, 1):
        hess = np.zeros(3)
        for i in range(3):
            e = np.zeros(3)
            e[i] = h
            hess[i] = (energy(side, e) - 2 * energy(side, np.zeros(3)) + energy(side, -e)) / (h * h)
        assert hess == pytest.approx([2.5e-4 * length / 2, 2.5e-4 * length / 2, 0.0], abs=1e-12)
        assert stiff[sim.free_index.tolist().index(side), 3:] == pytest.approx(hess, abs=1e-12)
    assert lumped_geometric_stiffness(sim, -lam) == pytest.approx(stiff)


def test_direct_method_is_checked():
    model = rod_from_polyline([[0, 0, 0.01], [0.1, 0, 0.01]], 0.01, 1e9)
    with pytest.raises(ValueError, match="method"):
        Contacts(model, [Plane()], method="newton")
    with pytest.raises(ValueError, match="line_search"):
        Contacts(model, [Plane()], method=SemismoothOptions(line_search=-1))
    with pytest.raises(ValueError, match="friction_rounds"):
        Contacts(model, [Plane()], method=SemismoothOptions(friction_rounds=0))


def test_keep_reports_is_checked():
    model = rod_from_polyline([[0, 0, 0.01], [0.1, 0, 0.01]], 0.01, 1e9)
    with pytest.raises(ValueError, match="keep_reports"):
        Contacts(model, [Plane()], keep_reports=-1)


def test_the_semismooth_method_holds_a_rope_on_a_cylinder_below_e_to_the_mu_theta():
    """The capstan, μ = 0.5, θ = π, load 0.8 e^{μθ} times the holding mass, with ``method="semismooth"``:
    static friction holds the rope. The target, creep ≤ 1 mm in 2 s, here over 0.5 s as ≤ 0.25 mm (measured 9 µm;
    over 2 s in benchmarks/contact_closed_forms.py 37 µm); at most 1 % of the steps at the 50-iteration cap
    (measured none), the rope out of the cylinder by ≤ 0.05 r at its rows (measured 1e-4 r)."""
    assert_capstan_holds(closed.capstan(0.5, np.pi, 0.8, seconds=0.5, method="semismooth"), creep_m=0.25e-3)


def assert_capstan_holds(run, creep_m):
    """Held: no failure, creep ≤ ``creep_m``, ≤ 1 % of the steps at the cap, ≤ 0.05 r into the cylinder."""
    assert not run["failed"]
    assert abs(run["slide"]) <= creep_m
    assert run["cap_steps"] <= 0.01 * run["steps"]
    assert run["penetration_r"] <= 0.05


def assert_capstan_slides(run):
    """Sliding at the analytic acceleration within 5 %, ≤ 1 % of the steps at the cap."""
    assert not run["failed"]
    assert run["accel"] == pytest.approx(run["analytic"], rel=0.05)
    assert run["cap_steps"] <= 0.01 * run["steps"]


# The capstan fails with the active set (benchmarks/contact_closed_forms.py: the joint factorisation turns indefinite
# within 0.05–0.1 s) and slides fail with both methods: the targets stay here as strict xfails.
@pytest.mark.xfail(strict=True, reason="capstan: the direct contact solve does not hold the rope (measured)")
def test_a_rope_holds_on_a_cylinder_below_e_to_the_mu_theta():
    assert_capstan_holds(closed.capstan(0.5, np.pi, 0.8, seconds=0.5), creep_m=1e-3)


@pytest.mark.xfail(strict=True, reason="capstan: the direct contact solve does not converge on a sliding rope")
def test_a_rope_slides_on_a_cylinder_above_e_to_the_mu_theta_at_the_analytic_acceleration():
    assert_capstan_slides(closed.capstan(0.5, np.pi, 1.25, seconds=0.4))


@pytest.mark.xfail(strict=True, reason="capstan: the semismooth method does not converge on a sliding rope (measured)")
def test_the_semismooth_method_slides_a_rope_on_a_cylinder_above_e_to_the_mu_theta():
    assert_capstan_slides(closed.capstan(0.5, np.pi, 1.25, seconds=0.4, method="semismooth"))


@pytest.mark.parametrize("method", ["active_set", "semismooth"])
def test_two_crossing_beams_share_the_load_as_their_euler_bernoulli_springs(method):
    """A on B, loaded at A's middle: F = P k_B / (k_A + k_B) and δ_A = δ_B = F / k_B within 2 % (k = 192 E I / L³,
    clamped–clamped), with A twice as stiff as B (F ≈ P/3, not P/2) and no step at the cap."""
    run = closed.crossing(method=method)
    assert not run["failed"]
    ka, kb = (192.0 * 1e8 * np.pi * r**4 / 4.0 for r in (0.006, 0.005))  # span 1 m
    force = 0.1 * kb / (ka + kb)
    assert 0.3 < force / 0.1 < 0.35
    assert run["force"] == pytest.approx(force, rel=0.02)
    assert run["deflection_a"] == pytest.approx(force / kb, rel=0.02)
    assert run["deflection_b"] == pytest.approx(force / kb, rel=0.02)
    assert run["single_beam_error"] == pytest.approx(0.0, abs=0.005)
    assert run["cap_steps"] == 0 and run["unconverged"] == 0
    assert run["penetration_r"] < 0.01
