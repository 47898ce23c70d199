"""The forest bake from the N-panel in a window (Blender 3.4 under Xvfb, the legacy zip in an isolated profile):
several trees bake in worker processes while the operator's timer shows the progress (trees done / total,
frames per second, ETA), the keys equal those of the same trees baked one after the other in Blender itself,
and Esc in the middle leaves the scene as it was, no cache folder and no worker process behind; Simulate moves
every selected tree and Esc gives each its rest pose (tests/blender_scripts/forest_panel_gui.py)."""

import shutil

import pytest
from test_blender_bad_input import legacy_zip  # noqa: F401  (module fixture: builds the zip)
from test_blender_forest_panel import TREES, make_forest

from blender_env import ROOT, run_blender

SCRIPT = ROOT / "tests" / "blender_scripts" / "forest_panel_gui.py"
SAME = 1e-9  # key values

pytestmark = pytest.mark.skipif(
    shutil.which("blender") is None or shutil.which("xvfb-run") is None,
    reason="needs Debian's blender and xvfb-run (apt-get install blender xvfb xauth)",
)


@pytest.fixture(scope="module")
def result(legacy_zip, tmp_path_factory):  # noqa: F811
    work = tmp_path_factory.mktemp("forest-gui")
    blend = make_forest(work)
    args = ["xvfb-run", "-a", "-s", "-screen 0 1280x800x24", "blender", "--factory-startup"]
    args += ["--enable-event-simulate", "--python", str(SCRIPT), "--", legacy_zip, str(blend), str(work / "gui")]
    out = run_blender(args, work / "gui-profile", "FOREST_PANEL_GUI", timeout=600, exit_zero=True)
    assert "error" not in out, out["error"]
    return out


def test_the_forest_bakes_in_the_background_with_progress(result):
    assert result["bake"] == ["RUNNING_MODAL"]
    assert result["baked_at_once"] == [] and len(result["cache_while_baking"]) == 1  # nothing written yet
    progress = [line for line in result["status"] if "frames/s" in line]
    assert progress and any("ETA" in line for line in progress), result["status"]
    done = [int(line.split(": ")[1].split("/")[0]) for line in progress]
    assert done == sorted(done) and all(line.split("/")[1].startswith("3 trees") for line in progress)
    assert result["baked"] == TREES and result["cache_after"] == []


def test_the_background_bake_equals_the_serial_bake(result):
    assert result["free"] == ["FINISHED"] and result["serial"] == ["FINISHED"]
    assert sorted(result["diff"]) == TREES and all(isinstance(v, float) for v in result["diff"].values())
    assert max(result["diff"].values()) <= SAME


def test_esc_in_the_middle_leaves_nothing_behind(result):
    assert result["long_bake"] == ["RUNNING_MODAL"]
    assert "frames/s" in result["status_at_esc"] and result["worker_pids"], result
    assert result["diff_after_esc"] is None
    assert result["cache_after_esc"] == [] and result["workers_alive_after_esc"] == []
    assert result["status_after_esc"] is None
    assert result["bake_after_esc"] == ["FINISHED"]


def test_simulate_moves_every_selected_tree_and_esc_gives_each_its_rest_pose(result):
    assert result["simulate"] == ["RUNNING_MODAL"] and result["simulate_frames"] >= 1
    assert sorted(result["simulate_moved"]) == TREES and min(result["simulate_moved"].values()) > 0, result
    assert all(result["simulate_rest_after_esc"].values()) and result["frame_after_simulate"] == 1
