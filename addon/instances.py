"""Instanced forests: the instances of a scene, their tree assets, and the phase-shifted variants they play.

* **Instances** (:func:`find_instances`): Empties with Instance Collection (``instance_type`` 'COLLECTION') and
  objects whose Geometry Nodes modifier runs the add-on's node group (addon/variant_nodes.py), among the scene's
  objects or the Forest Collection's. An instance's **asset** is its collection; :func:`asset_tree` finds the
  one Sapling tree in it or says why there is none (the forest bake's own checks, addon/forest.py).
* **Variants** (:func:`build_variants`): the asset's tree, baked once as a seamless loop of L frames
  (addon/loop.py, Bake's ``bake.write_bake``), copied K times into collections ``<asset>_variant_<k>`` (children of
  ``<asset>_variants``). The copies share the armature, curve and mesh data; the armature copy plays the shared
  loop action from an NLA strip that starts shift − L frames early and repeats past the scene's end; the leaves
  copy reads the asset's PC2 file through its own Mesh Cache modifier, its frame keyed start − shift → 0,
  start − shift + L → L with a Cycles F-curve modifier. Shifts and the instances' choice: addon/variants.py.
  Playing needs nothing of the add-on.
* **Free** (:func:`free`): every instancer gets its collection back (kept in a custom property), Geometry Nodes
  inputs their previous values, the variant objects, collections and actions are removed, the asset's bake is
  freed as Free Bake does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import bpy
import numpy as np

from . import bake, forest, keyframes, point_cache, variant_nodes, variants

ORIGINAL = "stiff_rods_instance_collection"  # on an instancer: the name of the collection it instanced
VARIANT = "stiff_rods_variant"  # on an instancer: the variant it plays; on a copy or collection: its asset
SCENE_MARK = "stiff_rods_instances"  # on the scene: JSON of what Bake Instances added, for Free
LEAF_PATH = f'modifiers["{point_cache.MODIFIER_NAME}"].eval_frame'


@dataclass
class Asset:
    """A tree asset: its ``collection`` name, the Sapling armature ``tree`` in it, the instancers using it."""

    collection: str
    tree: str = ""
    instancers: list[str] = field(default_factory=list)  # Empties (collection instances)
    node_users: list[tuple[str, str]] = field(default_factory=list)  # (object, modifier) of the node group


@dataclass
class Found:
    assets: dict[str, Asset] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)  # one message per asset that cannot be baked


def scene_objects(scene) -> list:
    """The objects Bake Instances looks at: the Forest Collection's, or the scene's."""
    coll = scene.stiff_rods.forest_collection
    return list(coll.all_objects) if coll is not None else list(scene.objects)


def find_instances(objects) -> Found:
    """Every collection instance and node-group user among ``objects``, grouped by asset (not yet checked)."""
    out = Found()
    for obj in objects:
        if obj.instance_type == "COLLECTION" and obj.instance_collection is not None:
            name = obj.instance_collection.name
            out.assets.setdefault(name, Asset(name)).instancers.append(obj.name)
        for mod, asset in variant_nodes.users(obj):
            if asset is None:
                out.refused.append(
                    f"'{obj.name}': its modifier '{mod.name}' runs '{variant_nodes.GROUP_NAME}' without an Asset "
                    "collection: set its Asset input to the tree's collection"
                )
                continue
            out.assets.setdefault(asset.name, Asset(asset.name)).node_users.append((obj.name, mod.name))
    return out


def asset_tree(collection) -> str:
    """The Sapling armature of ``collection``'s one tree, or ValueError naming the asset and the reason."""
    found = forest.resolve(collection.all_objects, check=True)
    where = f"Asset '{collection.name}'"
    if found.refused:
        raise ValueError(f"{where} cannot be baked: {found.refused[0].reason}")
    trees = [t for t in found.trees if t.kind == "armature"]
    if not trees:
        what = ", ".join(f"'{o.name}' ({o.type.lower()})" for o in collection.all_objects) or "nothing"
        raise ValueError(f"{where} holds no Sapling tree (it holds {what}): instances need a tree asset")
    if len(found.trees) > 1:
        raise ValueError(
            f"{where} holds {len(found.trees)} trees or curves ({forest.names_line([t.name for t in found.trees])}):"
            " one tree per asset"
        )
    return trees[0].name


def check(found: Found, scene) -> None:
    """Refuse (ValueError, every reason) assets that are no bakeable tree, instances already baked, an existing
    variants collection; fills each asset's ``tree``."""
    reasons = list(found.refused)
    if not found.assets and not reasons:
        raise ValueError("No instances: no Empty instances a collection and no object uses the variants node group")
    if SCENE_MARK in scene:
        reasons.append(f"Scene '{scene.name}' already has baked instances: Free Instances first")
    for asset in found.assets.values():
        coll = bpy.data.collections[asset.collection]
        if _marked(coll):
            reasons.append(f"'{asset.collection}' is a variant of '{coll[VARIANT]}': Free Instances first")
            continue
        try:
            asset.tree = asset_tree(coll)
        except ValueError as exc:
            reasons.append(str(exc))
            continue
        for k in range(scene.stiff_rods.instance_variants):
            name = variant_name(asset.collection, k)
            if name in bpy.data.collections:
                reasons.append(f"A collection '{name}' is in the way of the variants of '{asset.collection}'")
                break
    if reasons:
        raise ValueError("; ".join(reasons))


def _marked(idb):
    """Whether ``idb`` (an object or collection) is one Bake Instances made."""
    return VARIANT in idb


def variant_name(asset: str, k: int) -> str:
    return f"{asset}_variant_{k}"


# ------------------------------------------------------------------ building the variants
def _copy_tree(tree, k: int, suffix: str) -> dict:
    """Copies (sharing their data) of the armature ``tree`` and its children and grandchildren (curve, leaves),
    parented and deformed among themselves; ``{original name: copy}``."""
    originals = [tree] + list(tree.children_recursive)
    copies = {o.name: o.copy() for o in originals}
    for o in originals:
        c = copies[o.name]
        c.name = f"{o.name}{suffix}"
        c[VARIANT] = tree.name
        for key in bake.BAKE_MARKS:  # the copy is no baked tree of its own: Free Bake must not find one
            if key in c:
                del c[key]
        if o.parent is not None and o.parent.name in copies:
            c.parent = copies[o.parent.name]
        for mod in c.modifiers:
            target = getattr(mod, "object", None)
            if target is not None and target.name in copies:
                mod.object = copies[target.name]
    return copies


def _play_loop(arm, action, strip: tuple[int, int]) -> None:
    """The armature copy plays ``action`` from an NLA strip at ``strip`` = (first frame, repeats)."""
    anim = arm.animation_data_create()
    anim.action = None
    track = anim.nla_tracks.new()
    track.name = "Stiff Rods loop"
    s = track.strips.new(action.name, strip[0], action)
    s.repeat = float(strip[1])
    s.extrapolation = "HOLD"


def _play_leaves(leaves, start: int, loop_frames: int, shift: int) -> str:
    """The leaves copy's Mesh Cache reads the loop's sample (f − start + shift) mod L at scene frame f: its frame
    keyed linearly over one loop and repeated by a Cycles modifier. The action's name."""
    mod = leaves.modifiers[point_cache.MODIFIER_NAME]
    mod.play_mode, mod.time_mode = "CUSTOM", "FRAME"
    action = bpy.data.actions.new(f"{leaves.name}_loop")
    action[VARIANT] = leaves.name
    leaves.animation_data_create()
    leaves.animation_data.action = action
    frames = np.array([start - shift, start - shift + loop_frames], dtype=float)
    keyframes.write_keys(action, leaves, [LEAF_PATH], ["Stiff Rods"], frames, np.array([[[0.0]], [[loop_frames]]]))
    fc = keyframes.assigned_fcurves(leaves)[0]
    fc.modifiers.new("CYCLES")
    return action.name


def build_variants(scene, asset: Asset, record, shifts: list[int]) -> dict:
    """The variant collections of ``asset`` (its tree baked into ``record``, a loop keyed start..start + L) under
    a new ``<asset>_variants``; what was added, for :func:`free`."""
    coll = bpy.data.collections[asset.collection]
    tree = bpy.data.objects[asset.tree]
    action = bake.baked_action(tree)  # written by bake.write_bake just before
    parent = bpy.data.collections.new(f"{asset.collection}_variants")
    parent[VARIANT] = asset.collection
    added: dict = {"parent": parent.name, "collections": [], "objects": [], "actions": []}
    tree_names = {tree.name, *(o.name for o in tree.children_recursive)}
    loop_frames = record.end - record.start
    for k, shift in enumerate(shifts):
        vc = bpy.data.collections.new(variant_name(asset.collection, k))
        vc[VARIANT] = asset.collection
        vc.instance_offset = coll.instance_offset
        parent.children.link(vc)
        added["collections"].append(vc.name)
        copies = _copy_tree(tree, k, f"_variant_{k}")
        for obj in coll.all_objects:  # the asset's other objects (rocks, grass) are shared, not copied
            if obj.name not in tree_names:
                vc.objects.link(obj)
        for c in copies.values():
            vc.objects.link(c)
            added["objects"].append(c.name)
        layout = variants.strip_layout(record.start, scene.frame_end, loop_frames, shift)
        _play_loop(copies[tree.name], action, layout)
        for c in copies.values():
            if c.type == "MESH" and point_cache.MODIFIER_NAME in c.modifiers:
                added["actions"].append(_play_leaves(c, record.start, loop_frames, shift))
    return added


def bending(record) -> np.ndarray:
    """A tree's sway over its loop, comparable between trees: the mean over its segments of the vector part of
    their orientations (L + 1, 3) (each quaternion on the hemisphere w ≥ 0)."""
    q = np.asarray(record.q_seg, dtype=float)
    q = q * np.where(q[..., :1] < 0.0, -1.0, 1.0)
    return q[..., 1:].mean(axis=1)


def assign(assets: list[Asset], records: dict, shifts: list[int]) -> dict[str, dict[str, int]]:
    """Every collection instancer of ``assets`` set to a variant, chosen jointly (addon/variants.py) so that
    neighbours, of any asset, sway least alike (|correlation| of the trees' :func:`bending`);
    ``{asset: {instancer: variant}}``."""
    objs, labels = [], []
    for a, asset in enumerate(assets):
        objs += [bpy.data.objects[n] for n in asset.instancers]
        labels += [a] * len(asset.instancers)
    out: dict[str, dict[str, int]] = {asset.collection: {} for asset in assets}
    if not objs:
        return out
    positions = np.array([o.matrix_world.translation[:] for o in objs])
    signals = [bending(records[asset.collection]) for asset in assets]
    alike = np.abs(variants.cross_correlation(signals, shifts))  # opposite sway looks in unison too
    chosen = variants.assign_variants(positions, len(shifts), alike, labels)
    for obj, a, k in zip(objs, labels, chosen.tolist(), strict=True):
        name = assets[a].collection
        obj[ORIGINAL] = name
        obj[VARIANT] = int(k)
        obj.instance_collection = bpy.data.collections[variant_name(name, k)]
        out[name][obj.name] = int(k)
    return out


def mark(scene, added: dict) -> None:
    scene[SCENE_MARK] = json.dumps(added)


# ------------------------------------------------------------------ freeing
def _remove_added(entry: dict) -> list[str]:
    """Remove one asset's variant objects, actions and collections; the names no longer there."""
    missing = []
    for name in entry.get("objects", []):
        obj = bpy.data.objects.get(name)
        if obj is None:
            missing.append(name)
            continue
        if obj.animation_data is not None:
            obj.animation_data_clear()
        bpy.data.objects.remove(obj)
    for name in entry.get("actions", []):
        action = bpy.data.actions.get(name)
        if action is not None:
            bpy.data.actions.remove(action)
    for name in [*entry.get("collections", []), entry.get("parent")]:
        coll = bpy.data.collections.get(name) if name else None
        if coll is not None:
            bpy.data.collections.remove(coll)
    return missing


def restore_instancers(objects) -> int:
    """Every instancer among ``objects`` back on its original collection; how many."""
    n = 0
    for obj in objects:
        if ORIGINAL in obj:
            coll = bpy.data.collections.get(obj[ORIGINAL])
            if coll is not None:
                obj.instance_collection = coll
            del obj[ORIGINAL]
            n += 1
        if VARIANT in obj:
            del obj[VARIANT]
    return n


def free(scene, free_tree) -> tuple[int, list[str]]:
    """Undo Bake Instances in ``scene``: instancers, node inputs, variants, and each asset's bake
    (``free_tree(armature)``, Free Bake's own). (instancers given back, what was no longer there)."""
    added = json.loads(scene[SCENE_MARK])
    n = restore_instancers(bpy.data.objects)
    variant_nodes.restore_all(bpy.data.objects)
    missing: list[str] = []
    for entry in added.get("assets", {}).values():
        missing += _remove_added(entry)
        tree = bpy.data.objects.get(entry.get("tree", ""))
        if tree is not None:
            missing += free_tree(tree)
    del scene[SCENE_MARK]
    return n, missing


# ------------------------------------------------------------------ the panel's summary
def summary(scene) -> list[str]:
    """The panel's lines: instances, assets, variants, hero trees and the result's estimated memory after Bake
    Instances; before it, the instances and assets found."""
    if SCENE_MARK in scene:
        added = json.loads(scene[SCENE_MARK])
        assets = added.get("assets", {})
        k = len(added.get("shifts", []))
        mem = added.get("memory", {})
        return [
            f"{added.get('instances', 0)} collection instances, {added.get('node_users', 0)} node scatters",
            f"{len(assets)} assets × {k} variants of a {added.get('loop_frames', 0)}-frame loop, "
            f"{len(added.get('heroes', {}).get('heroes', []))} hero trees",
            f"Memory ~{mem.get('total', 0) / 1e6:.2f} MB (keys {mem.get('keys', 0) / 1e6:.2f}, "
            f"PC2 {mem.get('pc2', 0) / 1e6:.2f})",
        ]
    found = find_instances(scene_objects(scene))
    n = sum(len(a.instancers) for a in found.assets.values())
    scatters = sum(len(a.node_users) for a in found.assets.values())
    from .heroes import count_before  # heroes builds on this module

    heroes = count_before(scene, found)
    hero_text = "no camera for Hero Distance" if heroes is None else f"{heroes} hero trees"
    return [f"{n} collection instances, {scatters} node scatters of {len(found.assets)} assets", hero_text]
