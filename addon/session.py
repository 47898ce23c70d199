"""A running simulation of one Blender tree or curve: solver model + the map back to bones.

Kept in memory per object (not saved in the .blend): Convert builds it, Simulate and Bake advance it.
"""
from __future__ import annotations

import time

import bpy
import numpy as np

from ..solver import Simulator, quaternion as quat
from ..solver.tree_builder import tree_from_branches
from . import reader

SESSIONS: dict[str, "Session"] = {}      # object name → session

MATERIALS = {  # E [Pa], G [Pa], ρ [kg/m³]
    "WOOD": (12.5e9, 6.5e9, 1000.0),      # Deul §5, trunk and branches of their Sapling trees
    "LEAF": (1.2e9, 0.6e9, 1000.0),       # Deul §5, leaves
    "STEEL": (209e9, 79e9, 7800.0),       # the authors' Wilberforce spring
    "RUBBER": (0.05e9, 0.017e9, 1100.0),
}


class Session:
    def __init__(self, obj: bpy.types.Object, scene: bpy.types.Scene):
        settings = obj.stiff_rods
        ss = scene.stiff_rods
        src = reader.read_tree(obj, default_radius=settings.default_radius, segment_length=settings.segment_length)
        youngs, torsion, density = material(settings)
        self.model, self.branch_map = tree_from_branches(
            src.branches, parents=src.parents, youngs_modulus=youngs, torsion_modulus=torsion,
            density=density, pin_roots=settings.pin_root)
        self.source = src
        fps = scene.render.fps / scene.render.fps_base
        gravity = np.array(scene.gravity) if (ss.use_scene_gravity and scene.use_gravity) else np.zeros(3)
        self.substeps = ss.substeps
        self.sim = Simulator(self.model, dt=1.0 / (fps * ss.substeps), max_iterations=ss.iterations,
                             tolerance=ss.tolerance, gravity=gravity, damping=settings.damping)
        self.owner_name = (src.armature or src.curve).name
        self.frame = scene.frame_current
        self.start_frame = scene.frame_current
        self.ms_per_step = 0.0
        self.iterations = 0
        self.residual = 0.0
        if src.armature is not None:
            self.bone_segment = np.array([self.branch_map.span_segment[b][k] for b, k in src.bone_span], dtype=np.int64)
            rest = np.array([np.array(src.armature.data.bones[n].matrix_local)[:3, :3] for n in src.bone_names])
            self.bone_rest = quat.from_matrix(rest) if len(rest) else np.zeros((0, 4))
            self.armature_rotation = quat.from_matrix(_rotation(src.armature.matrix_world))

    # -------------------------------------------------------------- stepping
    def reset(self, frame: int) -> None:
        self.sim = Simulator(self.model, dt=self.sim.dt, max_iterations=self.sim.max_iterations,
                             tolerance=self.sim.tolerance, gravity=self.sim.gravity, damping=self.sim.damping)
        self.frame = self.start_frame = frame

    def advance_frame(self) -> None:
        """One frame of simulation: ``substeps`` solver steps."""
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
        the parent chain because the joints hold them)."""
        m = self.model
        q_now = self.sim.orientations[self.bone_segment]
        q_rest = m.orientations[self.bone_segment]
        d_world = quat.multiply(q_now, quat.conjugate(q_rest))
        qa = np.broadcast_to(self.armature_rotation, d_world.shape)
        d_arm = quat.multiply(quat.multiply(quat.conjugate(qa), d_world), qa)
        parent = self.source.bone_parent
        d_parent = np.where((parent >= 0)[:, None], d_arm[np.maximum(parent, 0)], [1.0, 0.0, 0.0, 0.0])
        x = quat.multiply(quat.conjugate(d_parent), d_arm)
        local = quat.multiply(quat.multiply(quat.conjugate(self.bone_rest), x), self.bone_rest)
        return np.where(local[:, :1] < 0.0, -local, local)   # a continuous, shortest-arc sign for keys

    def write_pose(self) -> None:
        arm = self.source.armature
        if arm is None:
            return
        pose_bones = arm.pose.bones
        q = self.bone_quaternions()
        if len(self.source.bone_names) == len(pose_bones):
            order = self._pose_order(arm)
            flat = np.empty((len(pose_bones), 4)); flat[:] = [1.0, 0, 0, 0]
            flat[order] = q
            pose_bones.foreach_set("rotation_quaternion", flat.ravel())
        else:
            for name, qq in zip(self.source.bone_names, q):
                pose_bones[name].rotation_quaternion = qq

    def _pose_order(self, arm):
        if not hasattr(self, "_order"):
            index = {pb.name: i for i, pb in enumerate(arm.pose.bones)}
            self._order = np.array([index[n] for n in self.source.bone_names], dtype=np.int64)
        return self._order

    def stats(self) -> dict:
        return dict(segments=self.model.n_segments, joints=self.model.n_joints, ms_per_step=self.ms_per_step,
                    iterations=self.iterations, residual=self.residual)


def material(settings):
    if settings.material == "CUSTOM":
        return settings.youngs_modulus_gpa * 1e9, settings.torsion_modulus_gpa * 1e9, settings.density
    return MATERIALS[settings.material]


def _rotation(matrix) -> np.ndarray:
    m = np.array(matrix)[:3, :3]
    return m / np.linalg.norm(m, axis=0, keepdims=True)
