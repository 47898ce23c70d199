"""A running simulation of one Blender tree or curve: solver model + the map back to bones.

Kept in memory per object (not saved in the .blend): Convert builds it, Simulate and Bake advance it.

Units: the solver works in metres, kilograms and seconds. Every coordinate read from Blender (branches,
radii, leaves, pin and hook objects, colliders, wind fields) is in scene units and is multiplied by the
scene's Unit Scale (1 Blender unit = Unit Scale m, :func:`addon.frames.unit_scale`); what is written back is
divided by it. Gravity (Scene > Gravity) is taken in m/s² as it is stored, whatever the unit scale.
"""

from __future__ import annotations

import time
import typing

import bpy
import numpy as np

from ..solver import (
    JOINT_KINDS,
    Contacts,
    Fracture,
    RodSet,
    Simulator,
    attach_leaves,
    bind_points,
    carried_points,
    gravity_prestress,
    leaf_frames,
    nearest_segments,
    tree_from_branches,
)
from ..solver import quaternion as quat
from . import reader
from .bones import BoneRotations, rotation_matrices
from .colliders import SceneCollider, collision_objects
from .frames import FramePoses, animated, metric, rigid, rotation, unit_scale

SESSIONS: dict[str, Session] = {}  # object name → session

MATERIALS = {  # E [Pa], G [Pa], ρ [kg/m³]
    "WOOD": (12.5e9, 6.5e9, 1000.0),  # Deul §5, trunk and branches of their Sapling trees
    "LEAF": (1.2e9, 0.6e9, 1000.0),  # Deul §5, leaves
    "STEEL": (209e9, 79e9, 7800.0),  # the authors' Wilberforce spring
    "RUBBER": (0.05e9, 0.017e9, 1100.0),
}

SEED_MODELS = {"PAOBCR": "PaOBCR", "PBER": "PBER", "DLO": "DLO"}  # rod models of the seeds, for curves
CARRIER_TOLERANCE = 1e-5  # on |MᵀM − I| of the carrier's motion (float32 matrices of a turning carrier: < 1e-6)


class Session:
    def __init__(self, obj: bpy.types.Object, scene: bpy.types.Scene):
        self.wind = None  # addon.wind.SceneWind, set by the operators when the scene has wind
        self._build(obj, scene)

    def _build(self, obj: bpy.types.Object, scene: bpy.types.Scene) -> None:
        """Read the tree or curve ``obj`` and its settings from the scene as it is now."""
        self.object = obj
        self.unit = unit_scale(scene)  # metres per Blender unit
        settings = obj.stiff_rods  # type: ignore[attr-defined]  # registered by addon.properties
        ss = scene.stiff_rods  # type: ignore[attr-defined]
        src = reader.read_tree(
            obj, default_radius=settings.default_radius, segment_length=settings.segment_length, unit=self.unit
        )
        youngs, torsion, density = material(settings)
        self.rod_model, self.pin_root = settings.rod_model, settings.pin_root
        _refuse_combinations(obj, settings, ss, src)
        model, self.branch_map = tree_from_branches(
            src.branches,
            parents=src.parents,
            youngs_modulus=youngs,
            torsion_modulus=torsion,
            density=density,
            pin_roots=settings.pin_root,
            root_joint=settings.root_joint.lower(),
            root_axis=WORLD_AXES[settings.root_axis],
            stretch=settings.stretch.lower(),
            shear_coefficient=settings.shear_coefficient,
            rest="straight" if settings.rest_shape == "STRAIGHT" else None,
        )
        self.source = src
        self.material = (youngs, torsion, density)
        self.integrator = ss.integrator.lower()
        self.damping_ratio = (ss.damping_ratio, ss.damping_frequency) if ss.use_damping_ratio else None
        self.add_bones = settings.add_bones
        self.rupture_strain = 0.01 * settings.rupture_strain if settings.use_fracture else None
        self.leaf_mesh: reader.LeafMesh | None = None
        if settings.use_leaves and src.armature is not None and src.leaves is not None:
            model = self._attach_leaves(model, src)
        self.owner_name = (src.armature or src.curve).name
        self.gravity = np.array(scene.gravity) if (ss.use_scene_gravity and scene.use_gravity) else np.zeros(3)
        mode = settings.rest_shape
        self.loaded_rest = mode == "LOADED" or (mode == "AUTO" and src.armature is not None)
        self.pins = PinSet(model, src, settings, self.unit)  # the model with pinned segments
        self._prestressed = None  # (pinned mask, pre-stressed model) of _rest_model
        self.model = self._rest_model()
        fps = scene.render.fps / scene.render.fps_base
        self.frame_time = 1.0 / fps  # [s]
        self._solver_settings(ss, live=False)
        self.damping = settings.damping
        self.drag_coefficient = settings.drag_coefficient
        self.collide, self.friction, self.self_collision = settings.collide, settings.friction, settings.self_collision
        self.colliders = self._read_colliders(scene)
        self.frame = self.start_frame = scene.frame_current
        self.sim = self._make_sim()
        self.ms_per_step = 0.0
        self.iterations = 0.0
        self.residual = 0.0
        if src.armature is not None:
            self.bone_segment = np.array([self.branch_map.span_segment[b][k] for b, k in src.bone_span], dtype=np.int64)
            bones = typing.cast(bpy.types.Armature, src.armature.data).bones
            rest = np.array([np.array(bones[n].matrix_local)[:3, :3] for n in src.bone_names])
            self.bone_rest = quat.from_matrix(rest) if len(rest) else np.zeros((0, 4))
            self.armature_rotation = quat.from_matrix(rotation(src.armature.matrix_world))
            # every rest model of this session (pins, pre-stress) shares the drawn orientations
            self.bone_rotations = BoneRotations(
                self.model.orientations[self.bone_segment], self.bone_rest, src.bone_parent, self.armature_rotation
            )
        else:
            self.curve_binding = self._bind_control_points()

    def _attach_leaves(self, model, src):
        """Every leaf (a connected piece of the leaves mesh, solver/build/leaves.py) a plate segment jointed to its
        branch (Deul §5). All the leaf's vertices ride on that one segment, so it keeps its shape."""
        lm = reader.read_leaf_mesh(src.leaves, src.bone_names, self.unit)
        if lm is None:
            return model
        f = leaf_frames(lm.co, lm.loop_start, lm.loop_total, lm.loop_vertex, src.branches, src.curves or None)
        youngs, torsion, density = MATERIALS["LEAF"]
        model, self.leaf_segments = attach_leaves(
            model,
            self.branch_map,
            stem=f["leaf_stem"],
            axis=f["leaf_axis"],
            normal=f["leaf_normal"],
            length=f["leaf_length"],
            width=f["leaf_width"],
            parent=f["leaf_parent"],
            density=density,
            youngs_modulus=youngs,
            torsion_modulus=torsion,
        )  # 0.2 mm blades on 1 mm petioles
        used = np.flatnonzero(f["leaf_of_vertex"] >= 0)  # vertices of no polygon follow their bones
        seg = self.leaf_segments[f["leaf_of_vertex"][used]]
        local = quat.rotate_inverse(model.orientations[seg], lm.co[used] - model.positions[seg])
        self.leaf_binding = (used, seg, local)
        self.leaf_mesh = lm
        return model

    def leaf_vertices_world(self) -> np.ndarray:
        """World positions (V, 3) [m] of the leaves mesh's vertices as seen from the carrier
        (:meth:`frame_state`): a leaf's carried by its leaf segment, a vertex of no leaf at rest."""
        lm = self.leaf_mesh
        assert lm is not None
        out = lm.co.copy()
        out[self.leaf_binding[0]] = self._carried_leaf_vertices(*self.frame_state())
        return out

    def _carried_leaf_vertices(self, positions, orientations, rows=slice(None)) -> np.ndarray:
        """World positions [m] of the leaf vertices ``leaf_binding[0][rows]`` carried by their leaf segments."""
        _, seg, local = self.leaf_binding
        return positions[seg[rows]] + quat.rotate(orientations[seg[rows]], local[rows])

    def _leaf_blend(self) -> dict:
        """What :meth:`leaf_base_coordinates` needs per topology, built once per leaf binding. A leaf vertex
        with one bone (all of Sapling's) has the map ``P_b (R_l local + c_l) + o_b`` of its bone b and its
        leaf segment l: one 3×3 matrix and offset per (leaf segment, bone) pair, so a frame costs one
        product per pair and one per vertex. A vertex of no weight takes the identity as its bone; vertices
        of several bones keep the per-vertex blend (a sparse weight matrix) and solve."""
        cache = getattr(self, "_leaf_blend_cache", None)
        if cache is not None and cache["binding"] is self.leaf_binding and cache["model"] is self.model:
            return cache
        from scipy import sparse

        lm = self.leaf_mesh
        assert lm is not None
        used, seg, local = self.leaf_binding
        n = lm.co.shape[0]
        total = np.bincount(lm.weight_vertex, lm.weight, minlength=n)
        count = np.bincount(lm.weight_vertex[lm.weight > 0], minlength=n)
        bone_seg, col = np.unique(self.bone_segment[lm.weight_bone], return_inverse=True)
        col = col.ravel()
        moved = total[used] > 1e-4  # Blender's threshold for "no contribution"
        single = ~moved | (count[used] == 1)
        bone = np.full(n, bone_seg.size, dtype=np.int64)  # index bone_seg.size: the identity (no motion)
        one = (lm.weight > 0) & (count[lm.weight_vertex] == 1) & (total[lm.weight_vertex] > 1e-4)
        bone[lm.weight_vertex[one]] = col[one]
        pair_key = seg[single] * (bone_seg.size + 1) + bone[used[single]]
        pairs, pair_of = np.unique(pair_key, return_inverse=True)
        multi = np.flatnonzero(~single)
        row = np.full(n, -1, dtype=np.int64)
        row[used[multi]] = np.arange(multi.size)
        keep = row[lm.weight_vertex] >= 0
        vertex = lm.weight_vertex[keep]
        blend = sparse.csr_matrix(
            (lm.weight[keep] / total[vertex], (row[vertex], col[keep])), shape=(multi.size, bone_seg.size)
        )
        single_index = np.flatnonzero(single)
        cache = dict(
            binding=self.leaf_binding,
            model=self.model,
            bone_seg=bone_seg,
            # the drawn pose of the bones' segments, D_b's rest side: R_b⁰ᵀ and c_b⁰
            rest_rotation_t=quat.to_matrix(self.model.orientations[bone_seg]).transpose(0, 2, 1),
            rest_position=self.model.positions[bone_seg],
            pair_seg=pairs // (bone_seg.size + 1),
            pair_bone=pairs % (bone_seg.size + 1),
            groups=_pair_groups(pair_of.ravel(), pairs.size, used[single_index], local[single_index]),
            multi=multi,
            blend=blend,
            inverse=np.linalg.inv(lm.matrix_world),
        )
        self._leaf_blend_cache = cache
        return cache

    def leaf_base_coordinates(self) -> np.ndarray:
        """Leaves-mesh coordinates (V, 3), object-local, that the Armature modifier (the bones following
        their segments) deforms exactly onto :meth:`leaf_vertices_world`. The modifier moves a vertex by
        the weighted mean of its bones' motions, ``x = Σ w̃_b D_b(x⁰)`` with ``D_b(x) = R_b R_b⁰ᵀ (x − c_b⁰)
        + c_b`` (w̃ normalised; a vertex with total weight ≤ 1e-4 stays): an affine map ``A x⁰ + t``,
        inverted here per vertex. So leaves play back with plain Blender: a Mesh Cache of these
        coordinates under the tree's own Armature modifier. Vertices of no leaf keep their own
        coordinates and follow their bones."""
        lm = self.leaf_mesh
        assert lm is not None
        b = self._leaf_blend()
        used = self.leaf_binding[0]
        s = b["bone_seg"]
        positions, orientations = self.frame_state()
        motion = rotation_matrices(orientations[s]) @ b["rest_rotation_t"]
        shift = positions[s] - np.einsum("wij,wj->wi", motion, b["rest_position"])  # D_b(x) = motion x + shift
        inv = b["inverse"]
        out = lm.co_local.astype(float)
        # one bone: base = D_b⁻¹(x) = motionᵀ (x − shift) (a rotation), object-local: P_b x + o_b
        p = np.concatenate((inv[:3, :3] @ motion.transpose(0, 2, 1), inv[None, :3, :3]))
        o = inv[:3, 3] - np.einsum("wij,wj->wi", p, np.concatenate((shift, np.zeros((1, 3)))))
        ps, pb = b["pair_seg"], b["pair_bone"]
        c = p[pb] @ rotation_matrices(orientations[ps])
        d = np.einsum("pij,pj->pi", p[pb], positions[ps]) + o[pb]
        for pair, vertex, loc in b["groups"]:  # pairs of m vertices: one (3, 3) @ (3, m) product per pair
            out[vertex] = (c[pair] @ loc + d[pair][:, :, None]).transpose(0, 2, 1).reshape(-1, 3)
        multi = b["multi"]
        if multi.size:
            x = self._carried_leaf_vertices(positions, orientations, multi)
            at = b["blend"] @ np.concatenate((motion.reshape(-1, 9), shift), axis=1)  # (vertices, 9 + 3): A, t
            base = _solve3(at[:, :9].reshape(-1, 3, 3), x - at[:, 9:])
            out[used[multi]] = base @ inv[:3, :3].T + inv[:3, 3]
        return out

    def _rest_model(self):
        """The pinned model, pre-stressed (solver/build/prestress.py) when its drawn shape is the loaded one. The
        pre-stress depends only on which segments are pinned: every reset chooses the pins again, mostly the
        same ones, so it is computed once per pinned set (0.7 s on the leafy birch)."""
        model = self.pins.model
        if not self.loaded_rest or not np.any(self.gravity) or self.rod_model in SEED_MODELS:
            self.prestress_capped = 0
            return model
        key = model.pinned.tobytes()
        if self._prestressed is not None and self._prestressed[0] == key:
            return self._prestressed[1]
        info = {}
        # joints too soft to hold their drawn bend (a willow's whips) get at most 90° and sag from there
        model = gravity_prestress(model, self.gravity, max_angle=0.5 * np.pi, info=info)
        self.prestress_capped = info["clamped"]
        self._prestressed = (key, model)
        return model

    def _make_sim(self):
        if self.rod_model in SEED_MODELS:
            return self._make_rod_set()
        sim = Simulator(
            self.model,
            dt=self.frame_time / self.substeps,
            max_iterations=self.max_iterations,
            tolerance=self.tolerance,
            gravity=self.gravity,
            damping=self.damping,
            solver="gs" if self.rod_model == "STIFF_GS" else "kkt",
            kinematic=self.pins.driver if self.pins.driven or self.pins.carried else None,
            integrator=self.integrator,
        )
        if self.damping_ratio is not None:
            try:
                sim.set_damping_ratio(*self.damping_ratio)
            except ValueError as exc:
                raise ValueError(f"'{self.owner_name}': Damping Ratio: {exc}") from None
        sim.factor_reuse = self.factor_reuse
        if self.wind is not None:
            sim.force_fields.append(self.wind.drag(self.model, self.drag_coefficient))
        if self.rupture_strain is not None:
            sim.post_step.append(Fracture(self.rupture_strain))
        if self.colliders or self.self_collision:
            sim.gs_constraints.append(
                Contacts(
                    self.model,
                    [c.collider for c in self.colliders],
                    friction=self.friction,
                    self_collision=self.self_collision,
                )
            )
        return sim

    def _read_colliders(self, scene):
        """The scene's Collision objects (addon/colliders.py), shaped where they are now (the start frame);
        ``skipped_colliders`` gets a warning for each one that has no shape to collide with."""
        self.skipped_colliders: list[str] = []
        if not self.collide:
            return []
        src = self.source
        objects, self.skipped_colliders = collision_objects(scene, exclude=(src.armature, src.curve, src.leaves))
        return [SceneCollider(o, self.unit) for o in objects]

    def _make_rod_set(self) -> RodSet:
        """One rod of a seed model per spline (solver/models/rod_set.py): root clamp and gravity only."""
        name = SEED_MODELS[self.rod_model]
        if self.pins.driven:
            raise ValueError(f"Rod Model '{name}': Pin To and Hook modifiers need a Stiff Rods model")
        if self.pins.carried:
            raise ValueError(
                f"Rod Model '{name}' does not follow a moving carrier: '{self.pins.carrier.name}' is animated "
                "(keys, drivers or constraints move it or a parent); use a Stiff Rods model"
            )
        if self.wind is not None:
            raise ValueError(
                f"Rod Model '{name}' has no wind drag: turn off Force Fields and Storm, or use a Stiff Rods model"
            )
        if self.colliders or self.self_collision:
            raise ValueError(
                f"Rod Model '{name}' has no collisions: turn off Collide and Self Collision, or use a Stiff Rods model"
            )
        if self.rupture_strain is not None:
            raise ValueError(f"Rod Model '{name}' has no breakage: turn off Breakage, or use a Stiff Rods model")
        youngs, torsion, density = self.material
        return RodSet(
            self.rod_model.lower(),
            self.model,
            self.source.branches,
            self.branch_map.span_segment,
            youngs_modulus=youngs,
            torsion_modulus=torsion,
            density=density,
            pin_start=self.pin_root,
            iterations=self.max_iterations,
            dt=self.frame_time / self.substeps,
            gravity=self.gravity,
            damping=self.damping,
        )

    @property
    def needs_scene_frames(self) -> bool:
        """True when something the simulation reads is animated in the scene (the carrier, pin objects, wind
        fields, colliders): then every frame is evaluated with ``scene.frame_set`` before it is simulated."""
        return (
            self.pins.driven
            or self.pins.carried
            or (self.wind is not None and self.wind.animated)
            or any(c.animated for c in self.colliders)
        )

    # -------------------------------------------------------------- stepping
    def set_wind(self, wind) -> None:
        """Use ``wind`` (addon.wind.SceneWind or None) from the next reset on."""
        self.wind = wind
        self.sim = self._make_sim()

    def _solver_settings(self, ss, live: bool) -> None:
        """Substeps and iterations: the scene's for a bake; a live preview takes one step per frame with at
        most ``live_iterations`` Newton iterations (bounded work per timer tick)."""
        self.substeps = 1 if live else ss.substeps
        self.max_iterations = min(ss.live_iterations, ss.iterations) if live else ss.iterations
        self.factor_reuse = ss.live_matrix_reuse if live else 0
        self.tolerance = ss.tolerance

    def reset(self, frame: int, scene=None, live: bool = False) -> None:
        """Start over at ``frame`` with the model at rest. With ``scene``: re-read the solver settings (``live``:
        the live preview's), the pins, the colliders and the wind there; the tree itself too when its carrier
        (armature, or plain curve) is elsewhere at ``frame`` than where it was read, or the unit scale changed."""
        self.frame = self.start_frame = frame
        if scene is not None:
            if scene.frame_current != frame:
                scene.frame_set(frame)
            here = metric(self.pins.carrier.matrix_world, self.unit)
            if unit_scale(scene) != self.unit or not np.allclose(here, self.pins.carrier_rest, rtol=0.0, atol=1e-9):
                self._build(self.object, scene)  # the rest shape is where the carrier is at the start
            self._solver_settings(scene.stiff_rods, live)
            self.colliders = self._read_colliders(scene)  # shaped where they are at the start frame
            self._read_scene(scene, frame, first=True)
            self.model = self._rest_model()  # pins are chosen where their objects are at the start
        self.sim = self._make_sim()

    def _read_scene(self, scene, frame: int, first: bool = False) -> None:
        if self.needs_scene_frames:
            scene.frame_set(frame)  # evaluates animation and drivers: matrix_world is current after it
        t = (frame - self.start_frame) * self.frame_time
        self.pins.read(t, first)
        for c in self.colliders:
            c.read(t, first)
        if self.wind is not None:
            self.wind.read(scene, frame, t, first)

    def advance_frame(self, scene=None) -> None:
        """One frame of simulation: ``substeps`` solver steps. With ``scene`` and animated inputs, the next
        frame is evaluated first and pin poses are interpolated over the substeps."""
        if scene is not None and self.needs_scene_frames:
            self._read_scene(scene, self.frame + 1)
        t0 = time.perf_counter()
        its = 0
        for _ in range(self.substeps):
            report = self.sim.step()
            its += report.iterations
        self.ms_per_step = 1e3 * (time.perf_counter() - t0) / self.substeps
        self.iterations = its / self.substeps
        self.residual = report.residual
        self.frame += 1

    # -------------------------------------------------------------- back to Blender
    def bone_quaternions(self) -> np.ndarray:
        """Pose-bone local rotations (n_bones, 4) that make every bone follow its segment.

        With ΔA the segment's rotation since rest in armature space and Q the bone's rest rotation,
        a bone's pose-space rotation is ``Q⁻¹ (ΔA_parent⁻¹ ΔA) Q`` (rotation keys only: heads follow
        the parent chain because the joints hold them); see :class:`addon.bones.BoneRotations`."""
        return self.bone_rotations(self.frame_state()[1][self.bone_segment])

    def frame_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Positions (n, 3) [m] and orientations (n, 4) of the segments as seen from the carrier: moved back by
        the carrier's motion since the model was read (:class:`PinSet`), so the armature, curve and leaves,
        which ride on the carrier, take them in their frames as they were read. The simulator's own arrays
        while the carrier is where it was read."""
        motion = self.pins.carrier_motion
        x, q = self.sim.positions, self.sim.orientations
        if motion is None:
            return x, q
        t, r = motion
        r = np.broadcast_to(r, q.shape)
        return quat.rotate_inverse(r, x - t), quat.multiply_conjugate(r, q)

    def _bind_control_points(self):
        """Every curve control point (and Bézier handle) bound to the nearest segment of its own rod."""
        mw = self.curve_matrix = metric(self.source.curve.matrix_world, self.unit)
        binding = []
        m = self.model
        for b, cps in enumerate(self.source.control_points):
            cand = np.asarray(self.branch_map.span_segment[b], dtype=np.int64)
            pts = [cps.co] + ([cps.handle_left, cps.handle_right] if cps.bezier else [])
            world = np.concatenate(pts) @ mw[:3, :3].T + mw[:3, 3]
            binding.append(bind_points(world, m.positions, m.orientations, m.lengths, cand))
        return binding

    def control_points_now(self):
        """The curve's control points (object-local) carried by the simulated segments."""
        inv = np.linalg.inv(self.curve_matrix)
        positions, orientations = self.frame_state()
        out = []
        for cps, (seg, local) in zip(self.source.control_points, self.curve_binding, strict=True):
            world = carried_points(positions, orientations, seg, local)
            pts = world @ inv[:3, :3].T + inv[:3, 3]
            k = cps.co.shape[0]
            out.append(
                reader.ControlPoints(
                    cps.spline,
                    cps.bezier,
                    pts[:k],
                    pts[k : 2 * k] if cps.bezier else None,
                    pts[2 * k :] if cps.bezier else None,
                    cps.w,
                )
            )
        return out

    def write_rest(self) -> None:
        """Put a curve's control points (a tree's leaves) back where they were when it was converted."""
        if self.leaf_mesh is not None:
            self._set_leaf_coordinates(self.leaf_mesh.co_local)
        if self.source.armature is None:
            for cps in self.source.control_points:
                reader.write_control_points(self.source.curve, cps)

    def _set_leaf_coordinates(self, co: np.ndarray) -> None:
        """Object-local coordinates (V, 3) [m] into the leaves mesh (float32, as Blender stores them)."""
        assert self.source.leaves is not None
        mesh = typing.cast(bpy.types.Mesh, self.source.leaves.data)
        mesh.vertices.foreach_set("co", np.ascontiguousarray(co, np.float32).ravel())
        mesh.update()

    def write_pose(self) -> None:
        arm = self.source.armature
        if arm is None:
            for cps in self.control_points_now():
                reader.write_control_points(self.source.curve, cps)
            return
        if self.leaf_mesh is not None:
            self._set_leaf_coordinates(self.leaf_base_coordinates())
        assert arm.pose is not None  # an armature object always has a pose
        pose_bones = arm.pose.bones
        q = self.bone_quaternions()
        if len(self.source.bone_names) == len(pose_bones):
            flat = self._pose_buffer(len(pose_bones))
            flat[self._pose_order(arm)] = q
            pose_bones.foreach_set("rotation_quaternion", flat.ravel())  # float32: Blender's type, copied whole
        else:
            for name, qq in zip(self.source.bone_names, q, strict=True):
                pose_bones[name].rotation_quaternion = qq
        arm.update_tag(refresh={"DATA"})  # foreach_set sends no update: re-evaluate the pose (viewport)

    def _pose_buffer(self, n: int) -> np.ndarray:
        """(n, 4) float32 quaternions of every pose bone, identity where no segment drives one; the driven rows
        are overwritten at every write."""
        buf = getattr(self, "_pose_flat", None)
        if buf is None or buf.shape[0] != n:
            buf = self._pose_flat = np.zeros((n, 4), np.float32)
            buf[:, 0] = 1.0
        return buf

    def _pose_order(self, arm):
        if not hasattr(self, "_order"):
            index = {pb.name: i for i, pb in enumerate(arm.pose.bones)}
            self._order = np.array([index[n] for n in self.source.bone_names], dtype=np.int64)
        return self._order

    def stats(self) -> dict:
        return dict(
            segments=self.model.n_segments,
            joints=self.model.n_joints,
            leaves=0 if self.leaf_mesh is None else int(self.leaf_segments.size),
            ms_per_step=self.ms_per_step,
            iterations=self.iterations,
            residual=self.residual,
        )


class PinSet:
    """Which segments are kinematic, and the poses that drive them.

    Root clamps (anchor segments of ``Pinned Root``) ride on the *carrier*: the tree's armature, or a plain
    curve's own object. When it can move (keys or drivers of its transform, NLA tracks or constraints, on it or
    a parent: :func:`addon.frames.animated`) its world matrix M is read at every simulated frame and the clamps follow
    its motion since the model was read, ``x(t) = M(t) M(t_read)⁻¹ x(rest)`` (a carrier that changes its
    scale, or mirrors or shears, is refused). A *pin object* (the object setting ``Pin To``) holds the
    segment nearest to its origin, and every Hook modifier of a plain curve holds the segment nearest to its
    hooked control points: these segments follow their object's world transform, ``x(t) = M(t) M(t₀)⁻¹
    x(rest)`` with t₀ the start frame. Both are interpolated linearly across a frame's substeps."""

    def __init__(self, model, src, settings, unit: float):
        self.base = model
        self.settings, self.src, self.unit = settings, src, unit
        self.carrier = src.armature or src.curve
        self.carrier_rest = metric(self.carrier.matrix_world, unit)  # where the model was read
        self._choose()

    def _targets(self):
        """(object, world point [m]) of every pin: the pin object's origin, each hook's first hooked point."""
        out = []
        pin_obj = getattr(self.settings, "pin_object", None)
        if pin_obj is not None:
            out.append((pin_obj, metric(pin_obj.matrix_world, self.unit)[:3, 3]))
        if self.src.armature is None:
            out += _hook_targets(self.src.curve, self.unit)
        return out

    def _choose(self) -> None:
        """Pin the segments nearest to the targets where they are now (the scene is at the start frame)."""
        m = self.base
        targets = self._targets()
        segs = [int(nearest_segments(p[None], m.positions, m.orientations, m.lengths)[0]) for _, p in targets]
        pinned = m.pinned.copy()
        pinned[segs] = True
        self.model = _pin_joints(m, pinned, segs, self.settings) if segs else m
        self.objects = [o for o, _ in targets]
        self.segments = np.array(segs, dtype=np.int64)
        order = np.flatnonzero(pinned)  # the simulator's kinematic order
        self._slot = np.searchsorted(order, self.segments)
        self.rest_x = self.model.positions[order].copy()
        self.rest_q = self.model.orientations[order].copy()
        self.driven = bool(segs)
        self.carried = animated(self.carrier)
        # the carrier's motion since carrier_rest: (translation (3,) [m], unit quaternion (4,)); None: none
        self.carrier_motion: tuple[np.ndarray, np.ndarray] | None = None
        self._m0 = [metric(o.matrix_world, self.unit) for o in self.objects]
        self._frames = FramePoses(*self._current_poses())

    def _read_carrier(self) -> None:
        m = metric(self.carrier.matrix_world, self.unit)
        if np.array_equal(m, self.carrier_rest):
            self.carrier_motion = None  # the exact rest arrays: a carrier back at rest changes nothing
            return
        rel = m @ np.linalg.inv(self.carrier_rest)
        a = rel[:3, :3]
        if np.abs(a.T @ a - np.eye(3)).max() > CARRIER_TOLERANCE or np.linalg.det(a) < 0.0:
            raise ValueError(
                f"'{self.carrier.name}' changes its scale (or mirrors or shears) during the simulation: Stiff Rods "
                "follows a carrier that moves and turns; keep its scale constant"
            )
        self.carrier_motion = rigid(rel)

    def _current_poses(self) -> tuple[np.ndarray, np.ndarray]:
        x, q = self.rest_x.copy(), self.rest_q.copy()
        if self.carrier_motion is not None:
            t, r = self.carrier_motion
            r = np.broadcast_to(r, q.shape)
            x, q = quat.rotate(r, x) + t, quat.multiply(r, q)
        for i, (obj, m0) in enumerate(zip(self.objects, self._m0, strict=True)):
            rel = metric(obj.matrix_world, self.unit) @ np.linalg.inv(m0)
            slot = self._slot[i]
            x[slot] = rel[:3, :3] @ self.rest_x[slot] + rel[:3, 3]
            r = quat.from_matrix(rotation(rel)[None])[0]
            q[slot] = quat.multiply(r[None], self.rest_q[slot][None])[0]
        return x, q

    def read(self, t: float, first: bool = False) -> None:
        """Take the carrier's and the pin objects' poses of the frame at time ``t`` [s] (the scene is at that
        frame). ``first``: the simulation starts here, so the pins' poses now are the ones that hold the rest
        shape."""
        if first:
            self._choose()
        if self.carried:
            self._read_carrier()
        self._frames.read(t, *self._current_poses(), first=first)

    def driver(self, t: float):
        return self._frames.at(t)


WORLD_AXES = {"ROD": None, "X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}
PIN_HINGE_TOLERANCE = np.radians(5.0)  # a Pin Joint hinge's world axis to the held rod's nearest section axis


def _refuse_combinations(obj, settings, ss, src) -> None:
    """ValueError naming the settings that cannot go together (before anything is built)."""
    if settings.rod_model in SEED_MODELS:
        name = SEED_MODELS[settings.rod_model]
        if src.armature is not None:
            raise ValueError(
                f"Rod Model '{name}' simulates curves, one rod per spline; a Sapling tree needs a Stiff Rods model"
            )
        chosen = [
            label
            for label, on in (
                (f"Root Joint '{settings.root_joint.title()}'", settings.pin_root and settings.root_joint != "CLAMP"),
                ("Stretch 'Physical'", settings.stretch == "PHYSICAL"),
                ("Rest Shape 'Straight'", settings.rest_shape == "STRAIGHT"),
                ("Integrator 'BDF2'", ss.integrator == "BDF2"),
                ("Damping Ratio", ss.use_damping_ratio),
            )
            if on
        ]
        if chosen:
            raise ValueError(
                f"'{obj.name}': Rod Model '{name}' clamps its root and steps by its own scheme: {', '.join(chosen)} "
                "need a Stiff Rods model"
            )
    if settings.rest_shape == "STRAIGHT" and src.armature is not None:
        raise ValueError(f"'{obj.name}': Rest Shape 'Straight' is for curves; a Sapling tree rests as grown")


def _pin_joints(model, pinned, segs, settings):
    """``model`` with the segments ``segs`` pinned (by Pin To and hooks) and their joints to free neighbours of
    the kind ``Pin Joint``; the rest Darboux vectors kept (a Straight rest shape stays straight)."""
    kind = getattr(settings, "pin_joint", "CLAMP")
    changes: dict = {"pinned": pinned}
    if kind != "CLAMP":
        arrays = model.input_joint_arrays()
        jp, jc = arrays["joint_parent"], arrays["joint_child"]
        held = np.zeros(model.n_segments, bool)
        held[segs] = True
        at = np.flatnonzero((held[jp] & ~pinned[jc]) | (held[jc] & ~pinned[jp]))
        kinds = np.array(arrays.get("joint_kind", np.zeros(jp.size, np.int64)))
        axes = np.array(arrays.get("joint_axis", np.tile([0.0, 0.0, 1.0], (jp.size, 1))))
        kinds[at] = JOINT_KINDS.index(kind.lower())
        world = WORLD_AXES[getattr(settings, "pin_axis", "ROD")]
        for j in at:
            axes[j] = _pin_axis(kind, world, model.orientations[jp[j]], model.orientations[jc[j]])
        changes.update(joint_kind=kinds, joint_axis=axes)
    new = model.copy_with(**changes)
    same = new.n_joints == model.n_joints and np.array_equal(new.joint_input_index, model.joint_input_index)
    return new.with_rest_darboux(model.rest_darboux) if same else new


def _pin_axis(kind: str, world, parent_q, child_q) -> np.ndarray:
    """``joint_axis`` of a pin joint: a rail's world direction in the parent's frame; a hinge's section axis of
    the child within PIN_HINGE_TOLERANCE of the world axis (else ValueError); along the rod when ``world`` is
    None."""
    if world is None or kind not in ("RAIL", "HINGE"):
        return np.array([0.0, 0.0, 1.0])
    if kind == "RAIL":
        return quat.rotate_inverse(parent_q, np.asarray(world, float))
    local = quat.rotate_inverse(child_q, np.asarray(world, float))
    i = int(np.argmax(np.abs(local)))
    angle = float(np.arccos(min(1.0, abs(local[i]))))
    if angle > PIN_HINGE_TOLERANCE:
        raise ValueError(
            f"Pin Joint 'Hinge': the world axis is {np.degrees(angle):.0f}° from every section axis of the rod "
            "where it is held; choose the axis nearer the rod's own frame, Along Rod, or a Ball joint"
        )
    out = np.zeros(3)
    out[i] = 1.0
    return out


def _hook_targets(curve, unit: float):
    """(hook object, world position [m] of its first hooked control point) for each Hook modifier."""
    mw = metric(curve.matrix_world, unit)
    flat = []  # control point positions in the curve's index order
    for sp in curve.data.splines:
        if sp.type == "BEZIER":
            for p in sp.bezier_points:  # a Bézier point counts 3 hook indices: handle, point, handle
                flat += [p.handle_left, p.co, p.handle_right]
        else:
            flat += [p.co.xyz for p in sp.points]
    out = []
    for mod in curve.modifiers:
        if mod.type == "HOOK" and mod.object is not None and len(mod.vertex_indices):
            p = np.array(flat[mod.vertex_indices[0]])
            out.append((mod.object, mw[:3, :3] @ p + mw[:3, 3]))
    return out


def _pair_groups(pair_of: np.ndarray, n_pairs: int, vertex: np.ndarray, local: np.ndarray) -> list:
    """The vertices of each (leaf segment, bone) pair gathered by how many a pair has (a leaf's 4–8, mostly
    the same), so one batched product per group moves them: per count m, (pairs (P,), their vertices' rows
    (P m,) in pair order, or a slice when those are consecutive, local coordinates (P, 3, m)) of the vertices
    ``vertex`` with pair ``pair_of`` and coordinates ``local``."""
    by_pair = np.argsort(pair_of, kind="stable")
    count = np.bincount(pair_of, minlength=n_pairs)
    start = np.concatenate(([0], np.cumsum(count)[:-1]))
    groups = []
    for m in np.unique(count[count > 0]):
        pair = np.flatnonzero(count == m)
        rows = by_pair[start[pair][:, None] + np.arange(m)]
        order = np.argsort(vertex[rows[:, 0]], kind="stable")  # a leaf's vertices are mostly consecutive
        pair, rows = pair[order], rows[order]
        target = vertex[rows].ravel()
        if target.size and np.array_equal(target, np.arange(target[0], target[0] + target.size)):
            target = slice(int(target[0]), int(target[0]) + target.size)  # a block copy, not a scatter
        groups.append((pair, target, np.ascontiguousarray(local[rows].transpose(0, 2, 1))))
    return groups


def _solve3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solutions x (n, 3) of ``a x = b`` for (n, 3, 3) matrices by the adjugate (a blend of rotations is well
    conditioned): several times faster than numpy.linalg.solve's batched LU on small matrices."""
    r0, r1, r2 = a[:, 0], a[:, 1], a[:, 2]
    c0, c1, c2 = quat.cross(r1, r2), quat.cross(r2, r0), quat.cross(r0, r1)  # columns of det(a) a⁻¹
    det = np.einsum("ni,ni->n", r0, c0)
    return (c0 * b[:, :1] + c1 * b[:, 1:2] + c2 * b[:, 2:]) / det[:, None]


def material(settings):
    if settings.material == "CUSTOM":
        return settings.youngs_modulus_gpa * 1e9, settings.torsion_modulus_gpa * 1e9, settings.density
    return MATERIALS[settings.material]
