"""Operators: Convert, Simulate (live, modal), Storm Preset; Bake and Free Bake live in addon/ops_bake.py and
addon/ops_free_bake.py, the baking itself in addon/bake.py, the checks in addon/checks.py.

Every operator checks its input before it changes anything, so a failure leaves the scene as it was.
"""

from __future__ import annotations

import bpy

from . import live_preview, ops_common, ops_preview_bake, reader, wind
from .bake import PREV_LEAF_CACHE, BakeRun, baked_action, keyed_id, restore_modes, switch_to_quaternions  # noqa: F401
from .checks import RUNNING, active_tree, check_bake, check_editable, check_not_running, tree_session, up_to_date  # noqa: F401
from .ops_bake import STIFF_RODS_OT_bake
from .ops_free_bake import STIFF_RODS_OT_free_bake
from .session import SESSIONS, Session

# The names scripts, tests and the panel used when the bake pipeline (addon/bake.py) and the checks
# (addon/checks.py) lived here (PREV_LEAF_CACHE, BakeRun, check_bake and up_to_date above too).
_target, _session = active_tree, tree_session
_switch_to_quaternions, _restore_modes, _baked_action = switch_to_quaternions, restore_modes, baked_action


class STIFF_RODS_OT_convert(bpy.types.Operator):
    """Build the stiff-rod model of the selected Sapling trees and curves (or of the Forest Collection's)"""

    bl_idname = "stiff_rods.convert"
    bl_label = "Convert"
    bl_options = {"REGISTER"}

    def execute(self, context):
        ops_common.prepare_solver(self)
        found = ops_common.chosen(context, check=False)
        owners = [None] if found is None else ops_common.owners(found)
        if found is not None:
            ops_common.report_refused(self, found)
            if not owners:
                return ops_common.nothing_chosen(self, found)
        built = []
        for owner in owners:
            try:
                s = tree_session(context, rebuild=True, owner=owner)
            except (reader.ReadError, ValueError) as exc:
                if found is None:
                    self.report({"ERROR"}, str(exc))
                    return {"CANCELLED"}
                self.report({"WARNING"}, f"'{owner.name}' left out: {exc}")
                continue
            built.append(s)
            ops_common.report_skipped_colliders(self, s)
            if s.prestress_capped:
                self.report(
                    {"WARNING"},
                    f"{s.prestress_capped} joints are too soft to hold their drawn bend under "
                    "gravity (more than 90°): they sag from it (Rest Shape 'Loaded')"
                    + ("" if found is None else f" in '{s.owner_name}'"),
                )
        if not built:
            self.report({"ERROR"}, "No tree or curve could be converted")
            return {"CANCELLED"}
        segments = sum(s.stats()["segments"] for s in built)
        joints = sum(s.stats()["joints"] for s in built)
        trees = "" if found is None else f"{len(built)} of {len(owners)} trees, "
        self.report({"INFO"}, f"Stiff Rods: {trees}{segments} segments, {joints} joints")
        return {"FINISHED"}


NEEDS_WINDOW = (
    "Simulate is the live preview and needs a Blender window (it runs on a timer while the timeline plays); "
    "in background mode (blender -b) or from a script, use Bake (bpy.ops.stiff_rods.bake) to simulate a frame range"
)


class STIFF_RODS_OT_simulate(bpy.types.Operator):
    """Simulate live while the timeline plays; Esc or right-click stops and restores the rest pose"""

    bl_idname = "stiff_rods.simulate"
    bl_label = "Simulate"
    bl_options = {"REGISTER"}

    _timer = None

    def execute(self, context):
        """Called from a script (no event): the live preview cannot run without a window's timer."""
        self.report({"ERROR"}, NEEDS_WINDOW)
        return {"CANCELLED"}

    def _start_one(self, context, owner) -> Session:
        """The Session of the selected tree (or ``owner``) set up for the live preview; ReadError or ValueError
        before anything changes."""
        check_not_running(active_tree(context).name if owner is None else owner.name)
        s = tree_session(context, owner=owner)
        check_editable(s, "Simulate")
        if baked_action(keyed_id(s)) is not None:
            raise reader.ReadError(f"'{s.owner_name}' has a Stiff Rods bake: Free Bake first")
        s.set_wind(wind.SceneWind.from_scene(context.scene))
        s.reset(context.scene.frame_current, context.scene, live=True)
        ops_preview_bake.start_recording(s, context.scene)  # the frames shown, for Bake from Preview
        return s

    def invoke(self, context, event):
        if context.window is None or bpy.app.background:
            return self.execute(context)
        ops_common.prepare_solver(self)
        found = ops_common.chosen(context, check=False)
        owners = [None] if found is None else ops_common.owners(found)
        if found is not None:
            ops_common.report_refused(self, found)
            if not owners:
                return ops_common.nothing_chosen(self, found)
        self.sessions = []
        for owner in owners:
            try:
                self.sessions.append(self._start_one(context, owner))
            except (reader.ReadError, ValueError) as exc:
                if found is None:
                    self.report({"ERROR"}, str(exc))
                    return {"CANCELLED"}
                self.report({"WARNING"}, f"'{owner.name}' left out: {exc}")
        if not self.sessions:
            self.report({"ERROR"}, "No tree or curve can be simulated")
            return {"CANCELLED"}
        for s in self.sessions:
            ops_common.report_skipped_colliders(self, s)
        self._stop_playback(context)
        self.modes = [
            switch_to_quaternions(s.source.armature, s.source.bone_names) if s.source.armature else {}
            for s in self.sessions
        ]
        # Sapling's curve deformed by bone envelopes costs Blender ~1 s per redraw: written here instead
        self.previews = []
        for s in self.sessions:
            try:
                self.previews.append(live_preview.EnvelopePreview(s, context.scene))
            except Exception as exc:  # it only saves time: the curve's own modifier draws it then
                self.previews.append(None)
                self.report({"WARNING"}, f"'{s.owner_name}': curve drawn by its modifier ({exc})")
        fps = context.scene.render.fps / context.scene.render.fps_base
        self._timer = context.window_manager.event_timer_add(1.0 / fps, window=context.window)
        context.window_manager.modal_handler_add(self)
        self.owner_names = [s.owner_name for s in self.sessions]
        for name in self.owner_names:
            RUNNING[name] = "live simulation"
        return {"RUNNING_MODAL"}

    def _stop_playback(self, context) -> None:
        """The live simulation advances the timeline itself, one simulated frame per tick: playback would
        move it too (and skip frames), so it is stopped."""
        screen = context.screen
        if screen is not None and screen.is_animation_playing:
            bpy.ops.screen.animation_cancel(restore_frame=False)
            self.report({"INFO"}, "Playback stopped: Simulate advances the timeline itself (Esc stops it)")

    def modal(self, context, event):
        if event.type in {"ESC", "RIGHTMOUSE"}:
            self._stop(context)
            return {"CANCELLED"}
        if event.type == "TIMER":
            try:
                self._stop_playback(context)
                for s, preview in zip(self.sessions, self.previews, strict=True):
                    step_live(s, context.scene, preview)
            except Exception as exc:  # a failed step (or the tree deleted / undone under it) must not leave a timer
                self._stop(context)
                self.report({"ERROR"}, f"Simulation stopped: {exc}")
                return {"CANCELLED"}
            for area in context.screen.areas if context.screen else ():
                if area.type == "VIEW_3D":
                    area.tag_redraw()
        return {"PASS_THROUGH"}

    def cancel(self, context):
        """Blender ends the modal run itself (a file is loaded, the window closes)."""
        self._stop(context)

    def _stop(self, context):
        for name in getattr(self, "owner_names", ()):
            RUNNING.pop(name, None)
        if self._timer is not None:
            context.window_manager.event_timer_remove(self._timer)
            self._timer = None
        for preview in getattr(self, "previews", ()):
            if preview is not None:
                preview.restore()
        for s, modes in zip(self.sessions, self.modes, strict=True):
            try:
                if s.source.armature is not None:
                    restore_modes(s.source.armature, modes)
                s.write_rest()
                context.scene.frame_set(s.start_frame)
            except ReferenceError:  # its objects were deleted or replaced (undo, file loaded): nothing to restore
                SESSIONS.pop(s.owner_name, None)


def step_live(session: Session, scene, preview: live_preview.EnvelopePreview | None = None) -> None:
    """One tick of the live simulation: one frame of physics, pose written (and the curves of ``preview``),
    timeline advanced. This is the whole body of the modal timer, testable without a window."""
    session.advance_frame(scene)
    session.write_pose()
    ops_preview_bake.record_shown(session)  # arrays the tick has computed, copied: no Blender writes
    if preview is not None:
        preview.write()
    if scene.frame_current != session.frame:
        scene.frame_current = session.frame


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
    ops_preview_bake.STIFF_RODS_OT_bake_from_preview,
)
