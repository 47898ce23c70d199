"""Unusual inputs that need a window (Blender 3.4 under Xvfb, the legacy zip in an isolated profile; the table is
docs/scene_inputs.md): a second Bake, Simulate or Free Bake while a modal Bake runs is refused by name; a long Bake
cancelled late writes nothing; playback is stopped while Simulate drives the timeline; a second Simulate is
refused; Undo while simulating, then Esc, gives the rest pose back; Undo after a Bake removes it; Blender quits
(a leftover timer would hang it: the timeout fails the test)."""

import shutil

import pytest
from test_blender_bad_input import legacy_zip  # noqa: F401  (module fixture: builds the zip)

from blender_env import ROOT, run_blender

SCRIPT = ROOT / "tests" / "blender_scripts" / "inputs_gui.py"
RUNNING = "ERROR: 'treeArm' is already running a {}: wait for it to finish or press Esc to stop it first"

pytestmark = pytest.mark.skipif(
    shutil.which("blender") is None or shutil.which("xvfb-run") is None,
    reason="needs Debian's blender and xvfb-run (apt-get install blender xvfb xauth)",
)


@pytest.fixture(scope="module")
def result(legacy_zip, tmp_path_factory):  # noqa: F811
    args = ["xvfb-run", "-a", "-s", "-screen 0 1280x800x24", "blender", "--factory-startup"]
    args += ["--enable-event-simulate", "--python", str(SCRIPT), "--", legacy_zip]
    out = run_blender(args, tmp_path_factory.mktemp("gui-profile"), "INPUTS_GUI_RESULT", timeout=600, exit_zero=True)
    assert "error" not in out, out["error"]
    return out


def test_nothing_else_runs_on_a_tree_while_it_bakes(result):
    assert result["bake1"] == ["RUNNING_MODAL"]
    for what in ("bake2_while_running", "simulate_while_baking", "free_while_baking"):
        assert result[what] == RUNNING.format("Bake"), what
    assert result["bake1_finished"] and result["bake_actions"] == ["treeArm_StiffRods"]
    assert result["free"] == ["FINISHED"]


def test_a_long_bake_cancelled_late_writes_nothing(result):
    assert result["long_bake"] == ["RUNNING_MODAL"]
    assert result["long_bake_wrote_nothing"] and result["frame_after_cancel"] == 1 and result["modes_after_cancel"]
    assert result["bake_after_cancel"] == ["FINISHED"] and result["free_after_cancel"] == ["FINISHED"]


def test_simulate_stops_playback_and_runs_once(result):
    assert result["playing_before_simulate"] and result["simulate"] == ["RUNNING_MODAL"]
    assert not result["playing_after_simulate"] and not result["playing_during_simulate"]
    assert result["simulate_twice"] == RUNNING.format("live simulation")
    assert result["frames_advanced"] >= 1


def test_undo_while_simulating_then_esc_gives_the_rest_back(result):
    assert result["frame_after_undo_esc"] == 1 and result["pose_error_after_undo_esc"] == 0.0
    assert result["modes_after_undo_esc"] and result["still_after_esc"]
    assert result["simulate_again"] == ["RUNNING_MODAL"]


def test_undo_after_a_bake_removes_it(result):
    assert result["bake_for_undo"] == ["RUNNING_MODAL"] and result["baked_before_undo"]
    assert not result["baked_after_undo"] and result["modes_after_undo"] and result["bake_actions_after_undo"] == []
