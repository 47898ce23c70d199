"""Side by side with the authors' C++: ms per Newton iteration and positions after 2 s, same scenes.

The reference is ``DirectPositionBasedSolverForStiffRodsConstraint`` of the PositionBasedDynamics
library (Deul et al.'s own implementation, ``pip install pypbd``, see benchmarks/requirements.txt),
run single-threaded (``OMP_NUM_THREADS=1``: its step opens an OpenMP region unconditionally).

One description per scene, a :class:`solver.RodModel` in a y-up world, is handed to both solvers:
the same segments (positions, orientations, masses and inertia tensors given explicitly), the same
joints (points, Darboux lengths, circular radii, E, G), stretch compliance 1e-10 m/N, gravity
(0, −9.81, 0) m/s² (the reference's is fixed), one static segment (the clamp or the trunk's anchor),
Δt = 1/60 s and exactly ``--iterations`` Newton iterations per step (ours with tolerance 0; theirs
refactors once per iteration). The reference's rod axis is local +y (ours +z), so its body frames
are ours turned by +90° about x and its inertia diagonal is permuted to match.

Scenes: ``cantilever`` (Deul §5: L = 10 m, r = 0.5 m, E = 1 GPa, 50 segments, sagging under its own
weight), ``chain_N`` (a clamped horizontal rod, 4 m, r = 2 cm, E = 10 GPa, N = 100…1600 segments),
Sapling trees from benchmarks/sapling_data.py turned z-up → y-up (wood: E = 12.5 GPa, G = 6.5 GPa,
1000 kg/m³; trunk base pinned only) and ``white_birch_leaves`` with every leaf a segment
(solver.build.tree_builder.attach_leaves; for the reference, whose joints are circular, the leaf stems get
the circular section of the blade's weak-axis second moment and the untwisted blade's G, in both).

Both simulate 2 s from rest, one step each in turn, the order alternating; every step is timed
(process CPU time, so other processes on the machine do not count) and ``ratio`` is the median over
the steps after warm-up of ours / theirs for the same step. ms per iteration = ms per step /
iterations (prediction and velocity update included, for both). Ours is timed as shipped (the compiled
Newton iteration when numba works, ``compiled`` in the JSON says which; default bend/twist strain, the
rotation from rest: isotropic at branch junctions, see solver/core/joint_constraint.py); an untimed twin
with Eq. 23's literal strain, the reference's, checks that both solve the same problem: at 2 s the tips
(rods) or branch ends (trees) are compared, ``difference_rel`` = max |twin − reference| / max |ours − rest|
(rods: the two strains coincide), and ``difference_rel_default_strain`` the same for the shipped strain
(how much the isotropic junctions change the motion).

    python3 benchmarks/vs_reference.py --json                # all scenes; last stdout line: one JSON object
    python3 benchmarks/vs_reference.py --scenes cantilever chain_100 --json
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"  # before numpy / pypbd load their thread pools

import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common  # noqa: E402

from solver import Simulator, compiled_status  # noqa: E402
from solver.build.scenes import cantilever  # noqa: E402
from solver.build.tree_builder import attach_leaves, tree_from_branches  # noqa: E402
from solver.core import quaternion as quat  # noqa: E402
from solver.core.joint_constraint import JointEvaluator  # noqa: E402
from solver.core.model import cross_section_moments  # noqa: E402

GRAVITY = (0.0, -9.81, 0.0)
WOOD = dict(youngs_modulus=12.5e9, torsion_modulus=6.5e9, density=1000.0)
Z_UP_TO_Y_UP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])  # (x, y, z) → (x, z, −y)
# our body frame → the reference's (rod axis +z → +y): turn by +90° about x
TO_REFERENCE = np.array([np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0])
UNIT_CUBE_OBJ = (
    "\n".join(
        [f"v {x} {y} {z}" for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)]
        + [
            f"f {a} {b} {c}\nf {a} {c} {d}"
            for a, b, c, d in ((1, 3, 4, 2), (5, 6, 8, 7), (1, 2, 6, 5), (3, 7, 8, 4), (1, 5, 7, 3), (2, 4, 8, 6))
        ]
    )
    + "\n"
)
TREE_PRESETS = ("quaking_aspen", "small_pine", "white_birch")


def log(*args) -> None:
    print(*args, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------- scenes
def rod_scene(n: int, length: float, radius: float, youngs_modulus: float):
    """A clamped horizontal rod along +x (segment 0 is the pinned clamp); probe: the free tip."""
    model = cantilever(
        n, length=length, radius=radius, youngs_modulus=youngs_modulus, torsion_modulus=youngs_modulus / 2.6
    )
    tip = model.n_segments - 1
    return model, np.array([tip]), np.array([[0.0, 0.0, 0.5 * model.lengths[tip]]])


def tree_scene(preset: str, leaves: bool):
    """A Sapling tree, y-up, wood; probes: the tip of every branch's last span."""
    import sapling_data

    data = sapling_data.load(preset)
    branches = [(p @ Z_UP_TO_Y_UP.T, r) for p, r in data["branches"]]
    model, branch_map = tree_from_branches(branches, parents=data["parents"], **WOOD)
    ends = np.array([s[-1] for s in branch_map.span_segment])
    if leaves:
        model, _ = attach_leaves(
            model,
            branch_map,
            stem=data["leaf_stem"] @ Z_UP_TO_Y_UP.T,
            axis=data["leaf_axis"] @ Z_UP_TO_Y_UP.T,
            normal=data["leaf_normal"] @ Z_UP_TO_Y_UP.T,
            length=data["leaf_length"],
            width=data["leaf_width"],
            parent=data["leaf_parent"],
        )
        model = circular_leaf_stems(model)
    probes = np.zeros((ends.size, 3))
    probes[:, 2] = 0.5 * model.lengths[ends]
    return model, ends, probes


def circular_leaf_stems(model):
    """The reference's joints are circular: give each leaf stem the circle with the blade's weak-axis
    second moment (I = π a b³/4 = π r⁴/4) and the untwisted G = E / 2, in both solvers."""
    leaf_joint = model.leaf[model.joint_child]
    radii = model.joint_radii.copy()
    i_weak, _, _ = cross_section_moments(radii[leaf_joint])
    radii[leaf_joint] = ((4.0 * i_weak / np.pi) ** 0.25)[:, None]
    torsion = model.torsion_modulus.copy()
    torsion[leaf_joint] = 0.5 * model.youngs_modulus[leaf_joint]
    return model.copy_with(joint_radii=radii, torsion_modulus=torsion)


def scene(name: str):
    if name == "cantilever":
        return rod_scene(50, 10.0, 0.5, 1e9)
    if name.startswith("chain_"):
        return rod_scene(int(name.split("_")[1]), 4.0, 0.02, 10e9)
    if name == "white_birch_leaves":
        return tree_scene("white_birch", leaves=True)
    return tree_scene(name, leaves=False)


# ---------------------------------------------------------------------------------------------- reference
class Reference:
    """The same model in pypbd's DirectPositionBasedSolverForStiffRodsConstraint."""

    def __init__(self, model, dt: float, iterations: int, mesh_dir: Path):
        try:
            import pypbd as pbd
        except ImportError:
            raise SystemExit(
                "the reference needs pypbd: python3 -m pip install -r benchmarks/requirements.txt"
            ) from None
        self.pbd = pbd
        if int(model.pinned.sum()) != 1:
            raise ValueError(f"the reference needs exactly one static segment, the scene has {int(model.pinned.sum())}")
        if not np.allclose(model.joint_radii[:, 0], model.joint_radii[:, 1]):
            raise ValueError("the reference's joints are circular")
        cube = mesh_dir / "unit_cube.obj"
        cube.write_text(UNIT_CUBE_OBJ)
        sim = pbd.Simulation.getCurrent()
        sim.initDefault()
        self.model = sim.getModel()
        self.step_controller = sim.getTimeStep()
        self.step_controller.setValueUInt(pbd.TimeStepController.NUM_SUB_STEPS, 1)
        self.step_controller.setValueUInt(pbd.TimeStepController.MAX_ITERATIONS, iterations)
        self.step_controller.setValueUInt(pbd.TimeStepController.MAX_ITERATIONS_V, 0)
        pbd.TimeManager.getCurrent().setTimeStepSize(dt)
        pbd.TimeManager.getCurrent().setTime(0.0)
        vd, mesh = pbd.OBJLoader.loadObjToMesh(str(cube), [1.0, 1.0, 1.0])
        q = quat.multiply(model.orientations, TO_REFERENCE)
        xyzw = np.concatenate((q[:, 1:], q[:, :1]), axis=1)
        inertia = model.inertia[:, [0, 2, 1]]  # reference axes: (our x, our z, −our y)
        for i in range(model.n_segments):
            rb = self.model.addRigidBody(
                1.0,
                vd,
                mesh,
                model.positions[i],
                np.eye(3),
                [1.0, 1.0, 1.0],
                False,
                False,
                np.array([2, 2, 2], dtype=np.uint32),
            )
            rb.initBody(float(model.masses[i]), model.positions[i], inertia[i], xyzw[i], vd, mesh, [1.0, 1.0, 1.0])
            if model.pinned[i]:
                rb.setMass(0.0)
        jp = model.joint_parent
        points = model.positions[jp] + quat.rotate(model.orientations[jp], model.joint_point_parent)
        ok = self.model.addDirectPositionBasedSolverForStiffRodsConstraint(
            [(int(a), int(b)) for a, b in zip(jp, model.joint_child, strict=True)],
            list(points),
            model.joint_radii[:, 0].tolist(),
            model.joint_lengths.tolist(),
            model.youngs_modulus.tolist(),
            model.torsion_modulus.tolist(),
        )
        if not ok:
            raise RuntimeError("pypbd rejected the rod constraint")
        self.bodies = self.model.getRigidBodies()

    def step(self) -> None:
        self.step_controller.step(self.model)

    def points(self, segments: np.ndarray, local: np.ndarray) -> np.ndarray:
        """World positions of points given in OUR segment frames."""
        out = np.empty((segments.size, 3))
        for k, (s, p) in enumerate(zip(segments.tolist(), local, strict=True)):
            rb = self.bodies[s]
            x, y, z, w = rb.getRotation()
            out[k] = np.asarray(rb.getPosition()) + quat.rotate(
                np.array([w, x, y, z]), quat.rotate_inverse(TO_REFERENCE, p)
            )
        return out


# ---------------------------------------------------------------------------------------------- measurement
def compare(name: str, dt: float, iterations: int, duration: float, mesh_dir: Path) -> dict:
    t0 = time.perf_counter()
    model, probe_seg, probe_local = scene(name)
    ours = Simulator(model, dt=dt, max_iterations=iterations, tolerance=0.0, gravity=GRAVITY)
    twin = Simulator(model, dt=dt, max_iterations=iterations, tolerance=0.0, gravity=GRAVITY)
    twin._joint_eval = JointEvaluator(model, strain="eq23")  # Eq. 23 literally, as the reference
    rest = ours.segment_points(probe_local, probe_seg)
    ref = Reference(model, dt, iterations, mesh_dir)
    log(f"{name}: {model.n_segments} segments, built in {time.perf_counter() - t0:.1f} s")
    steps = int(round(duration / dt))
    warmup = min(3, steps - 1)
    t_ours, t_ref, residuals = [], [], []
    clock = time.process_time
    for k in range(steps):
        twin.step()
        for who in (0, 1) if k % 2 == 0 else (1, 0):
            t = clock()
            if who == 0:
                report = ours.step()
                t_ours.append(clock() - t)
                residuals.append(report.residual)
            else:
                ref.step()
                t_ref.append(clock() - t)
    a, b = np.asarray(t_ours[warmup:]), np.asarray(t_ref[warmup:])
    x_ours = ours.segment_points(probe_local, probe_seg)
    x_twin = twin.segment_points(probe_local, probe_seg)
    x_ref = ref.points(probe_seg, probe_local)
    deflection = float(np.max(np.linalg.norm(x_ours - rest, axis=1)))
    difference = float(np.max(np.linalg.norm(x_twin - x_ref, axis=1)))
    difference_default = float(np.max(np.linalg.norm(x_ours - x_ref, axis=1)))
    out = {
        "segments": model.n_segments,
        "joints": model.n_joints,
        "steps": steps,
        "ours_ms_per_iteration": 1e3 * float(np.median(a)) / iterations,
        "ref_ms_per_iteration": 1e3 * float(np.median(b)) / iterations,
        "ratio": float(np.median(a / b)),
        "ours_ms_per_step": 1e3 * float(np.median(a)),
        "ref_ms_per_step": 1e3 * float(np.median(b)),
        "ours_residual_max": float(np.max(residuals[warmup:])),
        "probes": int(probe_seg.size),
        "deflection_m": deflection,
        "difference_m": difference,
        "difference_rel": difference / deflection if deflection > 0 else None,
        "difference_rel_default_strain": difference_default / deflection if deflection > 0 else None,
        "first_step_ms": {"ours": 1e3 * t_ours[0], "ref": 1e3 * t_ref[0]},
    }
    log(
        f"{name}: ours {out['ours_ms_per_iteration']:.2f} ms/it, ref {out['ref_ms_per_iteration']:.2f} ms/it, "
        f"ratio {out['ratio']:.2f}; residual ≤ {out['ours_residual_max']:.1e}; 2 s: deflection "
        f"{deflection:.4g} m, difference {difference:.3g} m ({100 * out['difference_rel']:.2f} %; shipped strain "
        f"{100 * out['difference_rel_default_strain']:.1f} %)"
    )
    return out


SCENES = (
    ["cantilever"] + [f"chain_{n}" for n in (100, 200, 400, 800, 1600)] + list(TREE_PRESETS) + ["white_birch_leaves"]
)


def summary(results: dict):
    """The report's lines: per scene, the cost per iteration of ours and of the reference and their difference."""
    yield (
        f"{'scene':>20} {'segments':>8} {'ours ms/it':>10} {'ref ms/it':>10} {'ratio':>6} {'diff %':>7} "
        f"{'shipped strain diff %':>22}"
    )
    for k, v in results.items():
        yield (
            f"{k:>20} {v['segments']:>8} {v['ours_ms_per_iteration']:10.3f} {v['ref_ms_per_iteration']:10.3f} "
            f"{v['ratio']:6.2f} {100 * (v['difference_rel'] or 0):7.2f} "
            f"{100 * (v['difference_rel_default_strain'] or 0):22.2f}"
        )


def main() -> None:
    ap = _common.arguments(__doc__)
    ap.add_argument("--scenes", nargs="+", default=SCENES, help=f"any of {' '.join(SCENES)}")
    ap.add_argument("--iterations", type=int, default=3, help="Newton iterations per step (both solvers)")
    ap.add_argument("--dt", type=float, default=1.0 / 60.0, help="time step [s]")
    ap.add_argument("--duration", type=float, default=2.0, help="simulated time [s] before the positions are compared")
    args = ap.parse_args()
    t_all = time.perf_counter()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.scenes:
            results[name] = compare(name, args.dt, args.iterations, args.duration, Path(tmp))
    trees = {k: v for k, v in results.items() if not (k == "cantilever" or k.startswith("chain_"))}
    big = {k: v["ratio"] for k, v in trees.items() if v["segments"] >= 900}
    small = {k: results[k]["ratio"] for k in ("cantilever", "quaking_aspen") if k in results}
    leafy = results.get("white_birch_leaves")
    targets = {
        "trees_ge_900_ratio_le_0.5": {"ratios": big, "met": bool(big) and all(r <= 0.5 for r in big.values())},
        "cantilever_and_aspen_ratio_le_1": {
            "ratios": small,
            "met": bool(small) and all(r <= 1.0 for r in small.values()),
        },
        "leafy_birch_ms_per_step_le_50_residual_le_1e-6": None
        if leafy is None
        else {
            "segments": leafy["segments"],
            "ms_per_step": leafy["ours_ms_per_step"],
            "residual_max": leafy["ours_residual_max"],
            "met": leafy["ours_ms_per_step"] <= 50.0 and leafy["ours_residual_max"] <= 1e-6,
        },
        "positions_difference_rel_le_0.01": {
            "per_scene": {k: v["difference_rel"] for k, v in results.items()},
            "met": all(v["difference_rel"] is not None and v["difference_rel"] <= 0.01 for v in results.values()),
        },
    }
    out = {
        "benchmark": "vs_reference",
        "reference": "pypbd 2.2.2 DirectPositionBasedSolverForStiffRodsConstraint",
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "compiled": compiled_status()[1],
        "dt_s": args.dt,
        "iterations": args.iterations,
        "duration_s": args.duration,
        "timing": "process CPU time per step, median; ratio = median of per-step ours/ref",
        "scenes": results,
        "targets": targets,
        "wall_s": time.perf_counter() - t_all,
    }
    _common.report(out, args.json, summary=summary(results))


if __name__ == "__main__":
    main()
