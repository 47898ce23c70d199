"""branch_modes / tree_modes: the first natural frequency and modal damping of the linearised rod model.

Oracles, all independent of solver.models.modes: Euler–Bernoulli's clamped–free beam (β₁L = 1.8751), a Hermite
cubic finite-element solution of (EI(x) w'')'' = ρA(x) ω² w written here (checked against the uniform beam's
3.5160 and Kirchhoff's cone, 8.719), and free vibrations simulated by the Simulator (a damped cosine fitted to
the tip's motion)."""

import numpy as np
import pytest
import scipy.linalg
from scipy.optimize import curve_fit

from solver import Simulator, attach_leaves, branch_modes, tree_from_branches, tree_modes
from solver.build.scenes import cantilever, cantilever_period

E, RHO, LENGTH, R0 = 1e10, 800.0, 2.0, 0.02  # a 2 m branch, 4 cm thick at its base
AXIS = np.array([1.0, 2.0, 2.0]) / 3.0  # tilted, so that no frame is the world's
BASE = np.array([0.3, -0.2, 1.0])


def fe_first_frequency(length, r0, r1, youngs_modulus, density, elements=60):
    """First frequency [Hz] of a clamped–free Euler–Bernoulli beam of circular section, radius linear from r0 to
    r1: Hermite cubic elements, 5-point Gauss quadrature (exact for these polynomial integrands)."""
    h = length / elements
    g, w = np.polynomial.legendre.leggauss(5)
    s = (g + 1) / 2
    shape = np.stack([1 - 3 * s**2 + 2 * s**3, h * (s - 2 * s**2 + s**3), 3 * s**2 - 2 * s**3, h * (s**3 - s**2)])
    curvature = np.stack([12 * s - 6, h * (6 * s - 4), 6 - 12 * s, h * (6 * s - 2)]) / h**2
    k = np.zeros((2 * elements + 2,) * 2)
    m = np.zeros_like(k)
    for e in range(elements):
        r = r0 + (r1 - r0) * (e + s) / elements
        dofs = slice(2 * e, 2 * e + 4)
        k[dofs, dofs] += (curvature * youngs_modulus * np.pi * r**4 / 4 * w * h / 2) @ curvature.T
        m[dofs, dofs] += (shape * density * np.pi * r**2 * w * h / 2) @ shape.T
    lam = scipy.linalg.eigh(k[2:, 2:], m[2:, 2:], eigvals_only=True, subset_by_index=[0, 0])[0]
    return np.sqrt(lam) / (2 * np.pi)


def frequency_parameter(f, r0=R0):
    """ω L² √(ρA₀ / (E I₀)) of the base section."""
    return 2 * np.pi * f * LENGTH**2 * np.sqrt(RHO * np.pi * r0**2 / (E * np.pi * r0**4 / 4))


def tapered_branch(tip_ratio, segments, **options):
    """One Sapling-like branch (tree_from_branches: a root anchor clamps its base), radius linear to r0·tip_ratio."""
    pts = BASE + np.linspace(0, LENGTH, segments + 1)[:, None] * AXIS
    radii = R0 * (1 + (tip_ratio - 1) * np.linspace(0, 1, segments + 1))
    return tree_from_branches([(pts, radii)], youngs_modulus=E, density=RHO, **options)


def test_the_finite_element_oracle_has_the_closed_forms():
    assert frequency_parameter(fe_first_frequency(LENGTH, R0, R0, E, RHO)) == pytest.approx(3.51602, rel=1e-5)
    assert frequency_parameter(fe_first_frequency(LENGTH, R0, 1e-9, E, RHO)) == pytest.approx(8.719, rel=1e-3)


def test_uniform_cantilever_is_euler_bernoulli_and_converges_as_one_over_n_squared():
    """Deul's cantilever (L = 10 m, r = 0.5 m, 50 segments): 1.39589 Hz against 1.39897 Hz (−0.22 %: the
    sections' rotary inertia −0.15 %, the joints' 1e-10 m/N position compliance and the discretisation the rest).
    A slender one (r = 5 cm, stiff position rows): errors −0.46 %, −0.12 %, −0.030 %, −0.0086 % at 10, 20, 40, 80
    segments, a quarter per halving."""
    f = tree_modes(cantilever(50), 2).frequency_hz
    assert f[0] == pytest.approx(1 / cantilever_period(), rel=0.01)
    assert f[1] == pytest.approx(f[0], rel=1e-9)  # the round section's two bending planes
    reference = 1 / cantilever_period(radius=0.05)
    errors = np.array(
        [tree_modes(cantilever(n, radius=0.05, stretch_compliance=1e-14), 1).frequency_hz[0] / reference - 1
         for n in (10, 20, 40, 80)]
    )  # fmt: skip
    assert abs(errors[-1]) < 1e-3
    assert np.all((errors[1:] / errors[:-1] > 0.2) & (errors[1:] / errors[:-1] < 0.3))


@pytest.mark.parametrize("tip_ratio", [1.0, 0.5, 0.2, 0.05])
def test_tapered_branch_matches_the_finite_element_beam(tip_ratio):
    """20 segments: −0.12 %, −0.10 %, −0.22 %, −0.33 % from the FE beam for tip radii r0, r0/2, r0/5, r0/20."""
    model, branches = tapered_branch(tip_ratio, 20)
    f = branch_modes(model, branches.span_segment).frequency_hz[0]
    assert f == pytest.approx(fe_first_frequency(LENGTH, R0, R0 * tip_ratio, E, RHO), rel=0.005)


def test_a_sharp_cone_approaches_kirchhoffs_frequency():
    """Tip radius r0/1000, 40 segments: ω L² √(ρA₀/EI₀) = 8.695 against Kirchhoff's 8.719 for the sharp cone."""
    model, branches = tapered_branch(1e-3, 40)
    f = branch_modes(model, branches.span_segment).frequency_hz[0]
    assert frequency_parameter(f) == pytest.approx(8.719, rel=0.01)


def tip_motion(model, segments, direction, damping, dt, seconds, integrator="bdf2"):
    """Free vibration without gravity, released straight with the transverse velocity 0.02 u²(3 − u)/2 m/s
    (u the distance from the clamp over the length: the static tip-load shape, close to the first mode): times
    and the tip's displacement along ``direction`` after every step."""
    sim = Simulator(model, dt=dt, gravity=(0, 0, 0), max_iterations=20, tolerance=1e-12, integrator=integrator,
                    damping=damping)  # fmt: skip
    lengths = model.lengths[segments]
    u = (np.cumsum(lengths) - lengths / 2) / lengths.sum()
    sim.velocities[segments] = (0.02 * u**2 * (3 - u) / 2)[:, None] * direction
    tip = np.empty(int(round(seconds / dt)))
    for k in range(tip.size):
        sim.step()
        tip[k] = sim.tip(int(segments[-1])) @ direction
    return dt * np.arange(1, tip.size + 1), tip


def damped_cosine_fit(t, y, zeta0, f0):
    """ζ and the undamped frequency [Hz] of c + A e^(−ζωt) cos(ω√(1−ζ²)t + φ) fitted to (t, y)."""

    def shape(t, c, a, zeta, omega, phase):
        return c + a * np.exp(-zeta * omega * t) * np.cos(omega * np.sqrt(1 - zeta * zeta) * t + phase)

    p, _ = curve_fit(shape, t, y, p0=[np.mean(y), np.ptp(y) / 2, zeta0, 2 * np.pi * f0, -np.pi / 2])
    return p[2], p[3] / (2 * np.pi)


def test_simulated_uniform_cantilever_sways_and_decays_as_its_first_mode():
    """10 segments, c = 0.8/s, 4 s: bdf2 at Δt = 1/240 s measures 1.39133 Hz and ζ = 0.045757 against the modal
    1.39042 Hz and 0.045786 (+0.07 %, −0.06 %); Euler at Δt = 1/60 s measures ζ = 0.11795, which the modes
    predict with Euler's own damping included (stepped_damping_ratio: 0.11795), c/(2ω) alone being 0.0458."""
    model, segments = cantilever(10), np.arange(1, 11)
    modes = branch_modes(model, [segments], damping=0.8)
    f, zeta = modes.frequency_hz[0], modes.damping_ratio[0]
    assert zeta == pytest.approx(0.8 / (4 * np.pi * f))
    zeta_sim, f_sim = damped_cosine_fit(*tip_motion(model, segments, np.array([0, 0, 1.0]), 0.8, 1 / 240, 4.0),
                                        zeta, f)  # fmt: skip
    assert f_sim == pytest.approx(f, rel=0.003)
    assert zeta_sim == pytest.approx(zeta, rel=0.01)
    zeta_euler, _ = damped_cosine_fit(
        *tip_motion(model, segments, np.array([0, 0, 1.0]), 0.8, 1 / 60, 4.0, "euler"), zeta, f
    )
    assert zeta_euler == pytest.approx(modes.stepped_damping_ratio(1 / 60, "euler")[0], rel=0.01)


def test_simulated_tapered_branch_sways_and_decays_as_its_first_mode():
    """The tilted branch tapering to r0/2, 20 segments, c = 2/s, bdf2 at Δt = 1 ms for 1.5 s: 6.50047 Hz and
    ζ = 0.024478 against the modal 6.49958 Hz and 0.024487 (+0.014 %, −0.04 %)."""
    model, branches = tapered_branch(0.5, 20)
    segments = branches.span_segment[0]
    modes = branch_modes(model, [segments], damping=2.0)
    across = np.cross(AXIS, [0.0, 0.0, 1.0])
    t, tip = tip_motion(model, segments, across / np.linalg.norm(across), 2.0, 1e-3, 1.5)
    zeta_sim, f_sim = damped_cosine_fit(t, tip, modes.damping_ratio[0], modes.frequency_hz[0])
    assert f_sim == pytest.approx(modes.frequency_hz[0], rel=0.003)
    assert zeta_sim == pytest.approx(modes.damping_ratio[0], rel=0.01)


def test_a_sub_branch_held_at_its_parent_is_that_branch_alone_on_a_pinned_anchor():
    """A trunk with one side branch: the side branch without what it carries is clamped by its junction as the
    same branch built alone is by its root anchor (both joints half a segment long); with_children adds the
    twig's mass and stiffness, and the trunk carrying everything is the whole tree's first mode."""
    trunk = (np.linspace(0, 3, 13)[:, None] * [0, 0, 1.0], np.linspace(0.06, 0.02, 13))
    side_pts = [0, 0, 1.625] + np.linspace(0, 1.2, 9)[:, None] * np.array([0.6, 0.0, 0.8])
    side = (side_pts, np.linspace(0.02, 0.008, 9))
    twig = ([0.3, 0, 2.025] + np.linspace(0, 0.4, 5)[:, None] * np.array([0.0, 0.6, 0.8]), np.linspace(0.006, 0.003, 5))
    model, bmap = tree_from_branches([trunk, side, twig], parents=[None, (0, 6), (1, 3)], youngs_modulus=E,
                                     density=RHO)  # fmt: skip
    alone, alone_map = tree_from_branches([side], youngs_modulus=E, density=RHO)
    bare = branch_modes(model, bmap.span_segment, with_children=False).frequency_hz
    carried = branch_modes(model, bmap.span_segment).frequency_hz
    assert bare[1] == pytest.approx(branch_modes(alone, alone_map.span_segment).frequency_hz[0], rel=1e-9)
    assert carried[2] == pytest.approx(bare[2], rel=1e-12)  # the twig carries nothing
    assert carried[1] < bare[1]  # the twig's mass outweighs its stiffness on the side branch
    assert carried[0] == pytest.approx(tree_modes(model, 1).frequency_hz[0], rel=1e-9)


def test_joints_without_an_elastic_restoring_force_are_refused():
    model, branches = tapered_branch(0.5, 5, root_joint="ball")
    with pytest.raises(ValueError, match="drops a row"):
        branch_modes(model, branches.span_segment)
    floating, _ = tapered_branch(0.5, 5, pin_roots=False)
    with pytest.raises(ValueError, match="hangs from no joint"):
        tree_modes(floating)


def test_leaves_ride_on_a_branch_as_mass_unless_asked_to_flutter():
    """A 1 m twig (r = 5 mm) with two 10 × 5 cm leaves on thin petioles: rigid_leaves (the default) gives the
    twig's sway carrying the leaves' mass, the limit of infinitely stiff leaf joints, below the bare twig's; with
    flexing leaves the first mode is a leaf's flutter, well below it."""
    pts = np.stack((np.zeros(9), np.zeros(9), np.linspace(0, 1, 9)), 1)
    twig, bmap = tree_from_branches([(pts, np.full(9, 0.005))], youngs_modulus=E, density=RHO)
    leaves = dict(stem=[[0.005, 0, 0.55], [0, -0.005, 0.95]], axis=[[1.0, 0, 0], [0, -1.0, 0]],
                  normal=[[0, 0, 1.0], [0, 0.3, 1.0]], length=[0.1, 0.1], width=[0.05, 0.05],
                  parent=[[0, 4], [0, 7]])  # fmt: skip
    soft, _ = attach_leaves(twig, bmap, **leaves, petiole_radius=3e-4)
    stiff, _ = attach_leaves(twig, bmap, **leaves, youngs_modulus=1e18, torsion_modulus=1e18)
    bare = branch_modes(twig, bmap.span_segment).frequency_hz[0]
    riding = branch_modes(soft, bmap.span_segment).frequency_hz[0]
    limit = branch_modes(stiff, bmap.span_segment, rigid_leaves=False).frequency_hz[0]
    flutter = branch_modes(soft, bmap.span_segment, rigid_leaves=False).frequency_hz[0]
    assert riding == pytest.approx(limit, rel=1e-6)
    assert riding < bare
    assert flutter < 0.5 * riding
    assert tree_modes(soft, 1, rigid_leaves=True).frequency_hz[0] == pytest.approx(riding, rel=1e-9)
