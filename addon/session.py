"""A running simulation of one Blender tree or curve: read → build → write.

Kept in memory per object (not saved in the .blend): Convert builds it, Simulate and Bake advance it. A Session
reads the settings (:mod:`addon.settings` → :class:`addon.spec.SimulationSpec`) and the geometry
(:mod:`addon.reader`), has :mod:`addon.builder` make the solver objects, and writes the simulated pose back to
the armature, the curve and the leaves.

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

from ..solver import quaternion as quat
from . import builder, kinematics, leaf_skinning, reader, settings
from .bone_maps import BoneRotations, bone_segments
from .colliders import SceneCollider, collision_objects
from .frames import metric, rotation, unit_scale
from .pins import PinSet

SESSIONS: dict[str, Session] = {}  # object name → session


def bake_quality(scene) -> bool:
    """True when the scene's Preview Quality is Bake: the live preview steps with Bake's substeps and iterations
    (every iteration factorised) instead of the Live Iterations and Live Matrix Reuse."""
    return getattr(scene.stiff_rods, "preview_quality", "FAST") == "BAKE"


class Session:
    def __init__(self, obj: bpy.types.Object, scene: bpy.types.Scene):
        self.wind = None  # addon.wind.SceneWind, set by the operators when the scene has wind
        self._build(obj, scene)

    # -------------------------------------------------------------- read and build
    def _build(self, obj: bpy.types.Object, scene: bpy.types.Scene) -> None:
        """Read the tree or curve ``obj`` and its settings from the scene as it is now."""
        self.object = obj
        self.spec = spec = settings.simulation_spec(obj, scene)
        rod = spec.rod
        self.unit = spec.scene.unit  # metres per Blender unit
        src = reader.read_tree(
            obj, default_radius=rod.default_radius, segment_length=rod.segment_length, unit=self.unit
        )
        is_tree = src.armature is not None
        builder.refuse_combinations(obj.name, rod, spec.scene, is_tree)
        model, self.branch_map = builder.tree_model(rod, src.branches, src.parents)
        self.source = src
        self.leaf_mesh: reader.LeafMesh | None = None
        self.leaf_coordinates_shown: np.ndarray | None = None  # the leaves' base coordinates last written
        if rod.use_leaves and is_tree and src.leaves is not None:
            model = self._attach_leaves(model, src)
        self.owner_name = (src.armature or src.curve).name
        self.gravity = np.array(spec.scene.gravity)
        self.pins = PinSet(model, src, settings.pin_settings(obj), self.unit)  # the model with pinned segments
        self._rest = builder.RestModels(builder.loaded_rest(rod, is_tree), self.gravity, rod.seed_model is not None)
        self.model = self._rest(self.pins.model)
        self.run = spec.scene.solver.run(live=False)
        self.colliders = self._read_colliders(scene)
        self.frame = self.start_frame = scene.frame_current
        self.sim = self._make_sim()
        self.ms_per_step = 0.0
        self.iterations = 0.0
        self.residual = 0.0
        if is_tree:
            self._bind_bones(src)
        else:
            self.curve_matrix = metric(src.curve.matrix_world, self.unit)
            self.curve_binding = builder.bind_control_points(
                src.control_points, self.branch_map.span_segment, self.curve_matrix, self.model
            )

    def _bind_bones(self, src) -> None:
        """Each bone's segment, its rest frame and the armature's rotation: the map from segments to bones."""
        self.bone_segment = bone_segments(self.branch_map.span_segment, src.bone_span)
        bones = typing.cast(bpy.types.Armature, src.armature.data).bones
        rest = np.array([np.array(bones[n].matrix_local)[:3, :3] for n in src.bone_names])
        self.bone_rest = quat.from_matrix(rest) if len(rest) else np.zeros((0, 4))
        self.armature_rotation = quat.from_matrix(rotation(src.armature.matrix_world))
        # every rest model of this session (pins, pre-stress) shares the drawn orientations
        self.bone_rotations = BoneRotations(
            self.model.orientations[self.bone_segment], self.bone_rest, src.bone_parent, self.armature_rotation
        )

    def _attach_leaves(self, model, src):
        """Every leaf a plate segment jointed to its branch (:func:`addon.builder.attach_leaf_segments`)."""
        lm = reader.read_leaf_mesh(src.leaves, src.bone_names, self.unit)
        if lm is None:
            return model
        model, self.leaf_segments, self.leaf_binding = builder.attach_leaf_segments(
            model, self.branch_map, lm, src.branches, src.curves
        )
        self.leaf_mesh = lm
        return model

    def _read_colliders(self, scene):
        """The scene's Collision objects (addon/colliders.py), shaped where they are now (the start frame);
        ``skipped_colliders`` gets a warning for each one that has no shape to collide with."""
        self.skipped_colliders: list[str] = []
        if not self.spec.rod.collide:
            return []
        src = self.source
        objects, self.skipped_colliders = collision_objects(scene, exclude=(src.armature, src.curve, src.leaves))
        return [SceneCollider(o, self.unit) for o in objects]

    def _make_sim(self):
        pins = self.pins
        inputs = builder.SceneInputs(
            kinematic=pins.driver if pins.driven or pins.carried else None,
            driven=pins.driven,
            carried=pins.carried,
            carrier_name=pins.carrier.name,
            wind=self.wind,
            colliders=[c.collider for c in self.colliders],
        )
        if self.spec.rod.seed_model is not None:
            src = self.source
            return builder.make_rod_set(
                self.spec, self.model, self.run, inputs, src.branches, self.branch_map.span_segment
            )
        return builder.make_simulator(self.spec, self.model, self.run, inputs, self.owner_name)

    # -------------------------------------------------------------- what the operators read
    @property
    def material(self) -> tuple[float, float, float]:
        """(E [Pa], G [Pa], ρ [kg/m³]) of the rods."""
        return self.spec.rod.material

    @property
    def rod_model(self) -> str:
        return self.spec.rod.rod_model

    @property
    def pin_root(self) -> bool:
        return self.spec.rod.pin_root

    @property
    def add_bones(self) -> bool:
        return self.spec.rod.add_bones

    @property
    def rupture_strain(self) -> float | None:
        return self.spec.rod.rupture_strain

    @property
    def frame_time(self) -> float:
        """Seconds per frame."""
        return self.spec.scene.frame_time

    @property
    def substeps(self) -> int:
        return self.run.substeps

    @property
    def prestress_capped(self) -> int:
        """Joints too soft to hold their drawn bend under gravity, pre-stressed to 90° at most."""
        return self._rest.capped

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
            self.run = settings.solver_spec(scene).run(live and not bake_quality(scene))
            self.colliders = self._read_colliders(scene)  # shaped where they are at the start frame
            self.pins.pin_object, self.pins.pin_joint, self.pins.pin_axis = settings.pin_settings(self.object)
            self._read_scene(scene, frame, first=True)
            self.model = self._rest(self.pins.model)  # pins are chosen where their objects are at the start
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

    # -------------------------------------------------------------- the simulated state
    def frame_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Positions (n, 3) [m] and orientations (n, 4) of the segments as seen from the carrier: moved back by
        the carrier's motion since the model was read (:class:`addon.pins.PinSet`), so the armature, curve and
        leaves, which ride on the carrier, take them in their frames as they were read. The simulator's own
        arrays while the carrier is where it was read."""
        return kinematics.seen_from_carrier(self.sim.positions, self.sim.orientations, self.pins.carrier_motion)

    def bone_quaternions(self) -> np.ndarray:
        """Pose-bone local rotations (n_bones, 4) that make every bone follow its segment.

        With ΔA the segment's rotation since rest in armature space and Q the bone's rest rotation,
        a bone's pose-space rotation is ``Q⁻¹ (ΔA_parent⁻¹ ΔA) Q`` (rotation keys only: heads follow
        the parent chain because the joints hold them); see :class:`addon.bone_maps.BoneRotations`."""
        return self.bone_rotations(self.frame_state()[1][self.bone_segment])

    def leaf_vertices_world(self) -> np.ndarray:
        """World positions (V, 3) [m] of the leaves mesh's vertices as seen from the carrier
        (:meth:`frame_state`): a leaf's carried by its leaf segment, a vertex of no leaf at rest."""
        assert self.leaf_mesh is not None
        return leaf_skinning.vertices_world(self.leaf_mesh, self.leaf_binding, *self.frame_state())

    def leaf_base_coordinates(self) -> np.ndarray:
        """Leaves-mesh coordinates (V, 3), object-local, that the Armature modifier (the bones following
        their segments) deforms exactly onto :meth:`leaf_vertices_world`
        (:func:`addon.leaf_skinning.base_coordinates`). So leaves play back with plain Blender: a Mesh Cache of
        these coordinates under the tree's own Armature modifier."""
        assert self.leaf_mesh is not None
        cache = getattr(self, "_leaf_blend_cache", None)
        if cache is None or cache["binding"] is not self.leaf_binding or cache["model"] is not self.model:
            cache = leaf_skinning.leaf_blend(self.leaf_mesh, self.leaf_binding, self.bone_segment, self.model)
            self._leaf_blend_cache = cache
        return leaf_skinning.base_coordinates(self.leaf_mesh, self.leaf_binding, cache, *self.frame_state())

    def control_points_now(self):
        """The curve's control points (object-local) carried by the simulated segments."""
        points = builder.carried_control_points(self.curve_binding, *self.frame_state(), self.curve_matrix)
        out = []
        for cps, pts in zip(self.source.control_points, points, strict=True):
            k = cps.co.shape[0]
            handles = (pts[k : 2 * k], pts[2 * k :]) if cps.bezier else (None, None)
            out.append(reader.ControlPoints(cps.spline, cps.bezier, pts[:k], *handles, cps.w))
        return out

    # -------------------------------------------------------------- back to Blender
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
            self.leaf_coordinates_shown = self.leaf_base_coordinates()  # the preview's recording takes them too
            self._set_leaf_coordinates(self.leaf_coordinates_shown)
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
