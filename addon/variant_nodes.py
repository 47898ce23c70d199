"""The Geometry Nodes group that scatters a tree asset's variants: "Stiff Rods Instance Variants".

Inputs: **Points** (the scatter, e.g. Distribute Points on Faces), **Asset** (the tree's collection),
**Variants** (a collection whose children are the variant collections; Bake Instances sets it to
``<asset>_variants``), **Use Variants** (Bake Instances turns it on, Free Instances off), **Hero Camera** and
**Hero Distance** (the points closer than Hero Distance to Hero Camera, both in the object's space, are removed
before instancing: Bake Instances makes them real hero trees, addon/heroes.py). Before the bake it
instances the Asset on every point; after, it instances the Variants' children with Pick Instance, the instance
index ⌊fract(sin(p · (12.9898, 78.233, 37.719)) · 437.5853) · 1021⌋ of each point's position p
(addon/variants.py ``float_hash``), which Instance on Points wraps by the number of variants. Its output is
instances: rotate and scale them after it (Rotate Instances, Scale Instances), or realize them.

Built with the node interface API of Blender 4.0+ (``NodeTree.interface``); Blender 3.4 gets a clear refusal.
"""

from __future__ import annotations

import json

import bpy

from . import variants

GROUP_NAME = "Stiff Rods Instance Variants"
TAG = "stiff_rods_variant_nodes"
PREVIOUS = "stiff_rods_node_inputs"  # on an object: its modifiers' Variants / Use Variants before the bake
INPUTS = (
    ("Points", "NodeSocketGeometry"),
    ("Asset", "NodeSocketCollection"),
    ("Variants", "NodeSocketCollection"),
    ("Use Variants", "NodeSocketBool"),
)
HERO_INPUTS = (("Hero Camera", "NodeSocketVector"), ("Hero Distance", "NodeSocketFloat"))
HERO_PREVIOUS = "stiff_rods_hero_inputs"  # on an object: its modifiers' Hero Camera / Hero Distance before


def check_version() -> None:
    if bpy.app.version < (4, 0, 0):
        raise ValueError(
            f"'{GROUP_NAME}' needs Blender 4.0 or newer (its node interface API); on Blender "
            f"{bpy.app.version_string} instance the variant collections yourself with Pick Instance"
        )


def _node(group, kind: str, x: float, y: float, **props):
    node = group.nodes.new(kind)
    node.location = (x, y)
    for key, value in props.items():
        setattr(node, key, value)
    return node


def _math(group, op: str, x: float, value: float | None = None):
    node = _node(group, "ShaderNodeMath", x, -300.0, operation=op)
    if value is not None:
        node.inputs[1].default_value = value
    return node


def _index_chain(group, link):
    """Position → the instance index of the module's docstring: the last node's output."""
    pos = _node(group, "GeometryNodeInputPosition", -800.0, -300.0)
    dot = _node(group, "ShaderNodeVectorMath", -600.0, -300.0, operation="DOT_PRODUCT")
    dot.inputs[1].default_value = variants.FLOAT_HASH_AXES
    link(pos.outputs[0], dot.inputs[0])
    sine = _math(group, "SINE", -450.0)
    link(dot.outputs["Value"], sine.inputs[0])
    scale = _math(group, "MULTIPLY", -300.0, variants.FLOAT_HASH_SCALE)
    link(sine.outputs[0], scale.inputs[0])
    fract = _math(group, "FRACT", -150.0)
    link(scale.outputs[0], fract.inputs[0])
    spread = _math(group, "MULTIPLY", 0.0, float(variants.PICK_RANGE))
    link(fract.outputs[0], spread.inputs[0])
    floor = _math(group, "FLOOR", 150.0)
    link(spread.outputs[0], floor.inputs[0])
    return floor.outputs[0]


def _build(group) -> None:
    for name, kind in INPUTS:
        group.interface.new_socket(name, in_out="INPUT", socket_type=kind)
    group.interface.new_socket("Instances", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    link = group.links.new
    gin = _node(group, "NodeGroupInput", -1000.0, 0.0)
    gout = _node(group, "NodeGroupOutput", 900.0, 0.0)
    asset = _node(group, "GeometryNodeCollectionInfo", -300.0, 300.0, transform_space="ORIGINAL")
    link(gin.outputs["Asset"], asset.inputs["Collection"])
    plain = _node(group, "GeometryNodeInstanceOnPoints", 300.0, 300.0)
    link(gin.outputs["Points"], plain.inputs["Points"])
    link(asset.outputs[0], plain.inputs["Instance"])
    info = _node(group, "GeometryNodeCollectionInfo", -300.0, 0.0, transform_space="ORIGINAL")
    link(gin.outputs["Variants"], info.inputs["Collection"])
    info.inputs["Separate Children"].default_value = True
    info.inputs["Reset Children"].default_value = True
    picked = _node(group, "GeometryNodeInstanceOnPoints", 300.0, 0.0)
    link(gin.outputs["Points"], picked.inputs["Points"])
    link(info.outputs[0], picked.inputs["Instance"])
    picked.inputs["Pick Instance"].default_value = True
    link(_index_chain(group, link), picked.inputs["Instance Index"])
    switch = _node(group, "GeometryNodeSwitch", 600.0, 100.0, input_type="GEOMETRY")
    link(gin.outputs["Use Variants"], switch.inputs["Switch"])
    link(plain.outputs[0], switch.inputs["False"])
    link(picked.outputs[0], switch.inputs["True"])
    link(switch.outputs[0], gout.inputs[0])
    _add_hero_filter(group)


def _add_hero_filter(group) -> None:
    """Hero Camera (a position in the object's space) and Hero Distance inputs, and a Delete Geometry that
    removes the points closer than Hero Distance to Hero Camera before either Instance on Points (Distance 0:
    none). A group built without them (an older file) gets them the same way."""
    for name, kind in HERO_INPUTS:
        group.interface.new_socket(name, in_out="INPUT", socket_type=kind)
    link = group.links.new
    gin = next(n for n in group.nodes if n.bl_idname == "NodeGroupInput")
    pos = _node(group, "GeometryNodeInputPosition", -800.0, 600.0)
    dist = _node(group, "ShaderNodeVectorMath", -600.0, 600.0, operation="DISTANCE")
    link(pos.outputs[0], dist.inputs[0])
    link(gin.outputs["Hero Camera"], dist.inputs[1])
    near = _node(group, "FunctionNodeCompare", -450.0, 600.0, data_type="FLOAT", operation="LESS_THAN")
    link(dist.outputs["Value"], near.inputs[0])
    link(gin.outputs["Hero Distance"], near.inputs[1])
    drop = _node(group, "GeometryNodeDeleteGeometry", -300.0, 600.0, domain="POINT")
    link(gin.outputs["Points"], drop.inputs["Geometry"])
    link(near.outputs[0], drop.inputs["Selection"])
    for node in group.nodes:
        if node.bl_idname == "GeometryNodeInstanceOnPoints":
            link(drop.outputs[0], node.inputs["Points"])


def ensure_group():
    """The add-on's node group, built once per file (ValueError before Blender 4.0)."""
    check_version()
    group = next((g for g in bpy.data.node_groups if g.get(TAG)), None)
    if group is None:
        group = bpy.data.node_groups.new(GROUP_NAME, "GeometryNodeTree")
        group[TAG] = True
        _build(group)
    elif "Hero Distance" not in _identifiers(group):
        _add_hero_filter(group)
    return group


def _identifiers(group) -> dict[str, str]:
    return {it.name: it.identifier for it in group.interface.items_tree if getattr(it, "in_out", "") == "INPUT"}


def users(obj) -> list:
    """(modifier, its Asset collection or None) for each Geometry Nodes modifier of ``obj`` running the group."""
    out = []
    for mod in obj.modifiers:
        group = getattr(mod, "node_group", None) if mod.type == "NODES" else None
        if group is not None and group.get(TAG):
            out.append((mod, mod.get(_identifiers(group)["Asset"])))
    return out


def set_variants(obj, mod_name: str, collection) -> None:
    """Point the modifier ``mod_name`` of ``obj`` at the variants ``collection``, remembering the inputs."""
    mod = obj.modifiers[mod_name]
    ids = _identifiers(mod.node_group)
    previous = json.loads(obj.get(PREVIOUS, "{}"))
    before = mod.get(ids["Variants"])
    previous[mod_name] = {
        "variants": before.name if before is not None else None,
        "use": bool(mod[ids["Use Variants"]]),
    }
    obj[PREVIOUS] = json.dumps(previous)
    mod[ids["Variants"]] = collection
    mod[ids["Use Variants"]] = True
    obj.update_tag()


def _restore(objects, key: str, give_back) -> int:
    """Every modifier whose previous inputs ``objects`` keep under ``key`` (JSON: modifier name → values) given
    them back by ``give_back(mod, identifiers, values)``; the property removed; how many."""
    n = 0
    for obj in objects:
        if key not in obj:
            continue
        for mod_name, before in json.loads(obj[key]).items():
            mod = obj.modifiers.get(mod_name)
            if mod is None or mod.node_group is None:
                continue
            give_back(mod, _identifiers(mod.node_group), before)
            obj.update_tag()
            n += 1
        del obj[key]
    return n


def _variants_back(mod, ids, before) -> None:
    mod[ids["Variants"]] = bpy.data.collections.get(before["variants"] or "")
    mod[ids["Use Variants"]] = before["use"]


def restore_all(objects) -> int:
    """Every modifier :func:`set_variants` changed given its inputs back; how many."""
    return _restore(objects, PREVIOUS, _variants_back)


def set_heroes(obj, mod_name: str, camera, distance: float) -> None:
    """Remove from the modifier ``mod_name``'s instancing the points within ``distance`` (object space) of
    ``camera`` (object space), remembering the inputs."""
    mod = obj.modifiers[mod_name]
    ids = _identifiers(mod.node_group)
    previous = json.loads(obj.get(HERO_PREVIOUS, "{}"))
    previous[mod_name] = {
        "camera": list(mod.get(ids["Hero Camera"], (0.0, 0.0, 0.0))),
        "distance": float(mod.get(ids["Hero Distance"], 0.0)),
    }
    obj[HERO_PREVIOUS] = json.dumps(previous)
    mod[ids["Hero Camera"]] = tuple(camera)
    mod[ids["Hero Distance"]] = float(distance)
    obj.update_tag()


def _heroes_back(mod, ids, before) -> None:
    mod[ids["Hero Camera"]] = tuple(before["camera"])
    mod[ids["Hero Distance"]] = before["distance"]


def restore_heroes(objects) -> int:
    """Every modifier :func:`set_heroes` changed given its hero inputs back; how many."""
    return _restore(objects, HERO_PREVIOUS, _heroes_back)


def add_modifier(obj, asset):
    """A Geometry Nodes modifier on ``obj`` (its points: a mesh's vertices, or a scatter before it) running the
    group with ``asset`` (a collection) as the Asset input."""
    group = ensure_group()
    mod = obj.modifiers.new(GROUP_NAME, "NODES")
    mod.node_group = group
    mod[_identifiers(group)["Asset"]] = asset
    obj.update_tag()
    return mod
