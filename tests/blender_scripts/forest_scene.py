r"""A forest of real Sapling trees in one .blend (used by tests/test_forest*.py and benchmarks/forest.py).

    blender -b --factory-startup --python forest_scene.py -- OUT.blend SPEC.json

SPEC.json: ``{"trees": [{"preset": "quaking_aspen", "seed": 3, "location": [x, y, z], "leaves": true,
"overrides": {"levels": 2}, "bone_splines": 5}, ...], "frames": [1, 24], "wind": {"speed": 10.0, "turbulence": 0.0,
"gusts": 0.0, "seed": 0}, "curves": [{"location": [x, y, z]}], "collection": "Forest"}``.
Each tree is made by tools/make_sapling_tree.py's ``make_tree`` from its preset (``seed`` and
``overrides`` replace the preset's values; with ``bone_splines`` only the first splines keep their
bones), saved on its own, then all trees are appended into one scene,
each armature moved to its ``location``, every tree's objects in the collection ``collection``. ``wind``
(optional) adds a Wind force field blowing along +X with that mean speed [m/s] (Strength, at the default
Field Speed), noise ``gusts``/0.1 and a Turbulence field of standard deviation ``turbulence`` [m/s]. Each
of ``curves`` is Blender's 2-point Bézier curve (2 m, bevel 2 cm) at ``location``, in the collection too.
Prints ``FOREST_SCENE {json}``: per tree its armature, curve and leaves names, bones and location.
"""

import json
import math
import os
import sys
import tempfile

import bpy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import make_sapling_tree  # noqa: E402


def make_one(spec, path):
    """One Sapling tree from ``spec`` saved alone as ``path``."""
    load = make_sapling_tree.load_preset
    overrides = dict(spec.get("overrides", {}), seed=int(spec.get("seed", 0)))
    make_sapling_tree.load_preset = lambda name: {**load(name), **overrides}
    try:
        arm = make_sapling_tree.make_tree(spec["preset"], leaves=spec.get("leaves", True))
    finally:
        make_sapling_tree.load_preset = load
    if "bone_splines" in spec:
        keep_bones(arm, spec["bone_splines"])
    bpy.ops.wm.save_as_mainfile(filepath=path)


def keep_bones(arm, splines):
    """Delete the bones of every spline from number ``splines`` on (Sapling numbers a branch after its
    parent): a rig with bones on the first branches only, as artists prune them."""
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    eb = arm.data.edit_bones
    for b in [b for b in eb if int(b.name[4:].split(".")[0]) >= splines]:
        eb.remove(b)
    bpy.ops.object.mode_set(mode="OBJECT")


def add_wind(wind):
    bpy.ops.object.effector_add(type="WIND", location=(-20.0, 0.0, 4.0), rotation=(0.0, math.pi / 2, 0.0))
    field = bpy.context.active_object.field
    field.strength = float(wind["speed"])
    field.noise = float(wind.get("gusts", 0.0)) / 0.1
    field.seed = int(wind.get("seed", 0))
    if wind.get("turbulence", 0.0) > 0:
        bpy.ops.object.effector_add(type="TURBULENCE", location=(0.0, 0.0, 0.0))
        turb = bpy.context.active_object.field
        turb.strength = float(wind["turbulence"])
        turb.size = float(wind.get("turbulence_length", 5.0))
        turb.seed = int(wind.get("seed", 0))
        turb.falloff_type = "SPHERE"  # with no distance limits: 1 everywhere (falloff power 0)


def main():
    argv = sys.argv[sys.argv.index("--") + 1 :]
    out, spec = os.path.abspath(argv[0]), json.load(open(argv[1]))
    tmp = tempfile.mkdtemp(prefix="forest_scene_")
    files = []
    for i, tree in enumerate(spec["trees"]):
        files.append(os.path.join(tmp, f"tree{i}.blend"))
        make_one(tree, files[-1])
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    coll = bpy.data.collections.new(spec.get("collection", "Forest"))
    scene.collection.children.link(coll)
    trees = []
    for tree, path in zip(spec["trees"], files, strict=True):
        with bpy.data.libraries.load(path, link=False) as (src, dst):
            dst.objects = list(src.objects)
        for obj in dst.objects:
            coll.objects.link(obj)
        arm = next(o for o in dst.objects if o.type == "ARMATURE")
        arm.location = tree.get("location", (0.0, 0.0, 0.0))
        curve = next(o for o in arm.children if o.type == "CURVE")
        leaves = next((o.name for o in curve.children if o.type == "MESH"), None)
        trees.append(
            {"armature": arm.name, "curve": curve.name, "leaves": leaves, "bones": len(arm.data.bones)}
            | {"preset": tree["preset"], "location": list(arm.location)}
        )
    for i, c in enumerate(spec.get("curves", [])):
        bpy.ops.curve.primitive_bezier_curve_add(location=c["location"])
        rope = bpy.context.active_object
        rope.name = f"Rope{i}"
        rope.data.bevel_depth = 0.02
        for user in list(rope.users_collection):
            user.objects.unlink(rope)
        coll.objects.link(rope)
        trees.append({"curve": rope.name, "location": list(rope.location)})
    scene.frame_start, scene.frame_end = spec.get("frames", (1, 24))
    scene.frame_current = scene.frame_start
    if spec.get("wind"):
        add_wind(spec["wind"])
    bpy.ops.wm.save_as_mainfile(filepath=out)
    for path in files:
        os.remove(path)
    os.rmdir(tmp)
    print("FOREST_SCENE " + json.dumps({"blend": out, "trees": trees}))


main()
