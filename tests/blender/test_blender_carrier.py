"""A tree on an animated carrier feels its motion (issue 21), in real Blender: Debian's Blender 3.4 with the legacy
zip and the bpy 5 module with the Blender 4.2+ extension zip, each installed in an isolated profile; every number
is measured from the baked result played back without the add-on (tests/blender_scripts/carrier.py).

* A 2 m wooden pole (r = 1 cm) on a cart that speeds up to 0.5 m/s and stops within two frames: its tip's deflection
  relative to the cart against the Euler–Bernoulli clamped beam's modal response to the same base motion
  (benchmarks/carrier.py: analytic_tip, the Duhamel sum over 8 modes), written here from E, ρ, r, L only.
  In both Blenders.
* A Sapling quaking aspen on an Empty that moves 3 m and turns 60°: the crown lags when the carrier starts,
  swings forward when it stops and settles; the replay matches the simulation at the last frame (bones and
  leaves); on a carrier that stands still the keys are those of the tree alone. Blender 3.4 only: the bpy 5
  module ships no Sapling.
"""

import functools
import importlib.util
import json
import shutil
import sys

import numpy as np
import pytest

from blender_env import ROOT, build_zips, extension_zip, run_blender

SCRIPT = ROOT / "tests" / "blender_scripts" / "carrier.py"


def _benchmark():
    spec = importlib.util.spec_from_file_location("carrier_benchmark", ROOT / "benchmarks" / "carrier.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _benchmark()

FPS = 24
POLE = dict(length=2.0, radius=0.01, segment=0.1, youngs_gpa=12.5, density=1000.0, substeps=32, iterations=10)
ASPEN = dict(frames=[1, 5, 21, 48], move_m=3.0, turn_deg=60.0)


@functools.cache
def zips(session_tmp):
    """The legacy and the linux-x64 extension zip, built once per test session (``session_tmp``: its folder; kept
    for test_blender_units.py after this file: tests/conftest.py's SHARED)."""
    out = session_tmp / "shared-carrier-dist"
    out.mkdir()
    return build_zips(out, "--platforms", "linux-x64", timeout=900)


def run_carrier_script(tmp_path_factory, params, name, blender):
    """Run tests/blender_scripts/carrier.py with ``params`` in Debian's Blender 3.4 with the legacy zip
    (``blender`` "b34") or in the bpy 5 module with the extension zip ("b5"); its JSON result."""
    legacy = blender == "b34"
    if legacy and shutil.which("blender") is None:
        pytest.skip("Debian's blender is not installed")
    if not legacy and importlib.util.find_spec("bpy") is None:
        pytest.skip("the bpy module is not installed (python3 -m pip install -r requirements-dev.txt)")
    built = zips(tmp_path_factory.getbasetemp())
    # the legacy zip, or the extension zip for this Python's Blender (bpy 5.0.1, Python 3.11: 4.2-5.0)
    zip_path = next(str(z) for z in built if z.name.endswith("-legacy.zip")) if legacy else str(extension_zip(built))
    work = tmp_path_factory.mktemp(f"{name}-{blender}")
    path = work / "params.json"
    path.write_text(json.dumps(params))
    if legacy:
        args = ["blender", "-b", "--factory-startup", "--python", str(SCRIPT), "--", zip_path, str(path)]
    else:
        args = [sys.executable, str(SCRIPT), "bpy5", zip_path, str(path)]
    out = run_blender(args, work / "profile", "CARRIER_RESULT", timeout=1200)
    version = out["blender"][:2]
    assert (version == [3, 4]) if legacy else (version >= [4, 2]), version
    return out


def pole_params():
    return {"pole": dict(POLE, unit=1.0, cart_x=bench.carrier_positions(FPS).tolist())}


@pytest.fixture(scope="module")
def b34(tmp_path_factory):
    return run_carrier_script(tmp_path_factory, {"rods": pole_params(), "aspen": ASPEN}, "carrier", "b34")


@pytest.fixture(scope="module")
def b5(tmp_path_factory):
    # the pole only: Sapling is no longer bundled since Blender 4.2 (an online extension), and the bpy 5.0.1
    # module's addons_core has no add_curve_sapling
    return run_carrier_script(tmp_path_factory, {"rods": pole_params()}, "carrier", "b5")


@pytest.fixture(scope="module", params=["b34", "b5"])
def pole(request):
    """The pole's result in Debian's Blender 3.4 and in the bpy 5 module."""
    return part(request.getfixturevalue(request.param), "pole")


def part(result, name):
    out = result[name]
    assert "error" not in out, out["error"]
    return out


def pole_response(r, p):
    """(frame times [s], tip deflection relative to the cart along x, simulated and analytic [m])."""
    tip = np.array(r["tip_relative_m"])[:, 0]
    cart = np.array(r["cart_m"])[:, 0]
    t = np.arange(tip.size) / FPS
    ref = bench.analytic_tip(t, cart, FPS, p["length"], p["radius"], p["youngs_gpa"] * 1e9, p["density"])
    return t, tip - tip[0], ref


def test_pole_sway_after_the_stop_matches_the_analytic_base_excitation_within_10_percent(pole):
    assert pole["bake"] == ["FINISHED"]
    assert pole["segments"] == 21  # 20 along the pole and the root's anchor
    t, sim, ref = pole_response(pole, POLE)
    after = t > bench.STOP
    amp_sim, amp_ref = np.max(np.abs(sim[after])), np.max(np.abs(ref[after]))
    assert amp_ref > 0.03  # the stop throws the tip by several centimetres
    assert abs(amp_sim / amp_ref - 1.0) < 0.10, (amp_sim, amp_ref)


def test_pole_swings_forward_when_the_cart_stops(pole):
    t, sim, ref = pole_response(pole, POLE)
    period = 1.0 / bench.first_frequency(POLE["length"], POLE["radius"], POLE["youngs_gpa"] * 1e9, POLE["density"])
    first = (t > bench.STOP) & (t < bench.STOP + 0.5 * period)
    assert sim[first].max() > 0.8 * ref[first].max() > 0.0  # forward: the direction the cart was moving
    # and follows the analytic history over the whole run (the start's small swing included)
    assert np.sqrt(np.mean((sim - ref) ** 2)) < 0.25 * np.max(np.abs(ref))


def test_aspen_crown_lags_at_the_start_swings_forward_at_the_stop_and_settles(b34):
    r = part(b34, "aspen")
    assert r["bake"] == ["FINISHED"]
    start, go, stop, end = r["frames"]
    d = np.array(r["deviation_m"])  # crown offset from a rigidly carried crown, world [m]
    assert r["key_spread"] > 0.05  # the keys move (a rigidly carried tree would keep its rest pose)
    moving = slice(go - start + 1, go - start + 6)  # the first frames after the carrier sets off along +x
    assert d[moving, 0].min() < -0.02, d[moving, 0]  # the crown stays behind
    after = slice(stop - start + 1, stop - start + 12)
    assert d[after, 0].max() > 0.05, d[after, 0]  # and runs on past the stop
    swing = np.linalg.norm(d[after], axis=1).max()
    late = np.linalg.norm(d[-8:], axis=1).max()
    assert late < 0.5 * swing, (late, swing)


def test_aspen_replays_the_simulation_on_the_moved_carrier(b34):
    r = part(b34, "aspen")
    assert r["tails_vs_simulation_m"] < 1e-4
    assert r["leaves_vs_simulation_m"] < 1e-4


def test_aspen_baked_from_a_later_frame_is_read_where_the_carrier_starts(b34):
    # the same keys to rounding: the tree is read (and simulated) in world coordinates moved by the carrier
    assert part(b34, "aspen")["from_a_later_frame_max_key_difference"] <= 1e-9


def test_aspen_on_a_still_carrier_bakes_the_keys_of_the_tree_alone(b34):
    r = part(b34, "aspen")
    assert not r["alone_carried"]  # Sapling's empty windAction: no frame is evaluated for it
    assert r["still_carrier_animated"]  # read at every frame, and found not to move
    assert r["still_vs_alone_max_key_difference"] == 0.0


def test_an_armature_moved_by_its_own_action_is_refused_by_name(b34):
    r = part(b34, "aspen")["own_action"]
    assert r["outcome"] == "raised", r
    assert r["message"].startswith("Armature 'treeArm' is moved by its own action"), r["message"]
    assert "parent the tree to an Empty" in r["message"]
    assert r["diff"] is None, r["diff"]
