"""Fast live preview of curves deformed by the tree's bone envelopes (Sapling's rig).

Sapling's tree curve follows its armature through an Armature modifier with bone envelopes, which Blender
evaluates for every control point against every bone: on the white birch (8,017 points with 16,034 handles,
5,878 bones) 1.2–1.6 s per redraw, while the live tick itself takes ~10 ms. While Simulate runs,
:class:`EnvelopePreview` switches that modifier off in the viewport and writes the control points itself, each
tick: every point and handle keeps the envelope weights its bones give it in the rest pose (computed once, as
Blender's envelope deform weighs them) and moves by the weighted mean of their motions, the bones posed from
their quaternions down the chain as Blender poses them; Auto and Vector handles are then recomputed from the
moved points, as Blender does after a deform. On the birch the evaluated curve lies within 6 µm of Blender's
own (tests/blender/test_blender_live_preview.py). :meth:`EnvelopePreview.restore` puts the points and the modifier's
viewport flag back exactly as they were.
"""

from __future__ import annotations

import numpy as np

from .bone_maps import rotation_matrices

NO_CONTRIBUTION = 1e-4  # Blender leaves a point whose summed envelope weights are at most this where it is


def envelope_factor(points, head, tail, rad_head, rad_tail, falloff) -> np.ndarray:
    """Blender's envelope influence (0..1) of bones on points, pair by pair (arrays of equal length, armature
    space): 1 inside the capsule whose radius goes from ``rad_head`` to ``rad_tail``, falling off
    quadratically to 0 over ``falloff`` outside it (spheres of the end radii beyond head and tail)."""
    axis = tail - head
    length = np.linalg.norm(axis, axis=1)
    unit = axis / np.where(length > 0, length, 1.0)[:, None]
    rel = points - head
    along = np.einsum("ij,ij->i", unit, rel)
    before, after = along < 0, along > length
    inside = ~(before | after)
    dist_sq = np.einsum("ij,ij->i", rel, rel) - along**2
    dist_sq[before] = np.einsum("ij,ij->i", rel[before], rel[before])
    d_tail = points[after] - tail[after]
    dist_sq[after] = np.einsum("ij,ij->i", d_tail, d_tail)
    t = np.where(length > 0, along / np.where(length > 0, length, 1.0), 0.0)
    rad = np.where(inside, t * rad_tail + (1 - t) * rad_head, np.where(after, rad_tail, rad_head))
    dist_sq = np.maximum(dist_sq, 0.0)
    out = np.zeros(points.shape[0])
    out[dist_sq < rad**2] = 1.0
    ramp = (dist_sq >= rad**2) & (falloff > 0) & (dist_sq < (rad + falloff) ** 2)
    gap = np.sqrt(dist_sq[ramp]) - rad[ramp]
    out[ramp] = 1.0 - gap**2 / falloff[ramp] ** 2
    return out


def _envelope_modifier(obj, arm):
    """The Armature modifier of curve ``obj`` that the preview can replace: deforming by ``arm``'s envelopes
    only, on the splines, shown in the viewport, with no modifier shown before it; else None."""
    for mod in obj.modifiers:
        if not mod.show_viewport:
            continue
        ok = (
            mod.type == "ARMATURE"
            and mod.object == arm
            and mod.use_bone_envelopes
            and not mod.use_vertex_groups
            and not mod.use_deform_preserve_volume
            and not mod.use_multi_modifier
            and mod.use_apply_on_spline
        )
        return mod if ok else None
    return None


class _CurvePreview:
    """One curve: its saved points, the (point, bone) envelope pairs and the per-spline slices to write."""

    def __init__(self, obj, mod, arm):
        from scipy.sparse import csr_matrix
        from scipy.spatial import cKDTree

        self.obj, self.mod, self.shown = obj, mod, mod.show_viewport
        self.mod_name = mod.name  # looked up again at the end: the modifier may be gone with its object
        splines = obj.data.splines
        self.saved = []  # per spline: (co, handle_left, handle_right) float32 as Blender stores them
        for sp in splines:
            n = len(sp.bezier_points)
            arrays = []
            for attr in ("co", "handle_left", "handle_right"):
                a = np.empty(3 * n, np.float32)
                sp.bezier_points.foreach_get(attr, a)
                arrays.append(a)
            self.saved.append(arrays)
        local = np.concatenate([np.concatenate(a).reshape(-1, 3) for a in self.saved]).astype(float)
        self.counts = [a[0].size // 3 for a in self.saved]
        # the modifier deforms in the armature's space, with the objects where they are at the start
        self.to_arm = np.linalg.inv(np.array(arm.matrix_world, float)) @ np.array(obj.matrix_world, float)
        in_arm = local @ self.to_arm[:3, :3].T + self.to_arm[:3, 3]

        bones = arm.data.bones
        nb = len(bones)

        def get(attr, width=1):
            a = np.empty(nb * width, np.float32)
            bones.foreach_get(attr, a)
            return a.reshape(nb, width).astype(float) if width > 1 else a.astype(float)

        head, tail = get("head_local", 3), get("tail_local", 3)
        rad_h, rad_t = get("head_radius"), get("tail_radius")
        falloff, weight = get("envelope_distance"), get("envelope_weight")
        deform = np.array([b.use_deform for b in bones])
        reach = 0.5 * np.linalg.norm(tail - head, axis=1) + np.maximum(rad_h, rad_t) + falloff
        # Blender weighs every point and handle by its own envelopes, then recomputes Auto and Vector handles
        counts = np.array(self.counts, dtype=np.int64)
        offsets = np.concatenate(([0], np.cumsum(3 * counts)[:-1]))
        n_rows = in_arm.shape[0]
        found = cKDTree(in_arm).query_ball_point(0.5 * (head + tail), reach * (1 + 1e-6) + 1e-9)
        bone = np.repeat(np.arange(nb), [len(f) for f in found])
        point = np.concatenate([np.asarray(f, dtype=np.int64) for f in found]) if nb else np.zeros(0, np.int64)
        keep = deform[bone] & (weight[bone] != 0)
        bone, point = bone[keep], point[keep]
        w = weight[bone] * envelope_factor(
            in_arm[point], head[bone], tail[bone], rad_h[bone], rad_t[bone], falloff[bone]
        )
        keep = w > 0
        bone, point, w = bone[keep], point[keep], w[keep]
        total = np.bincount(point, w, minlength=n_rows)
        own = total > NO_CONTRIBUTION
        sel = own[point]
        bone, point, w = bone[sel], point[sel], w[sel] / total[point[sel]]
        # a moved row is Σ w D_b (x, 1): one sparse product with the bones' deform matrices stacked (4 nb, 3)
        homogeneous = np.concatenate((in_arm[point], np.ones((point.size, 1))), axis=1)
        self.blend = csr_matrix(
            ((w[:, None] * homogeneous).ravel(), (np.repeat(point, 4), (4 * bone[:, None] + np.arange(4)).ravel())),
            shape=(n_rows, 4 * nb),
        )
        self.still = np.where(own[:, None], 0.0, in_arm)  # rows no bone moves stay at rest
        self.from_arm = np.linalg.inv(self.to_arm)
        ends = np.cumsum(3 * 3 * counts)  # per spline: co, handle_left, handle_right in the flat float32 rows
        self.slices = [
            (int(e - 9 * n), int(e - 6 * n), int(e - 3 * n), int(e)) for n, e in zip(counts, ends, strict=True)
        ]
        self._handle_rules(splines, counts, offsets)

    def _handle_rules(self, splines, counts, offsets) -> None:
        """Rows of the points, their neighbours and their Auto/Vector handles, for :meth:`_recompute_handles`."""
        co, prev, nxt, left_t, right_t = [], [], [], [], []
        for sp, n, o in zip(splines, counts, offsets, strict=True):
            rows = o + np.arange(n)
            co.append(rows)
            cyclic = sp.use_cyclic_u and n > 1
            prev.append(np.roll(rows, 1) if cyclic else np.concatenate(([-1], rows[:-1])))
            nxt.append(np.roll(rows, -1) if cyclic else np.concatenate((rows[1:], [-1])))
            left_t += [bp.handle_left_type for bp in sp.bezier_points]
            right_t += [bp.handle_right_type for bp in sp.bezier_points]
        if "ALIGNED" in left_t or "ALIGNED" in right_t:  # Blender re-aligns those in an order not followed here
            raise LookupError(f"'{self.obj.name}' has Aligned handles")
        n_of = np.repeat(counts, counts)
        self.co_rows, self.prev, self.next = np.concatenate(co), np.concatenate(prev), np.concatenate(nxt)
        self.left_rows, self.right_rows = self.co_rows + n_of, self.co_rows + 2 * n_of
        left, right = np.array(left_t), np.array(right_t)
        self.left_auto, self.right_auto = left == "AUTO", right == "AUTO"
        self.left_vector, self.right_vector = left == "VECTOR", right == "VECTOR"
        self.alone = np.repeat(counts < 2, counts)  # a lone point keeps its handles

    def _recompute_handles(self, pts: np.ndarray) -> None:
        """Auto and Vector handles from the moved points, as Blender computes them after a deform (rows of
        ``pts``, curve-local): Auto along the mean direction of the two neighbours, Vector a third of the way
        to its neighbour (an end point's missing neighbour mirrored)."""
        p2 = pts[self.co_rows]
        has_prev, has_next = self.prev >= 0, self.next >= 0
        p1 = np.where(has_prev[:, None], pts[self.prev], 0.0)
        p3 = np.where(has_next[:, None], pts[self.next], 0.0)
        p1 = np.where(has_prev[:, None], p1, 2 * p2 - p3)
        p3 = np.where(has_next[:, None], p3, 2 * p2 - p1)
        da, db = p2 - p1, p3 - p2
        la, lb = np.linalg.norm(da, axis=1), np.linalg.norm(db, axis=1)
        la[la == 0], lb[lb == 0] = 1.0, 1.0
        t = db / lb[:, None] + da / la[:, None]
        length = 2.5614 * np.linalg.norm(t, axis=1)
        la = np.minimum(la, 5 * lb)
        lb = np.minimum(lb, 5 * la)
        ok = (length != 0) & ~self.alone
        safe = np.where(length != 0, length, 1.0)
        sel = ok & self.left_auto
        pts[self.left_rows[sel]] = p2[sel] - t[sel] * (la[sel] / safe[sel])[:, None]
        sel = ok & self.right_auto
        pts[self.right_rows[sel]] = p2[sel] + t[sel] * (lb[sel] / safe[sel])[:, None]
        sel = self.left_vector & ~self.alone
        pts[self.left_rows[sel]] = p2[sel] - da[sel] / 3
        sel = self.right_vector & ~self.alone
        pts[self.right_rows[sel]] = p2[sel] + db[sel] / 3

    def write(self, deform: np.ndarray) -> None:
        """Points moved by the bones' deform matrices ``deform`` (n_bones, 4, 4), armature space: the weighted
        mean of their bones' motions."""
        arm = self.blend @ deform[:, :3, :].transpose(0, 2, 1).reshape(-1, 3) + self.still
        inv = self.from_arm
        local = arm @ inv[:3, :3].T + inv[:3, 3]
        self._recompute_handles(local)
        flat = local.astype(np.float32).ravel()
        # Blender 3.4's Curve has no flat view of all its points: three bulk writes per spline
        for sp, (a, b, c, e) in zip(self.obj.data.splines, self.slices, strict=True):
            pts = sp.bezier_points
            pts.foreach_set("co", flat[a:b])
            pts.foreach_set("handle_left", flat[b:c])
            pts.foreach_set("handle_right", flat[c:e])
        self.obj.data.update_tag()  # foreach_set sends no update

    def restore(self) -> None:
        """Points and the modifier's viewport flag as they were at the start; ReferenceError when the curve was
        deleted or replaced. Splines changed meanwhile (an undo) keep their points."""
        splines = self.obj.data.splines
        if [len(sp.bezier_points) for sp in splines] == self.counts:
            for sp, (co, left, right) in zip(splines, self.saved, strict=True):
                pts = sp.bezier_points
                pts.foreach_set("co", co)
                pts.foreach_set("handle_left", left)
                pts.foreach_set("handle_right", right)
            self.obj.data.update_tag()
        mod = self.obj.modifiers.get(self.mod_name)
        if mod is not None:
            mod.show_viewport = self.shown


class _PoseChain:
    """The armature's bones posed from their rotation quaternions as Blender poses them (each bone carried by
    its parent: ``pose = pose_parent · rest_parent⁻¹ · rest · T(location) R(q) S(scale)``), level by level, so the
    preview follows the pose the modifier would see before Blender has evaluated it."""

    def __init__(self, arm):
        bones, pose_bones = arm.data.bones, arm.pose.bones
        for pb in pose_bones:
            b = pb.bone
            if not b.use_inherit_rotation or b.inherit_scale != "FULL" or pb.rotation_mode != "QUATERNION":
                raise LookupError(f"bone '{b.name}' is not posed by quaternions carried by its parent")
            if pb.constraints or b.bbone_segments > 1:
                raise LookupError(f"bone '{b.name}' has constraints or B-Bone segments")
        self.arm = arm
        n = len(bones)
        rest = np.array([np.array(b.matrix_local, float) for b in bones])
        index = {b.name: i for i, b in enumerate(bones)}
        parent = np.array([index[b.parent.name] if b.parent else -1 for b in bones], dtype=np.int64)
        self.order = np.array([index[pb.name] for pb in pose_bones], dtype=np.int64)  # pose bone → bone
        depth = np.zeros(n, np.int64)
        for i in range(n):  # bones come after their parents in Blender's list? not assumed: walk up
            j, d = parent[i], 0
            while j >= 0:
                j, d = parent[j], d + 1
            depth[i] = d
        self.levels = [np.flatnonzero(depth == d) for d in range(int(depth.max()) + 1 if n else 0)]
        self.parent, self.rest_inv = parent, np.linalg.inv(rest)
        self.local = rest.copy()  # rest_parent⁻¹ · rest
        has = parent >= 0
        self.local[has] = self.rest_inv[parent[has]] @ rest[has]
        loc, scale = np.empty(3 * n), np.empty(3 * n)
        pose_bones.foreach_get("location", loc)
        pose_bones.foreach_get("scale", scale)
        self.loc = np.empty((n, 3))
        self.scale = np.empty((n, 3))
        self.loc[self.order], self.scale[self.order] = loc.reshape(n, 3), scale.reshape(n, 3)
        connected = np.array([b.use_connect for b in bones])
        self.loc[connected] = 0.0  # a connected bone's head stays on its parent's tail

    def deform(self) -> np.ndarray:
        """Each bone's deform matrix (n, 4, 4), armature space: ``pose · rest⁻¹``."""
        n = self.parent.size
        q = np.empty(4 * n, np.float32)  # Blender's type: copied whole
        self.arm.pose.bones.foreach_get("rotation_quaternion", q)
        quats = np.empty((n, 4))
        quats[self.order] = q.reshape(n, 4)
        quats /= np.linalg.norm(quats, axis=1)[:, None]
        basis = np.zeros((n, 4, 4))
        basis[:, :3, :3] = rotation_matrices(quats) * self.scale[:, None, :]
        basis[:, :3, 3] = self.loc
        basis[:, 3, 3] = 1.0
        pose = self.local @ basis
        for level in self.levels[1:]:
            pose[level] = pose[self.parent[level]] @ pose[level]
        return pose @ self.rest_inv


class EnvelopePreview:
    """Every curve in ``scene`` that a tree session's armature deforms by envelopes, written directly while
    the live simulation runs (:meth:`write`, after each pose) with its Armature modifier off in the viewport;
    :meth:`restore` gives back its points and the modifier. A curve the preview cannot follow exactly (other
    spline types, Aligned handles, shape keys, bones not posed by quaternions alone) keeps its modifier."""

    def __init__(self, session, scene):
        self.session = session
        self.curves: list[_CurvePreview] = []
        arm = session.source.armature
        if arm is None:
            return
        try:
            self.pose = _PoseChain(arm)
        except LookupError:  # a rig posed otherwise keeps its modifiers
            return
        for obj in scene.objects:
            if obj.type != "CURVE" or obj.data.shape_keys is not None or not obj.data.splines:
                continue
            mod = _envelope_modifier(obj, arm)
            if mod is None or any(sp.type != "BEZIER" for sp in obj.data.splines):
                continue
            try:
                self.curves.append(_CurvePreview(obj, mod, arm))
            except LookupError:  # kept on its modifier
                continue
        try:
            self.write()
            for c in self.curves:  # once: setting it rebuilds the scene's relations
                c.mod.show_viewport = False
        except Exception:
            self.restore()
            raise

    def write(self) -> None:
        """The curves' control points where the envelope deform would put them for the session's pose."""
        if not self.curves:
            return
        deform = self.pose.deform()
        for c in self.curves:
            c.write(deform)

    def restore(self) -> None:
        """Points and modifier flags back as they were; curves deleted or replaced meanwhile (undo, a file
        loaded) are left alone."""
        for c in self.curves:
            try:
                c.restore()
            except ReferenceError:
                pass
        self.curves = []
