"""Operators: Convert, Simulate (live, modal), Bake and Free Bake.

Every operator checks its input before it changes anything, so a failure leaves the scene as it was.
"""

from __future__ import annotations

import json
import os
import time

import bpy
import numpy as np
from bpy.props import IntProperty

from ..solver.core import quaternion as quat
from . import bones, keyframes, point_cache, reader, wind
from .session import SESSIONS, Session

PREV_ACTION = "stiff_rods_previous_action"
PREV_MODES = "stiff_rods_rotation_modes"
PREV_FAKE_USER = "stiff_rods_previous_fake_user"
PREV_POINTS = "stiff_rods_rest_points"
PREV_LEAF_CACHE = "stiff_rods_leaf_cache"


def _target(context):
    obj = context.active_object
    curve, armature, _ = reader.find_parts(obj)
    return armature or curve


def _report_skipped_colliders(op, s: Session) -> None:
    """A WARNING for each Collision object ``s`` left out of its colliders when it last read them."""
    for message in s.skipped_colliders:
        op.report({"WARNING"}, message)


def _session(context, rebuild=False) -> Session:
    owner = _target(context)
    s = SESSIONS.get(owner.name)
    if s is None or rebuild:
        s = Session(owner, context.scene)
        SESSIONS[owner.name] = s
    return s


class STIFF_RODS_OT_convert(bpy.types.Operator):
    """Build the stiff-rod model of the selected Sapling tree or curve"""

    bl_idname = "stiff_rods.convert"
    bl_label = "Convert"
    bl_options = {"REGISTER"}

    def execute(self, context):
        try:
            s = _session(context, rebuild=True)
        except (reader.ReadError, ValueError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        st = s.stats()
        self.report({"INFO"}, f"Stiff Rods: {st['segments']} segments, {st['joints']} joints")
        _report_skipped_colliders(self, s)
        if s.prestress_capped:
            self.report(
                {"WARNING"},
                f"{s.prestress_capped} joints are too soft to hold their drawn bend under "
                "gravity (more than 90°): they sag from it (Rest Shape 'Loaded')",
            )
        return {"FINISHED"}


def _switch_to_quaternions(arm, names):
    """Put the simulated bones in quaternion mode; return their previous modes and rotation values
    (a pose set by hand, without keys, must come back as it was)."""
    saved = {}
    for n in names:
        pb = arm.pose.bones[n]
        saved[n] = [
            pb.rotation_mode,
            list(pb.rotation_quaternion),
            list(pb.rotation_euler),
            list(pb.rotation_axis_angle),
        ]
        pb.rotation_mode = "QUATERNION"
    return saved


def _keep_previous_action(obj, holder) -> None:
    """Before a bake replaces ``holder``'s action (the armature, or a curve's data): remember it on
    ``obj`` for Free Bake and give it a fake user, so it is kept, never overwritten."""
    anim = holder.animation_data
    previous = anim.action if anim else None
    if previous is not None:
        obj[PREV_FAKE_USER] = previous.use_fake_user
        previous.use_fake_user = True
        obj[PREV_ACTION] = previous.name


def _restore_points(curve, saved):
    """Control points as they were before the bake (removing the keys leaves the last evaluated frame)."""
    for spline, co, hl, hr in saved:
        if spline >= len(curve.data.splines):
            continue
        cps = reader.read_control_points(curve, spline)
        if len(co) != cps.co.shape[0]:
            continue  # the user edited the curve since: leave it
        cps.co = np.array(co)
        if cps.bezier:
            cps.handle_left, cps.handle_right = np.array(hl), np.array(hr)
        reader.write_control_points(curve, cps)


def _remove_leaf_cache(info):
    leaves = bpy.data.objects.get(info["object"])
    mod = leaves.modifiers.get(info["modifier"]) if leaves is not None else None
    if mod is not None and mod.type == "MESH_CACHE":
        leaves.modifiers.remove(mod)
    if os.path.isfile(info["file"]):
        os.remove(info["file"])


def _restore_modes(arm, saved):
    """The rotation modes and values :func:`_switch_to_quaternions` saved. The mode first: setting
    ``rotation_mode`` converts the current rotation into the new mode's values, overwriting them."""
    for n, (mode, q, e, aa) in saved.items():
        pb = arm.pose.bones.get(n)
        if pb is not None:
            pb.rotation_mode = mode
            pb.rotation_quaternion = q
            pb.rotation_euler = e
            pb.rotation_axis_angle = aa


class STIFF_RODS_OT_simulate(bpy.types.Operator):
    """Simulate live while the timeline plays; Esc or right-click stops and restores the rest pose"""

    bl_idname = "stiff_rods.simulate"
    bl_label = "Simulate"
    bl_options = {"REGISTER"}

    _timer = None

    def invoke(self, context, event):
        try:
            self.session = _session(context)
        except (reader.ReadError, ValueError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if _baked_action(_keyed_id(self.session)) is not None:
            self.report({"ERROR"}, f"'{self.session.owner_name}' has a Stiff Rods bake: Free Bake first")
            return {"CANCELLED"}
        try:
            self.session.set_wind(wind.SceneWind.from_scene(context.scene))
            self.session.reset(context.scene.frame_current, context.scene, live=True)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        _report_skipped_colliders(self, self.session)
        arm = self.session.source.armature
        self.modes = _switch_to_quaternions(arm, self.session.source.bone_names) if arm else {}
        fps = context.scene.render.fps / context.scene.render.fps_base
        self._timer = context.window_manager.event_timer_add(1.0 / fps, window=context.window)
        context.window_manager.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        if event.type in {"ESC", "RIGHTMOUSE"}:
            self._stop(context)
            return {"CANCELLED"}
        if event.type == "TIMER":
            try:
                step_live(self.session, context.scene)
            except Exception as exc:  # a failed step must not leave a timer behind
                self._stop(context)
                self.report({"ERROR"}, f"Simulation stopped: {exc}")
                return {"CANCELLED"}
            for area in context.screen.areas if context.screen else ():
                if area.type == "VIEW_3D":
                    area.tag_redraw()
        return {"PASS_THROUGH"}

    def _stop(self, context):
        if self._timer is not None:
            context.window_manager.event_timer_remove(self._timer)
            self._timer = None
        if self.session.source.armature is not None:
            _restore_modes(self.session.source.armature, self.modes)
        self.session.write_rest()
        context.scene.frame_set(self.session.start_frame)


def step_live(session: Session, scene) -> None:
    """One tick of the live simulation: one frame of physics, pose written, timeline advanced.
    This is the whole body of the modal timer, testable without a window."""
    session.advance_frame(scene)
    session.write_pose()
    if scene.frame_current != session.frame:
        scene.frame_current = session.frame


def _keyed_id(session: Session):
    """The datablock a bake animates: the armature object, or a plain curve's Curve data."""
    return session.source.armature or session.source.curve.data


def _baked_action(holder):
    anim = holder.animation_data
    action = anim.action if anim else None
    return action if action is not None and action.get(keyframes.BAKE_TAG) else None


class BakeRun:
    """The simulation half of a bake, one frame per :meth:`step`, so a modal operator can show progress
    and be cancelled between frames; nothing in the scene is changed except the current frame, which
    :meth:`close` gives back."""

    def __init__(self, scene, session: Session, start: int, end: int, extra_segments=None):
        self.scene, self.session, self.start, self.end = scene, session, start, end
        self.frame_before = scene.frame_current
        # one sample per frame: the bone segments' orientations (k, 4), or a curve's list of ControlPoints
        self.frames: list[np.ndarray | list] = []
        if session.source.armature is not None:  # world orientations of the bones' segments (and of the
            seg = session.bone_segment  # segments of bones the bake will add), made local at the end
            if extra_segments is not None:
                seg = np.concatenate((seg, extra_segments))
            self.sample = lambda: session.sim.orientations[seg].copy()
        else:
            self.sample = session.control_points_now
        self.leaf_frames: list[np.ndarray] = []  # float32 leaf-mesh base coordinates per frame
        try:
            session.reset(start, scene)
            self._take()
        except Exception:
            self.close()
            raise

    def _take(self) -> None:
        self.frames.append(self.sample())
        if self.session.leaf_mesh is not None:
            self.leaf_frames.append(self.session.leaf_base_coordinates().astype(np.float32))

    @property
    def done(self) -> bool:
        return self.start + len(self.frames) > self.end

    @property
    def frame(self) -> int:
        return self.start + len(self.frames)

    def step(self) -> None:
        self.session.advance_frame(self.scene)
        self._take()

    def close(self) -> None:
        if self.scene.frame_current != self.frame_before:
            self.scene.frame_set(self.frame_before)


class STIFF_RODS_OT_bake(bpy.types.Operator):
    """Simulate a frame range and bake it to plain keyframes (the user's action is kept)"""

    bl_idname = "stiff_rods.bake"
    bl_label = "Bake"
    bl_options = {"REGISTER", "UNDO"}

    frame_start: IntProperty(name="Start", default=-1, description="First frame (−1: the scene's start)")
    frame_end: IntProperty(name="End", default=-1, description="Last frame (−1: the scene's end)")

    def _prepare(self, context):
        """Check everything and start the simulation; a set (CANCELLED) on bad input, None when ready."""
        scene = context.scene
        start = scene.frame_start if self.frame_start < 0 else self.frame_start
        end = scene.frame_end if self.frame_end < 0 else self.frame_end
        if end < start:
            self.report({"ERROR"}, f"Bake range is empty: end frame {end} is before start frame {start}")
            return {"CANCELLED"}
        try:
            s = _session(context, rebuild=True)
        except (reader.ReadError, ValueError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if _baked_action(_keyed_id(s)) is not None:
            self.report({"ERROR"}, f"'{s.owner_name}' already has a Stiff Rods bake: Free Bake first")
            return {"CANCELLED"}
        try:
            s.set_wind(wind.SceneWind.from_scene(scene))
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self._run = None
        self._plan = None
        arm = s.source.armature
        try:
            if arm is not None and s.add_bones:
                self._plan = bones.plan_missing_bones(s)
                if self._plan is not None:
                    bones.check_editable(arm)
            self._run = BakeRun(scene, s, start, end, None if self._plan is None else self._plan.segments)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        _report_skipped_colliders(self, s)
        return None

    def _fail(self, exc) -> set:
        frame = self._run.frame if self._run else "?"
        self._finish_run()
        self.report({"ERROR"}, f"Bake failed at frame {frame}: {exc}")
        return {"CANCELLED"}

    def _finish_run(self) -> None:
        if self._run is not None:
            self._run.close()

    def execute(self, context):
        """Blocking bake (scripts, headless): simulate every frame, then write the keys."""
        failed = self._prepare(context)
        if failed:
            return failed
        wm = context.window_manager
        wm.progress_begin(0, self._run.end - self._run.start + 1)
        try:
            while not self._run.done:
                self._run.step()
                wm.progress_update(len(self._run.frames))
        except Exception as exc:  # a failed frame must leave the scene as it was
            return self._fail(exc)
        finally:
            wm.progress_end()
        return self._write(context)

    def invoke(self, context, event):
        """Interactive bake: a few frames per timer tick, progress in the status bar, Esc cancels."""
        if context.window is None:
            return self.execute(context)
        failed = self._prepare(context)
        if failed:
            return failed
        wm = context.window_manager
        wm.progress_begin(0, self._run.end - self._run.start + 1)
        self._timer = wm.event_timer_add(0.001, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        wm = context.window_manager
        if event.type in {"ESC", "RIGHTMOUSE"}:
            self._stop_modal(context)
            self._finish_run()
            self.report({"WARNING"}, "Bake cancelled: nothing was written")
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"RUNNING_MODAL"}
        try:
            t_end = time.perf_counter() + 0.1  # bounded work per tick keeps Blender responsive
            while not self._run.done and time.perf_counter() < t_end:
                self._run.step()
            wm.progress_update(len(self._run.frames))
        except Exception as exc:
            self._stop_modal(context)
            return self._fail(exc)
        if not self._run.done:
            return {"RUNNING_MODAL"}
        self._stop_modal(context)
        return self._write(context)

    def _stop_modal(self, context):
        wm = context.window_manager
        if getattr(self, "_timer", None) is not None:
            wm.event_timer_remove(self._timer)
            self._timer = None
        wm.progress_end()

    def _write(self, context):
        run = self._run
        self._finish_run()
        s, start, end = run.session, run.start, run.end
        arm = s.source.armature
        if arm is not None:
            written, n_bones = self._write_bones(arm, s, np.array(run.frames), start, end, self._plan)
            what = f"{n_bones} bones" + (f" ({len(self._plan.names)} added)" if self._plan else "")
            if run.leaf_frames:
                self._write_leaves(arm, s, np.array(run.leaf_frames), start)
                what += f" and {s.leaf_segments.size} leaves"
                if not bpy.data.filepath:
                    self.report(
                        {"WARNING"},
                        "The file is not saved: the leaves' point cache went to Blender's "
                        "temporary folder; save the file and bake again to keep it",
                    )
        else:
            written = self._write_curve(s, run.frames, start, end)
            what = f"{sum(c.co.shape[0] for c in s.source.control_points)} curve points"
        self.report({"INFO"}, f"Baked {what} × {end - start + 1} frames ({written} F-curves)")
        return {"FINISHED"}

    @staticmethod
    def _write_bones(arm, s, q_seg, start, end, plan) -> tuple:
        """Bone rotation keys from the segments' world orientations per frame ``q_seg`` (F, B, 4), after
        adding the planned bones (addon/bones.py); returns (F-curves written, bones keyed)."""
        names, parent, seg = list(s.source.bone_names), s.source.bone_parent, s.bone_segment
        rest = s.bone_rest
        if plan is not None:
            bones.add_bones(arm, plan)
            index = {n: i for i, n in enumerate(names + plan.names)}
            parent = np.concatenate((parent, [index[p] if p is not None else -1 for p in plan.parents])).astype(
                np.int64
            )
            new_rest = np.array([np.array(arm.data.bones[n].matrix_local)[:3, :3] for n in plan.names])
            rest = np.concatenate((rest, quat.from_matrix(new_rest)))
            names += plan.names
            seg = np.concatenate((seg, plan.segments))
        quats = bones.local_quaternions(q_seg, s.model.orientations[seg], rest, parent, s.armature_rotation)
        _keep_previous_action(arm, arm)
        arm[PREV_MODES] = json.dumps(_switch_to_quaternions(arm, s.source.bone_names))
        action = keyframes.new_bake_action(arm)
        return keyframes.write_bone_quaternions(action, arm, names, np.arange(start, end + 1), quats), len(names)

    @staticmethod
    def _write_leaves(arm, s, frames, start) -> None:
        """The leaves' own motion as a PC2 point cache under their Armature modifier (see
        Session.leaf_base_coordinates); Free Bake removes the modifier and the file."""
        leaves = s.source.leaves
        path, stored = point_cache.cache_path(leaves.name)
        point_cache.write_pc2(path, frames, start)
        mod = point_cache.add_mesh_cache(leaves, stored, start)
        arm[PREV_LEAF_CACHE] = json.dumps({"object": leaves.name, "modifier": mod.name, "file": path})

    @staticmethod
    def _write_curve(s, frames, start, end) -> int:
        """Point keyframes on the Curve data: ``co`` (and Bézier handles) of every control point."""
        curve = s.source.curve
        data = curve.data
        _keep_previous_action(curve, data)
        curve[PREV_POINTS] = json.dumps(
            [
                [
                    c.spline,
                    c.co.tolist(),
                    None if c.handle_left is None else c.handle_left.tolist(),
                    None if c.handle_right is None else c.handle_right.tolist(),
                ]
                for c in s.source.control_points
            ]
        )
        action = keyframes.new_bake_action(data)
        written = 0
        for b, cps in enumerate(s.source.control_points):
            k = cps.co.shape[0]
            kind = "bezier_points" if cps.bezier else "points"
            attrs = ("co", "handle_left", "handle_right") if cps.bezier else ("co",)
            paths = [f"splines[{cps.spline}].{kind}[{j}].{a}" for a in attrs for j in range(k)]
            values = np.stack([np.concatenate([getattr(fr[b], a) for a in attrs]) for fr in frames])
            written += keyframes.write_keys(
                action, data, paths, [f"spline {cps.spline}"] * len(paths), np.arange(start, end + 1), values
            )
        return written


class STIFF_RODS_OT_free_bake(bpy.types.Operator):
    """Remove exactly what Bake added and give the armature back its previous action"""

    bl_idname = "stiff_rods.free_bake"
    bl_label = "Free Bake"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        try:
            owner = _target(context)
        except reader.ReadError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        holder = owner if owner.type == "ARMATURE" else owner.data
        action = _baked_action(holder)
        if action is None:
            self.report({"ERROR"}, f"'{owner.name}' has no Stiff Rods bake to free")
            return {"CANCELLED"}
        previous = bpy.data.actions.get(owner.get(PREV_ACTION, ""))
        holder.animation_data.action = previous
        if previous is not None and PREV_FAKE_USER in owner:
            previous.use_fake_user = bool(owner[PREV_FAKE_USER])
        bpy.data.actions.remove(action)
        if owner.type == "ARMATURE":
            bones.remove_added_bones(owner)
        if owner.type == "ARMATURE" and PREV_MODES in owner:
            _restore_modes(owner, json.loads(owner[PREV_MODES]))
        if owner.type == "CURVE" and PREV_POINTS in owner:
            _restore_points(owner, json.loads(owner[PREV_POINTS]))
        if PREV_LEAF_CACHE in owner:
            _remove_leaf_cache(json.loads(owner[PREV_LEAF_CACHE]))
        for key in (PREV_ACTION, PREV_MODES, PREV_FAKE_USER, PREV_POINTS, PREV_LEAF_CACHE):
            if key in owner:
                del owner[key]
        self.report({"INFO"}, f"Freed the Stiff Rods bake of '{owner.name}'")
        return {"FINISHED"}


class STIFF_RODS_OT_storm_preset(bpy.types.Operator):
    """Calm → storm (30 m/s) → calm over the scene's frame range, with gusts and turbulence"""

    bl_idname = "stiff_rods.storm_preset"
    bl_label = "Storm Preset"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        scene = context.scene
        ss = scene.stiff_rods
        a, b = scene.frame_start, scene.frame_end
        if b <= a:
            self.report({"ERROR"}, f"The scene's frame range {a}–{b} is too short for a storm")
            return {"CANCELLED"}
        span = b - a
        ss.use_storm = True
        ss.storm_frame_start = a
        ss.storm_frame_peak_start = a + round(0.25 * span)
        ss.storm_frame_peak_end = a + round(0.55 * span)
        ss.storm_frame_end = a + round(0.75 * span)
        ss.storm_peak_speed, ss.storm_gusts, ss.storm_turbulence = 30.0, 0.25, 0.15
        self.report(
            {"INFO"},
            f"Storm: rises from frame {a}, 30 m/s from {ss.storm_frame_peak_start} to "
            f"{ss.storm_frame_peak_end}, calm from {ss.storm_frame_end}",
        )
        return {"FINISHED"}


classes = (
    STIFF_RODS_OT_storm_preset,
    STIFF_RODS_OT_convert,
    STIFF_RODS_OT_simulate,
    STIFF_RODS_OT_bake,
    STIFF_RODS_OT_free_bake,
)
