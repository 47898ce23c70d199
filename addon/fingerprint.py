"""A cheap fingerprint of everything a Session is built from, so Simulate never runs a stale model.

Convert builds the model once; the user may then change the material, the segment length, a scene setting, the
curve, the bones, the leaves or an object's transform, rename or delete a part, or reopen the file. The fingerprint
hashes what :class:`addon.session.Session` reads when it is built (the settings, the parts' identities, world
matrices and geometry) and leaves out what every start of a simulation reads again anyway (solver iterations,
wind, pin and collider poses), so changing those does not cost a rebuild. Leaf vertex weights are not hashed
(reading them is a Python loop over every vertex); moving, adding or removing leaf vertices is.
"""

from __future__ import annotations

import hashlib

import numpy as np

from . import reader

# scene settings that every Simulate / Bake start reads again (Session.reset, set_wind): not part of the model
RE_READ = frozenset(
    (
        "substeps",
        "iterations",
        "live_iterations",
        "live_matrix_reuse",
        "tolerance",
        "use_force_fields",
        "field_speed_scale",
        "use_storm",
    )
)


class _Hash:
    def __init__(self):
        self.h = hashlib.blake2b(digest_size=16)

    def value(self, *values) -> None:
        self.h.update(repr(values).encode())

    def array(self, collection, attr: str, width: int, dtype=np.float64) -> None:
        """``attr`` of every item of a bpy collection, read in bulk."""
        a = np.empty(width * len(collection), dtype)
        if a.size:
            collection.foreach_get(attr, a)
        self.value(attr, a.size)
        self.h.update(a.tobytes())

    def settings(self, group, skip=frozenset()) -> None:
        """Every property of a settings group (an object the group points to by name and identity)."""
        for key in group.bl_rna.properties.keys():
            if key == "rna_type" or key in skip or key.startswith("storm_"):
                continue
            v = getattr(group, key)
            if hasattr(v, "as_pointer"):  # an ID (Pin To)
                v = (v.name, v.as_pointer())
            elif hasattr(v, "__len__") and not isinstance(v, str):
                v = tuple(v)
            self.value(key, v)

    def part(self, obj) -> None:
        """Identity and world matrix of an armature, curve or leaves object (or its absence). ``as_pointer``
        changes when the file is reopened or the object is replaced, even under the same name."""
        if obj is None:
            self.value(None)
            return
        self.value(obj.name, obj.as_pointer(), obj.data.name, obj.data.as_pointer())
        self.h.update(np.array(obj.matrix_world, dtype=np.float64).tobytes())

    def curve(self, curve) -> None:
        data = curve.data
        self.value(data.bevel_depth, data.dimensions, len(data.splines))
        for sp in data.splines:
            self.value(sp.type, sp.use_cyclic_u, sp.order_u, sp.resolution_u)
            if sp.type == "BEZIER":
                pts = sp.bezier_points
                for attr in ("co", "handle_left", "handle_right"):
                    self.array(pts, attr, 3)
            else:
                pts = sp.points
                self.array(pts, "co", 4)
            self.array(pts, "radius", 1)

    def armature(self, arm) -> None:
        bones = arm.data.bones
        self.value([(b.name, b.parent.name if b.parent else None) for b in bones])
        self.array(bones, "matrix_local", 16)
        self.array(bones, "length", 1)

    def leaves(self, leaves) -> None:
        me = leaves.data
        self.array(me.vertices, "co", 3)
        self.array(me.polygons, "loop_start", 1, np.int64)
        self.array(me.loops, "vertex_index", 1, np.int64)
        self.value([g.name for g in leaves.vertex_groups])


def fingerprint(owner, scene) -> bytes:
    """16 bytes that change whenever anything the Session of ``owner`` (a Sapling armature or a curve) is built
    from changes: its settings, the scene's model-relevant settings (gravity, frame rate, unit scale), the
    identity, world matrix and geometry of its armature, curve and leaves."""
    h = _Hash()
    curve, armature, leaves = reader.find_parts(owner)
    h.value(owner.name, scene.name, scene.as_pointer())
    h.settings(owner.stiff_rods)
    h.settings(scene.stiff_rods, skip=RE_READ)
    units = scene.unit_settings
    h.value(tuple(scene.gravity), scene.use_gravity, scene.render.fps, scene.render.fps_base)
    h.value(units.system, units.scale_length)
    for part in (armature, curve, leaves):
        h.part(part)
    h.curve(curve)
    if armature is not None:
        h.armature(armature)
    if leaves is not None:
        h.leaves(leaves)
    return h.h.digest()
