"""The rod models of the seeds side by side: rest, convergence to the cantilever, PaOBCR's sign trick,
PBER's Darboux gradient and ghost gravity, the integrators' order and symplecticity."""

import numpy as np
import pytest

from solver.build.curve_measures import writhe
from solver.core import quaternion as quat
from solver.models.integrators import INTEGRATORS, get_integrator, step_map_jacobian_det
from solver.models.paobcr import PaOBCRRod
from solver.models.pber import PBERRod, darboux, darboux_with_gradient, material_frame
from solver.models.rod_models import ROD_MODELS, make_rod


def _line(k, length=1.0):
    pts = np.zeros((k, 3))
    pts[:, 0] = np.linspace(0.0, length, k)
    return pts


def _helix(k, turns=1.0, radius=0.1, pitch=0.05):
    t = np.linspace(0.0, 2 * np.pi * turns, k)
    return np.stack((radius * np.cos(t), radius * np.sin(t), pitch * t / (2 * np.pi)), axis=1)


@pytest.mark.parametrize("kind", sorted(ROD_MODELS))
def test_rod_at_rest_stays_at_rest(kind):
    """A curved, twisted rod in its rest shape without gravity does not move and has ~0 residual."""
    pts = _helix(15)
    rod = make_rod(kind, pts, 0.01, 1e8, twist_rate=5.0, gravity=(0, 0, 0), iterations=3)
    dt = 1e-3 if kind != "dlo" else 1e-5
    for _ in range(5):
        rod.step(dt)
    assert np.abs(rod.centerline() - pts).max() < 1e-12
    assert rod.residual() < 1e-6


def test_models_converge_to_the_cantilever_as_iterations_rise():
    """Self-weight cantilever (L = 1 m, r = 2 cm, E = 600 MPa): the Gauss–Seidel models' error to
    Euler–Bernoulli w L⁴ / 8EI falls with the iteration count; the direct solver is there at once."""
    length, r, e = 1.0, 0.02, 6e8
    w = 1000.0 * 9.81 * np.pi * r * r
    analytic = w * length**4 / (8.0 * e * np.pi * r**4 / 4.0)
    pts = _line(8, length * 7 / 6) - (length / 6, 0, 0)  # the clamped first edge lies over [−l, 0]

    def error(kind, iterations, **kw):
        rod = make_rod(kind, pts, r, e, iterations=iterations, damping=20.0, **kw)
        for _ in range(80):
            rod.step(0.01)
        return abs(-rod.centerline()[-1, 2] - analytic) / analytic

    assert error("stiff_kkt", 2) < 0.1
    for kind, kw in (
        ("stiff_gs", {}),
        ("paobcr", {"ordering": "colored"}),
        ("paobcr", {"ordering": "bilateral"}),
        ("pber", {"ordering": "colored"}),
    ):
        errs = [error(kind, it, **kw) for it in (1, 3, 9)]
        assert errs[0] > errs[1] > errs[2], (kind, kw, errs)
        assert errs[2] < 0.5 * errs[0], (kind, kw, errs)


def test_paobcr_sign_selection_picks_the_nearer_rest_pose():
    """q and −q are the same frame: flipping every other quaternion of a curved rod at rest must leave
    the bend–twist constraint satisfied (Eq. 33), and a projection must not move anything."""
    rod = PaOBCRRod(_helix(12), 0.01, 1e8, gravity=(0, 0, 0), pinned=())
    bend = rod.kinds["bend"]
    rod.q[1::2] *= -1.0
    assert np.abs(bend.value(rod)).max() < 1e-12
    without_sign = (2.0 / bend.l)[:, None] * (quat.multiply(quat.conjugate(rod.q[:-1]), rod.q[1:])[:, 1:] - bend.omega0)
    assert np.abs(without_sign).max() > 1.0  # the far rest pose −Ω⁰ would be 'violated'
    before = rod.q.copy()
    rod.begin_step(1e-3)
    rod.q[:] = before
    bend.project(rod, np.arange(bend.l.size), 1e6)
    assert np.abs(rod.q - before).max() < 1e-12
    # a small bend of a flipped pair is undone by a small correction, not a turn towards −Ω⁰
    rod.q[5] = quat.integrate_body(before[5], np.array([0.02, 0.0, 0.0]))
    c_before = np.abs(bend.value(rod)[4]).max()
    bend.alpha[:] = 0.0
    bend.project(rod, np.array([4]), 1e6)
    assert np.abs(bend.value(rod)[4]).max() < 0.1 * c_before
    assert np.linalg.norm(rod.q[4] - before[4]) < 0.02


def test_pber_darboux_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    p = rng.normal(size=(4, 5, 3)) * 0.3
    p[:, 1] += (1, 0, 0)
    p[:, 2] += (2, 0, 0)
    p[:, 3] += (0.5, 1, 0)
    p[:, 4] += (1.5, 1, 0)
    ln = np.full(4, 1.0)

    def omega(q):
        return darboux(material_frame(q[:, 0], q[:, 1], q[:, 3]), material_frame(q[:, 1], q[:, 2], q[:, 4]), ln)

    om, grad = darboux_with_gradient(p[:, 0], p[:, 1], p[:, 2], p[:, 3], p[:, 4], ln)
    assert np.allclose(om, omega(p), atol=1e-14)
    h = 1e-6
    for s in range(5):
        for c in range(3):
            dp = np.zeros_like(p)
            dp[:, s, c] = h
            fd = (omega(p + dp) - omega(p - dp)) / (2 * h)
            assert np.allclose(fd, grad[:, s, :, c], atol=1e-6 * (1 + np.abs(grad).max()))


def test_pber_darboux_is_tan_half_angle():
    """Ω = (2/l) tan(θ/2) n for frames turned by θ about n (the modified Darboux vector)."""
    theta = 1.2
    pa, pb, ga = np.zeros((1, 3)), np.array([[0, 0, 1.0]]), np.array([[1.0, 0, 0.5]])
    c, s = np.cos(theta), np.sin(theta)
    pc = pb + np.array([[0, 0, 1.0]])
    gb = pb + np.array([[c, s, 0.5]])  # next frame turned by θ about the common axis (twist)
    om = darboux(material_frame(pa, pb, ga), material_frame(pb, pc, gb), np.array([1.0]))
    assert np.allclose(om[0], [0, 0, 2.0 * np.tan(theta / 2)], atol=1e-12)


def test_pber_selective_gravity_removes_twist_bias_and_keeps_free_fall():
    """Hanging rod: gravity on ghosts twists the frames, selective gravity does not; free fall:
    ghosts without gravity lag behind (twist), selective ones fall with their edges."""
    pts = np.zeros((9, 3))  # along y: the ghosts (d1 = x) stick out sideways
    pts[:, 1] = np.linspace(0, 0.4, 9)
    pts[:, 2] = -np.linspace(0, 0.4, 9) * 0.3

    def twist(mode, pinned):
        rod = PBERRod(
            pts,
            0.01,
            1e6,
            torsion_modulus=1e5,
            ghost_gravity=mode,
            pinned=pinned,
            iterations=10,
            ordering="colored",
            damping=10.0 if pinned else 0.0,
        )
        for _ in range(300 if pinned else 60):
            rod.step(0.005)
        return np.abs(rod.ghost_twist()).max()

    full, sel = twist("full", ("start",)), twist("selective", ("start",))
    assert sel < 0.2 * full, (sel, full)
    none_fall, sel_fall = twist("none", ()), twist("selective", ())
    assert sel_fall < 0.2 * none_fall, (sel_fall, none_fall)


def _oscillator_error(name, h, t_end=2.0):
    acc = lambda x, v: -x  # noqa: E731  x'' = −x
    step = get_integrator(name).step
    x, v, mem = np.array([1.0]), np.array([0.0]), {}
    for _ in range(int(round(t_end / h))):
        x, v = step(x, v, h, acc, mem)
    return abs(x[0] - np.cos(t_end)) + abs(v[0] + np.sin(t_end))


def test_forest_ruth_is_third_or_fourth_order_and_euler_first():
    ratio_fr = _oscillator_error("forest_ruth", 0.1) / _oscillator_error("forest_ruth", 0.05)
    assert ratio_fr > 2**3 * 0.9, ratio_fr  # ≥ 3rd order (4th: ≈ 16)
    ratio_rk4 = _oscillator_error("rk4", 0.1) / _oscillator_error("rk4", 0.05)
    assert ratio_rk4 > 14.0
    ratio_se = _oscillator_error("symplectic_euler", 0.01) / _oscillator_error("symplectic_euler", 0.005)
    assert 1.7 < ratio_se < 2.3


def test_symplectic_integrators_preserve_phase_space_area():
    """det ∂(x₁, v₁)/∂(x, v) on the pendulum θ'' = −sin θ: 1 for the symplectic ones, not for explicit Euler."""
    acc = lambda x, v: -np.sin(x)  # noqa: E731
    for name in ("symplectic_euler", "symplectic_midpoint", "verlet", "forest_ruth"):
        assert abs(step_map_jacobian_det(name, acc, 1.0, 0.3, 0.5) - 1.0) < 1e-8, name
    assert abs(step_map_jacobian_det("explicit_euler", acc, 1.0, 0.3, 0.5) - 1.0) > 1e-2
    assert set(INTEGRATORS) == {
        "explicit_euler",
        "symplectic_euler",
        "midpoint",
        "symplectic_midpoint",
        "half_step",
        "modified_half_step",
        "verlet",
        "forest_ruth",
        "rk4",
    }


def test_writhe_of_planar_curve_is_zero_and_of_a_loop_is_near_one():
    t = np.linspace(0, 2 * np.pi, 100)
    assert abs(writhe(np.stack((np.cos(t), np.sin(t), 0 * t), 1))) < 1e-12
    # a straight rod with one tight helical loop (pitch ≪ radius): |Wr| close to 1 − pitch term
    s = np.linspace(0, 2 * np.pi, 200)
    loop = np.stack((np.sin(s), 1 - np.cos(s), 0.05 * s), 1)
    line_in = np.stack((np.linspace(-5, 0, 20)[:-1], np.zeros(19), np.zeros(19)), 1)
    line_out = np.stack((np.linspace(0, 5, 20)[1:], np.zeros(19), np.full(19, 0.1 * np.pi)), 1)
    assert 0.8 < abs(writhe(np.concatenate((line_in, loop, line_out)))) < 1.05


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(points=np.zeros((2, 3))), "points"),
        (dict(radius=-1.0), "radius"),
        (dict(youngs_modulus=0.0), "youngs_modulus"),
        (dict(pinned=("middle",)), "pinned"),
        (dict(iterations=0), "iterations"),
        (dict(ordering="random"), "ordering"),
    ],
)
def test_bad_input_names_the_item(bad, message):
    kw = dict(points=_line(5), radius=0.01, youngs_modulus=1e8)
    kw.update(bad)
    with pytest.raises(ValueError, match=message):
        PaOBCRRod(**kw)
    with pytest.raises(ValueError, match="dt"):
        PaOBCRRod(_line(5), 0.01, 1e8).step(0.0)
    with pytest.raises(ValueError, match="integrator"):
        make_rod("dlo", _line(5), 0.01, 1e8, integrator="leapfrog")
