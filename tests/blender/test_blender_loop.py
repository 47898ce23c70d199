"""Seamless loop bakes of a real Sapling tree, read back from Blender's own evaluated pose.

tests/blender_scripts/loop_bake.py generates Sapling's small pine without leaves in Debian's Blender 3.4 (legacy
zip, isolated profile), blows a gusty Wind field (10 m/s, Noise 3) and bakes 120-frame loops at 24 fps with the
automatic warm-up (until a loop repeats itself), then reads every bone's tail from the evaluated pose at every
keyed frame. The measures:

* seam in position: the rms over the bones of the tails' change from the loop's last frame (start + N, one period
  after the start) to its first, over the median frame-to-frame change of the loop (target ≤ 1);
* seam in velocity: the same for the tails' velocity (forward differences) one period apart, from a bake in the
  same periodic wind with one frame more, over the median frame-to-frame change of the velocity (target ≤ 1);
* with the wind's periodicity switched off the position seam fails (> 1);
* the rms sway (the tails' distance from their rest position) over the loop within 15 % of a bake in the free
  gusty wind over four loop lengths.
"""

import shutil
from pathlib import Path

import numpy as np
import pytest

from blender_env import build_legacy_zip, run_blender

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "blender_scripts" / "loop_bake.py"
FRAMES = 120

pytestmark = pytest.mark.skipif(shutil.which("blender") is None, reason="Debian's blender is not installed")


def _rms(x):
    return np.sqrt(np.mean(np.sum(x * x, axis=-1), axis=-1))


def position_seam(x):
    """rms change from frame N to frame 0 over the median rms frame-to-frame change (x: (N + 1, bones, 3))."""
    return _rms(x[-1] - x[0]) / np.median(_rms(np.diff(x, axis=0)))


def velocity_seam(x):
    """The same for the forward-difference velocity, frame N against frame 0 (x: (N + 2, bones, 3))."""
    v = np.diff(x, axis=0)
    return _rms(v[-1] - v[0]) / np.median(_rms(np.diff(v[:-1], axis=0)))


@pytest.fixture(scope="module")
def baked(tmp_path_factory):
    out = tmp_path_factory.mktemp("loop")
    zip_path = build_legacy_zip(tmp_path_factory.mktemp("dist"))
    args = ["blender", "-b", "--factory-startup", "--python", str(SCRIPT), "--", zip_path, str(out), str(FRAMES)]
    result = run_blender(args, out / "profile", "LOOP_RESULT", timeout=1500)
    cases = {p.stem: np.load(p) for p in out.glob("*.npy")}
    return result, cases


def test_the_loop_repeats_in_position_and_velocity(baked):
    result, x = baked
    assert result["preroll"] == 6 * FRAMES  # Damping 0.5/s: e^(-0.25 t) under 0.1 % after 6 loops of 5 s
    loop, periodic = x["loop"], x["periodic"]
    assert loop.shape == (FRAMES + 1, result["bones"], 3)
    step = np.median(_rms(np.diff(loop, axis=0)))
    assert step > 1e-5  # the tree moves (the seam check is not vacuous)
    # the loop's keys are the periodic wind's settled physics (warmed up until a loop repeats, the other bake for
    # the longest warm-up), key for key
    assert np.max(_rms(periodic[: FRAMES + 1] - loop)) <= 0.2 * step
    assert position_seam(loop) <= 1.0
    assert velocity_seam(periodic) <= 1.0


def test_without_the_periodic_wind_the_seam_check_fails(baked):
    _, x = baked
    assert position_seam(x["free_wind"]) > 1.0


def test_blend_seam_closes_the_loop_exactly_by_less_than_a_frames_motion(baked):
    _, x = baked
    blended, loop = x["blended"], x["loop"]
    np.testing.assert_allclose(blended[-1], blended[0], atol=1e-6)
    step = np.median(_rms(np.diff(loop, axis=0)))
    assert np.max(_rms(blended - loop)) <= step


def test_the_loop_sways_as_much_as_the_free_wind(baked):
    _, x = baked
    rest = x["rest"][0]
    loop_sway = np.sqrt(np.mean(np.sum((x["loop"] - rest) ** 2, axis=-1)))
    free_sway = np.sqrt(np.mean(np.sum((x["no_loop"] - rest) ** 2, axis=-1)))
    assert loop_sway == pytest.approx(free_sway, rel=0.15)
