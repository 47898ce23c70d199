"""Bake Instances on a scatter of two real Sapling assets (run by tests/blender/test_blender_instances.py).

    blender -b --factory-startup --python instances.py -- make OUT_DIR
        Debian's Blender 3.4: Sapling's quaking aspen (10 leaves) and small maple (2 levels, 8 leaves), each
        saved alone as OUT_DIR/<asset>.blend.
    python instances.py -- bake OUT_DIR
        The bpy module with the add-on of this checkout: both trees appended into collections 'aspen' and
        'maple' (off to the side, instance offsets at their roots), 100 Empties instancing them on a jittered
        grid and a plane of 100 vertices scattering them with the add-on's node group (50 + 50 per asset), a
        gusty wind; a collection holding a cube as a third asset is refused (named); Bake Instances; then every
        instance's branch tip read through the depsgraph's instances (matrix_world × the evaluated mesh) at
        every other frame (OUT_DIR/tips.npy (F, N, 3) m), the file saved as baked.blend and copied with its PC2 files
        to OUT_DIR/replay/; Free Instances; the scene compared with its state before.
    python instances.py -- replay OUT_DIR
        A fresh bpy process without the add-on: opens replay/baked.blend, the same tips (OUT_DIR/replay.npy).
Each phase prints ``INSTANCES_RESULT {json}``.
"""

import json
import math
import os
import shutil
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FRAMES = 48
LOOP = 24
SAMPLES = range(1, FRAMES + 1, 2)  # every other frame: a frame of 200 instances takes ~0.3 s to evaluate
ASSETS = {"aspen": ("quaking_aspen", {"leaves": 10}), "maple": ("small_maple", {"levels": 2, "leaves": 8})}
GRID = 10  # instances per row: GRID² Empties and GRID² scattered points
SPACING_M = 4.0
CAMERA_AT = (48.0, 18.0, 1.7)  # between the Empties (x 0..36 m) and the node scatters (x 60..96 m)
HERO_DISTANCE_M = 15.0


def make(out):
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import bpy
    import make_sapling_tree

    load = make_sapling_tree.load_preset
    for name, (preset, overrides) in ASSETS.items():
        make_sapling_tree.load_preset = lambda p, o=overrides: {**load(p), **o, "seed": 1}
        make_sapling_tree.make_tree(preset, leaves=True)
        bpy.ops.wm.save_as_mainfile(filepath=os.path.join(out, name + ".blend"))
    make_sapling_tree.load_preset = load
    return {"version": list(bpy.app.version), "files": sorted(os.listdir(out))}


# ------------------------------------------------------------------ reading the instances back
def _drawn_tree(inst):
    """A tree the depsgraph draws: a curve instance, or a hero's real curve (the key's prefix)."""
    if inst.object.type != "CURVE":
        return None
    if inst.is_instance:
        return f"{inst.parent.original.name}/{tuple(inst.persistent_id)}/"
    return "hero/" if "stiff_rods_hero" in inst.object.original else None


def instance_tips(bpy, frames, origins=None):
    """Every drawn tree's tip (the evaluated branch mesh's highest vertex at the first frame) in world space
    per frame, (F, N, 3) m, read from the depsgraph's object instances only (instances and the heroes' real
    curves); each one's key; ``origins`` (a dict) gets each one's curve origin [m] at the first frame."""
    scene = bpy.context.scene
    keys, out = None, []
    for f in frames:
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        local, row = {}, {}
        for inst in dg.object_instances:
            prefix = _drawn_tree(inst)
            if prefix is None:
                continue
            ob = inst.object
            name = ob.original.name
            if name not in local:
                mesh = ob.to_mesh()
                co = np.empty(3 * len(mesh.vertices), np.float32)
                mesh.vertices.foreach_get("co", co)
                ob.to_mesh_clear()
                local[name] = co.reshape(-1, 3).astype(float)
            asset = name.split("_variant_")[0].split("_hero_")[0]
            tip = TIP_INDEX.setdefault(asset, int(np.argmax(local[name][:, 2])))  # at rest: read before the bake
            m = np.array(inst.matrix_world, dtype=float)
            key = f"{prefix}{name if prefix == 'hero/' else ''}/{asset}"
            row[key] = m[:3, :3] @ local[name][tip] + m[:3, 3]
            if origins is not None and f == frames[0]:
                origins[key] = m[:3, 3].tolist()
        keys = keys or sorted(row)
        assert sorted(row) == keys, "the instances changed between frames"
        out.append([row[k] for k in keys])
    return np.array(out), keys


# ------------------------------------------------------------------ the scene
def load_addon():
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import bake_forest

    bake_forest.load_forest(ROOT)


def append_asset(bpy, name, x):
    """The tree of OUT_DIR/<name>.blend in a new collection ``name`` (in the scene), moved to (x, −30, 0)."""
    with bpy.data.libraries.load(os.path.join(OUT, name + ".blend")) as (src, dst):
        dst.objects = list(src.objects)
    coll = bpy.data.collections.new(name)
    bpy.context.scene.collection.children.link(coll)
    for obj in dst.objects:
        coll.objects.link(obj)
    arm = next(o for o in dst.objects if o.type == "ARMATURE")
    arm.location = (x, -30.0, 0.0)
    coll.instance_offset = arm.location
    return coll


def scatter(bpy, assets):
    """GRID² Empties on a jittered grid (assets alternating) and a GRID²-vertex plane per half scattering the
    assets with the node group; the instancer count."""
    from stiff_rods.addon import variant_nodes

    rng = np.random.default_rng(7)
    n = 0
    for i in range(GRID):
        for j in range(GRID):
            e = bpy.data.objects.new(f"inst_{i}_{j}", None)
            e.instance_type = "COLLECTION"
            e.instance_collection = assets[(i + j) % 2]
            e.location = (i * SPACING_M + rng.uniform(-1, 1), j * SPACING_M + rng.uniform(-1, 1), 0.0)
            bpy.context.scene.collection.objects.link(e)
            n += 1
    for a, coll in enumerate(assets):
        mesh = bpy.data.meshes.new(f"points_{coll.name}")
        pts = [
            (60.0 + i * SPACING_M + rng.uniform(-1, 1), (a * GRID // 2 + j) * SPACING_M + rng.uniform(-1, 1), 0.0)
            for i in range(GRID)
            for j in range(GRID // 2)
        ]
        mesh.from_pydata(pts, [], [])
        obj = bpy.data.objects.new(f"scatter_{coll.name}", mesh)
        bpy.context.scene.collection.objects.link(obj)
        variant_nodes.add_modifier(obj, coll)
        n += len(pts)
    return n


def add_wind(bpy):
    bpy.ops.object.effector_add(type="WIND", location=(-20.0, 0.0, 4.0), rotation=(0.0, math.pi / 2, 0.0))
    field = bpy.context.active_object.field
    field.strength, field.noise, field.seed = 8.0, 3.0, 4
    # gusts that differ from place to place: hero trees a few metres apart feel their own
    bpy.ops.object.effector_add(type="TURBULENCE", location=(48.0, 18.0, 4.0))
    turbulence = bpy.context.active_object.field
    turbulence.strength, turbulence.size, turbulence.seed = 3.0, 4.0, 5


def _plain(value):
    if hasattr(value, "name"):
        return value.name
    if hasattr(value, "to_list"):
        return [round(float(x), 6) for x in value.to_list()]
    return round(value, 6) if isinstance(value, float) else value


def scene_state(bpy):
    def props(ob):
        return sorted(k for k in ob.keys() if k.startswith("stiff_rods"))

    return {
        "hidden": sorted(
            (o.name, o.hide_viewport, o.hide_render) for o in bpy.data.objects if o.hide_viewport or o.hide_render
        ),
        "node_inputs": sorted(
            json.dumps([o.name, m.name, k, _plain(m[k])])
            for o in bpy.data.objects
            for m in o.modifiers
            if m.type == "NODES"
            for k in m.keys()
        ),
        "armatures": sorted(a.name for a in bpy.data.armatures),
        "objects": sorted(o.name for o in bpy.data.objects),
        "collections": sorted(c.name for c in bpy.data.collections),
        "actions": sorted(a.name for a in bpy.data.actions),
        "instancing": sorted(
            (o.name, o.instance_collection.name) for o in bpy.data.objects if o.instance_collection is not None
        ),
        "props": sorted((o.name, props(o)) for o in bpy.data.objects if props(o)),
        "modifiers": sorted((o.name, m.name) for o in bpy.data.objects for m in o.modifiers),
        "scene_props": sorted(bpy.context.scene.keys()),
        "files": sorted(f for f in os.listdir(OUT) if f.endswith(".pc2")),
    }


def refused_asset(bpy):
    """Bake Instances with a collection of a cube instanced: the error, and whether anything changed."""
    coll = bpy.data.collections.new("rock")
    bpy.ops.mesh.primitive_cube_add()
    cube = bpy.context.active_object
    for c in list(cube.users_collection):
        c.objects.unlink(cube)
    coll.objects.link(cube)
    e = bpy.data.objects.new("inst_rock", None)
    e.instance_type, e.instance_collection = "COLLECTION", coll
    bpy.context.scene.collection.objects.link(e)
    message, same = refused_bake(bpy)
    bpy.data.objects.remove(e)
    bpy.data.objects.remove(cube)
    bpy.data.meshes.remove(bpy.data.meshes["Cube"])
    bpy.data.collections.remove(coll)
    return {"message": message, "unchanged": same}


def no_camera(bpy):
    """Bake Instances with a Hero Distance and no scene camera: the error, and whether anything changed."""
    bpy.context.scene.stiff_rods.hero_distance = HERO_DISTANCE_M
    message, same = refused_bake(bpy)
    return {"message": message, "unchanged": same}


def refused_bake(bpy):
    """Bake Instances expected to be refused: (its error or None, whether the scene is as it was)."""
    before = scene_state(bpy)
    try:
        bpy.ops.stiff_rods.bake_instances()
        message = None
    except RuntimeError as exc:
        message = str(exc)
    return message, scene_state(bpy) == before


def add_heroes(bpy):
    """A camera between the Empties' grid and the node scatters, a Hero Distance that catches a few instances
    of each kind, and a Hero Collection holding one far Empty."""
    scene = bpy.context.scene
    cam = bpy.data.objects.new("camera", bpy.data.cameras.new("camera"))
    cam.location = CAMERA_AT
    scene.collection.objects.link(cam)
    scene.camera = cam
    chosen = bpy.data.collections.new("chosen_heroes")
    scene.collection.children.link(chosen)
    chosen.objects.link(bpy.data.objects["inst_0_0"])
    scene.stiff_rods.hero_distance = HERO_DISTANCE_M
    scene.stiff_rods.hero_collection = chosen


def hero_rest(bpy, heroes):
    """Each hero's curve → [origin, tip] [m] with its armature in its rest position (its own Armature data)."""
    arms = [bpy.data.objects[h["tree"]] for h in heroes]
    for arm in arms:
        arm.data.pose_position = "REST"
    origins: dict = {}
    tips, keys = instance_tips(bpy, [1], origins)
    for arm in arms:
        arm.data.pose_position = "POSE"
    return {k: [origins[k], tips[0, i].tolist()] for i, k in enumerate(keys) if k.startswith("hero/")}


def hero_curves(bpy, heroes):
    """Each hero's curve → the instancer (or scatter/point) it replaced."""
    out = {}
    for h in heroes:
        for c in bpy.data.objects[h["tree"]].children_recursive:
            if c.type == "CURVE":
                out[c.name] = h["source"]
    return out


def bake(out):
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    load_addon()
    from stiff_rods.addon import instances

    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 24, 1.0
    scene.frame_start, scene.frame_end = 1, FRAMES
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(out, "baked.blend"))  # the PC2 files go beside it
    assets = [append_asset(bpy, name, -30.0 + 15.0 * k) for k, name in enumerate(ASSETS)]
    result = {"instancers": scatter(bpy, assets)}
    add_wind(bpy)
    ss = scene.stiff_rods
    ss.loop_frames, ss.use_auto_preroll, ss.preroll_frames = LOOP, False, 2 * LOOP
    result["refused"] = refused_asset(bpy)
    result["no_camera"] = no_camera(bpy)
    add_heroes(bpy)
    before = scene_state(bpy)
    rest_origins: dict = {}
    rest_tips, rest_keys = instance_tips(bpy, [1], rest_origins)
    result["rest_instances"] = len(rest_keys)
    result["rest"] = {k: [rest_origins[k], rest_tips[0, i].tolist()] for i, k in enumerate(rest_keys)}
    with open(os.path.join(out, "tip_index.json"), "w") as f:
        json.dump(TIP_INDEX, f)
    t0 = time.perf_counter()
    assert bpy.ops.stiff_rods.bake_instances() == {"FINISHED"}
    result["bake_s"] = time.perf_counter() - t0
    mark = json.loads(scene["stiff_rods_instances"])
    result["memory"] = mark["memory"]
    result["assigned"] = {a: e["assignment"] for a, e in mark["assets"].items()}
    result["shifts"] = mark["shifts"]
    result["hero_curves"] = hero_curves(bpy, mark["heroes"]["heroes"])
    result["hero_rest"] = hero_rest(bpy, mark["heroes"]["heroes"])
    result["panel"] = instances.summary(scene)
    t0 = time.perf_counter()
    origins: dict = {}
    tips, keys = instance_tips(bpy, SAMPLES, origins)
    result["read_s"] = time.perf_counter() - t0
    result["origins"] = origins
    result["keys"] = keys
    np.save(os.path.join(out, "tips.npy"), tips)
    bpy.ops.wm.save_mainfile()
    keep_copy(out)
    result["after_bake"] = scene_state(bpy)
    assert bpy.ops.stiff_rods.free_instances() == {"FINISHED"}
    result["freed_equal"] = scene_state(bpy) == before
    result["before"], result["after_free"] = before, scene_state(bpy)
    return result


def keep_copy(out):
    """The saved file and its PC2 files copied to OUT_DIR/replay/ (Free Instances removes the originals)."""
    folder = os.path.join(out, "replay")
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(out):
        if name == "baked.blend" or name.endswith(".pc2"):
            shutil.copy(os.path.join(out, name), folder)


def replay(out):
    import bpy

    bpy.ops.wm.open_mainfile(filepath=os.path.join(out, "replay", "baked.blend"))
    with open(os.path.join(out, "tip_index.json")) as f:
        TIP_INDEX.update(json.load(f))
    tips, keys = instance_tips(bpy, SAMPLES)
    np.save(os.path.join(out, "replay.npy"), tips)
    return {"addon": any(m.startswith("stiff_rods") for m in sys.modules), "keys": keys}


def main():
    global OUT
    args = sys.argv[sys.argv.index("--") + 1 :]
    OUT = args[1]
    phase = {"make": make, "bake": bake, "replay": replay}[args[0]]
    print("INSTANCES_RESULT " + json.dumps(phase(args[1])))


OUT = ""
TIP_INDEX: dict = {}  # asset → the vertex of its branch mesh that is highest at rest
main()
