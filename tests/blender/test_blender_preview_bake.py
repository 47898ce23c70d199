"""Bake from Preview writes exactly what the live preview showed (Blender 3.4 under Xvfb, the legacy zip installed
in an isolated profile; tests/blender_scripts/preview_bake.py, then preview_bake_replay.py).

The real Simulate modal runs Sapling's small pine in a Wind field for at least 48 frames and is stopped by Esc;
Bake from Preview keys the recording and the file is saved. Plain Blender (another profile, no add-on) opens it
and reads every bone's world tail at every keyed frame. They must equal, within 1e-5 m per bone tail, a plain
solver loop with the preview's settings (one ``Simulator.step`` per frame, Live Iterations, Live Matrix Reuse),
its bone tails found by forward kinematics from the segments' orientations in the script. Before any Simulate,
Bake from Preview is refused naming the tree and changes nothing; after the bake a second one is refused."""

import shutil

import numpy as np
import pytest
from test_blender_bad_input import legacy_zip  # noqa: F401  (module fixture: builds the zip)

from blender_env import ROOT, run_blender

SCRIPTS = ROOT / "tests" / "blender_scripts"
TOLERANCE_M = 1e-5

pytestmark = pytest.mark.skipif(
    shutil.which("blender") is None or shutil.which("xvfb-run") is None,
    reason="needs Debian's blender and xvfb-run (apt-get install blender xvfb xauth)",
)


@pytest.fixture(scope="module")
def result(legacy_zip, tmp_path_factory):  # noqa: F811
    out_dir = tmp_path_factory.mktemp("preview-bake")
    gui = run_blender(
        [
            "xvfb-run",
            "-a",
            "-s",
            "-screen 0 640x480x24",
            "blender",
            "--factory-startup",
            "--enable-event-simulate",
            "--python",
            str(SCRIPTS / "preview_bake.py"),
            "--",
            legacy_zip,
            str(out_dir),
        ],
        tmp_path_factory.mktemp("preview-profile"),
        "PREVIEW_BAKE_RESULT",
        timeout=600,
        exit_zero=True,
    )
    assert "error" not in gui, gui["error"]
    replay = run_blender(
        [
            "blender",
            "-b",
            "--factory-startup",
            str(out_dir / "baked.blend"),
            "--python",
            str(SCRIPTS / "preview_bake_replay.py"),
            "--",
            str(out_dir / "replayed.npz"),
        ],
        tmp_path_factory.mktemp("plain-profile"),  # nothing installed: plain Blender
        "PREVIEW_REPLAY_RESULT",
        timeout=300,
    )
    return gui, replay, np.load(out_dir / "oracle.npz"), np.load(out_dir / "replayed.npz")


def test_without_a_recording_bake_from_preview_is_refused_by_name(result):
    gui = result[0]
    outcome, message = gui["refused_without_recording"]
    assert outcome == ["raised"] and f"'{gui['tree']}' has no recorded preview" in message
    assert gui["refused_changed_nothing"]


def test_the_baked_preview_replays_as_the_plain_solver_loop(result):
    gui, replay, oracle, replayed = result
    assert gui["simulate_invoke"] == ["RUNNING_MODAL"] and gui["live_run"] == [1, 1, 2]
    assert gui["bake_from_preview"][0] == ["FINISHED"], gui["bake_from_preview"]
    assert not replay["addon_loaded"]
    first, last = replay["frames"]
    assert gui["frame_after_esc"] == 1  # Esc gives the start frame back
    assert first == 1 and 1 + 48 <= last <= gui["frame_before_esc"] + 1  # every frame shown, from the start
    assert list(replayed["names"]) == list(oracle["names"])
    tails, expected = replayed["tails"], oracle["tails"][: last - first + 1]
    assert tails.shape == expected.shape and tails.shape[1] == gui["bones"]
    error = np.linalg.norm(tails - expected, axis=2)
    motion = np.linalg.norm(expected - expected[0], axis=2).max()
    print(
        gui["seconds"],
        gui["take_ms"],
        gui["curve"],
        gui["ms_per_step"],
        f"preview bake: {tails.shape[0]} frames × {tails.shape[1]} bones, max tail error {error.max():.2e} m, "
        f"largest tail motion {motion:.3f} m",
    )
    assert motion > 0.01  # the wind moves the tree: the comparison means something
    assert error.max() < TOLERANCE_M


def test_a_second_bake_from_preview_does_not_overwrite(result):
    outcome, message = result[0]["second_refused"]
    assert outcome == ["raised"] and "already has a Stiff Rods bake" in message


def test_preview_quality_bake_steps_as_bake_and_the_panel_says_so(result):
    gui = result[0]
    substeps, iterations = gui["bake_settings"]
    assert gui["bake_quality_run"] == [substeps, iterations, 0]  # Bake's RunSpec: every iteration factorised
    steps = f"{substeps} substeps × {iterations} iterations per frame"
    assert gui["panel_bake_quality"] == [f"Preview: {steps}; Bake: {steps} — same"]
    fast = "Preview: 1 step × 1 iteration per frame, matrix reused 2 frames"
    assert gui["panel_fast_quality"] == [f"{fast}; Bake: {steps} — differs"]


def test_the_recording_is_capped_and_shown(result):
    gui = result[0]
    kept, full, nbytes, limit = gui["capped"]
    assert (kept, full) == (3, True) and nbytes == limit  # the 4th frame would pass the cap: not recorded
    last = result[1]["frames"][1]
    (line,) = gui["panel_after_simulate"]
    assert line.startswith(f"Preview recorded: frames 1–{last} ({last}, ")


def test_a_curve_bakes_from_preview_the_points_each_tick_showed(result):
    done, error, sag = result[0]["curve"]
    assert done[0] == ["FINISHED"], done
    assert sag > 1e-3 and error < 1e-6  # float32 control points, keyed as shown
