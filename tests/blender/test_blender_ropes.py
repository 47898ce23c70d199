"""Ropes and cables set up in the N-panel, simulated in Blender 3.4 (legacy zip, isolated profile): root and pin
joints, physical stretch, a straight rest shape, the integrator and the damping ratio. Every motion is read from
the baked keys (tests/blender_scripts/ropes.py) and checked against closed forms computed here."""

import shutil

import numpy as np
import pytest
from scipy.special import ellipk

from blender_env import ROOT, build_legacy_zip, run_blender

SCRIPT = ROOT / "tests" / "blender_scripts" / "ropes.py"
G = 9.81
FPS = 24
LENGTH, RADIUS = 1.0, 0.01  # the steel rod of ropes.steel_rod [m]

pytestmark = pytest.mark.skipif(shutil.which("blender") is None, reason="Debian's blender is not installed")


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    work = tmp_path_factory.mktemp("ropes")
    legacy = build_legacy_zip(work / "dist")
    args = ["blender", "-b", "--factory-startup", "--python", str(SCRIPT), "--", legacy, str(work / "out")]
    result = run_blender(args, work / "profile", "ROPES_RESULT", timeout=900)
    assert result["blender"][:2] == [3, 4]
    return result


def case(out, name):
    r = out[name]
    assert "error" not in r, r["error"]
    return r


def crossings(x):
    """Times [s] where the tip passes below the pivot (x = 0), linear between frames."""
    x = np.asarray(x)
    t = np.arange(x.size) / FPS
    c = np.flatnonzero(np.sign(x[:-1]) != np.sign(x[1:]))
    return t[c] - x[c] * (t[c + 1] - t[c]) / (x[c + 1] - x[c])


def pendulum_period(theta0):
    """A uniform rod of LENGTH and RADIUS on a frictionless pivot at its end, released at ``theta0`` from the
    vertical: T = 4 sqrt(I / (m g d)) K(sin²(θ0/2)), I = m (L²/3 + r²/4), d = L/2."""
    return 4.0 * np.sqrt((LENGTH**2 / 3 + RADIUS**2 / 4) / (G * LENGTH / 2)) * ellipk(np.sin(theta0 / 2) ** 2)


@pytest.mark.parametrize("name", ["ball_bdf2", "hinge_bdf2"])
def test_a_rod_on_a_ball_or_hinge_root_swings_as_a_physical_pendulum(out, name):
    r = case(out, name)
    t = crossings(r["tip_x"])
    period = pendulum_period(np.pi / 2)
    assert t.size >= 2, t
    assert abs(t[0] / (period / 4) - 1) < 0.02, (t[0], period / 4)  # first pass below the pivot
    assert abs(2 * (t[1] - t[0]) / period - 1) < 0.02, (2 * (t[1] - t[0]), period)  # one half swing
    z = np.asarray(r["tip_z"])
    assert z.min() < 1.0 - 0.99 * LENGTH  # it hangs straight down at the bottom of the swing
    after_one = (np.arange(z.size) / FPS > 0.8 * period) & (np.arange(z.size) / FPS < 1.2 * period)
    assert z[after_one].max() > 1.0 - 0.01  # BDF2 brings the tip back within 1 cm of the pivot's height


def test_euler_loses_the_swing_that_bdf2_keeps(out):
    """The Integrator setting reaches the solver: implicit Euler at Δt = 1/240 s keeps 88.8 % of the amplitude
    per period (tests/solver/core/test_rod_joints.py), so the tip returns ~cos(80°) L below the pivot instead of to
    it."""
    z = np.asarray(case(out, "ball_euler")["tip_z"])
    t = np.arange(z.size) / FPS
    period = pendulum_period(np.pi / 2)
    assert z[(t > 0.8 * period) & (t < 1.2 * period)].max() < 1.0 - 0.1


def test_a_clamped_root_holds_the_rod(out):
    z = np.asarray(case(out, "clamp")["tip_z"])
    # static tip deflection w L⁴ / (8 E I) of steel (209 GPa, 7800 kg/m³): 1.8 mm; released, at most twice that
    w = 7800.0 * np.pi * RADIUS**2 * G
    static = w * LENGTH**4 / (8 * 209e9 * np.pi * RADIUS**4 / 4)
    assert 1.0 - z.min() < 2.1 * static
    assert 1.0 - z.min() > 0.5 * static


def test_pin_joint_ball_lets_the_rod_swing_and_clamp_holds_it(out):
    ball, clamp = case(out, "pin_ball"), case(out, "pin_clamp")
    # held segment [0, 0.1] m: the ball at x = 0.1 m, the rod beyond it 0.9 m long hangs down to z = 0.1 m
    assert ball["tip_z_min"] == pytest.approx(1.0 - 0.9, abs=0.01)
    assert 1.0 - clamp["tip_z_min"] < 0.005
    assert np.allclose(ball["held_x"], 0.0, atol=1e-6) and np.allclose(clamp["held_x"], 0.0, atol=1e-6)


def test_a_rubber_cord_with_physical_stretch_hangs_longer_by_rho_g_l2_over_2e(out):
    r = case(out, "cord_physical")
    expected = r["density"] * G * r["length_m"] ** 2 / (2 * r["youngs"])  # 10.8 mm
    assert r["drop_m"] == pytest.approx(expected, rel=0.02)
    assert case(out, "cord_inextensible")["drop_m"] < 1e-3 * expected


def test_a_rod_drawn_bent_with_a_straight_rest_shape_straightens(out):
    straight, drawn = case(out, "bent_straight"), case(out, "bent_as_drawn")
    # four 0.2 m legs: at rest straight along the clamped first leg (+X), 0.8 m from the clamp
    assert np.allclose(straight["end_last"], [0.8, 0.0, 1.0], atol=1e-3), straight
    angles = np.radians([0.0, 20.0, 40.0, 60.0])
    end = [0.2 * np.cos(angles).sum(), 0.2 * np.sin(angles).sum(), 1.0]
    assert np.allclose(straight["end_first"], end, atol=1e-6)  # it starts as drawn
    assert np.allclose(drawn["end_last"], end, atol=1e-4)  # As Drawn: the drawn shape is at rest


def test_every_new_setting_makes_the_model_out_of_date_and_reaches_the_rebuilt_one(out):
    r = case(out, "stale_settings")
    built = r.pop("built")
    assert {name: v["up_to_date"] for name, v in r.items()} == dict.fromkeys(r, False)
    assert built["root_kind"] == "ball" and built["pin_kinds"] == ["ball", "ball"]
    assert built["physical"] and built["shear_coefficient"] == pytest.approx(0.7)
    assert built["rest_identity"] and built["integrator"] == "bdf2" and built["damping"] > 0


def test_bad_combinations_are_refused_by_name_with_the_scene_unchanged(out):
    r = case(out, "refusals")
    for name, phrases in (
        ("seed_with_ball", ("'Rope'", "Rod Model 'PaOBCR'", "Root Joint 'Ball'")),
        ("seed_with_physical", ("'Rope'", "Rod Model 'DLO'", "Stretch 'Physical'")),
        ("ratio_below_euler", ("'Rope'", "Damping Ratio", "'euler' integrator alone damps 10 Hz")),
    ):
        c = r[name]
        assert c["outcome"] == "ERROR" and not c["traceback"], c
        for p in phrases:
            assert p in c["message"], (p, c["message"])
        assert c["diff"] is None, c["diff"]
