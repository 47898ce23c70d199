"""Deul §5 / Fig. 5: the Wilberforce pendulum from the authors' own scene file.

The scene (``Wilberforce_scene.json``, the PositionBasedDynamics library's stiff-rods scene format) is a
steel helical spring of 81 rigid segments (the first one static) with a cylindrical bob as the last
segment of the same tree model, dt = 5 ms, 3 solver iterations, gravity along −y. It is read the
way the library's stiff-rods scene loader reads it: a segment is a cylinder whose local *y* axis is
its length (``scale`` = (diameter, length, diameter) [m]), mass π/4·w·h·l·ρ; a Cosserat joint sits at
its world ``position`` between ``bodyID1`` (parent) and ``bodyID2`` (child), with the mean of the two
segments' radii and lengths and the tree model's Young's and torsion moduli.

The bob starts at the spring's unloaded length, falls and bounces; the coupled stretch/twist modes
trade translation (z, along the spring axis) for rotation (θ about it) and back. Reported:
``z_envelope`` [m] and ``theta_envelope`` [rad], the min/max of each oscillation's amplitude
(Hilbert envelope averaged over one period, so the minima are not sampling noise), their ratios,
``beat_period_s`` (median time between successive minima of the translation envelope) and the
minima's times. Target (Fig. 5: nearly full exchange after about 12 s): each ratio ≤ 0.25.

    python3 benchmarks/wilberforce.py --json      # last stdout line: one JSON object
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy.signal import hilbert

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _common  # noqa: E402

from solver import RodModel, Simulator  # noqa: E402
from solver.core import quaternion as quat  # noqa: E402

SCENE = Path(__file__).resolve().parents[2] / "shared" / "scenes" / "Wilberforce_scene.json"
# the scene's segment frame has its length along local y; ours along local z: q_ours = q_scene ⊗ Rx(−90°)
Y_TO_Z = np.array([np.sqrt(0.5), -np.sqrt(0.5), 0.0, 0.0])


def load_scene(path: Path = SCENE):
    """(RodModel, settings) from a stiff-rods scene file; settings: dt, iterations, gravity, bob index."""
    scene = json.loads(Path(path).read_text())
    (tree,) = scene["TreeModels"]
    if np.any(np.asarray(tree["translation"], float)) or tree["rotationAngle"]:
        raise ValueError("tree models with a transform are not supported by this reader")
    bodies = {b["id"]: b for b in scene["RigidBodies"]}
    ids = list(tree["rbIds"])
    index = {bid: k for k, bid in enumerate(ids)}
    scale = np.array([bodies[i]["scale"] for i in ids], float)
    axis = np.array([bodies[i]["rotationAxis"] for i in ids], float)
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    half = 0.5 * np.array([bodies[i]["rotationAngle"] for i in ids], float)
    q_scene = np.concatenate((np.cos(half)[:, None], np.sin(half)[:, None] * axis), axis=1)
    orientations = quat.multiply(q_scene, np.broadcast_to(Y_TO_Z, q_scene.shape))
    positions = np.array([bodies[i]["translation"] for i in ids], float)
    lengths = scale[:, 1]
    radii = 0.5 * scale[:, [0, 2]]  # width along scene x = our x, height along scene z = our −y
    density = np.array([bodies[i]["density"] for i in ids], float)
    joints = {j["id"]: j for j in scene["CosseratJoints"]}
    jl = [joints[j] for j in tree["jIds"]]
    parent = np.array([index[j["bodyID1"]] for j in jl])
    child = np.array([index[j["bodyID2"]] for j in jl])
    at = np.array([j["position"] for j in jl], float)
    point_parent = quat.rotate_inverse(orientations[parent], at - positions[parent])
    point_child = quat.rotate_inverse(orientations[child], at - positions[child])
    mean_radius = 0.25 * (scale[parent][:, [0, 2]].sum(1) + scale[child][:, [0, 2]].sum(1)) / 2
    pinned = np.isin(ids, tree["staticSegments"]) | ~np.array([bool(bodies[i]["isDynamic"]) for i in ids])
    model = RodModel.from_arrays(
        positions,
        orientations,
        lengths,
        radii,
        density,
        joint_parent=parent,
        joint_child=child,
        joint_point_parent=point_parent,
        joint_point_child=point_child,
        joint_radii=mean_radius,
        joint_lengths=0.5 * (lengths[parent] + lengths[child]),
        youngs_modulus=float(tree["youngsModulus"]),
        torsion_modulus=float(tree["torsionModulus"]),
        pinned=pinned,
    )
    sim_settings = scene["Simulation"]
    leaves = np.setdiff1d(np.arange(len(ids)), parent)
    settings = dict(
        dt=float(sim_settings["timeStepSize"]),
        iterations=int(sim_settings["maxIterations"]),
        gravity=np.asarray(sim_settings["gravity"], float),
        bob=int(leaves[-1]),
    )
    return model, settings


def twist_angle(q_rel: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """Angle [rad] of the twist part of rotations ``q_rel`` (k, 4) about the unit ``axis`` (swing–twist)."""
    return 2.0 * np.arctan2(q_rel[:, 1:] @ axis, q_rel[:, 0])


def dominant_period(x: np.ndarray, dt: float) -> float:
    """Period [s] of the strongest Fourier component of ``x`` (above 0.05 Hz)."""
    f = np.fft.rfftfreq(x.size, dt)
    p = np.abs(np.fft.rfft(x - x.mean()))
    p[f < 0.05] = 0.0
    return float(1.0 / f[np.argmax(p)])


def envelope(x: np.ndarray, dt: float):
    """Oscillation amplitude over time: |analytic signal| of ``x`` minus its running mean (the coupling
    moves θ's centre with z), both averaged over one dominant period T. Returns (envelope, T)."""
    period = dominant_period(x, dt)
    box = np.ones(int(round(period / dt))) / round(period / dt)
    trend = np.convolve(x, box, mode="same")
    return np.convolve(np.abs(hilbert(x - trend)), box, mode="same"), period


def interior_minima(t: np.ndarray, a: np.ndarray) -> np.ndarray:
    return t[1:-1][(a[1:-1] < a[:-2]) & (a[1:-1] <= a[2:])]


def run(duration: float, path: Path = SCENE) -> dict:
    model, cfg = load_scene(path)
    up = -cfg["gravity"] / np.linalg.norm(cfg["gravity"])
    sim = Simulator(model, dt=cfg["dt"], max_iterations=cfg["iterations"], tolerance=0.0, gravity=cfg["gravity"])
    bob = cfg["bob"]
    steps = int(round(duration / cfg["dt"]))
    z = np.empty(steps)
    q = np.empty((steps, 4))
    residual = np.empty(steps)
    t0 = time.perf_counter()
    for k in range(steps):
        residual[k] = sim.step().residual
        z[k] = sim.positions[bob] @ up
        q[k] = sim.orientations[bob]
    wall = time.perf_counter() - t0
    t = cfg["dt"] * np.arange(1, steps + 1)
    theta = np.unwrap(
        twist_angle(
            quat.multiply(quat.conjugate(model.orientations[bob]), q), quat.rotate_inverse(model.orientations[bob], up)
        )
    )
    env_z, period = envelope(z, cfg["dt"])
    env_t, _ = envelope(theta, cfg["dt"])
    inside = (t > period) & (t < t[-1] - period)  # away from the averaging windows' ends
    az, at, ti = env_z[inside], env_t[inside], t[inside]
    minima = interior_minima(ti, az)
    beat = float(np.median(np.diff(minima))) if minima.size >= 2 else float("nan")
    return dict(
        segments=model.n_segments,
        joints=model.n_joints,
        dt_s=cfg["dt"],
        iterations=cfg["iterations"],
        duration_s=duration,
        bob_mass_kg=round(float(model.masses[bob]), 1),
        period_s=round(period, 3),
        z_envelope=[round(float(az.min()), 4), round(float(az.max()), 4)],
        theta_envelope=[round(float(at.min()), 4), round(float(at.max()), 4)],
        z_ratio=round(float(az.min() / az.max()), 4),
        theta_ratio=round(float(at.min() / at.max()), 4),
        beat_period_s=round(beat, 3),
        z_envelope_minima_s=[round(float(x), 2) for x in minima],
        theta_envelope_minima_s=[round(float(x), 2) for x in interior_minima(ti, at)],
        max_residual=float(np.max(residual)),
        ms_per_step=1e3 * wall / steps,
        target_met=bool(az.min() / az.max() <= 0.25 and at.min() / at.max() <= 0.25),
    )


def main() -> None:
    ap = _common.arguments(__doc__)
    ap.add_argument("--duration", type=float, default=60.0, help="simulated time [s]")
    ap.add_argument("--scene", type=Path, default=SCENE)
    args = ap.parse_args()
    result = run(args.duration, args.scene)
    _common.report(result, args.json, "{}: {}")


if __name__ == "__main__":
    main()
