"""Bake, Free Bake and Convert on many trees at once, in Blender 3.4
(run by tests/blender/test_blender_forest_panel.py):

    blender -b --factory-startup --python forest_panel.py -- LEGACY_ZIP FOREST.blend WORK_DIR

Installs the legacy add-on zip (the caller points the user profile at a temporary folder) and, each case on a
fresh copy of FOREST.blend (tests/blender_scripts/forest_scene.py: Sapling trees of different presets and a
curve, in a turbulent wind):

* ``two`` / ``three``: two (three) trees selected, Parallel Workers 1: Bake (the operator called from a
  script, so one tree after the other in this process) bakes each, the others stay untouched; the file is
  saved as WORK_DIR/<case>.blend for the replay without the add-on; the bones' tails of each tree from a plain
  Session loop (no operator) for it; Free Bake on the same selection gives back the scene as it was before
  (bad_input.snapshot plus the modifiers, bones and point cache files);
* ``collection``: the Forest Collection chosen (nothing selected): every tree and curve of it baked, then freed;
* ``workers``: the three trees with Parallel Workers 2 (headless Blenders): the keys equal the serial bake's;
* ``broken``: a tree whose bone names no span of its curve and a mirrored one among good trees: Bake refuses
  before it starts, naming both; the scene is unchanged;
* ``convert``: Convert on the three trees and a camera: three models, the camera named as left out;
* ``active_alone``: the active tree not selected, two others selected: Bake bakes the active one only;
* ``failed``: a tree set to a curves-only rod model among good ones, Parallel Workers 2: its worker fails, the
  bake writes nothing and names it, the cache folder is removed.

Prints ``FOREST_PANEL {json}``.
"""

import contextlib
import glob
import io
import os
import shutil
import sys

import bpy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bad_input import first_diff, install, report_cases, snapshot  # noqa: E402
from forest_bake import key_difference, reference_tails, scene_keys  # noqa: E402

ARGS = sys.argv[sys.argv.index("--") + 1 :]
TREES = ["treeArm", "treeArm.001", "treeArm.002"]


def call(op_name, *args, **kw):
    """(outcome, reports): the returned set or "raised", and the messages Blender printed (its reports)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            outcome = sorted(getattr(bpy.ops.stiff_rods, op_name)(*args, **kw))
        except RuntimeError as exc:
            outcome = "raised"
            out.write(str(exc))
    return outcome, out.getvalue()


def fresh(selected=(), workers=1):
    """A fresh copy of the forest with ``selected`` selected (the first one active), Parallel Workers ``workers``."""
    bpy.ops.wm.open_mainfile(filepath=ARGS[1])
    for o in bpy.context.view_layer.objects:
        o.select_set(o.name in selected)
    bpy.context.view_layer.objects.active = bpy.data.objects[selected[0]] if selected else None
    bpy.context.scene.stiff_rods.forest_workers = workers
    return bpy.context.scene


def state():
    """bad_input.snapshot, plus what a bake adds elsewhere: modifiers, bones, point cache files."""
    s = snapshot(evaluate=True)
    for o in bpy.data.objects:
        s["objects"][o.name]["modifiers"] = [(m.name, m.type) for m in o.modifiers]
        if o.type == "ARMATURE":
            s["objects"][o.name]["bone_names"] = sorted(b.name for b in o.data.bones)
    s["pc2"] = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ARGS[2], "*.pc2")))
    return s


def baked_names():
    out = []
    for o in bpy.data.objects:
        holder = o if o.type == "ARMATURE" else o.data if o.type == "CURVE" else None
        ad = holder.animation_data if holder is not None else None
        if ad and ad.action and ad.action.get("stiff_rods_bake"):
            out.append(o.name)
    return sorted(out)


def bake_free(case, selected, **fresh_kw):
    from stiff_rods.addon import wind
    from stiff_rods.addon.session import Session

    scene = fresh(selected, **fresh_kw)
    start, end = scene.frame_start, scene.frame_end
    tails = reference_tails(bpy, scene, Session, wind, [n for n in selected if n.startswith("treeArm")], start, end)
    before = state()
    bake, bake_reports = call("bake")
    out = {"bake": bake, "bake_reports": bake_reports, "baked": baked_names(), "tails": tails}
    out["keys"] = {n: len(k) for n, k in scene_keys(bpy, baked_names()).items()}
    path = os.path.join(ARGS[2], case + ".blend")
    bpy.ops.wm.save_as_mainfile(filepath=path, copy=True)
    out["blend"] = path
    free, free_reports = call("free_bake")
    out.update(free=free, free_reports=free_reports, baked_after_free=baked_names())
    out["diff_after_free"] = first_diff(before, state())
    return out


def collection():
    scene = fresh()
    scene.stiff_rods.forest_collection = bpy.data.collections["Forest"]
    before = state()
    bake, reports = call("bake")
    out = {"bake": bake, "reports": reports, "baked": baked_names()}
    out["free"], _ = call("free_bake")
    out["diff_after_free"] = first_diff(before, state())
    return out


def workers():
    fresh(TREES, workers=1)
    call("bake")
    serial = scene_keys(bpy, TREES)
    fresh(TREES, workers=2)
    outcome, reports = call("bake")
    folders = [f for f in os.listdir(os.path.dirname(ARGS[1])) if "_stiff_rods_forest" in f]
    return {
        "bake": outcome,
        "reports": reports,
        "diff": key_difference(scene_keys(bpy, TREES), serial),
        "cache_folders_left": folders,
    }


def broken():
    scene = fresh(TREES + ["Rope0"])
    bpy.data.objects["treeArm.001"].data.bones[-1].name = "bone999.000"
    bpy.data.objects["treeArm.002"].scale = (-1.0, 1.0, 1.0)
    scene.frame_set(scene.frame_current)
    before = state()
    outcome, reports = call("bake")
    return {"bake": outcome, "reports": reports, "diff": first_diff(before, state()), "baked": baked_names()}


def active_alone():
    """The active tree is not selected, two others are: Bake bakes the active one only, as before forests."""
    fresh(TREES[1:])
    bpy.context.view_layer.objects.active = bpy.data.objects["treeArm"]
    outcome, reports = call("bake")
    return {"bake": outcome, "reports": reports, "baked": baked_names()}


def failed():
    """A tree whose model cannot be built (a curves-only rod model) among good ones, in 2 workers."""
    scene = fresh(TREES, workers=2)
    bpy.data.objects["treeArm.001"].stiff_rods.rod_model = "PAOBCR"
    scene.frame_set(scene.frame_current)
    before = state()
    outcome, reports = call("bake")
    folders = [f for f in os.listdir(os.path.dirname(ARGS[1])) if "_stiff_rods_forest" in f]
    out = {"bake": outcome, "reports": reports, "diff": first_diff(before, state()), "baked": baked_names()}
    return out | {"cache_folders_left": folders}


def convert():
    fresh()
    bpy.ops.object.camera_add()
    for o in bpy.context.view_layer.objects:
        o.select_set(o.name in TREES or o.type == "CAMERA")
    bpy.context.view_layer.objects.active = bpy.data.objects["treeArm"]
    outcome, reports = call("convert")
    from stiff_rods.addon.session import SESSIONS

    return {"convert": outcome, "reports": reports, "sessions": sorted(SESSIONS)}


def main():
    install(ARGS[0])
    os.makedirs(ARGS[2], exist_ok=True)
    shutil.copy(ARGS[1], os.path.join(ARGS[2], "forest.blend"))
    ARGS[1] = os.path.join(ARGS[2], "forest.blend")  # point caches and cache folders go next to it
    out = {}
    report_cases(
        "FOREST_PANEL",
        out,
        [
            ("two", lambda: bake_free("two", TREES[:2])),
            ("three", lambda: bake_free("three", TREES)),
            ("collection", collection),
            ("workers", workers),
            ("broken", broken),
            ("convert", convert),
            ("active_alone", active_alone),
            ("failed", failed),
        ],
    )


if __name__ == "__main__":
    main()
