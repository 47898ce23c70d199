"""The one bake pipeline (addon/bake.py) in the bpy module (a subprocess: bpy stays out of the test process):
``run_bake`` reports its progress, stops on ``cancel`` with nothing written and the scene's frame given back; its
BakeRecord survives its bytes, and ``write_bake`` of the record read back writes exactly the keys the Bake
operator writes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1] + "/tools")
import bake_forest
bake_forest.load_forest(sys.argv[1])  # the add-on of this checkout, registered
import bpy
import numpy as np
from stiff_rods.addon import bake, bake_record
from stiff_rods.addon.session import Session

scene = bpy.context.scene
curve = bpy.data.curves.new("Rope", "CURVE")
curve.dimensions = "3D"
sp = curve.splines.new("BEZIER")
sp.bezier_points.add(3)
for i, p in enumerate(sp.bezier_points):
    p.co, p.handle_left, p.handle_right = (0.4 * i, 0, 2), (0.4 * i - 0.1, 0, 2), (0.4 * i + 0.1, 0, 2)
obj = bpy.data.objects.new("Rope", curve)
scene.collection.objects.link(obj)
scene.frame_start, scene.frame_end = 1, 6
scene.frame_set(3)


def keys():
    action = curve.animation_data.action
    if hasattr(action, "fcurves"):
        curves = list(action.fcurves)
    else:
        curves = [fc for ly in action.layers for st in ly.strips for bag in st.channelbags for fc in bag.fcurves]
    out = {}
    for fc in curves:
        co = np.empty(2 * len(fc.keyframe_points))
        fc.keyframe_points.foreach_get("co", co)
        out[f"{fc.data_path}[{fc.array_index}]"] = co
    return out


out = {}
done = []
try:
    bake.run_bake(scene, Session(obj, scene), 1, 6, progress=done.append, cancel=lambda: len(done) >= 2)
    out["cancelled"] = None
except bake.BakeCancelled as exc:
    out["cancelled"] = str(exc)
out["progress_at_cancel"] = done
out["frame_after_cancel"] = scene.frame_current
out["animated_after_cancel"] = curve.animation_data is not None
done = []
rec = bake.run_bake(scene, Session(obj, scene), 1, 6, progress=done.append)
out["progress"] = done
out["frame_after"] = scene.frame_current
out["record"] = [rec.name, rec.kind, rec.start, rec.end, list(rec.co.shape)]
back = bake_record.BakeRecord.from_bytes(rec.to_bytes())
out["round_trip_equal"] = back == rec
out["fcurves"] = bake.write_bake(back, bpy.data.objects)
from_record = keys()
out["moved"] = float(np.max(np.abs(rec.co[-1] - rec.co[0])))
bpy.context.view_layer.objects.active = obj
obj.select_set(True)
out["free"] = sorted(bpy.ops.stiff_rods.free_bake())
out["bake"] = sorted(bpy.ops.stiff_rods.bake(frame_start=1, frame_end=6))
by_operator = keys()
out["same_paths"] = sorted(from_record) == sorted(by_operator)
out["largest_difference"] = max(float(np.max(np.abs(from_record[k] - by_operator[k]))) for k in from_record)
print("BAKE_PIPELINE " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def result():
    pytest.importorskip("bpy")
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(ROOT)], capture_output=True, text=True, timeout=600, cwd=ROOT
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("BAKE_PIPELINE ")]
    assert lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(lines[-1].split(" ", 1)[1])


def test_a_cancelled_bake_writes_nothing_and_gives_the_frame_back(result):
    assert "cancelled at frame 4" in result["cancelled"]
    assert result["progress_at_cancel"] == [1, 2]
    assert result["frame_after_cancel"] == 3 and not result["animated_after_cancel"]


def test_run_bake_simulates_every_frame_into_a_record(result):
    assert result["progress"] == [1, 2, 3, 4, 5]
    assert result["frame_after"] == 3
    assert result["record"] == ["Rope", "curve", 1, 6, [7, 4, 3]]  # the rest points, then one row per frame
    assert result["moved"] > 1e-3  # the rope falls


def test_the_record_read_back_writes_the_operators_keys(result):
    assert result["round_trip_equal"]
    assert result["fcurves"] == 4 * 3 * 3  # co and both handles of 4 points, 3 components each
    assert result["free"] == ["FINISHED"] and result["bake"] == ["FINISHED"]
    assert result["same_paths"] and result["largest_difference"] == 0.0
