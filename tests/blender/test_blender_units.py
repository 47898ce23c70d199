"""The scene's unit scale is honoured (issue 21): 1 Blender unit = Unit Scale metres for every length read from
Blender, so a rod drawn 15 units long at Unit Scale 0.01 is the same 15 cm rod as one drawn 0.15 units long at
Unit Scale 1. Real Blender: Debian's Blender 3.4 with the legacy zip and the bpy 5 module with the extension zip
(tests/blender_scripts/carrier.py, one process each); measured from the baked curve played back without the add-on.

The rod: 15 cm, r = 1 mm, E = 25 MPa (a soft stalk), ρ = 1000 kg/m³, 1 cm segments, on a cart that speeds up to
0.1 m/s and stops within four frames (no gravity, no damping). Its first bending frequency
f₁ = (β₁L)²/(2π) √(EI/(ρA L⁴)) (β₁L = 1.8751) is 1.97 Hz; at 15 m it would be 10⁴ times lower.
"""

import numpy as np
import pytest
from scipy.optimize import curve_fit
from test_blender_carrier import FPS, bench, part, run_carrier_script

STALK = dict(length=0.15, radius=0.001, segment=0.01, youngs_gpa=0.025, density=1000.0, substeps=32, iterations=10)
SPEED, STOP_FRAMES = 0.1, 4


@pytest.fixture(scope="module", params=["b34", "b5"])
def result(request, tmp_path_factory):
    cart = bench.carrier_positions(FPS, speed=SPEED, stop_frames=STOP_FRAMES).tolist()
    rods = {
        "metres": dict(STALK, unit=1.0, cart_x=cart),  # drawn 0.15 units long
        "centimetres": dict(STALK, unit=0.01, cart_x=cart),  # drawn 15 units long
    }
    return run_carrier_script(tmp_path_factory, {"rods": rods}, "units", request.param)


def tip(result, name):
    """Frame times [s] and the tip's deflection relative to the cart along x [m]."""
    r = part(result, name)
    assert r["bake"] == ["FINISHED"]
    w = np.array(r["tip_relative_m"])[:, 0]
    return np.arange(w.size) / FPS, w - w[0]


def test_the_same_rod_at_two_unit_scales_moves_the_same_in_metres(result):
    _, w_m = tip(result, "metres")
    _, w_cm = tip(result, "centimetres")
    assert part(result, "metres")["segments"] == part(result, "centimetres")["segments"] == 16  # 15 and the anchor
    assert np.abs(w_m).max() > 5e-3  # it sways
    assert np.abs(w_cm - w_m).max() < 1e-6 * 0.15 / 1e-3  # float32 coordinates: a micrometre per 15 cm


@pytest.mark.parametrize("name", ["metres", "centimetres"])
def test_first_mode_frequency_is_the_15_cm_beams(result, name):
    t, w = tip(result, name)
    after = t > bench.STOP + STOP_FRAMES / FPS
    f1 = bench.first_frequency(STALK["length"], STALK["radius"], STALK["youngs_gpa"] * 1e9, STALK["density"])

    def swing(tt, a, f, phase, decay):
        return a * np.exp(-decay * tt) * np.sin(2.0 * np.pi * f * tt + phase)

    ta, wa = t[after] - t[after][0], w[after]
    (a, f, _, _), _ = curve_fit(swing, ta, wa, p0=(np.abs(wa).max(), f1, 0.0, 0.0))
    assert abs(f / f1 - 1.0) < 0.03, (f, f1)


def test_sway_matches_the_analytic_base_excitation_within_10_percent(result):
    t, w = tip(result, "centimetres")
    cart = np.array(part(result, "centimetres")["cart_m"])[:, 0]
    ref = bench.analytic_tip(
        t, cart, FPS, STALK["length"], STALK["radius"], STALK["youngs_gpa"] * 1e9, STALK["density"]
    )
    after = t > bench.STOP
    amp, amp_ref = np.abs(w[after]).max(), np.abs(ref[after]).max()
    assert abs(amp / amp_ref - 1.0) < 0.10, (amp, amp_ref)
