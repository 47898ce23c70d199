"""The compiled Newton iteration (solver/core/compiled.py) against the numpy solvers, which stay the reference:
the same scenes stepped for 1 s by both give the same positions to 1e-10 m; without numba the numpy solvers
run, with one message."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from solver import AerodynamicDrag, Simulator, WindField
from solver.build.materials import PRESETS as MATERIALS
from solver.build.scenes import cantilever, chain, random_tree
from solver.core import compiled
from solver.core import quaternion as quat
from solver.core.joint_constraint import JointEvaluator
from solver.core.kkt_tree import TreeKKT
from solver.core.model import RodModel, rod_from_polyline

ROOT = Path(__file__).resolve().parents[3]
ACTIVE, STATUS = compiled.compiled_status()
needs_numba = pytest.mark.skipif(not ACTIVE, reason=f"the compiled solver is not active: {STATUS}")


def sapling(preset: str, leaves: bool) -> RodModel:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _wind_common import sapling_tree

    model, _, _, _ = sapling_tree(preset, MATERIALS["wood"], MATERIALS["leaf"] if leaves else None)
    return model


def both(model: RodModel, seconds: float = 1.0, setup=None, **options) -> tuple[Simulator, Simulator]:
    """The numpy and the compiled Simulator of ``model`` after ``seconds``, stepped in turn."""
    sims = tuple(Simulator(model, compiled=flag, **options) for flag in (False, True))
    for sim in sims:
        if setup is not None:
            setup(sim)
    for _ in range(int(round(seconds / sims[0].dt))):
        for sim in sims:
            sim.step()
    assert not sims[0].compiled and sims[1].compiled
    assert type(sims[1]._kkt).__name__ == "CompiledKKT"
    return sims


def assert_same_motion(model, sims, atol=1e-10):
    numpy_sim, compiled_sim = sims
    moved = np.max(np.abs(numpy_sim.positions - model.positions))
    assert moved > 1e-3  # the scene moves: agreement is not a pose at rest
    np.testing.assert_allclose(compiled_sim.positions, numpy_sim.positions, rtol=0, atol=atol)
    np.testing.assert_allclose(compiled_sim.orientations, numpy_sim.orientations, rtol=0, atol=atol)
    assert compiled_sim.last_report.iterations == numpy_sim.last_report.iterations


def two_anchor_rope() -> RodModel:
    """A rope held at both ends (two pinned segments in one component) sagging between them."""
    x = np.linspace(0.0, 2.0, 41)
    return rod_from_polyline(np.stack((x, 0 * x, 0 * x), 1), 0.01, 1e8, pinned=["start", "end"])


def free_tree() -> RodModel:
    """A random tree with nothing pinned (falls freely, spinning: each component is rooted at a segment)."""
    tree = random_tree(120, seed=5, branch_probability=0.5)
    return tree.copy_with(pinned=np.zeros(tree.n_segments, bool))


SCENES = {
    "cantilever": lambda: cantilever(50),
    "chain_300": lambda: chain(300),
    "random_tree_400": lambda: random_tree(400, seed=1, branch_probability=0.5),
    "random_tree_2000": lambda: random_tree(2000, seed=2),
    "two_anchor_rope": two_anchor_rope,
    "free_tree": free_tree,
}


@needs_numba
@pytest.mark.parametrize("name", list(SCENES))
def test_compiled_and_numpy_positions_agree_after_one_second(name):
    model = SCENES[name]()
    options = dict(gravity=(0.0, 0.0, 0.0)) if name == "free_tree" else {}
    setup = None
    if name == "free_tree":

        def setup(sim):
            sim.angular_velocities[:] = (0.0, 0.0, 3.0)  # body-frame spin: the tree moves without gravity
            sim.velocities[:] = (0.2, 0.0, 0.0)

    sims = both(model, dt=1 / 60, max_iterations=4, tolerance=1e-9, setup=setup, **options)
    # A component held at two places: the compiled elimination (leaves to one root) takes the second anchor's
    # joint as a leaf, its compliance α̃ ~ 1e-7 beside the segment's mass, where the numpy solvers form the
    # joint-space complement: positions 5e-9 m and orientations 1.2e-8 apart after 1 s on this 2 m rope
    # (rounding of that pivot).
    assert_same_motion(model, sims, atol=2e-8 if name == "two_anchor_rope" else 1e-10)


def hanging(kind: str, youngs_modulus: float = 1e8, **options) -> RodModel:
    """A 1 m rod of 20 segments held at its start by a joint of ``kind``, released horizontal (it swings down)."""
    x = np.linspace(0.0, 1.0, 21)
    return rod_from_polyline(np.stack((x, 0 * x, 0 * x), 1), 0.01, youngs_modulus, start=kind, **options)


def rail_slide() -> RodModel:
    """A rod hanging from a rail tilted 45° (axis in the anchor's frame): it slides down the rail and swings."""
    x = np.linspace(0.0, 1.0, 21)
    return rod_from_polyline(np.stack((x, 0 * x, -x), 1), 0.01, 1e8, start="rail", start_axis=(1.0, 0.0, 1.0))


def mixed_tree() -> RodModel:
    """A random tree whose joints are a random mix of every kind, a third of them with physical stretch."""
    tree = random_tree(150, seed=4, branch_probability=0.5)
    rng = np.random.default_rng(4)
    m = tree.n_joints
    kinds = rng.choice(["clamp", "clamp", "clamp", "ball_twist_lock", "hinge", "rail"], size=m)
    axes = np.eye(3)[rng.integers(0, 3, size=m)]
    return tree.copy_with(joint_kind=list(kinds), joint_axis=axes, physical_stretch=rng.random(m) < 1 / 3)


JOINT_SCENES = {
    "ball": lambda: hanging("ball"),
    "ball_twist_lock": lambda: hanging("ball_twist_lock"),
    "hinge": lambda: hanging("hinge", start_axis=(0.0, 1.0, 0.0)),
    "rail": rail_slide,
    "physical_stretch": lambda: hanging("ball", youngs_modulus=2e6, stretch="physical"),
    "mixed_tree": mixed_tree,
}


@needs_numba
@pytest.mark.parametrize("name", list(JOINT_SCENES))
def test_joint_kinds_and_physical_stretch_agree(name):
    """Dropped rows (ball, hinge, rail) and position rows in the parent's frame (rail, physical stretch) in the
    compiled kernels: segments start spinning about random axes, so every free rotation moves."""
    model = JOINT_SCENES[name]()
    assert model.has_masked_rows

    def setup(sim):
        sim.angular_velocities[:] = np.random.default_rng(2).normal(scale=1.0, size=(model.n_segments, 3))

    sims = both(model, dt=1 / 60, max_iterations=4, tolerance=1e-9, setup=setup)
    assert_same_motion(model, sims)


@needs_numba
@pytest.mark.parametrize("preset,leaves", [("quaking_aspen", False), ("quaking_aspen", True), ("white_birch", False)])
def test_sapling_trees_in_wind_agree(preset, leaves):
    """Sapling presets (benchmarks/sapling_data.py) in a 10 m/s wind with aerodynamic drag (implicit damping
    in the masses), 3 Newton iterations per step as the benchmarks take."""
    model = sapling(preset, leaves)

    def setup(sim):
        sim.force_fields.append(AerodynamicDrag(model, WindField(10.0, (1.0, 0.0, 0.0))))

    sims = both(model, dt=1 / 60, max_iterations=3, tolerance=0.0, setup=setup)
    assert_same_motion(model, sims)


@needs_numba
@pytest.mark.parametrize("speed", [3.0, 25.0])  # below and above the leaves' reconfiguration speed (10 m/s)
def test_compiled_drag_gives_the_numpy_loads(speed):
    """The drag kernel against AerodynamicDrag's numpy path on the leafy aspen (branches and leaf plates) in a
    random moving, turning state: forces, torques and implicit damping to rounding."""
    model = sapling("quaking_aspen", True)
    assert model.leaf.any() and (~model.leaf).any()
    drag = AerodynamicDrag(model, WindField(speed, (1.0, 0.3, 0.0)))
    sims = [Simulator(model, compiled=flag) for flag in (False, True)]
    rng = np.random.default_rng(3)
    state = dict(
        orientations=quat.normalize(model.orientations + 0.2 * rng.standard_normal((model.n_segments, 4))),
        velocities=rng.standard_normal((model.n_segments, 3)),
        angular_velocities=5.0 * rng.standard_normal((model.n_segments, 3)),
    )
    loads = []
    for sim in sims:
        for name, value in state.items():
            setattr(sim, name, value.copy())
        loads.append(drag(sim) + (drag.implicit_damping,))
    for reference, value in zip(loads[0], loads[1], strict=True):
        assert np.max(np.abs(reference)) > 0.0
        np.testing.assert_allclose(value, reference, rtol=1e-12, atol=1e-12 * np.max(np.abs(reference)))
    # the kernel ran: its scalar arithmetic rounds differently from numpy's array operations somewhere
    assert any(np.any(value != reference) for reference, value in zip(loads[0], loads[1], strict=True))


@needs_numba
def test_factor_reuse_and_the_literal_strain_agree():
    """Simplified Newton (factor_reuse 2) and Eq. 23's literal strain (as benchmarks/vs_reference.py's twin)."""
    model = random_tree(300, seed=7, branch_probability=0.5)

    def setup(sim):
        sim.factor_reuse = 2
        sim._joint_eval = JointEvaluator(model, strain="eq23")

    sims = both(model, dt=1 / 60, max_iterations=5, tolerance=1e-10, setup=setup)
    assert_same_motion(model, sims)
    assert sims[1]._kkt._rotation_strain is False


@needs_numba
def test_loop_closing_through_the_compiled_factorisation():
    """A free ring of 24 segments whose segments start spinning: its loop-closing joint is projected through
    the tree's factorisation (kkt.solve with a segment right-hand side) after every direct solve."""
    t = np.linspace(0.0, 2 * np.pi, 25)
    pts = np.stack((np.cos(t), np.sin(t), 0 * t), 1)
    edges = np.diff(pts, axis=0)
    n = edges.shape[0]
    lengths = np.linalg.norm(edges, axis=1)
    model = RodModel.from_arrays(
        0.5 * (pts[:-1] + pts[1:]),
        quat.from_two_vectors(np.array([0.0, 0.0, 1.0]), edges / lengths[:, None]),
        lengths,
        0.02,
        1000.0,
        joint_parent=np.arange(n),
        joint_child=(np.arange(n) + 1) % n,
        youngs_modulus=1e8,
    )
    assert model.loops.n_joints == 1

    def setup(sim):
        sim.angular_velocities[:] = np.random.default_rng(1).normal(scale=2.0, size=(n, 3))

    sims = both(model, dt=1 / 60, max_iterations=4, tolerance=1e-9, setup=setup)
    assert_same_motion(model, sims, atol=1e-9)


@needs_numba
def test_solve_matches_the_numpy_factorisation():
    """``CompiledKKT.solve`` (what contacts and loops call) against ``TreeKKT.solve`` for a random right-hand
    side with segment and joint parts, at a bent pose."""
    model = random_tree(500, seed=3, branch_probability=0.6)
    sim = Simulator(model, dt=1 / 60, compiled=True)
    for _ in range(10):
        sim.step()
    sim.begin_step()
    pose = sim.positions.copy(), sim.orientations.copy()  # the iteration factors H here, then moves on
    sim.iterate()
    kkt = sim._kkt
    ev = JointEvaluator(model)
    ev.values(*pose)
    reference = TreeKKT(sim.free_index.size, sim._seg_a, sim._seg_b)
    reference.factor(sim._mass_diag_free, sim.alpha_tilde, *ev.jacobians())
    rng = np.random.default_rng(0)
    rhs_seg, rhs_joint = rng.normal(size=(sim.free_index.size, 6)), rng.normal(size=(model.n_joints, 6))
    for ours, theirs in zip(kkt.solve(rhs_seg, rhs_joint), reference.solve(rhs_seg, rhs_joint), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9 * np.max(np.abs(theirs)))


@needs_numba
def test_the_residual_follows_changes_made_after_an_iteration():
    """The residual an iteration found is reused only while the pose, λ and α̃ are those it left: λ or a pose
    changed in place afterwards (as a Gauss–Seidel set changes them) gives the residual of the new state,
    against the numpy evaluator's C + α̃λ."""
    model = random_tree(300, seed=4)
    sim = Simulator(model, dt=1 / 60, compiled=True)
    sim.begin_step()
    sim.iterate()
    ev = JointEvaluator(model)

    def reference() -> float:
        return float(np.max(np.abs(ev.values(sim.positions, sim.orientations) + sim.alpha_tilde * sim.lam)))

    after_iteration = reference()
    assert sim.residual() == pytest.approx(after_iteration, rel=1e-6, abs=1e-14)
    sim.lam[17] += 1e4 / np.max(sim.alpha_tilde[17])  # α̃λ changes by up to 1e4 · α̃ / max α̃ of that joint
    assert reference() > 1e3
    assert sim.residual() == pytest.approx(reference(), rel=1e-12)
    sim.lam[17] = 0.0
    sim.positions[40] += [2e-3, -1e-3, 0.0]
    assert reference() > 1e-3
    assert sim.residual() == pytest.approx(reference(), rel=1e-9)


@needs_numba
def test_an_iteration_starts_from_changes_made_after_the_last_one():
    """The compiled iteration keeps its working copies of the pose and λ from one iteration to the next only
    while the arrays are unchanged (their fingerprints): a segment moved and a λ changed in place between
    iterations (as a Gauss–Seidel set changes them) are iterated from, as the numpy solver does."""
    model = random_tree(300, seed=4)
    numpy_sim, compiled_sim, unchanged = (Simulator(model, dt=1 / 60, compiled=flag) for flag in (False, True, True))
    for sim in (numpy_sim, compiled_sim, unchanged):
        sim.begin_step()
        sim.iterate()
        if sim is not unchanged:
            sim.lam[17] += 0.01  # (|λ| is up to ~0.007 here)
            sim.positions[40] += [2e-3, -1e-3, 0.0]
        sim.iterate()
    assert np.max(np.abs(compiled_sim.positions - unchanged.positions)) > 1e-4  # the changes matter
    assert np.max(np.abs(compiled_sim.lam - unchanged.lam)) > 1e-4
    np.testing.assert_allclose(compiled_sim.positions, numpy_sim.positions, rtol=0, atol=1e-10)
    np.testing.assert_allclose(compiled_sim.lam, numpy_sim.lam, rtol=0, atol=1e-9 * np.max(np.abs(numpy_sim.lam)))


@needs_numba
@pytest.mark.parametrize("scene, in_place", [("chain", True), ("tree", False)])
def test_compliances_and_masses_changed_in_place_are_iterated_with(scene, in_place):
    """α̃ and the masses are read in place along a chain and kept as copies in elimination order on a tree
    (while their fingerprints are unchanged): either way, changed in place between iterations they are the
    ones the next iteration factors with and the residual it reports, as the numpy solver's."""
    model = chain(300) if scene == "chain" else random_tree(300, seed=4)
    numpy_sim, compiled_sim = (Simulator(model, dt=1 / 60, compiled=flag) for flag in (False, True))
    ev = JointEvaluator(model)
    for sim in (numpy_sim, compiled_sim):
        sim.begin_step()
        sim.iterate()
        sim.alpha_tilde[::3] *= 1e3  # every third joint a thousand times softer
        sim._mass_diag_free[5::7] *= 4.0
        residual = sim.iterate()
        reference = np.max(np.abs(ev.values(sim.positions, sim.orientations) + sim.alpha_tilde * sim.lam))
        assert residual == pytest.approx(reference, rel=1e-9)
    assert compiled_sim._kkt._in_place is in_place
    np.testing.assert_allclose(compiled_sim.positions, numpy_sim.positions, rtol=0, atol=1e-10)
    np.testing.assert_allclose(compiled_sim.lam, numpy_sim.lam, rtol=0, atol=1e-9 * np.max(np.abs(numpy_sim.lam)))
    unchanged = Simulator(model, dt=1 / 60, compiled=True)
    unchanged.begin_step()
    unchanged.iterate()
    unchanged.iterate()
    assert np.max(np.abs(unchanged.positions - compiled_sim.positions)) > 1e-6  # the changes matter


def run_python(code: str, env_extra: dict) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("STIFF_RODS_COMPILED", None)
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=600
    )


def test_a_broken_numba_falls_back_to_numpy_with_one_message(tmp_path):
    """A numba that fails on import: the Simulator steps with the numpy solvers, compiled_status says why,
    and the log has one warning."""
    fake = tmp_path / "numba"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('numba built for another numpy')\n")
    out = run_python(
        """
        import logging, numpy as np
        logging.basicConfig(level=logging.WARNING, format="LOG %(levelname)s %(message)s")
        import solver
        from solver.build.scenes import cantilever
        active, message = solver.compiled_status()
        sim = solver.Simulator(cantilever(20), dt=1 / 60)
        sim.run(5)
        sim2 = solver.Simulator(cantilever(20), dt=1 / 60, compiled=True)
        sim2.run(5)
        print("RESULT", active, sim.compiled, sim2.compiled, type(sim._kkt).__name__, "|", message)
        print("SAME", np.array_equal(sim.positions, sim2.positions))
        """,
        {"PYTHONPATH": f"{tmp_path}:{ROOT}"},
    )
    assert out.returncode == 0, out.stderr
    result = next(line for line in out.stdout.splitlines() if line.startswith("RESULT"))
    assert result.startswith("RESULT False False False ChainKKT | numba unavailable")
    assert "numba built for another numpy" in result and "numpy solver" in result
    assert "SAME True" in out.stdout
    assert out.stderr.count("LOG WARNING") == 1 and "numba unavailable" in out.stderr


@needs_numba
def test_kernels_are_compiled_once_into_the_cache_folder(tmp_path):
    """prepare() says "preparing the solver…" when the kernels are not in the cache folder yet; a second
    process loads them from there without the message, faster."""
    code = """
        import time
        import solver
        solver.set_compiled_cache(CACHE)
        said = []
        t = time.perf_counter()
        status = solver.prepare_compiled(said.append)
        print("RESULT", status[0], round(time.perf_counter() - t, 2), "|".join(said))
        """.replace("CACHE", repr(str(tmp_path / "kernels")))
    results = []
    for _ in range(2):
        out = run_python(code, {})
        assert out.returncode == 0, out.stderr
        results.append(next(line for line in out.stdout.splitlines() if line.startswith("RESULT")).split(" ", 3))
    (_, active_1, seconds_1, said_1), (_, active_2, seconds_2, said_2) = (
        results[0],
        results[1] + [""] * (4 - len(results[1])),
    )
    assert active_1 == active_2 == "True"
    assert said_1 == compiled.PREPARING and said_2 == ""
    assert any((tmp_path / "kernels").rglob("*.nbi"))  # numba's cache index files
    assert float(seconds_2) < float(seconds_1)


@needs_numba
def test_a_long_chain_factorisation_holds_no_subnormal_numbers():
    """Roundoff in a chain's off-diagonal blocks shrinks by ~1e-17 per joint down the elimination: unflushed, a
    3,000-segment chain's factors held ~1,100 subnormal entries and a 10,000-segment chain's ~36,000, whose
    arithmetic made its iterations 4x slower per segment than a 1,000-segment chain's. The kernel flushes them to
    0; the solution is unchanged."""
    sims = tuple(Simulator(chain(3000), dt=1 / 60, compiled=flag) for flag in (False, True))
    for sim in sims:
        sim.begin_step()
        for _ in range(2):
            sim.iterate("kkt")
    kkt = sims[1]._kkt
    assert type(kkt).__name__ == "CompiledKKT"
    tiny = np.finfo(float).tiny  # the smallest normal float64
    for name in ("_w", "_lower", "_t"):
        a = getattr(kkt, name)
        assert a.size > 3000 and not np.any((a != 0) & (np.abs(a) < tiny)), name
    np.testing.assert_allclose(sims[1].positions, sims[0].positions, rtol=0, atol=1e-10)
    np.testing.assert_allclose(sims[1].lam, sims[0].lam, rtol=1e-9, atol=1e-12)
