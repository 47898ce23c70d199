"""The core's model / state / stepper split and its public hooks: ``Simulator.state`` round-trips, a failed step
restores the saved start, the step context names the step's start and its Δt and stage, loop closing and the drag
read only public state, and the kernel registry gives core the kernels the air layer registered."""

import numpy as np
import pytest

import solver
from solver.build.scenes import cantilever
from solver.core import State, compiled
from solver.core.model import RodModel, rod_from_polyline


def stepped(steps: int = 5, **options) -> solver.Simulator:
    sim = solver.Simulator(cantilever(20), dt=1 / 60, **options)
    sim.run(steps)
    return sim


def test_state_is_a_copy_and_setting_it_replays_the_same_steps():
    sim = stepped()
    saved = sim.state
    assert isinstance(saved, State) and saved.time == pytest.approx(5 / 60)
    assert not np.shares_memory(saved.positions, sim.positions)
    sim.run(3)
    after = sim.state
    sim.state = saved
    assert sim.time == saved.time and np.array_equal(sim.positions, saved.positions)
    sim.run(3)
    for name in ("positions", "orientations", "velocities", "angular_velocities", "lam"):
        assert np.array_equal(getattr(sim, name), getattr(after, name)), name


def test_state_rejects_arrays_of_another_model():
    sim = stepped(0)
    wrong = State.at_rest(cantilever(10))
    with pytest.raises(ValueError, match="state.positions"):
        sim.state = wrong


def test_step_context_names_the_step_start_and_both_step_lengths():
    seen = []

    def field(sim):
        ctx = sim.step_context
        seen.append((ctx.is_open, ctx.step_dt, ctx.stage_dt, ctx.start.time, ctx.start_positions.copy()))
        return np.zeros((sim.model.n_segments, 3)), np.zeros((sim.model.n_segments, 3))

    sim = stepped(0, integrator="bdf2")
    sim.force_fields.append(field)
    start = sim.positions.copy()
    sim.run(2)
    (open_1, dt_1, h_1, t_1, x_1), (open_2, dt_2, h_2, t_2, _) = seen
    assert open_1 and open_2 and dt_1 == dt_2 == sim.dt == 1 / 60
    assert h_1 == 1 / 60 and h_2 == pytest.approx(2 / 3 / 60)  # BDF2's first step is an Euler step
    assert t_1 == 0.0 and t_2 == pytest.approx(1 / 60) and np.array_equal(x_1, start)
    assert not sim.step_context.is_open and sim.step_context.start.time == sim.time


def test_a_failed_step_restores_the_saved_start():
    sim = stepped()
    before = sim.state

    def blow_up(s):
        f = np.zeros((s.model.n_segments, 3))
        f[-1, 2] = np.inf
        return f, np.zeros_like(f)

    sim.force_fields.append(blow_up)
    with pytest.raises(solver.NonFiniteStateError):
        sim.step()
    assert sim.time == before.time and np.array_equal(sim.positions, before.positions)
    assert np.array_equal(sim.velocities, before.velocities) and not np.any(sim.lam)


def test_joint_system_reports_its_elimination_rounds():
    sim = stepped(0)
    assert sim.step_context.joints.elimination_rounds is None
    sim.run(1)
    assert sim.step_context.joints.elimination_rounds >= 1 and sim.step_context.joints.factored


def test_the_air_layer_registers_its_drag_kernel_with_core():
    assert "drag" in compiled._KERNELS and compiled._KERNELS["drag"].module.endswith("air._drag_kernel")
    active, _ = compiled.compiled_status()
    if active:
        assert compiled.kernel("drag") is not None and compiled.kernel("no such kernel") is None
    else:
        assert compiled.kernel("drag") is None


def test_a_ring_closes_through_the_public_step_context():
    """Loop closing (tree response) solves with the step context's factorisation: a ring keeps its closing joint."""
    theta = np.linspace(0.0, 2.0 * np.pi, 13)
    rod = rod_from_polyline(np.stack((np.cos(theta), np.sin(theta), 0.0 * theta), axis=1), 0.02, 1e8)
    n = rod.n_segments
    ring = RodModel.from_arrays(
        rod.positions, rod.orientations, rod.lengths, rod.radii, rod.densities,
        joint_parent=np.arange(n), joint_child=(np.arange(n) + 1) % n,
    )  # fmt: skip
    assert ring.loops.n_joints == 1
    sim = solver.Simulator(ring, dt=1 / 60, max_iterations=20)
    assert sim.gs_constraints and sim.gs_constraints[0].response == "tree"
    report = sim.run(10)
    assert np.isfinite(report.residual) and report.residual < 1e-3


def test_a_kernel_registered_late_loads_on_first_use_or_stays_off(tmp_path):
    active, _ = compiled.compiled_status()
    source = tmp_path / "kernel.py"
    source.write_text("")

    def broken(module):
        raise RuntimeError("miscompiled")

    compiled.register_kernel("late_good", "json", source, lambda module: None)
    compiled.register_kernel("late_broken", "json", source, broken)
    try:
        good, bad = compiled.kernel("late_good"), compiled.kernel("late_broken")
        assert (good is not None) == active and bad is None and compiled.kernel("late_broken") is None
        assert compiled._KERNELS["late_broken"].failed == active
    finally:
        del compiled._KERNELS["late_good"], compiled._KERNELS["late_broken"]
