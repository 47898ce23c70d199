"""Bake Instances and Free Instances: instanced forests that do not sway in unison (addon/instances.py).

Bake Instances checks every asset before anything changes (an asset that is no bakeable tree is refused with
its name and the reason), simulates each asset's tree once as a seamless loop (the scene's Loop Length, the
loop's wind and warm-up, whatever the Loop setting) and each hero tree (addon/heroes.py: the instances near
the camera or in the Hero Collection, made real first) over the scene's frames, then writes the keys (Bake's
``bake.write_bake``), builds the Variants per asset and hands every instance one. A failure after the heroes
are made frees what was made and written: the scene is left as it was.
"""

from __future__ import annotations

import json
import time

import bpy

from . import bake, forest, heroes, instances, ops_common, variant_nodes, variants
from .ops_free_bake import STIFF_RODS_OT_free_bake


def free_tree(arm) -> list[str]:
    """Free Bake of one tree, as the Free Bake operator does it; what was no longer there."""
    try:
        todo = STIFF_RODS_OT_free_bake._check(arm)
    except LookupError:
        return []
    return STIFF_RODS_OT_free_bake._free(*todo)


def free_all(scene) -> tuple[int, list[str]]:
    """Free Instances: the hero trees (addon/heroes.py), then the variants and assets (addon/instances.py)."""
    made = json.loads(scene[instances.SCENE_MARK]).get("heroes", {})
    missing = heroes.free(made, free_tree)
    n, more = instances.free(scene, free_tree)
    return n, missing + more


def simulate(scene, found: instances.Found, progress=None) -> dict:
    """Each asset's tree simulated as a loop from the scene's start: ``{asset: BakeRecord}``; nothing written."""
    ss = scene.stiff_rods
    was_loop = ss.use_loop
    ss.use_loop = True  # the loop's periodic wind and warm-up (settings.bake_spec)
    try:
        start = scene.frame_start
        return {
            name: forest.bake_tree(scene, asset.tree, start, start + ss.loop_frames, progress)
            for name, asset in found.assets.items()
        }
    finally:
        ss.use_loop = was_loop


def memory(records: dict, shifts: list[int]) -> dict:
    """Estimated bytes of the result: keys and the shared PC2 per asset (:func:`variants.memory_bytes`)."""
    total = {"keys": 0, "pc2": 0, "total": 0}
    for rec in records.values():
        leaves = int(rec.leaf_frames.shape[1]) if rec.leaf_frames is not None else 0
        bones = len(rec.bone_names) + len(rec.plan_names)
        m = variants.memory_bytes(bones, rec.end - rec.start + 1, leaves, rec.end - rec.start + 1)
        for key in total:
            total[key] += m[key]
    total["keys"] += 2 * 40 * len(shifts) * len(records)  # the leaves copies' two keys each
    total["total"] = total["keys"] + total["pc2"]
    return total


def write(scene, found: instances.Found, records: dict, shifts: list[int], made: dict) -> dict:
    """Keys, variants and assignments of every asset, the heroes' keys (``made`` by heroes.make, simulated in
    ``records`` too); what was added (also kept on the scene for Free)."""
    added: dict = {"assets": {}, "shifts": shifts, "instances": 0, "node_users": 0, "heroes": made}
    hero_records = {t: records.pop(t) for t in made["trees"]}
    instances.mark(scene, added)  # a failure below is undone by Free from this mark
    for name, asset in found.assets.items():
        bake.write_bake(records[name], bpy.data.objects)
        entry = instances.build_variants(scene, asset, records[name], shifts)
        entry["tree"] = asset.tree
        added["assets"][name] = entry
        instances.mark(scene, added)
    chosen = instances.assign(list(found.assets.values()), records, shifts)
    for name, asset in found.assets.items():
        added["assets"][name]["assignment"] = chosen[name]
        for obj_name, mod_name in asset.node_users:
            parent = bpy.data.collections[added["assets"][name]["parent"]]
            variant_nodes.set_variants(bpy.data.objects[obj_name], mod_name, parent)
        added["instances"] += len(chosen[name])
        added["node_users"] += len(asset.node_users)
    heroes.write(hero_records)
    added["memory"] = memory(records, shifts)
    if hero_records:
        extra = memory(hero_records, [])
        for key in added["memory"]:
            added["memory"][key] += extra[key]
    added["loop_frames"] = scene.stiff_rods.loop_frames
    instances.mark(scene, added)
    return added


class STIFF_RODS_OT_bake_instances(bpy.types.Operator):
    """Bake each tree asset the scene instances once as a loop, and give every instance one of its phase-shifted
    Variants, chosen from its position so that neighbours do not sway in unison"""

    bl_idname = "stiff_rods.bake_instances"
    bl_label = "Bake Instances"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        ops_common.prepare_solver(self)
        scene = context.scene
        found = instances.find_instances(instances.scene_objects(scene))
        try:
            instances.check(found, scene)
            heroes.check(found, scene)
            if any(a.node_users for a in found.assets.values()):
                variant_nodes.check_version()
            picked = heroes.pick(scene, found)
        except ValueError as exc:
            self.report({"ERROR"}, f"Bake Instances refused: {exc}")
            return {"CANCELLED"}
        shifts = variants.phase_offsets(scene.stiff_rods.loop_frames, scene.stiff_rods.instance_variants)
        t0 = time.perf_counter()
        made = heroes.make(scene, found, picked)
        try:
            records = self._simulate(context, found, made)
        except Exception as exc:  # nothing was written
            heroes.free(made, free_tree)
            self.report({"ERROR"}, f"Bake Instances failed: {exc}; nothing was written")
            return {"CANCELLED"}
        try:
            added = write(scene, found, records, shifts, made)
        except Exception as exc:
            free_all(scene)
            self.report({"ERROR"}, f"Bake Instances failed while writing: {exc}; the scene is as it was")
            return {"CANCELLED"}
        if not bpy.data.filepath and any(r.leaf_frames is not None for r in records.values()):
            self.report({"WARNING"}, "The file is not saved: the leaves' point caches went to the temporary folder")
        self.report(
            {"INFO"},
            f"Baked {len(records)} assets as {len(shifts)} variants of a {scene.stiff_rods.loop_frames}-frame loop "
            f"for {added['instances']} collection instances and {added['node_users']} node scatters, "
            f"{len(made['heroes'])} hero trees made real, in "
            f"{time.perf_counter() - t0:.1f} s (~{added['memory']['total'] / 1e6:.2f} MB)",
        )
        return {"FINISHED"}

    @staticmethod
    def _simulate(context, found: instances.Found, made: dict) -> dict:
        """Every asset's loop and every hero's bake simulated, ``{asset or hero tree: BakeRecord}``."""
        scene = context.scene
        wm = context.window_manager
        frames = len(found.assets) * (scene.stiff_rods.loop_frames + 1)
        wm.progress_begin(0, frames + len(made["trees"]) * (scene.frame_end - scene.frame_start + 1))
        try:
            records = simulate(scene, found, wm.progress_update)
            records.update(heroes.simulate(scene, made))
            return records
        finally:
            wm.progress_end()


class STIFF_RODS_OT_free_instances(bpy.types.Operator):
    """Give every instance its asset back and remove the Variants and the assets' bakes"""

    bl_idname = "stiff_rods.free_instances"
    bl_label = "Free Instances"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        scene = context.scene
        if instances.SCENE_MARK not in scene:
            self.report({"ERROR"}, f"Scene '{scene.name}' has no baked instances to free")
            return {"CANCELLED"}
        n, missing = free_all(scene)  # each asset's Free Bake removes its PC2 file
        self.report({"INFO"}, f"Freed the instances: {n} instancers back on their assets")
        if missing:
            self.report({"WARNING"}, f"Free Instances could not find {', '.join(missing[:5])}: the rest is back")
        return {"FINISHED"}


class STIFF_RODS_OT_add_variant_nodes(bpy.types.Operator):
    """Scatter the active collection's tree on the active object's points with the add-on's node group (a
    Geometry Nodes modifier; Bake Instances then switches it to the Variants)"""

    bl_idname = "stiff_rods.add_variant_nodes"
    bl_label = "Add Instance Variants"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        obj = context.active_object
        layer = context.view_layer.active_layer_collection
        asset = layer.collection if layer is not None else None
        if obj is None or obj.type != "MESH":
            self.report({"ERROR"}, "Select the mesh whose points (or scatter) the trees stand on")
            return {"CANCELLED"}
        if asset is None or asset == context.scene.collection or obj.name in asset.all_objects:
            self.report({"ERROR"}, "Make the tree's collection active in the Outliner (not the one of the mesh)")
            return {"CANCELLED"}
        try:
            variant_nodes.add_modifier(obj, asset)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        return {"FINISHED"}


classes = (STIFF_RODS_OT_bake_instances, STIFF_RODS_OT_free_instances, STIFF_RODS_OT_add_variant_nodes)
