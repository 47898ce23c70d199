"""Hero trees: the instances near the camera (or in a chosen collection) made real and baked individually.

Bake Instances (addon/ops_instances.py) plays phase-shifted Variants on background instances. The instances a
shot looks at closely get their own simulation instead:

* **Which** (:func:`pick`): a collection instancer is a hero when it is in the scene's *Hero Collection* or its
  origin is closer than *Hero Distance* (m) to the scene camera; a Geometry Nodes scatter's point (the add-on's
  node group, addon/variant_nodes.py) when it is closer than Hero Distance to the camera. The points are read
  from the depsgraph's object instances (the asset's tree armature instanced on each point) before anything
  changes. Hero Distance > 0 without a scene camera is refused (a Hero Collection alone needs no camera).
* **Made real** (:func:`make`): each hero is a copy of its asset's tree (armature with its own Armature data,
  so its bake can add bones and key its own action; curve and leaves sharing their data, their modifiers and
  parents pointing at the copy's own objects) with the armature at the instance's world transform
  (instancer × translation(−instance offset) × the tree's own transform, or the depsgraph instance's
  ``matrix_world``), in a scene collection ``<asset>_heroes``. The collection instancer is hidden (viewport and
  render; what they were is kept in its custom property ``stiff_rods_hero_hidden``); the node group's *Hero
  Camera* / *Hero Distance* inputs remove the hero points from the instancing. No instance is both drawn and
  real: the drawn trees stay as many as before.
* **Baked** (:func:`simulate`): every hero with Bake's own simulation (``forest.bake_tree``) over the scene's
  frames, in the scene's wind, which is a function of world position and time: a hero at its own place feels
  its own gusts. The keys and leaves' PC2 file are written by ``bake.write_bake`` as for any tree.
* **Free** (:func:`free`): the copies, their actions and PC2 files (Free Bake's own), their Armature data and
  collections are removed; the instancers' visibility and the node inputs come back as they were.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import bpy
from mathutils import Matrix

from . import bake, forest, instances, variant_nodes

HERO = "stiff_rods_hero"  # on a hero copy and its collection: the asset
HIDDEN = "stiff_rods_hero_hidden"  # on an instancer made real: JSON [hide_viewport, hide_render] before


@dataclass
class Hero:
    """One instance made real: its ``asset``, where it came from (``source``: the instancer, or
    ``<scatter>/<persistent id>``) and the world transform of its armature (4×4 nested lists)."""

    asset: str
    source: str
    matrix: list


def heroes_name(asset: str) -> str:
    return f"{asset}_heroes"


def camera_position(scene):
    """The scene camera's world position when Hero Distance is on (> 0), else None; ValueError without one."""
    distance = scene.stiff_rods.hero_distance
    if distance <= 0.0:
        return None
    if scene.camera is None:
        raise ValueError(
            f"Scene '{scene.name}' has no camera: Hero Distance {distance:g} m is measured from the scene camera "
            "(set a camera, or set Hero Distance to 0 and put the hero instancers in a Hero Collection)"
        )
    return scene.camera.matrix_world.translation.copy()


def check(found: instances.Found, scene) -> None:
    """Refuse (ValueError) Hero Distance without a camera and a ``<asset>_heroes`` collection in the way."""
    camera_position(scene)
    for name in found.assets:
        if heroes_name(name) in bpy.data.collections:
            raise ValueError(f"A collection '{heroes_name(name)}' is in the way of the hero trees of '{name}'")


def _rows(m) -> list:
    return [list(r) for r in m]


def _scale(obj) -> float:
    """The mean scale of ``obj``'s world transform: node points are measured in its space."""
    return float(sum(list(obj.matrix_world.to_scale()))) / 3.0


def _node_heroes(asset: instances.Asset, camera, distance: float, instanced: dict) -> list[Hero]:
    """The points of ``asset``'s node scatters closer than ``distance`` to ``camera`` (world), measured in each
    scatter's object space as the node group measures them (a uniform scale assumed)."""
    coll = bpy.data.collections[asset.collection]
    tree = bpy.data.objects[asset.tree]
    to_point = tree.matrix_world.inverted() @ Matrix.Translation(coll.instance_offset)
    out = []
    for obj_name in dict.fromkeys(o for o, _ in asset.node_users):
        scatter = bpy.data.objects[obj_name]
        inv = scatter.matrix_world.inverted()
        cam_local = inv @ camera
        d_local = distance / _scale(scatter)
        for pid, m in instanced.get((obj_name, tree.name), []):
            point = inv @ (m @ to_point).translation
            if (point - cam_local).length < d_local:
                out.append(Hero(asset.collection, f"{obj_name}/{pid}", _rows(m)))
    return out


def _instanced(scene) -> dict:
    """``{(instancer, object): [(persistent id, world matrix)]}`` of the depsgraph's object instances."""
    out: dict = {}
    dg = bpy.context.evaluated_depsgraph_get()
    for inst in dg.object_instances:
        parent = inst.parent.original if inst.is_instance and inst.parent is not None else None
        obj = inst.object.original if parent is not None and inst.object is not None else None
        if parent is not None and obj is not None:
            key = (parent.name, obj.name)
            out.setdefault(key, []).append((tuple(inst.persistent_id), inst.matrix_world.copy()))
    return out


def pick(scene, found: instances.Found) -> list[Hero]:
    """The heroes of every (checked) asset of ``found``; nothing changes. ValueError: Hero Distance without a
    camera."""
    camera = camera_position(scene)
    distance = scene.stiff_rods.hero_distance
    chosen = scene.stiff_rods.hero_collection
    named = {o.name for o in chosen.all_objects} if chosen is not None else set()
    instanced = _instanced(scene) if camera is not None and any(a.node_users for a in found.assets.values()) else {}
    out = []
    for name, asset in found.assets.items():
        coll = bpy.data.collections[name]
        tree = bpy.data.objects[asset.tree]
        for inst_name in asset.instancers:
            e = bpy.data.objects[inst_name]
            near = camera is not None and (e.matrix_world.translation - camera).length < distance
            if near or inst_name in named:
                m = e.matrix_world @ Matrix.Translation(-coll.instance_offset) @ tree.matrix_world
                out.append(Hero(name, inst_name, _rows(m)))
        if camera is not None:
            out += _node_heroes(asset, camera, distance, instanced)
    return out


def _hide(obj) -> None:
    obj[HIDDEN] = json.dumps([bool(obj.hide_viewport), bool(obj.hide_render)])
    obj.hide_viewport = obj.hide_render = True


def _copy_hero(hero: Hero, tree, i: int, coll, made: dict) -> None:
    copies = instances._copy_tree(tree, i, f"_hero_{i}")
    arm = copies[tree.name]
    arm.data = tree.data.copy()  # the bake adds bones to its own armature
    made["data"].append(arm.data.name)
    arm.parent = None
    arm.matrix_world = Matrix(hero.matrix)
    for c in copies.values():
        del c[instances.VARIANT]
        c[HERO] = hero.asset
        coll.objects.link(c)
        made["objects"].append(c.name)
    made["trees"].append(arm.name)
    made["heroes"].append({"asset": hero.asset, "source": hero.source, "tree": arm.name})


def make(scene, found: instances.Found, heroes: list[Hero]) -> dict:
    """The heroes made real (module docstring); what was made and changed, for :func:`free`."""
    made: dict = {"collections": [], "objects": [], "data": [], "trees": [], "hidden": [], "heroes": []}
    camera = camera_position(scene)
    for name, asset in found.assets.items():
        mine = [h for h in heroes if h.asset == name]
        if camera is not None:
            for obj_name, mod_name in asset.node_users:
                scatter = bpy.data.objects[obj_name]
                d_local = scene.stiff_rods.hero_distance / _scale(scatter)
                variant_nodes.set_heroes(scatter, mod_name, scatter.matrix_world.inverted() @ camera, d_local)
        if not mine:
            continue
        coll = bpy.data.collections.new(heroes_name(name))
        coll[HERO] = name
        scene.collection.children.link(coll)
        made["collections"].append(coll.name)
        tree = bpy.data.objects[asset.tree]
        for i, hero in enumerate(mine):
            _copy_hero(hero, tree, i, coll, made)
            if hero.source in bpy.data.objects:
                _hide(bpy.data.objects[hero.source])
                made["hidden"].append(hero.source)
    layer = bpy.context.view_layer
    if layer is not None:
        layer.update()  # the copies' world matrices, before their bakes read them
    return made


def simulate(scene, made: dict, progress=None) -> dict:
    """Every hero simulated over the scene's frames (``forest.bake_tree``): ``{tree: BakeRecord}``."""
    return {t: forest.bake_tree(scene, t, scene.frame_start, scene.frame_end, progress) for t in made["trees"]}


def write(records: dict) -> None:
    for rec in records.values():
        bake.write_bake(rec, bpy.data.objects)


def free(made: dict, free_tree) -> list[str]:
    """Undo :func:`make` (and the heroes' bakes, ``free_tree(armature)``); what was no longer there."""
    missing: list[str] = []
    for name in made.get("trees", []):
        arm = bpy.data.objects.get(name)
        if arm is not None:
            missing += free_tree(arm)
    for name in made.get("objects", []):
        obj = bpy.data.objects.get(name)
        if obj is None:
            missing.append(name)
            continue
        bpy.data.objects.remove(obj)
    for name in made.get("data", []):
        data = bpy.data.armatures.get(name)
        if data is not None and data.users == 0:
            bpy.data.armatures.remove(data)
    for name in made.get("collections", []):
        coll = bpy.data.collections.get(name)
        if coll is not None:
            bpy.data.collections.remove(coll)
    for name in made.get("hidden", []):
        obj = bpy.data.objects.get(name)
        if obj is not None and HIDDEN in obj:
            obj.hide_viewport, obj.hide_render = json.loads(obj[HIDDEN])
            del obj[HIDDEN]
    variant_nodes.restore_heroes(bpy.data.objects)
    return missing


def count_before(scene, found: instances.Found) -> int | None:
    """The panel's count of collection instancers that Bake Instances would make real (node points are
    counted by the bake); None when Hero Distance is on without a camera."""
    try:
        camera = camera_position(scene)
    except ValueError:
        return None
    distance = scene.stiff_rods.hero_distance
    chosen = scene.stiff_rods.hero_collection
    named = {o.name for o in chosen.all_objects} if chosen is not None else set()
    n = 0
    for asset in found.assets.values():
        for inst_name in asset.instancers:
            loc = bpy.data.objects[inst_name].matrix_world.translation
            n += inst_name in named or (camera is not None and (loc - camera).length < distance)
    return n
