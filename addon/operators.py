"""Operators: Convert, Simulate (live, modal), Bake and Free Bake.

Every operator checks its input before it changes anything, so a failure leaves the scene as it was.
"""
from __future__ import annotations

import json

import bpy
import numpy as np
from bpy.props import IntProperty

from . import keyframes, reader
from .session import SESSIONS, Session

PREV_ACTION = "stiff_rods_previous_action"
PREV_MODES = "stiff_rods_rotation_modes"
PREV_FAKE_USER = "stiff_rods_previous_fake_user"


def _target(context):
    obj = context.active_object
    curve, armature, _ = reader.find_parts(obj)
    return armature or curve


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
        return {"FINISHED"}


def _switch_to_quaternions(arm, names):
    """Put the simulated bones in quaternion mode; return their previous modes and rotation values
    (a pose set by hand, without keys, must come back as it was)."""
    saved = {}
    for n in names:
        pb = arm.pose.bones[n]
        saved[n] = [pb.rotation_mode, list(pb.rotation_quaternion), list(pb.rotation_euler),
                    list(pb.rotation_axis_angle)]
        pb.rotation_mode = "QUATERNION"
    return saved


def _restore_modes(arm, saved):
    for n, (mode, q, e, aa) in saved.items():
        pb = arm.pose.bones.get(n)
        if pb is not None:
            pb.rotation_quaternion = q
            pb.rotation_euler = e
            pb.rotation_axis_angle = aa
            pb.rotation_mode = mode


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
        arm = self.session.source.armature
        if arm is None:
            self.report({"ERROR"}, "Live simulation writes bone poses: select a Sapling tree with an armature")
            return {"CANCELLED"}
        if arm.animation_data and arm.animation_data.action and arm.animation_data.action.get(keyframes.BAKE_TAG):
            self.report({"ERROR"}, f"'{arm.name}' has a Stiff Rods bake: Free Bake first")
            return {"CANCELLED"}
        self.session.reset(context.scene.frame_current)
        self.modes = _switch_to_quaternions(arm, self.session.source.bone_names)
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
            except Exception as exc:   # a failed step must not leave a timer behind
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
        _restore_modes(self.session.source.armature, self.modes)
        context.scene.frame_set(self.session.start_frame)


def step_live(session: Session, scene) -> None:
    """One tick of the live simulation: one frame of physics, pose written, timeline advanced.
    This is the whole body of the modal timer, testable without a window."""
    session.advance_frame()
    session.write_pose()
    scene.frame_current = session.frame


class STIFF_RODS_OT_bake(bpy.types.Operator):
    """Simulate a frame range and bake it to plain keyframes (the user's action is kept)"""
    bl_idname = "stiff_rods.bake"
    bl_label = "Bake"
    bl_options = {"REGISTER", "UNDO"}

    frame_start: IntProperty(name="Start", default=-1, description="First frame (−1: the scene's start)")
    frame_end: IntProperty(name="End", default=-1, description="Last frame (−1: the scene's end)")

    def execute(self, context):
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
        arm = s.source.armature
        if arm is None:
            self.report({"ERROR"}, "Baking writes bone keyframes: select a Sapling tree with an armature "
                                   "(curve baking is not available yet)")
            return {"CANCELLED"}
        anim = arm.animation_data
        if anim and anim.action and anim.action.get(keyframes.BAKE_TAG):
            self.report({"ERROR"}, f"'{arm.name}' already has a Stiff Rods bake: Free Bake first")
            return {"CANCELLED"}
        # simulate first: a failure here leaves the scene untouched
        s.reset(start)
        n = end - start + 1
        quats = np.empty((n, len(s.source.bone_names), 4))
        quats[0] = s.bone_quaternions()
        wm = context.window_manager
        wm.progress_begin(0, n)
        try:
            for i in range(1, n):
                s.advance_frame()
                quats[i] = s.bone_quaternions()
                wm.progress_update(i)
        except Exception as exc:
            self.report({"ERROR"}, f"Bake failed at frame {start + i}: {exc}")
            return {"CANCELLED"}
        finally:
            wm.progress_end()
        previous = anim.action if anim else None
        if previous is not None:
            arm[PREV_FAKE_USER] = previous.use_fake_user
            previous.use_fake_user = True            # kept, not overwritten
            arm[PREV_ACTION] = previous.name
        arm[PREV_MODES] = json.dumps(_switch_to_quaternions(arm, s.source.bone_names))
        action = keyframes.new_bake_action(arm)
        written = keyframes.write_bone_quaternions(action, arm, s.source.bone_names,
                                                   np.arange(start, end + 1), quats)
        self.report({"INFO"}, f"Baked {len(s.source.bone_names)} bones × {n} frames ({written} F-curves)")
        return {"FINISHED"}


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
        anim = owner.animation_data
        action = anim.action if anim else None
        if action is None or not action.get(keyframes.BAKE_TAG):
            self.report({"ERROR"}, f"'{owner.name}' has no Stiff Rods bake to free")
            return {"CANCELLED"}
        previous = bpy.data.actions.get(owner.get(PREV_ACTION, ""))
        anim.action = previous
        if previous is not None and PREV_FAKE_USER in owner:
            previous.use_fake_user = bool(owner[PREV_FAKE_USER])
        bpy.data.actions.remove(action)
        if owner.type == "ARMATURE" and PREV_MODES in owner:
            _restore_modes(owner, json.loads(owner[PREV_MODES]))
        for key in (PREV_ACTION, PREV_MODES, PREV_FAKE_USER):
            if key in owner:
                del owner[key]
        self.report({"INFO"}, f"Freed the Stiff Rods bake of '{owner.name}'")
        return {"FINISHED"}


classes = (STIFF_RODS_OT_convert, STIFF_RODS_OT_simulate, STIFF_RODS_OT_bake, STIFF_RODS_OT_free_bake)
