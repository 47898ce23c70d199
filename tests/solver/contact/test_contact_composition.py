"""Contact by composition (solver/contact/): one strategy per module behind the ``ContactSolver`` protocol, each with
frozen options; a short ``Contacts`` constructor; hooks through the Simulator's public step context only."""

import ast
import dataclasses
import inspect
from pathlib import Path

import numpy as np
import pytest

from solver import Contacts, Plane, Simulator, rod_from_polyline
from solver.contact import ActiveSetOptions, DetectionOptions, GaussSeidelOptions, PostOptions, SchurOptions
from solver.contact.rows import StepRows
from solver.contact.solvers import METHODS, STRATEGIES, ContactSolver, SemismoothOptions, TreeResponseOptions

CONTACT = Path(__file__).resolve().parents[3] / "solver" / "contact"


def rod_on_floor(r=0.01):
    pts = np.stack([np.linspace(0, 0.2, 6), np.zeros(6), np.full(6, r)], 1)
    return rod_from_polyline(pts, r, 1e9)


def test_contacts_has_a_short_constructor():
    params = [p for p in inspect.signature(Contacts.__init__).parameters if p != "self"]
    assert len(params) <= 8
    assert params[:2] == ["model", "colliders"]


@pytest.mark.parametrize("options", [o() for o in STRATEGIES])
def test_every_strategy_meets_the_protocol_and_its_options_are_frozen(options):
    contacts = Contacts(rod_on_floor(), [Plane()], friction=0.3, method=options)
    solver = contacts.solver
    for name in ("begin_step", "project", "end_step", "solves_joints", "gap_batches", "row_compliance"):
        assert callable(getattr(solver, name))
    assert isinstance(solver.joint_point_rows, bool) and isinstance(solver.direct, bool)
    assert len(solver.post_defaults) == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.__setattr__(dataclasses.fields(options)[0].name, 1.0)
    assert isinstance(solver, ContactSolver)


def test_a_method_by_name_is_its_default_options():
    for name, options in METHODS.items():
        assert type(Contacts(rod_on_floor(), method=name).solver.options) is options
    assert type(Contacts(rod_on_floor()).solver.options) is SchurOptions
    with pytest.raises(ValueError, match="method"):
        Contacts(rod_on_floor(), method=object())


def _drop_on_floor(model, solver, method=None, steps=40):
    """``model`` dropped 2 cm onto a floor for ``steps`` steps of 10 ms: (contacts, lowest surface gap [m])."""
    sim = Simulator(model, dt=0.01, solver=solver, max_iterations=20, tolerance=1e-7)
    contacts = Contacts(model, [Plane()], friction=0.3, method=method)
    sim.gs_constraints.append(contacts)
    sim.positions[:, 2] += 0.02
    for _ in range(steps):
        sim.step()
    return contacts, float(contacts.surface_gaps(sim)[1])


@pytest.mark.parametrize("solver", ["gs", "kkt"])
def test_the_default_contacts_hold_with_either_joint_solver_and_without_joints(solver):
    # the default (the schur method) needs the tree factorisation of the joints; with XPBD's Gauss–Seidel joints or
    # a model of one segment it falls back to Gauss–Seidel contacts, and the rod lands on the floor either way (a
    # strategy that skipped its rows would let it fall through: 40 steps of 10 ms fall 78 mm)
    rod = rod_on_floor()
    contacts, gap = _drop_on_floor(rod, solver)
    expected = SchurOptions if solver == "kkt" else GaussSeidelOptions
    assert type(contacts.solver.options) is expected
    assert gap > -0.05 * 0.01
    single = rod_from_polyline(np.array([[0.0, 0.0, 0.01], [0.1, 0.0, 0.01]]), 0.01, 1e9)
    assert single.n_joints == 0
    contacts, gap = _drop_on_floor(single, solver)
    assert type(contacts.solver.options) is GaussSeidelOptions
    assert gap > -0.05 * 0.01


def test_a_newton_method_named_with_gauss_seidel_joints_is_an_error():
    with pytest.raises(ValueError, match=r"SchurOptions.*solver='kkt'.*'gs'"):
        _drop_on_floor(rod_on_floor(), "gs", method="schur", steps=1)


def test_experimental_strategies_live_in_their_own_package():
    for options in (TreeResponseOptions, SemismoothOptions):
        assert ".experimental." in STRATEGIES[options].__module__
    for options in (GaussSeidelOptions, ActiveSetOptions, SchurOptions):
        assert ".experimental." not in STRATEGIES[options].__module__


@pytest.mark.parametrize(
    "options, match",
    [
        (lambda: GaussSeidelOptions(sweeps=0), r"GaussSeidelOptions\.sweeps"),
        (lambda: ActiveSetOptions(grow_rounds=-1), r"ActiveSetOptions\.grow_rounds"),
        (lambda: SchurOptions(friction_compliance=0.0), r"SchurOptions\.friction_compliance"),
        (lambda: DetectionOptions(margin=-1.0), "margin"),
        (lambda: PostOptions(rounds=0), r"PostOptions\.rounds"),
    ],
)
def test_options_are_checked_where_they_are_made(options, match):
    with pytest.raises(ValueError, match=match):
        options()


@pytest.mark.parametrize("method", ["gauss_seidel", "active_set", "schur"])
def test_the_steps_rows_are_plain_data_on_the_contacts(method):
    model = rod_on_floor()
    sim = Simulator(model, dt=0.01, max_iterations=5, tolerance=1e-8)
    contacts = Contacts(model, [Plane()], friction=0.3, method=method)
    sim.gs_constraints.append(contacts)
    sim.step()
    rows = contacts.rows
    assert isinstance(rows, StepRows) and rows.n_contacts == contacts.n_contacts > 0
    assert rows.sa.shape == rows.za.shape == rows.rest.shape == rows.mu.shape == rows.normal_impulse.shape
    assert rows.normal.shape == rows.tangent_impulse.shape == (rows.n_contacts, 3)
    np.testing.assert_array_equal(contacts.normal_impulse, rows.normal_impulse)
    assert contacts.last_report is not None and contacts.last_report.rows == rows.n_contacts


def test_post_stabilisation_is_a_composed_part():
    assert Contacts(rod_on_floor(), [Plane()]).post is None
    method = ActiveSetOptions(compliance=1e-5, rounds=4)
    contacts = Contacts(rod_on_floor(), [Plane()], method=method, post=PostOptions())
    assert contacts.post.compliance == 1e-5 and contacts.post.solver.rounds == 4  # the method's, unless set
    contacts = Contacts(rod_on_floor(), [Plane()], post=PostOptions(compliance=1e-6, grow_rounds=3))
    assert contacts.post.compliance == 1e-6 and contacts.post.solver.grow_rounds == 3


def private_simulator_reads(source: str) -> list[str]:
    """``sim._name`` attribute accesses in ``source`` (a hook must use the public state and ``sim.step_context``)."""
    return [
        f"{node.lineno}: sim.{node.attr}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and isinstance(node.value, ast.Name)
        and node.value.id == "sim"
    ]


def test_contact_reads_the_simulator_through_its_public_api_only():
    assert private_simulator_reads("x = sim._kkt\nsim.positions[0] = 1") == ["1: sim._kkt"]  # the checker finds one
    found = {str(p.relative_to(CONTACT)): private_simulator_reads(p.read_text()) for p in CONTACT.rglob("*.py")}
    assert {k: v for k, v in found.items() if v} == {}
