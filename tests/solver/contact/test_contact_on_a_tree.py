"""The default contact on a loaded tree: a random tree (80 segments of 10 cm, r 1 cm, E = 0.1 GPa) pushed by a
sideways load of half its weight into a ball beside its highest segment, Δt = 1/48 s (two substeps at 24 fps), the
add-on's 5 iterations and tolerance 1e-6.

A contact step that is no impact solves XPBD's fixed point, as the Simulator does without contact: every contact
step converges within the 5 iterations (the rows' natural map and the joints' residual within the tolerance). Newton's
method on the implicit step (``SchurOptions(implicit=True)``) converges only linearly there (its matrix holds the
joints' geometric stiffness lumped to a diagonal; docs/notes/contacts.md): most contact steps end at the cap."""

import numpy as np

from solver import Contacts, SchurOptions, Simulator, Sphere
from solver.build.scenes import random_tree


def pushed_tree(method):
    model = random_tree(80, seed=1, youngs_modulus=1e8, radius=0.01)
    sim = Simulator(model, dt=1 / 48, max_iterations=5, tolerance=1e-6)
    top = int(np.argmax(sim.positions[:, 2]))
    ball = Sphere(sim.positions[top] + np.array([0.105, 0.0, 0.0]), 0.1)  # overlapping the top segment by 5 mm
    contacts = Contacts(model, [ball], friction=0.5, method=method)
    sim.gs_constraints.append(contacts)
    sim.forces[:, 0] = 0.5 * model.masses * 9.81
    for _ in range(24):
        sim.step()
    return sim, [r for r in contacts.reports if r.rows]


def test_the_default_contact_on_a_loaded_tree_converges_within_five_iterations():
    _, reports = pushed_tree(None)
    assert len(reports) == 24
    assert all(r.converged and not r.hit_cap and not r.xpbd for r in reports)
    assert np.median([r.iterations for r in reports]) <= 4
    assert max(r.residual for r in reports) <= 1e-6  # the rows' natural map and the joints' ‖C + α̃λ‖∞


def test_newton_on_the_implicit_step_is_slower_there():
    _, reports = pushed_tree(SchurOptions(implicit=True))
    assert sum(r.hit_cap for r in reports) >= len(reports) // 2
