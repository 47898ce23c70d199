"""Loop-closing constraints (KKT/GS alternation, Deul Algorithm 1 lines 10–14), the Gauss–Seidel set hook,
and leaves as thin-plate segments."""

import numpy as np
import pytest
from scipy.optimize import brentq

from solver import RodModel, Simulator, cross_section_moments, rod_from_polyline
from solver.build.tree_builder import attach_leaves, tree_from_branches
from solver.core import quaternion as quat
from solver.core.loop_closing import LoopClosingConstraints
from statics import static_solve

X_AXIS = quat.from_two_vectors(np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0]))

# ---------------------------------------------------------------- catenary: span D, rope length S, N segments
D, S, N, R_ROPE, E_ROPE = 1.0, 1.2, 40, 0.002, 1e5  # soft: the welded ends' bending layer ≪ 1 % of the sag
L_SEG = S / N


def catenary():
    """Parameter a of the catenary through (0, 0) and (D, 0) with arc length S, and its sag [m]."""
    a = brentq(lambda a: 2 * a * np.sinh(D / (2 * a)) - S, 0.05, 10.0)
    return a, a * (np.cosh(D / (2 * a)) - 1)


def v_pose():
    """A V of arc length S between (0, 0, 0) and (D, 0, 0): centres and orientations of the N segments."""
    h = np.sqrt((S / 2) ** 2 - (D / 2) ** 2)
    u = 1 - np.abs(np.linspace(-1, 1, N + 1))
    knots = np.stack((np.linspace(0, D, N + 1), np.zeros(N + 1), -u * h), axis=1)
    d = np.diff(knots, axis=0) / L_SEG
    return 0.5 * (knots[1:] + knots[:-1]), quat.from_two_vectors(np.tile([0.0, 0.0, 1.0], (N, 1)), d)


def settle(sim, steps=200):
    for _ in range(steps):
        sim.step()
    return sim


def assert_on_catenary(sim, rope, origin):
    """The rope's joint points lie on the catenary: max deviation ≤ 1 % of the sag, and so does the mid sag."""
    a, sag = catenary()
    ends = sim.segment_points(np.tile([0.0, 0.0, -0.5 * L_SEG], (N, 1)), rope) - origin
    z = a * np.cosh((ends[:, 0] - D / 2) / a) - a * np.cosh(D / (2 * a))
    assert np.max(np.abs(ends[:, 2] - z)) <= 0.01 * sag
    assert -ends[N // 2, 2] == pytest.approx(sag, rel=0.01)


def test_rope_pinned_at_both_ends_sags_to_the_catenary():
    """Pinned segments are not unknowns, so the direct solver alone handles this rope (no loop needed)."""
    x = np.linspace(-L_SEG, S + L_SEG, N + 3)
    model = rod_from_polyline(np.stack((x, 0 * x, 0 * x), 1), R_ROPE, E_ROPE, pinned=["start", "end"])
    assert model.loops.n_joints == 0
    sim = Simulator(model, dt=0.01, max_iterations=10, tolerance=1e-9, damping=5.0)
    pos, ori = v_pose()  # rest shape straight (no bending bias), start from a V
    sim.positions[1:-1], sim.orientations[1:-1] = pos, ori
    sim.positions[-1] = [D + L_SEG / 2, 0.0, 0.0]
    assert_on_catenary(settle(sim), np.arange(1, N + 1), np.zeros(3))


def rope_on_a_bar():
    """A rope welded at both ends to a free bar that hangs from a pinned anchor: the last weld closes a cycle."""
    pos, ori = v_pose()
    bar, anchor = N, N + 1
    parent = np.r_[anchor, bar, np.arange(N - 1), N - 1]
    child = np.r_[bar, 0, np.arange(1, N), bar]
    pp = np.zeros((N + 2, 3))
    pc = np.zeros((N + 2, 3))
    pp[1, 2], pc[1, 2] = -D / 2, -L_SEG / 2
    pp[2:, 2], pc[2:-1, 2] = L_SEG / 2, -L_SEG / 2
    pc[-1, 2] = D / 2
    model = RodModel.from_arrays(
        np.vstack((pos, [[D / 2, 0, 0]] * 2)),
        np.tile(X_AXIS, (N + 2, 1)),
        np.r_[np.full(N, L_SEG), D, D],
        np.r_[np.full(N, R_ROPE), 0.02, 0.02],
        1000.0,
        joint_parent=parent,
        joint_child=child,
        joint_point_parent=pp,
        joint_point_child=pc,
        youngs_modulus=np.r_[1e11, np.full(N + 1, E_ROPE)],
        joint_radii=np.r_[0.02, np.full(N + 1, R_ROPE)],
        joint_lengths=np.r_[D / 2, np.full(N + 1, L_SEG)],
        pinned=np.arange(N + 2) == anchor,
    )
    return model, ori


def test_rope_welded_into_a_loop_sags_to_the_catenary():
    model, ori = rope_on_a_bar()
    assert model.loops.n_joints == 1 and model.loops.input_index.tolist() == [N + 1]
    assert (model.loops.joint_parent[0], model.loops.joint_child[0]) == (N - 1, N)
    sim = Simulator(model, dt=0.01, max_iterations=10, tolerance=1e-9, damping=5.0)
    sim.orientations[:N] = ori
    settle(sim)
    assert sim.last_report.residual < 1e-9
    bar_start = sim.segment_points(np.array([[0.0, 0.0, -D / 2]]), np.array([N]))[0]
    assert_on_catenary(sim, np.arange(N), bar_start)


# ---------------------------------------------------------------- a ring hanging from a hook
def ring(n=48, radius=0.3, r=0.01, youngs=1e9, cut=3, closing=True):
    """A closed ring of n segments in the x–z plane, joint points at angles −90° + k·360°/n (k = 0 at the
    bottom); joint ``cut`` (cut → cut+1) is given last, so it is the loop-closing one. The top segment
    n/2 is welded at its centre to a pinned anchor."""
    t = np.linspace(0, 2 * np.pi, n + 1) - np.pi / 2
    base = rod_from_polyline(np.stack((radius * np.cos(t), 0 * t, radius * np.sin(t)), 1), r, youngs)
    order = np.r_[np.arange(cut + 1, n), np.arange(cut + 1)]
    if not closing:
        order = order[:-1]
    par, ch = order, (order + 1) % n
    pp = np.zeros((order.size, 3))
    pp[:, 2] = 0.5 * base.lengths[par]
    pc = np.zeros((order.size, 3))
    pc[:, 2] = -0.5 * base.lengths[ch]
    hook = n // 2
    return RodModel.from_arrays(
        np.vstack((base.positions, base.positions[hook])),
        np.vstack((base.orientations, base.orientations[hook])),
        np.r_[base.lengths, base.lengths[hook]],
        r,
        1000.0,
        joint_parent=np.r_[n, par],
        joint_child=np.r_[hook, ch],
        joint_point_parent=np.vstack(([0, 0, 0], pp)),
        joint_point_child=np.vstack(([0, 0, 0], pc)),
        youngs_modulus=youngs,
        pinned=np.arange(n + 1) == n,
    )


def hang(model, steps=60):
    """Static equilibrium by kinetic damping (velocities cleared after every step)."""
    sim = Simulator(model, dt=0.02, max_iterations=10, tolerance=1e-10)
    for _ in range(steps):
        sim.step()
        sim.velocities[:] = 0.0
        sim.angular_velocities[:] = 0.0
    return sim


def ring_vertices(model, pose_positions, pose_orientations):
    n = model.n_segments - 1
    local = np.c_[np.zeros((n, 2)), -0.5 * model.lengths[:n]]
    return pose_positions[:n] + quat.rotate(pose_orientations[:n], local)


def test_ring_keeps_its_shape_wherever_the_loop_is_closed():
    """A thin ring hanging from its top under its own weight w [N/m] (Roark, Table 9.2 case 15 upside down):
    the vertical diameter grows by 0.4674 wR⁴/EI, the horizontal one shrinks by 0.4292 wR⁴/EI."""
    n, radius, r, youngs = 48, 0.3, 0.01, 1e9
    sims = [hang(ring(cut=cut)) for cut in (3, 30)]
    unit = 1000.0 * 9.81 * np.pi * r**2 * radius**4 / (youngs * np.pi * r**4 / 4)
    for sim in sims:
        assert sim.model.loops.n_joints == 1 and sim.last_report.residual < 1e-9
        d = ring_vertices(sim.model, sim.positions, sim.orientations) - ring_vertices(
            sim.model, sim.model.positions, sim.model.orientations
        )
        assert (d[n // 2, 2] - d[0, 2]) / unit == pytest.approx(0.4674, rel=0.02)
        assert (d[n // 4, 0] - d[3 * n // 4, 0]) / unit == pytest.approx(-0.4292, rel=0.02)
    # the equilibrium does not depend on which joint closes the loop (which the tree solve did not see)
    assert np.max(np.abs(sims[0].positions - sims[1].positions)) < 1e-3 * unit
    # the same ring cut open at that joint sags far more: the loop-closing constraint is what holds it
    open_ring = hang(ring(cut=3, closing=False))
    assert np.max(np.abs(open_ring.positions - sims[0].positions)) > unit


def test_kkt_gs_alternation_converges():
    """Per Newton iteration: the tree by the direct solver, then the loop (Algorithm 1 lines 6–14). With the
    tree's response the loop converges like the direct solver; with Eq. 21's local masses it converges
    linearly (block Gauss–Seidel); both share positions and the tree's λ."""
    model = ring(n=24, youngs=1e6)
    histories = {}
    for response in ("tree", "local"):
        sim = Simulator(model, dt=0.01, max_iterations=10, tolerance=0.0)
        loop = sim.gs_constraints[0]
        loop.response = response
        for _ in range(3):
            sim.step()
        sim.begin_step()
        histories[response] = [sim.iterate() for _ in range(40)]
        sim.end_step()
    with pytest.raises(ValueError, match="response must be"):
        LoopClosingConstraints(model, response="exact")
    assert LoopClosingConstraints(model).response == "tree"  # "auto" with a single loop
    tree, local = np.array(histories["tree"]), np.array(histories["local"])
    assert np.argmax(tree < 1e-10) <= 6 and np.all(tree[6:] < 1e-10)
    rate = (local[-1] / local[10]) ** (1 / 29)
    assert rate < 0.95 and local[-1] < 1e-3 * local[0]


# ---------------------------------------------------------------- the Gauss–Seidel set hook
class Recorder:
    """A set holding one segment's centre at a target (a hard point constraint) and logging the calls."""

    def __init__(self, segment, target, log):
        self.segment, self.target, self.log = segment, np.asarray(target, float), log

    def begin_step(self, sim):
        self.log.append(("begin", sim.positions[self.segment].copy()))

    def project(self, sim):
        c = sim.positions[self.segment] - self.target
        sim.positions[self.segment] -= c
        self.log.append(("project", float(np.max(np.abs(c)))))
        return self.log[-1][1]

    def end_step(self, sim):
        self.log.append(("end", sim.velocities[self.segment].copy()))


def test_gauss_seidel_set_hook_order_and_residual():
    pts = np.stack((np.linspace(0, 1, 11), np.zeros(11), np.zeros(11)), 1)
    model = rod_from_polyline(pts, 0.01, 1e9, pinned=["start"])
    sim = Simulator(model, dt=0.01, max_iterations=5, tolerance=0.0)
    log = []
    target = model.positions[-1] + [0, 0, 0.001]
    sim.gs_constraints.append(Recorder(9, target, log))
    report = sim.step()
    kinds = [k for k, _ in log]
    assert report.iterations == 5 and kinds == ["begin"] + ["project"] * 5 + ["end"]
    assert log[0][1][2] == pytest.approx(-9.81 * 0.01**2)  # begin_step sees the predicted (falling) pose
    # the iteration's residual: max of the joints' (after the set moved segment 9) and the set's own
    assert report.residual == max(sim.residual(), log[-2][1]) and log[-2][1] > 0
    # the set's sweep comes last in an iteration, and end_step sees the velocity from that pose
    assert np.allclose(sim.positions[9], target, atol=1e-15)
    assert log[-1][1][2] == pytest.approx(0.001 / 0.01, rel=1e-9)


def test_gauss_seidel_set_counts_in_the_residual():
    model = rod_from_polyline(np.array([[0.0, 0, 0], [1.0, 0, 0]]), 0.01, 1e9)  # one segment, no joints

    class Stubborn:
        def begin_step(self, sim):
            pass

        def project(self, sim):
            return 0.5

        def end_step(self, sim):
            pass

    sim = Simulator(model, max_iterations=4)
    sim.gs_constraints.append(Stubborn())
    assert sim.step() == type(sim.last_report)(4, 0.5)


# ---------------------------------------------------------------- leaves
def test_leaf_plate_mass_inertia_and_area():
    a, b, length, rho = 0.03, 0.0004, 0.08, 700.0
    model = RodModel.from_arrays(np.zeros((2, 3)), [[1, 0, 0, 0]] * 2, length, [[a, b]] * 2, rho, leaf=[False, True])
    m = rho * (2 * a) * (2 * b) * length
    assert model.masses[1] == pytest.approx(m, rel=1e-12)
    assert model.masses[0] == pytest.approx(rho * np.pi * a * b * length, rel=1e-12)
    box = m / 12 * np.array([(2 * b) ** 2 + length**2, (2 * a) ** 2 + length**2, (2 * a) ** 2 + (2 * b) ** 2])
    np.testing.assert_allclose(model.inertia[1], box, rtol=1e-12)
    assert model.plate_area.tolist() == [0.0, pytest.approx(2 * a * length)]
    assert model.leaf.tolist() == [False, True]
    assert RodModel.from_arrays(np.zeros((1, 3)), [1, 0, 0, 0], 1.0, 0.1, 1.0).leaf.tolist() == [False]


def leafy_branch():
    """A vertical stiff branch clamped at its foot; two leaves sticking out horizontally (blade normal up) from
    spans 1 and 3, one along +x, one along −y."""
    pts = np.stack((np.zeros(5), np.zeros(5), np.linspace(0, 1, 5)), 1)
    model, bmap = tree_from_branches([(pts, np.full(5, 0.03))], youngs_modulus=12.5e9, torsion_modulus=6.5e9)
    stem = np.array([[0.03, 0, 0.4], [0, -0.03, 0.9]])
    return (
        model,
        bmap,
        dict(
            stem=stem,
            axis=[[1.0, 0, 0], [0, -1.0, 0]],
            normal=[[0, 0, 1.0], [0, 0.3, 1.0]],
            length=[0.1, 0.12],
            width=[0.05, 0.04],
            parent=[[0, 1], [0, 3]],
        ),
    )


def test_attach_leaves_to_a_model_with_other_joint_kinds():
    """Leaves hang clamped on a branch whose own joints are not all clamps (here a ball and physical stretch)."""
    model, bmap, leaves = leafy_branch()
    kinds = np.zeros(model.n_joints, np.int64)
    kinds[0] = 1  # ball
    varied = model.copy_with(joint_kind=kinds, physical_stretch=np.ones(model.n_joints, bool))
    lm, seg = attach_leaves(varied, bmap, **leaves)
    j = np.flatnonzero(lm.joint_child >= model.n_segments)
    assert lm.joint_kind[j].tolist() == [0, 0] and not lm.physical_stretch[j].any()
    assert lm.joint_kind[0] == 1 and lm.physical_stretch[: model.n_joints].all()


def test_attach_leaves_frames_joints_and_material():
    model, bmap, leaves = leafy_branch()
    lm, seg = attach_leaves(model, bmap, **leaves, thickness=5e-4, petiole_radius=None)  # blade joint
    assert seg.tolist() == [model.n_segments, model.n_segments + 1] and lm.leaf[seg].all() and not lm.leaf[:-2].any()
    # local +z along the axis, +y = the normal made orthogonal to it, stem at the segment's −z end
    np.testing.assert_allclose(quat.rotate(lm.orientations[seg], [0, 0, 1.0]), leaves["axis"], atol=1e-12)
    np.testing.assert_allclose(quat.rotate(lm.orientations[seg], [0, 1.0, 0]), [[0, 0, 1], [0, 0, 1]], atol=1e-12)
    ends = lm.positions[seg] + quat.rotate(lm.orientations[seg], np.c_[np.zeros((2, 2)), -0.5 * np.r_[0.1, 0.12]])
    np.testing.assert_allclose(ends, leaves["stem"], atol=1e-12)
    np.testing.assert_allclose(lm.masses[seg], 1000.0 * np.r_[0.05, 0.04] * 5e-4 * np.r_[0.1, 0.12])
    j = np.flatnonzero(lm.joint_child >= model.n_segments)
    assert lm.joint_parent[j].tolist() == [bmap.span_segment[0][1], bmap.span_segment[0][3]]
    a, b = np.r_[0.025, 0.02], 2.5e-4
    np.testing.assert_allclose(lm.bend_twist_stiffness[j, 0], 1.2e9 * np.pi * a * b**3 / 4)
    # twist: Saint-Venant torsion constant of the elliptic blade, not its polar moment
    np.testing.assert_allclose(lm.bend_twist_stiffness[j, 2], 0.6e9 * np.pi * a**3 * b**3 / (a**2 + b**2))
    with pytest.raises(ValueError, match="leaf 1: parent span"):
        attach_leaves(model, bmap, **{**leaves, "parent": [[0, 1], [0, 4]]})
    with pytest.raises(ValueError, match="leaf 0: normal is parallel"):
        attach_leaves(model, bmap, **{**leaves, "normal": [[1.0, 0, 0], [0, 0, 1.0]]})
    with pytest.raises(ValueError, match="leaf 1: width"):
        attach_leaves(model, bmap, **{**leaves, "width": [0.05, 0.0]})


def test_leaves_hang_at_the_analytic_angle_and_stay_attached():
    """Static leaf under gravity: (K/l_j) sin θ = m g (l/2) cos θ, i.e. tan θ = m g l l_j / (2 K), with
    K = E I1 the blade's weak bending stiffness and l_j = l/2 (energy 2K/l_j sin²(θ/2) of Eq. 7's measure)."""
    model, bmap, leaves = leafy_branch()
    leaves["normal"] = [[0, 0, 1.0], [0, 0, 1.0]]
    lm, seg = attach_leaves(model, bmap, **leaves, thickness=8e-4, petiole_radius=None)  # blade joint
    sim = settle(Simulator(lm, dt=0.01, max_iterations=10, tolerance=1e-12, damping=20.0), 200)
    a, b, length = np.r_[0.025, 0.02], 4e-4, np.r_[0.1, 0.12]
    m = 1000.0 * 2 * a * 2 * b * length
    expected = np.arctan(m * 9.81 * length * (length / 2) / (2 * 1.2e9 * np.pi * a * b**3 / 4))
    j = np.flatnonzero(lm.joint_child >= model.n_segments)
    rel = quat.multiply(quat.conjugate(sim.orientations[lm.joint_parent[j]]), sim.orientations[seg])
    rest = lm.rest_darboux[j]
    bend = quat.multiply(quat.conjugate(rest), rel)
    theta = 2 * np.arcsin(np.linalg.norm(bend[:, 1:], axis=1))
    np.testing.assert_allclose(theta, expected, rtol=0.01)
    assert np.all(expected > 0.05)  # a real droop, not a rounding error
    tips = sim.segment_points(np.c_[np.zeros((2, 2)), 0.5 * length], seg)
    assert np.all(tips[:, 2] < leaves["stem"][:, 2])  # hanging down
    stems = sim.segment_points(np.c_[np.zeros((2, 2)), -0.5 * length], seg)
    attach = sim.segment_points(lm.joint_point_parent[j], lm.joint_parent[j])
    assert np.max(np.abs(stems - attach)) < 1e-8


# ---------------------------------------------------------------- model bookkeeping
def test_copy_with_keeps_loops_and_input_order():
    model = ring()
    again = model.copy_with(youngs_modulus=2e9)
    assert again.loops.n_joints == 1
    np.testing.assert_array_equal(again.loops.input_index, model.loops.input_index)
    np.testing.assert_array_equal(again.joint_parent, model.joint_parent)
    assert again.loops.bend_twist_stiffness[0, 0] == pytest.approx(2 * model.loops.bend_twist_stiffness[0, 0])
    joints = model.input_joint_arrays()
    assert joints["joint_parent"][model.loops.input_index].tolist() == model.loops.joint_parent.tolist()


def test_many_children_anywhere_along_one_parent_segment_bend_like_cantilevers():
    """Four horizontal branches start at four heights on the same (near-rigid) trunk span, each in its own
    direction; a tip load F on each bends each by FL³/3EI (+ the midpoint rule's 1/(2n²)), independently."""
    e, r, force, n, length = 1e10, 0.02, 2.0, 10, 1.0
    trunk = (np.array([[0, 0, 0], [0, 0, 1.0], [0, 0, 2.0]]), 1.0)
    heights, angles = [1.1, 1.4, 1.6, 1.9], np.radians([0.0, 100.0, 200.0, 290.0])
    branches = [trunk]
    for h, a in zip(heights, angles, strict=True):
        s = np.linspace(0, length, n + 1)[:, None]
        branches.append((np.array([0, 0, h]) + s * [np.cos(a), np.sin(a), 0.0], r))
    model, bmap = tree_from_branches(
        branches, youngs_modulus=e, stretch_compliance=1e-14, parents=[None] + [(0, 1)] * 4
    )
    trunk_span = bmap.span_segment[0][1]
    assert np.sum(model.joint_parent == trunk_span) == 4 and model.loops.n_joints == 0
    sim = Simulator(model, gravity=(0, 0, 0), tolerance=1e-13, max_iterations=20)
    tips = [int(bmap.span_segment[b][-1]) for b in range(1, 5)]
    for tip in tips:
        sim.add_point_load(tip, [0, 0, 0.5 * model.lengths[tip]], [0, 0, -force])
    static_solve(sim, dt=1 / 120)
    i1, _, _ = cross_section_moments(np.array([r, r]))
    analytic = force * length**3 / (3 * e * i1) * (1 + 1 / (2 * n**2))
    deflection = np.array(heights) - np.array([sim.tip(t)[2] for t in tips])
    np.testing.assert_allclose(deflection, analytic, rtol=2e-3)


def test_petiole_joint_hangs_a_leaf_at_the_round_stalk_angle():
    """With ``petiole_radius`` the leaf joint is a round stalk: the leaf's static droop follows
    tan θ = m g (l/2) l_j / (E π r⁴/4), the same small-angle cantilever law with the stalk's I."""
    import numpy as np

    from solver import Simulator
    from solver.build.tree_builder import attach_leaves, tree_from_branches

    branch = [(np.array([[0.0, 0, 0], [0, 0, 1.0]]), np.array([0.05, 0.05]))]
    model, bmap = tree_from_branches(branch, youngs_modulus=1e12, density=1000.0)
    length, width, thick, r, e = 0.17, 0.085, 2e-4, 1e-3, 1.2e9
    # one leaf sticking out horizontally from the middle of the trunk
    leaf = dict(
        stem=[[0.05, 0, 0.5]], axis=[[1.0, 0, 0]], normal=[[0, 0, 1.0]], length=[length], width=[width], parent=[(0, 0)]
    )
    model, leaves = attach_leaves(
        model,
        bmap,
        **leaf,
        thickness=thick,
        youngs_modulus=e,
        torsion_modulus=0.6e9,
        petiole_radius=r,
    )
    sim = Simulator(model, dt=0.01, max_iterations=20, tolerance=1e-12, damping=20.0)
    sim.run(400)
    axis = sim.tip(int(leaves[0])) - (sim.positions[leaves[0]] - (sim.tip(int(leaves[0])) - sim.positions[leaves[0]]))
    theta = np.arctan2(-axis[2], axis[0])
    m = 1000.0 * width * thick * length
    expected = m * 9.81 * (length / 2) * (length / 2) / (e * np.pi * r**4 / 4)
    assert abs(theta - np.arctan(expected)) <= 0.05 * np.arctan(expected)
    with pytest.raises(ValueError, match="petiole_radius"):
        attach_leaves(model, bmap, **leaf, petiole_radius=0.0)
