"""Deul Fig. 1 / §5: a 500-segment helical Slinky walks down a staircase (dt = 10 ms, 3 KKT/GS iterations).

    python3 benchmarks/slinky.py --json      # last stdout line: one JSON object (10 s simulated, ~16 min here)

Scene (the defaults of :func:`run`). A plastic helix of round wire, r = 1.5 mm (E 3 GPa, G 1.1 GPa,
1200 kg/m³), coil radius 35 mm, 50 coils × 10 segments (500 segments; 10 per coil so that joint points of
stacked coils face each other and give one vertex–vertex row each), pitch 1.02 wire diameters: axial spring
rate 4GJ/(πD³N) ≈ 0.65 N/m and 0.093 kg, a real Slinky's stiffness to weight (~1 N/m, 0.2 kg). A real
Slinky's flat ribbon is not modelled: the contact capsule's radius is the larger of the section's radii.
The rest shape's pitch is ``rest_pitch`` (1.02) wire diameters; below 1.02 the posed stacks are
pre-tensioned. Stairs: 5 steps (Box colliders), rise 0.1 m, run 0.15 m, then the floor (a Plane). The closed
stack stands ``edge_gap`` (5 mm) behind the top step's edge. Mass-proportional damping (``damping``) 0.2 /s.

Start (``start``). ``"hand"`` (default): a kinematic hand, a pinned segment welded to the top coil's end
segment, turns that coil over in a half turn about +y onto ``hand_clearance`` (4 mm) above the middle of the
next step (``hand_x``, default 1.5 runs) in ``hand_time`` 0.6 s, holds it ``hand_hold`` (0) s and lets go
(``Simulator.remove_joints``): set down onto the step, the held coil would be driven into it. The other
starts: ``"push"`` (the stack tipped over the edge as a rigid turn about its front foot at ``push_rate``
rad/s), ``"arch"`` (arched from ``trail_x`` to ``lead_x``, ``lift`` m high, its coils
flowing along the arch at ``release_speed`` m/s; ``trail_coils``/``lead_coils`` close stacks at either end)
and ``"stack"`` (at rest in the middle of the top step).

Contacts (solver/contact/). The steps, the floor and coil–coil contacts (one row per contact point,
``self_contacts="points"``) are solved with the joints in one sparse direct solve per iteration
(``ActiveSetOptions``, solver/contact/solvers/active_set.py), Coulomb friction as two tangential rows per contact
in that solve: μ 0.4 against the steps (``friction``), none coil on coil (``self_friction``). Compliance of
the contact rows 1e-4 m/N (``direct_compliance``; ``collider_compliance`` sets the rows against the steps
alone, default the same) and of the friction rows 1e-4 m/N (``friction_compliance``): a row carrying a coil's
weight over its ten rows sinks 9 µm, 0.006 r. Active set: 8 primal–dual rounds (``direct_rounds``), then up
to 24 grow-only rounds (``grow_rounds``). Each direct solve is damped to move a segment's surface by at most
``max_move_radii`` = 5 wire radii (``ActiveSetOptions(max_move=...)``). Post-stabilisation (``post_stabilise``):
after each step the overlaps its solves left are removed from the positions only, so no energy enters the
motion (``post_velocity`` also takes the closed rows' relative velocity; off). Permanent neighbour-coil rows
(``neighbour_rows``): segment i and segments i + 9 … i + 11 (the next coil) are candidates
(``DetectionOptions(self_pairs=...)``) in every step whatever their distance, so coils that close several wire radii
within one step are never missed.

Keys: ``stairs_descended`` (steps the trailing end of the Slinky went down: both end coils are on that step
or lower), ``max_penetration_m`` (deepest overlap over the run, measured exactly each step against the steps
and between non-neighbouring segments, independent of the generated contacts), ``wire_radius_m``,
``max_penetration_before_post_m`` (what the step's own solves left before post-stabilisation),
``ms_per_step`` (median), ``end_flips`` (times the trailing end passed over the leading one: a walk, not a
slide), ``first_overlap_over_0.1r_at_s`` (when the target was first broken), ``diverged_at_s`` (the run
stops once an overlap exceeds 1.5 wire radii, coils passing through each other, or once kinetic plus gravity
energy rose above the start by more than ``energy_budget_J``, the start's kinetic energy plus the fall to
the floor), ``max_energy_gain_J`` / ``max_energy_gain_at_s`` (the largest rise of kinetic plus gravity
energy over the start: with elastic energy ≥ 0 it can only fall), ``damped_solves_share`` (direct solves
scaled down to ``max_move_radii``), ``active_set_rounds_median``, ``unconverged_solves_share``,
``friction_undecided_share`` (direct solves whose normal active set never settled within the primal–dual
rounds: no friction row started sliding in them), ``com_drop_m``, ``median_iterations`` / ``cap_steps`` /
``residual_median_m`` (Newton iterations per step, steps that ended at ``iterations`` unconverged, the steps' last
residual; with ``tolerance`` 0 every step runs ``iterations``), ``xpbd_steps`` (the schur method's steps solved with
XPBD's iteration, its Newton matrix indefinite), ``target_met``.

Targets: ``stairs_descended`` ≥ 3 and ``max_penetration_m`` ≤ 0.1 wire radius (0.15 mm), no divergence.

The command line runs the schur method (``Contacts()``'s default) with ``--iterations 15 --tolerance 1e-5`` unless
given others; ``--method active_set`` runs the active set with 3 iterations and no tolerance, Deul's setting.
``cap_share`` and ``xpbd_fraction`` are ``cap_steps`` and ``xpbd_steps`` over the steps.

The schur method (``SchurOptions`` with its defaults, no
solve damping; each step is Newton's method on the implicit step, or Deul's XPBD step where its matrix with the
coils' lateral curvature is indefinite or half the iterations pass), measured over the 10 s: target met, 3 stairs,
0.038 r (1.22 r before post-stabilisation), 3 end flips, no divergence, energy gain 10 mJ, median 3 iterations, 31
of 1000 steps at the cap (all in the first 2.11 s), 246 XPBD steps, 1.0 s per step. Deul's step in every step
(``--no-geometric-stiffness``, same settings): 4 stairs, 0.039 r, 34 of 1000 steps at the cap, 1.8 s per step.

``--iterations 6`` (Newton iterations per step; Deul's Fig. 1 and the default: 3): each solve's damping bounds its
Newton step, so with 3 iterations at 2 r a step corrects by 9 mm at most. Measured with 6: 2 r / 5 r / 10 r go down
5 / 5 / 5 stairs (0.039 / 0.040 / 0.040 r, 6 / 2 / 11 end flips, 2.3–2.6 s per step); the solves left 7 / 12 / 19 r
before post-stabilisation, and at 10 r kinetic plus gravity energy rose 0.43 J above the start at 4.0 s (thrown).

Measured (``--json``, one run on a shared 2-core machine, loaded by other jobs): target met. stairs_descended
5, max_penetration_m 0.057 mm (0.038 r), end_flips 18, no divergence, com_drop_m 0.54, 2.2 s per step; the
solves left up to 4.2 mm (2.8 r) before post-stabilisation. Before the active set's collider rows of fast
segments followed the iterate (the run below): 3 stairs, 0.034 r, 946 ms per step on a quieter machine. The
solves left up to 1.8 r of overlap before post-stabilisation, more than 1 r in 12 of the 1000 steps, all
before 0.8 s (coil on coil in the new stack as the hand lets go; one coil 1.05 r into step 1), none while
the Slinky walks down steps 2 and 3. The walk is a real one: the arch forms, the coils flow over it, the
trailing end lifts off and lands on top of the new stack.

Caveats: the walk is chaotic in its details. ``run(hand_x=0.225)``, whose landing point differs from the
default 1.5 × 0.15 m in the last bit only (3e-17 m), descends 5 stairs (0.040 r, 4 end flips, at rest on the
floor from 6.5 s; up to 4.1 r before post-stabilisation, in bursts at 1.10–1.28 s and 1.58–1.61 s). The walk
depends on the damping of the solves. With the active-set solve's collider rows of fast segments following the
iterate (solver/contact/rows.py), measured before the compiled kernels' fused multiply-adds: the default (5 r)
descends 5 stairs (0.038 r, 18 end flips), ``max_move_radii`` 10 also 5 (0.039 r, 7 end flips), 2 stops on step 2
(2 stairs, 0.063 r); before those rows 3.5 walked 3 stairs and 10 threw the Slinky up at release (1 stair).
With coil–coil friction 0.1 (``--self-friction 0.1``) the Slinky makes one half step and stands upright on step 1.

``trace`` [s] prints the centre of mass, end segments and overlap at that interval, ``verbose`` every step;
``frames_path`` (``--frames``) saves the segment centres every ``frame_every`` s and the stairs to an .npz,
to look at the motion. Starts, materials and contact settings measured and not used: docs/notes/slinky.md
(the contact solver's alternatives: docs/notes/contacts.md).
"""

from __future__ import annotations

import inspect
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _common  # noqa: E402
from contact_closed_forms import contact_stats  # noqa: E402

from solver import RodModel, Simulator  # noqa: E402
from solver.contact import (  # noqa: E402
    ActiveSetOptions,
    Contacts,
    DetectionOptions,
    GaussSeidelOptions,
    PostOptions,
    SchurOptions,
    TreeResponseOptions,
)
from solver.contact.colliders import Box, Plane  # noqa: E402
from solver.core import quaternion as quat  # noqa: E402


def helix_along(axis_point, tangent, normal, coils: int, per_coil: int, coil_radius: float) -> np.ndarray:
    """Points of a helix wound about an axis curve given at every helix point: the axis point, its unit
    tangent and a unit normal (k, 3); the helix angle advances 2π/per_coil per point."""
    binormal = np.cross(tangent, normal)
    phi = 2.0 * np.pi * np.arange(coils * per_coil + 1) / per_coil
    return axis_point + coil_radius * (np.cos(phi)[:, None] * normal + np.sin(phi)[:, None] * binormal)


def segment_frames(points: np.ndarray, axis_points: np.ndarray):
    """Centres and orientations of the segments of a helix polyline, with one rule for every pose:
    local z along the wire, local x toward the helix axis. Rest and arched pose then share material
    frames, so their joint Darboux vectors differ only by the arch's bending."""
    t = points[1:] - points[:-1]
    t /= np.linalg.norm(t, axis=1)[:, None]
    mid = 0.5 * (points[1:] + points[:-1])
    inward = 0.5 * (axis_points[1:] + axis_points[:-1]) - mid
    x = inward - np.sum(inward * t, axis=1)[:, None] * t
    x /= np.linalg.norm(x, axis=1)[:, None]
    y = np.cross(t, x)
    return mid, quat.from_matrix(np.stack((x, y, t), axis=2))


def arch_axis(u: np.ndarray, x0: float, x1: float, z0: float, z1: float, lift: float):
    """Axis of the arched Slinky: from (x0, z0) going up, over, and down onto (x1, z1), in the xz plane.
    Returns points, unit tangents and unit normals (in-plane, toward the arch's inside) at u ∈ [0, 1]."""
    th = np.pi * u
    half = 0.5 * (x1 - x0)
    pts = np.stack((x0 + half * (1 - np.cos(th)), 0 * th, z0 + (z1 - z0) * u + lift * np.sin(th)), axis=1)
    tan = np.stack((half * np.pi * np.sin(th), 0 * th, (z1 - z0) + lift * np.pi * np.cos(th)), axis=1)
    tan /= np.linalg.norm(tan, axis=1)[:, None]
    nrm = np.cross(tan, [0.0, 1.0, 0.0])
    return pts, tan, nrm


def stacked_arch_axis(
    n_pts: int,
    per_coil: int,
    pitch: float,
    trail: int,
    lead: int,
    x0: float,
    x1: float,
    z0: float,
    z1: float,
    lift: float,
):
    """Axis of a walking Slinky's pose at every helix point: ``trail`` closed coils stacked up from (x0, z0)
    (the trailing end at the bottom), an arch rising ``lift`` [m] above the trailing stack's top and
    falling onto the leading stack, and ``lead`` closed coils stacked down to (x1, z1) (the leading end at
    the bottom). Returns points, unit tangents, unit in-plane normals (n_pts, 3) and the arch mask."""
    c = np.arange(n_pts) / per_coil  # coil coordinate of each point
    coils = (n_pts - 1) / per_coil
    top0, top1 = z0 + trail * pitch, z1 + lead * pitch
    u = np.clip((c - trail) / max(coils - trail - lead, 1e-9), 0.0, 1.0)
    pts, tan, nrm = arch_axis(u, x0, x1, top0, top1, lift)
    low = c < trail
    high = c > coils - lead
    pts[low] = np.stack((np.full(low.sum(), x0), 0 * c[low], z0 + c[low] * pitch), axis=1)
    tan[low], nrm[low] = [0.0, 0.0, 1.0], [-1.0, 0.0, 0.0]
    pts[high] = np.stack((np.full(high.sum(), x1), 0 * c[high], z1 + (coils - c[high]) * pitch), axis=1)
    tan[high], nrm[high] = [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]
    return pts, tan, nrm, ~(low | high)


def run(
    coils: int = 50,
    per_coil: int = 10,
    coil_radius: float = 0.035,
    wire_radius: float = 0.0015,
    steps_count: int = 5,
    rise: float = 0.1,
    run_m: float = 0.15,
    seconds: float = 10.0,
    dt: float = 0.01,
    iterations: int = 3,
    tolerance: float = 0.0,
    friction: float = 0.4,
    self_friction: float = 0.0,
    sweeps: int = 1,
    pre_sweeps: int = 0,
    lift: float = 0.12,
    damping: float = 0.2,
    start: str = "hand",
    youngs_modulus: float = 3e9,
    torsion_modulus: float = 1.1e9,
    density: float = 1200.0,
    max_colours: int = 32,
    response: str = "direct",
    self_contacts: str = "points",
    margin=None,
    friction_compliance: float = 1e-4,
    push_rate: float = 6.0,
    edge_gap: float = 0.005,
    direct_rounds: int = 8,
    neighbour_rows: bool = True,
    direct_compliance: float = 1e-4,
    collider_compliance: float | None = None,
    grow_rounds: int = 24,
    trail_coils: int = 0,
    lead_coils: int = 0,
    trail_x: float | None = 0.16,
    lead_x: float | None = 0.36,
    release_speed: float = 1.0,
    rest_pitch: float = 1.02,
    hand_time: float = 0.6,
    hand_hold: float = 0.0,
    hand_x: float | None = None,
    hand_clearance: float = 0.004,
    post_stabilise: bool = True,
    max_move_radii: float | None = 5.0,
    post_velocity: bool = False,
    trace: float = 0.0,
    verbose: bool = False,
    frames_path: str | None = None,
    frame_every: float = 0.05,
    direct_method: str = "active_set",
    geometric_stiffness: bool = True,
) -> dict:
    """Simulate ``seconds`` of the scene described in the module docstring (lengths in m, times in s, moduli
    in Pa, compliances in m/N) and return its keys."""
    n_pts = coils * per_coil + 1
    # Posed stacks: coils with a pitch of one wire diameter plus 2 % (they touch but do not overlap).
    pitch = 2.0 * wire_radius * 1.02
    u = np.arange(n_pts) / (n_pts - 1)
    # Rest shape: pitch ``rest_pitch`` wire diameters; below 1.02 a closed stack is pre-tensioned (its coils
    # press on each other with k N (1.02 − rest_pitch) 2r, as a real Slinky's), negative: wound the other way.
    rest_axis = np.stack((0 * u, 0 * u, u * 2.0 * wire_radius * rest_pitch * coils), axis=1)
    z_hat = np.tile([0.0, 0.0, 1.0], (n_pts, 1))
    x_hat = np.tile([1.0, 0.0, 0.0], (n_pts, 1))
    rest = helix_along(rest_axis, z_hat, x_hat, coils, per_coil, coil_radius)
    centres, frames = segment_frames(rest, rest_axis)
    lengths = np.linalg.norm(np.diff(rest, axis=0), axis=1)
    n_seg = n_pts - 1  # the Slinky's segments; a "hand" start adds one after them
    joints = np.arange(n_seg - 1)
    parent, child, radii = joints, joints + 1, np.full(n_seg, wire_radius)
    point_parent, point_child, pinned = None, None, None
    hand = start == "hand"
    if hand:
        # The hand: a pinned segment welded to the top coil's end segment at its centre (a joint of the
        # wire's own stiffness); a tiny radius keeps it out of every contact.
        centres, frames = np.vstack((centres, centres[-1:])), np.vstack((frames, frames[-1:]))
        lengths, radii = np.append(lengths, lengths[-1]), np.append(radii, 1e-6)
        parent, child = np.append(parent, n_seg - 1), np.append(child, n_seg)
        point_parent = np.zeros((n_seg, 3))
        point_parent[:-1, 2] = 0.5 * lengths[: n_seg - 1]
        point_child = np.zeros((n_seg, 3))
        point_child[:-1, 2] = -0.5 * lengths[1:n_seg]
        pinned = np.arange(n_seg + 1) == n_seg
    model = RodModel.from_arrays(
        centres,
        frames,
        lengths,
        radii,
        density,
        joint_parent=parent,
        joint_child=child,
        joint_point_parent=point_parent,
        joint_point_child=point_child,
        joint_radii=wire_radius,
        youngs_modulus=youngs_modulus,
        torsion_modulus=torsion_modulus,
        pinned=pinned,
    )
    # Initial pose: arched from the middle of the top step onto the middle of the next one.
    x0 = 0.5 * run_m if trail_x is None else trail_x
    x1 = 1.5 * run_m if lead_x is None else lead_x
    axis, tan, nrm, in_arch = stacked_arch_axis(
        n_pts, per_coil, pitch, trail_coils, lead_coils, x0, x1, wire_radius, -rise + wire_radius, lift
    )
    arched_x, arched_q = segment_frames(helix_along(axis, tan, nrm, coils, per_coil, coil_radius), axis)

    stairs = [
        Box(
            (k * run_m + 0.5 * run_m if k < steps_count else 0.5 * (k * run_m + 4.0), 0.0, -k * rise - 1.0),
            (0.5 * run_m if k < steps_count else 0.5 * (4.0 - k * run_m), 1.0, 1.0),
        )
        for k in range(steps_count + 1)
    ]
    floor_z = -steps_count * rise
    colliders = stairs + [Plane((0, 0, 1), floor_z - 1e-3)]
    kinematic = None
    # the closed stack standing at the origin: coils one pitch apart (pre-tensioned if rest_pitch < 1.02)
    stack_axis = np.stack((0 * u, 0 * u, u * pitch * coils), axis=1)
    closed_x, closed_q = segment_frames(helix_along(stack_axis, z_hat, x_hat, coils, per_coil, coil_radius), stack_axis)
    if hand:
        # The stack stands just behind the top step's edge; the hand turns the top coil over, up and
        # across to ``hand_clearance`` m above the next step (a half turn about +y through the midpoint of
        # the top coil's centre and that place, eased in and out over ``hand_time`` s), holds it
        # ``hand_hold`` s and lets go: pressed onto the step, the held coil would be driven into it.
        base = np.array([run_m - coil_radius - wire_radius - edge_gap, 0.0, wire_radius * 1.01])
        start_x, start_q = np.vstack((closed_x, closed_x[-1:])) + base, np.vstack((closed_q, closed_q[-1:]))
        top = np.array([base[0], 0.0, start_x[n_seg - 1, 2]])
        land = np.array([1.5 * run_m if hand_x is None else hand_x, 0.0, -rise + wire_radius + hand_clearance])
        pivot = 0.5 * (top + land)
        p0, q0 = start_x[n_seg], start_q[n_seg]

        def kinematic(t):
            u = min(t / hand_time, 1.0)
            th = np.pi * 0.5 * (1.0 - np.cos(np.pi * u))
            c, s_ = np.cos(th), np.sin(th)
            rel = p0 - pivot
            p = pivot + [c * rel[0] + s_ * rel[2], rel[1], -s_ * rel[0] + c * rel[2]]
            qy = np.array([np.cos(0.5 * th), 0.0, np.sin(0.5 * th), 0.0])
            return p[None], quat.multiply(qy[None], q0[None])

    sim = Simulator(model, dt=dt, max_iterations=iterations, tolerance=tolerance, damping=damping, kinematic=kinematic)
    if hand:
        sim.positions[:], sim.orientations[:] = start_x, start_q
    elif start == "arch":
        sim.positions[:] = arched_x
        sim.orientations[:] = arched_q
        # released by a hand: the arch's coils flow along the axis toward the leading stack [m/s]
        flow = 0.5 * (tan[1:] * in_arch[1:, None] + tan[:-1] * in_arch[:-1, None])
        sim.velocities[:] = release_speed * flow
    elif start == "stack":  # the closed stack standing on the middle of the top step
        sim.positions[:] = closed_x + [0.5 * run_m, 0.0, wire_radius * 1.01]
        sim.orientations[:] = closed_q
    else:
        # "push": the stack stands at the edge of the top step, tilted toward the stairs by the ramp of its
        # bottom coil (atan(pitch / coil diameter), ~1.2°), and is tipped over the edge like a hand starts
        # a Slinky: rigid rotation about the stack's front foot at ``push_rate`` [rad/s] about +y.
        tilt = np.arctan2(pitch, 2.0 * coil_radius)
        spin = np.array([np.cos(0.5 * tilt), 0.0, np.sin(0.5 * tilt), 0.0])  # about +y: top toward +x
        foot = np.array([coil_radius + wire_radius, 0.0, -wire_radius])  # front foot, stack frame
        rel = quat.rotate(np.tile(spin, (model.n_segments, 1)), closed_x - foot)
        base = np.array([run_m - edge_gap, 0.0, 0.0])  # foot just behind the edge
        sim.positions[:] = base + rel + [0.0, 0.0, 1e-6]
        sim.orientations[:] = quat.multiply(np.tile(spin, (model.n_segments, 1)), closed_q)
        omega = np.array([0.0, push_rate, 0.0])
        sim.velocities[:] = np.cross(omega, rel)
        sim.angular_velocities[:] = quat.rotate_inverse(sim.orientations, np.tile(omega, (model.n_segments, 1)))
    # Permanent rows: coil k lies between coils k ± 1, so segment i can only touch i + per_coil − 1 … + 1
    # (and those below it): candidates in every step, however fast the coils close.
    seg = np.arange(n_seg)
    pairs = np.concatenate([np.stack((seg, seg + per_coil + d), axis=1) for d in (-1, 0, 1)])
    pairs = pairs[pairs[:, 1] < n_seg] if neighbour_rows else None
    if response != "direct":  # Gauss–Seidel sweeps (local), or with the tree's step first (tree)
        method = (TreeResponseOptions if response == "tree" else GaussSeidelOptions)(
            sweeps=sweeps, pre_sweeps=pre_sweeps, max_colours=max_colours
        )
    else:
        rows = dict(compliance=direct_compliance, collider_compliance=collider_compliance)
        rows["friction_compliance"] = friction_compliance
        max_move = None if max_move_radii is None else max_move_radii * wire_radius
        if direct_method == "schur":
            method = SchurOptions(geometric_stiffness=geometric_stiffness, **rows)
        else:
            method = ActiveSetOptions(rounds=direct_rounds, grow_rounds=grow_rounds, max_move=max_move, **rows)
    # the post-stabilisation solve as the direct solves (its compliance and rounds)
    post = PostOptions(
        velocity=post_velocity, compliance=direct_compliance, rounds=direct_rounds, grow_rounds=grow_rounds
    )
    contacts = Contacts(
        model,
        colliders,
        friction=friction,
        self_collision=np.arange(model.n_segments) < n_seg,
        method=method,
        detection=DetectionOptions(
            self_friction=self_friction, self_pairs=pairs, self_contacts=self_contacts, margin=margin
        ),
        post=post if post_stabilise else None,
    )
    sim.gs_constraints.append(contacts)
    start_height = float(sim.positions[:n_seg, 2].mean())
    ends = [0, n_seg - 1]

    def step_under(x):
        return int(np.clip(np.floor(x / run_m), 0, steps_count))

    n_steps = int(round(seconds / dt))
    worst = 0.0
    worst_solved = 0.0  # the deepest overlap the step's solves left (before post-stabilisation)
    times = []
    # which end leads (+x): the held one for a hand start (both ends start in the one stack)
    lead = 1.0 if hand else np.sign(sim.positions[n_seg - 1, 0] - sim.positions[0, 0])
    released = not hand
    flips = 0
    trail_step = []
    diverged_at = None
    violated_at = None  # first time an overlap exceeds the target, 0.1 wire radius
    start_gaps = contacts.surface_gaps(sim)
    slinky_seg = np.arange(model.n_segments) < n_seg

    def mechanical_energy():
        # kinetic + gravity [J]; elastic energy (≥ 0, ~0 in the posed start) is left out, so this sum can
        # only fall (damping, friction, storage in the spring): a rise is energy the solver made
        pe = -float(np.sum(model.masses[:n_seg] * (sim.positions[:n_seg] @ sim.gravity)))
        return sim.kinetic_energy(slinky_seg) + pe

    energy0 = mechanical_energy()
    budget = sim.kinetic_energy(slinky_seg) + float(np.sum(model.masses[:n_seg])) * float(
        np.linalg.norm(sim.gravity)
    ) * (start_height - floor_z)
    energy_gain = 0.0  # largest rise of kinetic + gravity energy over the start [J]
    energy_gain_at = None
    if trace:
        print(f"start gaps self {start_gaps[0] * 1e3:.3f} col {start_gaps[1] * 1e3:.3f} mm", flush=True)
    frame_t, frame_x = [0.0], [sim.positions[:n_seg].copy()]

    def save_frames():
        # the Slinky's segment centres every ``frame_every`` s, with the stairs, to look at the motion
        np.savez_compressed(
            frames_path,
            t_s=np.array(frame_t),
            centres_m=np.array(frame_x),
            rise_m=rise,
            run_m=run_m,
            steps=steps_count,
            wire_radius_m=wire_radius,
            coil_radius_m=coil_radius,
        )

    every = max(int(round(frame_every / dt)), 1)
    for k in range(n_steps):
        if not released and sim.time >= hand_time + hand_hold - 1e-9:
            sim.remove_joints([n_seg - 1])  # the hand's weld (the last tree joint)
            released = True
        t0 = time.perf_counter()
        sim.step()
        times.append(time.perf_counter() - t0)
        self_gap, col_gap = contacts.surface_gaps(sim)
        worst = max(worst, -min(self_gap, col_gap, 0.0))
        gain = mechanical_energy() - energy0
        if gain > energy_gain:
            energy_gain, energy_gain_at = gain, sim.time
        worst_solved = max(worst_solved, contacts.post_overlap if post_stabilise else worst)
        if violated_at is None and worst > 0.1 * wire_radius:
            violated_at = sim.time
        ends_x = sim.positions[ends, 0]
        new_lead = np.sign(ends_x[1] - ends_x[0])
        if new_lead != lead and new_lead != 0:
            flips += 1
            lead = new_lead
        trail_step.append(min(step_under(ends_x[0]), step_under(ends_x[1])))
        if frames_path and (k + 1) % every == 0:
            frame_t.append(sim.time)
            frame_x.append(sim.positions[:n_seg].copy())
            if (k + 1) % (20 * every) == 0:
                save_frames()  # a run stopped early still leaves its frames
        if verbose:
            print(
                f"t {sim.time:.2f} contacts {contacts.n_contacts} active {contacts.n_active} "
                f"self_gap {self_gap * 1e3:.4f} col_gap {col_gap * 1e3:.4f} mm  "
                f"ms {times[-1] * 1e3:.0f}  ends_x {ends_x}",
                flush=True,
            )
        if trace and round(sim.time / trace, 6) % 1 == 0:
            xc = sim.positions[:n_seg]
            print(
                f"t {sim.time:.2f} com ({xc[:, 0].mean():.3f}, {xc[:, 2].mean():.3f}) trail ({xc[0, 0]:.3f}, "
                f"{xc[0, 2]:.3f}) lead ({xc[-1, 0]:.3f}, {xc[-1, 2]:.3f}) top z {xc[:, 2].max():.3f} "
                f"pen/r {worst / wire_radius:.2f} flips {flips} gain {gain * 1e3:.1f} mJ ms {times[-1] * 1e3:.0f}",
                flush=True,
            )
        # two capsules overlap by 2 r at most (axes crossing): past 1.5 r coils pass through each other;
        # energy made beyond the start's whole budget (kinetic + the fall to the floor) is a blow-up too
        if worst > 1.5 * wire_radius or energy_gain > budget:
            diverged_at = sim.time
            trail_step.pop()  # the exploded pose says nothing about the stairs
            break
    if frames_path:
        save_frames()
    stats = contact_stats(contacts, wire_radius)
    return {
        "stairs_descended": int(trail_step[-1]) if trail_step else 0,
        "max_penetration_m": worst,
        "wire_radius_m": wire_radius,
        "max_penetration_over_wire_radius": worst / wire_radius,
        # what the step's own solves left, before post-stabilisation removed it (equal without it)
        "max_penetration_before_post_m": worst_solved,
        "post_stabilise": post_stabilise,
        "ms_per_step": 1e3 * float(np.median(times)),
        "end_flips": flips,
        "segments": n_seg,
        "dt_s": dt,
        "iterations": iterations,
        "tolerance_m": tolerance,
        "geometric_stiffness": geometric_stiffness,
        # Newton iterations per step (Contacts.reports), the steps that ended at the cap unconverged, and the schur
        # method's steps solved with XPBD's iteration (its Newton matrix indefinite)
        **{key: stats[key] for key in ("median_iterations", "cap_steps", "residual_median_m", "xpbd_steps")},
        "cap_share": stats["cap_steps"] / max(stats["steps"], 1),
        "xpbd_fraction": stats["xpbd_steps"] / max(stats["steps"], 1),
        "seconds": seconds,
        "simulated_s": sim.time,
        "diverged_at_s": diverged_at,
        "first_overlap_over_0.1r_at_s": violated_at,
        "contacts_last_step": contacts.n_contacts,
        "direct_rounds_cap": direct_rounds,
        "active_set_rounds_median": float(np.median([r for r, _ in contacts.solve_log])) if contacts.solve_log else 0.0,
        "unconverged_solves_share": float(np.mean([not c for _, c in contacts.solve_log]))
        if contacts.solve_log
        else 0.0,
        # kinetic + gravity energy can only fall; its largest rise over the start, and when [J, s]
        "max_energy_gain_J": energy_gain,
        "max_energy_gain_at_s": energy_gain_at,
        "energy_budget_J": budget,
        # the schur method's Newton steps are not damped
        "max_move_per_solve_m": None
        if max_move_radii is None or direct_method == "schur"
        else max_move_radii * wire_radius,
        "damped_solves_share": contacts.damped_solves / max(len(contacts.solve_log), 1),
        "com_drop_m": start_height - float(sim.positions[:n_seg, 2].mean()),
        # solves whose normal active set never settled within the primal–dual rounds: no friction row
        # started sliding in them (rows sticking at the step's start stuck, whatever the force)
        "friction_undecided_share": float(np.mean(np.asarray(contacts.friction_log) == 0))
        if contacts.friction_log
        else 0.0,
        "target_met": bool(diverged_at is None and trail_step and trail_step[-1] >= 3 and worst <= 0.1 * wire_radius),
    }


def main() -> None:
    default = {k: v.default for k, v in inspect.signature(run).parameters.items()}  # one set of defaults
    ap = _common.arguments(__doc__)
    ap.add_argument("--seconds", type=float, default=default["seconds"])
    ap.add_argument(
        "--iterations",
        type=int,
        default=None,
        help="Newton iterations per step at most (default: 15 with the schur method, 3 with the active set)",
    )
    ap.add_argument(
        "--tolerance",
        type=float,
        default=None,
        help="m: a step stops iterating once its residual is below this (0: always --iterations; default: 1e-5 with "
        "the schur method, 0 with the active set)",
    )
    ap.add_argument(
        "--rounds", type=int, default=default["direct_rounds"], help="active-set solves per direct solve at most"
    )
    ap.add_argument("--start", default=default["start"], choices=("arch", "push", "stack", "hand"))
    ap.add_argument(
        "--release-speed", type=float, default=default["release_speed"], help="m/s of the arch's coils at the start"
    )
    ap.add_argument(
        "--no-post-stabilise",
        action="store_true",
        help="leave the overlaps the step's solves leave (Contacts(post=None))",
    )
    ap.add_argument(
        "--max-move-radii",
        type=float,
        default=default["max_move_radii"],
        help="wire radii a direct solve may move a segment's surface (damped Newton); 0: no limit",
    )
    ap.add_argument("--self-friction", type=float, default=default["self_friction"], help="Coulomb μ between coils")
    ap.add_argument("--method", default="schur", choices=("active_set", "schur"), help="Contacts(method=)")
    ap.add_argument(
        "--no-geometric-stiffness",
        action="store_true",
        help="the schur method's Newton step without the momentum residual and geometric stiffness (Deul's Eq. 22)",
    )
    ap.add_argument(
        "--frames",
        default=None,
        metavar="NPZ",
        help="save the segment centres every 0.05 s (t_s, centres_m, and the stairs) to this .npz",
    )
    args = ap.parse_args()
    schur = args.method == "schur"
    result = run(
        seconds=args.seconds,
        iterations=args.iterations or (15 if schur else default["iterations"]),
        tolerance=(1e-5 if schur else default["tolerance"]) if args.tolerance is None else args.tolerance,
        direct_rounds=args.rounds,
        start=args.start,
        release_speed=args.release_speed,
        post_stabilise=not args.no_post_stabilise,
        max_move_radii=args.max_move_radii or None,
        self_friction=args.self_friction,
        frames_path=args.frames,
        direct_method=args.method,
        geometric_stiffness=not args.no_geometric_stiffness,
    )
    _common.report(result, args.json, "{:32s} {}")


if __name__ == "__main__":
    main()
