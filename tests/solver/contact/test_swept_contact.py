"""Detection that does not miss: swept capsules between rods, and fast drops onto colliders
(benchmarks/contact_drop.py builds the scenes)."""

import logging
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import contact_drop as drop  # noqa: E402

from solver import Simulator  # noqa: E402
from solver.contact.contacts import Contacts  # noqa: E402
from solver.contact.detection import ContactDetector, DetectionOptions  # noqa: E402


@pytest.fixture(autouse=True)
def _quiet():
    logging.getLogger("solver.contact").setLevel(logging.ERROR)  # unconverged steps are counted, not asserted here


def brute_swept_distance(a0, b0, c0, d0, v, samples=41, taus=201):
    """Smallest distance between points sampled along a0–b0 and along c0–d0 + τ v, τ sampled over [0, 1]."""
    u = np.linspace(0.0, 1.0, samples)
    p = a0 + u[:, None] * (b0 - a0)
    best = np.inf
    for tau in np.linspace(0.0, 1.0, taus):
        q = c0 + tau * v + u[:, None] * (d0 - c0)
        best = min(best, float(np.min(np.linalg.norm(p[:, None] - q[None], axis=2))))
    return best


def test_the_swept_distance_of_two_segments_is_the_smallest_over_the_step():
    rng = np.random.default_rng(3)
    k = 12
    a0, b0, c0, d0 = (rng.normal(size=(k, 3)) * 0.05 for _ in range(4))
    v = rng.normal(size=(k, 3)) * 0.2
    swept = ContactDetector.swept_distance(a0, b0, c0, d0, v)
    brute = np.array([brute_swept_distance(a0[i], b0[i], c0[i], d0[i], v[i]) for i in range(k)])
    # sampling only overestimates, by at most half a sample spacing on each segment and in τ
    slack = (
        0.5 * (np.linalg.norm(b0 - a0, axis=1) + np.linalg.norm(d0 - c0, axis=1)) / 40
        + 0.5 * np.linalg.norm(v, axis=1) / 200
    )
    assert np.all(swept <= brute + 1e-9)
    assert np.all(swept >= brute - slack)
    # a pair that passes through each other within the step meets (distance 0) though apart at both ends
    a, b = np.array([[-1.0, 0, 0]]), np.array([[1.0, 0, 0]])
    c, d = np.array([[0, -1.0, 1.0]]), np.array([[0, 1.0, 1.0]])
    assert ContactDetector.swept_distance(a, b, c, d, np.array([[0, 0, -2.0]]))[0] < 2e-5  # 1e-5 of the 2 m step


def test_rods_crossing_at_10_m_per_s_get_rows_for_the_pairs_whose_swept_capsules_meet_only():
    """Δt = 1/60 s: each rod moves 8 cm toward the other, 16 radii. The pairs kept are every pair whose axes come
    within the two radii plus margins during the step (brute force over the step) and few of the pairs within
    the static margin of their motion (every segment near the crossing of 30 × 30)."""
    r = drop.R_ROPE
    model = drop.join_rods(drop.rope(0.0), drop.rope(2 * r + 0.05, along=(0.0, 1.0, 0.0)))
    na = model.n_segments // 2
    sim = Simulator(model, dt=1 / 60, gravity=(0.0, 0.0, 0.0))
    sim.velocities[:na, 2], sim.velocities[na:, 2] = 5.0, -5.0
    x, q = sim.positions.copy(), sim.orientations.copy()
    x_pred = x + sim.dt * sim.velocities
    contacts = Contacts(
        model, self_collision=True, method="active_set", detection=DetectionOptions(self_contacts="points")
    )
    detector = contacts.detector
    margin = detector.radius + np.linalg.norm(x_pred - x, axis=1)
    static = detector.self_pairs(x, q, margin)
    swept = detector.self_pairs(x, q, margin, (x_pred, q))
    kept = set(zip(swept[0].tolist(), swept[1].tolist(), strict=True))
    a_end, b_end = detector.segment_ends(x, q)
    meet = set()
    for i, j in zip(static[0].tolist(), static[1].tolist(), strict=True):
        v = (x_pred[j] - x[j]) - (x_pred[i] - x[i])
        if brute_swept_distance(a_end[i], b_end[i], a_end[j], b_end[j], v, samples=21, taus=41) < 3.0 * r:
            meet.add((i, j))
    assert meet and meet <= kept
    assert len(kept) < 0.1 * static[0].size


@pytest.mark.parametrize("dt", [1 / 60, 1 / 200])
@pytest.mark.parametrize("target", ["cylinder", "edge"])
def test_a_rope_dropped_at_10_m_per_s_onto_a_cylinder_or_a_box_edge_does_not_pass_through(target, dt):
    """30 segments, r = 5 mm, μ 0.3: after 0.3 s the rope's middle is outside the collider and above its bottom,
    and no axis point went deeper than a quarter of the radius into it after any step. The issue's 0.05 r is not
    met robustly: the impact steps end at the iteration cap, so the depth follows rounding (compiled solver:
    0.047 r and 0.046 r on the cylinder at Δt = 1/60 and 1/200 s, 0.066 r and 0.108 r on the edge; numpy solver:
    0.23, 0.045, 0.074 and 0.22 r; with the collider rows frozen at the step's start the compiled solver passed
    through the edge at 1/60 s and went 1.06 r deep at 1/200 s)."""
    run = drop.drop(target, dt, method="active_set")
    assert not run["failed"] and not run["pass_through"]
    assert run["penetration_r"] < 0.25


@pytest.mark.parametrize(("dt", "mu"), [(1 / 60, 0.0), (1 / 200, 0.0), (1 / 200, 0.3)])
def test_two_rods_crossing_at_10_m_per_s_do_not_pass_through_each_other(dt, mu):
    """Frictionless, and with μ 0.3 with the Newton steps limited to 2 r (without it they diverged). Frictionless,
    every step converges; with friction the impact step may end at the iteration cap (1 of 40 steps measured)."""
    run = drop.crossing_rods(dt, mu=mu, method="active_set", max_move=2 * drop.R_ROPE if mu else None)
    assert not run["failed"] and not run["pass_through"]
    assert run["separation_m"] > 0.0
    assert run["penetration_r"] < 0.1
    assert run["rows_cap_steps"] == 0 or (mu > 0.0 and run["rows_cap_steps"] <= 1)


@pytest.mark.parametrize("dt", [1 / 60, 1 / 200])
@pytest.mark.parametrize("target", ["cylinder", "edge"])
def test_the_schur_method_stops_a_rope_dropped_at_10_m_per_s_within_a_twentieth_of_its_radius(target, dt):
    """``method="schur"``: the impact steps start from the step's start pose (the prediction is 34 radii
    down, through the collider) and converge: measured 0.046 r (cylinder, both Δt), 0.015 r and 0.024 r (edge), 1 of
    the 156 steps of the four drops at the cap (the compiled and the numpy solver alike)."""
    run = drop.drop(target, dt, method="schur")
    assert not run["failed"] and not run["pass_through"]
    assert run["penetration_r"] <= 0.05
    assert run["rows_cap_steps"] <= 1


@pytest.mark.parametrize("mu", [0.0, 0.3])
@pytest.mark.parametrize("dt", [1 / 60, 1 / 200])
def test_the_schur_method_stops_two_rods_crossing_at_10_m_per_s_with_segment_pair_rows(dt, mu):
    """One row per pair of capsules (``self_contacts="pairs"``): every step converges and the rods meet 2e-5 r
    (1/60 s) and 5e-5 r (1/200 s) deep. (With a row per joint point against the other rod's axis the crossing has a
    lateral curvature of 1/d that two straight capsules do not have, a negative geometric stiffness the Newton step
    leaves out: 5 of 12 steps at the cap at 1/60 s.) With μ 0.3 the rods slide and turn against each other: the
    friction is on Coulomb's disk in every QP and its bound μλ_n found by Newton's method, so the iterations
    converge (with the bound by successive approximations, which diverged there, 4 of 12 and 5 of 40 steps at the
    cap)."""
    run = drop.crossing_rods(dt, mu=mu, method="schur", self_contacts="pairs")
    assert not run["failed"] and not run["pass_through"]
    assert run["separation_m"] > 0.0
    assert run["penetration_r"] < 0.01
    assert run["rows_cap_steps"] == 0
