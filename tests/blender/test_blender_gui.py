"""The modal operators with a real window (Blender 3.4 under Xvfb, the legacy zip installed in an isolated
profile): live Simulate advances the timeline and moves bones until Esc, which restores the start frame and
the rest pose and leaves no timer behind; a modal Bake finishes; a modal Bake cancelled by Esc writes
nothing; Blender then quits (a leftover timer or modal handler would hang it: the timeout fails the test)."""

import shutil

import pytest
from test_blender_bad_input import legacy_zip  # noqa: F401  (module fixture: builds the zip)

from blender_env import ROOT, run_blender

SCRIPT = ROOT / "tests" / "blender_scripts" / "gui_modal.py"

pytestmark = pytest.mark.skipif(
    shutil.which("blender") is None or shutil.which("xvfb-run") is None,
    reason="needs Debian's blender and xvfb-run (apt-get install blender xvfb xauth)",
)


@pytest.fixture(scope="module")
def result(legacy_zip, tmp_path_factory):  # noqa: F811
    out = run_blender(
        [
            "xvfb-run",
            "-a",
            "-s",
            "-screen 0 1280x800x24",
            "blender",
            "--factory-startup",
            "--enable-event-simulate",
            "--python",
            str(SCRIPT),
            "--",
            legacy_zip,
        ],
        tmp_path_factory.mktemp("gui-profile"),
        "GUI_RESULT",
        timeout=600,
        exit_zero=True,
    )
    assert "error" not in out, out["error"]
    return out


def test_live_simulation_runs_until_esc_and_restores(result):
    assert result["simulate_invoke"] == ["RUNNING_MODAL"]
    assert result["frame_while_running"] > 1 and result["pose_change_while_running"] > 1e-5
    assert result["modes_while_running"] == ["QUATERNION"]
    assert result["frame_after_esc"] == 1 and result["pose_error_after_esc"] == 0.0 and result["modes_restored"]
    assert result["frame_still_after_esc"]  # the timer is gone: nothing steps any more


def test_modal_bake_finishes_and_a_cancelled_one_writes_nothing(result):
    assert result["bake_invoke"] == ["RUNNING_MODAL"] and result["bake_running_after_invoke"]
    assert result["bake_finished"] and result["bake_fcurves"] > 0 and result["frame_after_bake"] == 1
    assert result["free"] == ["FINISHED"]
    assert result["bake2_invoke"] == ["RUNNING_MODAL"]
    assert result["cancelled_bake_wrote_nothing"] and result["frame_after_cancel"] == 1
