"""PyElastica's side of ``benchmarks/vs_pyelastica.py``: the capstan, the crossing and the rope pile built with
PyElastica 1.0 (Cosserat rods, explicit ``PositionVerlet``, penalty contact), and the geometry both sides share
(the pile's coil, parallel-transported frames, the exact capsule distances that measure penetration).

PyElastica's time step is its user guide's heuristic dt = 0.01·dx (s/m), dx the shortest element
(https://docs.cosseratrods.org/en/latest/guide/discretization.html, "Choosing your dx and dt"), lowered where the
explicit step is unstable: to the same page's wave condition dx·√(ρ/E), and to 0.7 r √(ρ/G), the limit of an
element's shear–rotation mode (ω ≈ 2√2 c_shear / r; not in the guide). The crossing's 0.1 GPa beams diverged at
0.01·dx = 2.4e-4 s, at dx·√(ρ/E) = 7.7e-5 s and at 2.7e-5 s, and ran at 2e-5 s.
Contact is PyElastica's penalty spring on every element pair (``RodCylinderContact``, ``RodRodContact``,
``RodSelfContact``, ``RodPlaneContactWithAnisotropicFriction``): stiffness k = m (0.5/dt)² for a node of mass m
(its contact frequency √(k/m) = 0.5/dt, a quarter of Verlet's stability limit ω·dt < 2) and damping
ν = √(k m), near critical. Against the cylinder, static friction is imitated by the viscous slip force
``velocity_damping_coefficient`` = 1e4 (the value ``RodCylinderContact``'s docstring gives for stiction), capped
by Coulomb's μ N. Rod–rod and self contact in PyElastica are frictionless.
"""

from __future__ import annotations

import time

import elastica as ea
import numpy as np

G = 9.81
STICTION = 1e4  # RodCylinderContact: "set to a high value (e.g. 1e4) to minimize slip and simulate stiction"


class _Scene(ea.BaseSystemCollection, ea.Constraints, ea.Forcing, ea.Damping, ea.Contact, ea.CallBacks):
    """A PyElastica system collection with every feature the three scenes use."""


def guide_dt(dx: float, radius: float, density: float, youngs_modulus: float) -> float:
    """The PyElastica user guide's time step 0.01·dx (s/m), or where smaller its wave condition dx·√(ρ/E) or the
    shear–rotation limit 0.7 r √(ρ/G) (G = E/3, as these rods are built)."""
    shear = 0.7 * radius * np.sqrt(3.0 * density / youngs_modulus)
    return float(min(0.01 * dx, dx * np.sqrt(density / youngs_modulus), shear))


def transported_frames(points: np.ndarray) -> np.ndarray:
    """Directors (3, 3, n) of a polyline's n elements as PyElastica keeps them (rows d1, d2, d3; d3 the element's
    tangent), d1 parallel-transported from a normal of the first element."""
    t = np.diff(points, axis=0)
    t /= np.linalg.norm(t, axis=1, keepdims=True)
    helper = np.array([0.0, 0.0, 1.0]) if abs(t[0, 2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    d1 = np.cross(t[0], helper)
    d1 /= np.linalg.norm(d1)
    out = np.empty((3, 3, len(t)))
    for i, ti in enumerate(t):  # set-up only (one pass over the elements), not a hot path
        if i:
            d1 = d1 - (d1 @ ti) * ti
            d1 /= np.linalg.norm(d1)
        out[0, :, i], out[1, :, i], out[2, :, i] = d1, np.cross(ti, d1), ti
    return out


def make_rod(points: np.ndarray, radius: float, youngs_modulus: float, density: float) -> ea.CosseratRod:
    """A PyElastica rod through ``points`` (k, 3), straight at rest, its rest lengths the polyline's."""
    pts = np.asarray(points, float)
    frames = transported_frames(pts)
    lengths = np.linalg.norm(np.diff(pts, axis=0), axis=1)
    return ea.CosseratRod.straight_rod(
        len(lengths),
        start=pts[0],
        direction=frames[2, :, 0],
        normal=frames[0, :, 0],
        base_length=float(lengths.sum()),
        base_radius=radius,
        density=density,
        youngs_modulus=youngs_modulus,
        shear_modulus=youngs_modulus / 3.0,
        position=pts.T.copy(),
        directors=frames,
    )


def spring(node_mass: float, dt: float) -> tuple[float, float]:
    """Penalty stiffness k [N/m] and damping ν [N s/m] for a node of ``node_mass`` [kg] at step ``dt``."""
    k = node_mass * (0.5 / dt) ** 2
    return k, float(np.sqrt(k * node_mass))


class NodeLoads(ea.NoForces):
    """Constant forces [N] (3, k) on nodes ``nodes``, ramped linearly over ``ramp`` [s] (0: at once)."""

    def __init__(self, nodes, forces, ramp: float = 0.0):
        super().__init__()
        self.nodes, self.forces, self.ramp = list(nodes), np.asarray(forces, float), float(ramp)

    def apply_forces(self, system, time=0.0):
        scale = 1.0 if self.ramp <= 0.0 else min(1.0, float(time) / self.ramp)
        system.external_forces[:, self.nodes] += scale * self.forces


class ForceProbe(ea.CallBackBaseClass):
    """Records the sum of a rod's external forces [N] after every step (before PyElastica zeroes them)."""

    def __init__(self, out: list):
        super().__init__()
        self.out = out

    def make_callback(self, system, time, current_step):
        self.out.append(system.external_forces.sum(axis=1).copy())


def timed_run(scene: _Scene, seconds: float, dt: float, every: int, sample) -> float:
    """Step ``scene`` for ``seconds`` at ``dt``, calling ``sample(t)`` every ``every`` steps (outside the timing);
    returns the wall time [s] of the stepping alone. ``sample`` returning True stops the run (at rest)."""
    stepper = ea.PositionVerlet()
    t, wall = np.float64(0.0), 0.0
    steps = int(round(seconds / dt))
    for i in range(0, steps, every):
        start = time.perf_counter()
        for _ in range(min(every, steps - i)):
            t = stepper.step(scene, t, dt)
        wall += time.perf_counter() - start
        if sample(float(t)):
            break
    return wall


def capstan(pts, t1, t2, m1: float, m2: float, mu: float, seconds: float, stretch_modulus: float, **rope) -> dict:
    """The rope over the fixed cylinder (R = ``rope['cyl']``, axis y) with end loads m1 g, m2 g along the ends'
    outward tangents ``t1``/``t2`` and the end nodes' masses m1/m2; no gravity. ``stretch_modulus`` [Pa]: the
    rope's stretch and shear stiffness (E A, G A from it; bending keeps E): PyElastica's rod is extensible, and
    this keeps it within 2 % of inextensible at the guide's step. Returns the load end's and the top of the
    wrap's slide along ``t1`` and along the cylinder [m] over time, the wall time and the step."""
    r, cyl, density, E = rope["r"], rope["cyl"], rope["density"], rope["youngs_modulus"]
    dx = float(np.linalg.norm(np.diff(pts, axis=0), axis=1).min())
    dt = guide_dt(dx, r, density, stretch_modulus)
    scene = _Scene()
    rod = make_rod(pts, r, E, density)
    rod.shear_matrix[:] *= stretch_modulus / E
    rod.mass[0], rod.mass[-1] = m1, m2
    scene.append(rod)
    cylinder = ea.Cylinder(
        start=np.array([0.0, -0.3, 0.0]),
        direction=np.array([0.0, 1.0, 0.0]),
        normal=np.array([1.0, 0.0, 0.0]),
        base_length=0.6,
        base_radius=cyl,
        density=1000.0,
    )
    scene.append(cylinder)
    scene.constrain(cylinder).using(ea.OneEndFixedBC, constrained_position_idx=(0,), constrained_director_idx=(0,))
    scene.add_forcing_to(rod).using(NodeLoads, nodes=[0, -1], forces=np.stack((m1 * G * t1, m2 * G * t2), axis=1))
    k, nu = spring(float(np.median(rod.mass[1:-1])), dt)
    scene.detect_contact_between(rod, cylinder).using(
        ea.RodCylinderContact, k=k, nu=nu, velocity_damping_coefficient=STICTION, friction_coefficient=mu
    )
    scene.finalize()
    top = int(np.argmax(pts[:, 2]))
    x0 = rod.position_collection[:, 0].copy()
    phi0 = np.arctan2(pts[top, 0], pts[top, 2])
    ts, load, wrap = [0.0], [0.0], [0.0]

    def sample(t):
        ts.append(t)
        load.append(float((rod.position_collection[:, 0] - x0) @ t1))
        p = rod.position_collection[:, top]
        wrap.append(float((np.arctan2(p[0], p[2]) - phi0) * (cyl + r)))
        return not np.all(np.isfinite(rod.position_collection))

    every = max(1, int(round(1 / 200 / dt)))  # sampled at our step, 1/200 s
    wall = timed_run(scene, seconds, dt, every, sample)
    return dict(t=np.array(ts), load=np.array(load), wrap=np.array(wrap), wall_s=wall, dt=dt, masses=rod.mass.copy())


def _beam(axis, centre, span: float, n: int, r: float, E: float, density: float) -> ea.CosseratRod:
    s = np.linspace(-0.5 * span, 0.5 * span, n + 1)
    return make_rod(np.asarray(centre, float) + s[:, None] * np.asarray(axis, float), r, E, density)


def _clamp_and_rail(scene: _Scene, rod, along: int) -> None:
    """Clamp the rod's first node and element; clamp its last but let that node slide along the rod's axis
    ``along`` (0: x, 1: y) on a rail, so bending pulls no axial force."""
    scene.constrain(rod).using(ea.FixedConstraint, constrained_position_idx=(0,), constrained_director_idx=(0,))
    free = np.ones(3, bool)
    free[along] = False
    scene.constrain(rod).using(
        ea.GeneralConstraint,
        constrained_position_idx=(-1,),
        constrained_director_idx=(-1,),
        translational_constraint_selector=free,
        rotational_constraint_selector=np.ones(3, bool),
    )


def crossing(  # noqa: PLR0913 (the scene's parameters, as contact_closed_forms.py's crossing())
    n: int,
    ra: float,
    rb: float,
    E: float,
    load: float,
    span: float,
    damping: float,
    density=1000.0,
    seconds=2.0,
    dt=None,
):
    """Two clamped–rail beams crossing at their middles, A (along y, radius ``ra``) on B (along x, ``rb``),
    frictionless, no gravity; ``load`` [N] at A's middle (half on each node of its middle element, n odd),
    ramped over 0.2 s, damping ``damping`` [1/s] (``AnalyticalLinearDamper``); run until the kinetic energy is
    below 1e-14 J after 0.4 s, or 2 s. Returns the contact force on B [N], both middles' deflections [m], the
    wall time and the step."""
    dt = guide_dt(span / n, min(ra, rb), density, E) if dt is None else dt
    scene = _Scene()
    beam_b = _beam((1.0, 0.0, 0.0), (0.0, 0.0, 0.0), span, n, rb, E, density)
    beam_a = _beam((0.0, 1.0, 0.0), (0.0, 0.0, ra + rb), span, n, ra, E, density)
    mid = [n // 2, n // 2 + 1]  # the nodes of the middle element
    for rod, along in ((beam_b, 0), (beam_a, 1)):
        scene.append(rod)
        _clamp_and_rail(scene, rod, along)
        scene.dampen(rod).using(ea.AnalyticalLinearDamper, uniform_damping_constant=damping, time_step=dt)
    forces = np.zeros((3, 2))
    forces[2] = -0.5 * load
    scene.add_forcing_to(beam_a).using(NodeLoads, nodes=mid, forces=forces, ramp=0.2)
    k, nu = spring(float(beam_b.mass[1:-1].min()), dt)
    scene.detect_contact_between(beam_b, beam_a).using(ea.RodRodContact, k=k, nu=nu)
    probe: list = []
    scene.collect_diagnostics(beam_b).using(ForceProbe, out=probe)
    scene.finalize()
    z_a, z_b = (rod.position_collection[2, mid].mean() for rod in (beam_a, beam_b))

    def kinetic():
        return sum(0.5 * float(rod.mass @ (rod.velocity_collection**2).sum(axis=0)) for rod in (beam_a, beam_b))

    energies = []

    def sample(t):
        energies.append(kinetic())
        return t > 0.4 and energies[-1] < 1e-14

    wall = timed_run(scene, seconds, dt, max(1, int(round(0.005 / dt))), sample)
    return dict(
        # the penalty force of the last 0.1 s, averaged: the contact chatters at a node's contact frequency
        force=float(-np.mean([f[2] for f in probe[-int(round(0.1 / dt)) :]])) if probe else float("nan"),
        deflection_a=float(z_a - beam_a.position_collection[2, mid].mean()),
        deflection_b=float(z_b - beam_b.position_collection[2, mid].mean()),
        wall_s=wall,
        dt=dt,
        kinetic_j=kinetic(),
        energies=np.array(energies),
    )


def pile(points, r: float, E: float, density: float, mu: float, damping: float, seconds: float, measure) -> dict:
    """The coiled rope dropped onto the floor z = 0 under gravity, with self-contact (frictionless in PyElastica)
    and floor contact with friction ``mu`` (static and kinetic, every direction), damping ``damping`` [1/s].
    ``measure(nodes (k, 3))`` is called at every 1/200 s and returns the deepest penetration [m] of that pose.
    Returns the deepest penetration over the run, the final largest node speed [m/s], the wall time, the step."""
    pts = np.asarray(points, float)
    dx = float(np.linalg.norm(np.diff(pts, axis=0), axis=1).min())
    dt = guide_dt(dx, r, density, E)
    scene = _Scene()
    rod = make_rod(pts, r, E, density)
    scene.append(rod)
    floor = ea.Plane(plane_origin=np.zeros(3), plane_normal=np.array([0.0, 0.0, 1.0]))
    scene.append(floor)
    scene.add_forcing_to(rod).using(ea.GravityForces, acc_gravity=np.array([0.0, 0.0, -G]))
    scene.dampen(rod).using(ea.AnalyticalLinearDamper, uniform_damping_constant=damping, time_step=dt)
    k, nu = spring(float(np.median(rod.mass)), dt)
    scene.detect_contact_between(rod, floor).using(
        ea.RodPlaneContactWithAnisotropicFriction,
        k=k,
        nu=nu,
        slip_velocity_tol=1e-4,
        static_mu_array=np.full(3, mu),
        kinetic_mu_array=np.full(3, mu),
    )
    scene.detect_contact_between(rod, rod).using(ea.RodSelfContact, k=k, nu=nu)
    scene.finalize()
    deepest = [0.0]

    def sample(t):
        nodes = rod.position_collection.T
        if not np.all(np.isfinite(nodes)):
            deepest[0] = float("inf")
            return True
        deepest[0] = max(deepest[0], measure(nodes))
        return False

    wall = timed_run(scene, seconds, dt, max(1, int(round(0.005 / dt))), sample)
    speed = float(np.linalg.norm(rod.velocity_collection, axis=0).max())
    return dict(penetration=deepest[0], final_speed=speed, wall_s=wall, dt=dt, nodes=rod.position_collection.T.copy())


def coil(r: float, turns: float = 3.0, coil_radius: float = 0.04, seg: float = 0.01, lift: float = 0.02):
    """The pile's rope as dropped: a helix about z of ``turns`` turns, radius ``coil_radius`` [m], pitch 4 r (the
    turns 2 r apart), elements of about ``seg`` [m], its lowest point ``lift`` [m] above touching the floor."""
    per_turn = int(np.ceil(2 * np.pi * coil_radius / seg))
    phi = np.linspace(0.0, 2 * np.pi * turns, int(round(per_turn * turns)) + 1)
    z = r + lift + 4 * r * phi / (2 * np.pi)
    return np.stack((coil_radius * np.cos(phi), coil_radius * np.sin(phi), z), axis=1)


def segment_distances(a0, a1, b0, b1) -> np.ndarray:
    """Exact distances between segments [a0, a1] and [b0, b1] (arrays (m, 3)), clamped closest points."""
    d1, d2, w = a1 - a0, b1 - b0, a0 - b0
    a, e = (d1 * d1).sum(1), (d2 * d2).sum(1)
    b, c, f = (d1 * d2).sum(1), (d1 * w).sum(1), (d2 * w).sum(1)
    den = np.maximum(a * e - b * b, 1e-30)
    s = np.clip((b * f - c * e) / den, 0.0, 1.0)
    t = np.clip((b * s + f) / np.maximum(e, 1e-30), 0.0, 1.0)
    s = np.clip((b * t - c) / np.maximum(a, 1e-30), 0.0, 1.0)
    return np.linalg.norm(w + s[:, None] * d1 - t[:, None] * d2, axis=1)


def capsule_penetration(ends0: np.ndarray, ends1: np.ndarray, r: float, skip: int = 2) -> float:
    """Deepest penetration [m] of a chain of capsules (segment ends ``ends0``/``ends1`` (n, 3), radius r) into
    itself (pairs at least ``skip`` apart along the chain) and into the floor z = 0; ≤ 0 means none."""
    n = len(ends0)
    i, j = np.triu_indices(n, k=skip)
    self_gap = segment_distances(ends0[i], ends1[i], ends0[j], ends1[j]).min(initial=np.inf) - 2 * r
    floor_gap = min(ends0[:, 2].min(), ends1[:, 2].min()) - r
    return float(-min(self_gap, floor_gap))
