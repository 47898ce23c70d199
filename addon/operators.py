"""Operators: Convert, Simulate (live, modal), Bake and Free Bake.

Every operator checks its input before it changes anything, so a failure leaves the scene as it was.
"""

from __future__ import annotations

import json
import os
import time
import weakref

import bpy
import numpy as np
from bpy.props import IntProperty

from ..solver import known_compiled_status, prepare_compiled
from ..solver import quaternion as quat
from . import bones, keyframes, live_preview, point_cache, reader, wind
from .fingerprint import fingerprint
from .properties import own_parts
from .session import SESSIONS, Session

PREV_ACTION = "stiff_rods_previous_action"
PREV_MODES = "stiff_rods_rotation_modes"
PREV_FAKE_USER = "stiff_rods_previous_fake_user"
PREV_POINTS = "stiff_rods_rest_points"
PREV_LEAF_CACHE = "stiff_rods_leaf_cache"


def _target(context):
    obj = context.active_object
    if obj is not None and obj.instance_type == "COLLECTION" and obj.instance_collection is not None:
        raise reader.ReadError(
            f"'{obj.name}' shows an instance of collection '{obj.instance_collection.name}': Stiff Rods simulates "
            "the tree's own objects; select them in the scene that holds the collection, or make the instance "
            "real (Object > Apply > Make Instances Real)"
        )
    curve, armature, _ = reader.find_parts(obj)
    return armature or curve


_BUILT_FROM: weakref.WeakKeyDictionary[Session, bytes] = weakref.WeakKeyDictionary()  # session → its inputs
RUNNING: dict[str, str] = {}  # object name → "Simulate" or "Bake" while a modal run of it is in progress


def _report_skipped_colliders(op, s: Session) -> None:
    """A WARNING for each Collision object ``s`` left out of its colliders when it last read them."""
    for message in s.skipped_colliders:
        op.report({"WARNING"}, message)


def _prepare_solver(op) -> None:
    """Load the compiled solver before the first model is built; the first start after an install compiles it
    (a few seconds) and says so. Without numba the numpy solver runs: a WARNING says it once (and the panel)."""
    known = known_compiled_status()
    if known is not None:
        return
    active, message = prepare_compiled(lambda text: op.report({"INFO"}, f"Stiff Rods: {text}"))
    if not active:
        op.report({"WARNING"}, f"Stiff Rods: {message}")


def _session(context, rebuild=False, owner=None) -> Session:
    """The Session of the selected tree or curve (or of ``owner``): the one Convert built while nothing it was
    built from has changed since (addon/fingerprint.py), else a new one."""
    owner = _target(context) if owner is None else owner
    key = fingerprint(owner, context.scene)
    s = SESSIONS.get(owner.name)
    if s is None or rebuild or _BUILT_FROM.get(s) != key:
        _check_pin_object(owner)
        _check_bone_names(owner)
        try:
            s = Session(owner, context.scene)
        except ValueError as exc:
            if "joins two pinned segments" not in str(exc):
                raise
            raise reader.ReadError(_pinned_neighbours_message(owner)) from None
        SESSIONS[owner.name] = s
        _BUILT_FROM[s] = key
    return s


_CHECKED: dict[int, tuple[float, bool]] = {}  # id(session) → (time, up to date) of the panel's last check


def up_to_date(s: Session, owner, scene, every: float = 1.0) -> bool:
    """False when something ``s`` was built from has changed since (the panel says so). Checked at most every
    ``every`` seconds: the panel redraws on every mouse move, a fingerprint takes 40 ms on the leafy birch."""
    now = time.monotonic()
    last = _CHECKED.get(id(s))
    if last is not None and now - last[0] < every:
        return last[1]
    try:
        ok = _BUILT_FROM.get(s) == fingerprint(owner, scene)
    except (reader.ReadError, ReferenceError):
        ok = False
    _CHECKED.clear()  # one entry: the session the panel shows
    _CHECKED[id(s)] = (now, ok)
    return ok


def _check_pin_object(owner) -> None:
    pin = owner.stiff_rods.pin_object
    role = own_parts(owner).get(pin) if pin is not None else None
    if role is not None:
        raise reader.ReadError(
            f"Pin To of '{owner.name}' is '{pin.name}', the tree's own {role}: a tree cannot be held by itself. "
            "Pick an object outside the tree (an Empty, a hand, a pole) or clear Pin To"
        )


def _check_bone_names(owner) -> None:
    """A Sapling bone's branch is found by its name: a bone renamed (or added) under another name would stay
    behind unsimulated while a bake adds a second bone for its branch."""
    _, armature, _ = reader.find_parts(owner)
    if armature is None:
        return
    odd = [b.name for b in armature.data.bones if not reader.BONE_NAME.match(b.name)]
    if odd:
        more = f" (and {len(odd) - 1} more)" if len(odd) > 1 else ""
        raise reader.ReadError(
            f"Bone '{odd[0]}'{more} of the Sapling armature '{armature.name}' is not named bone<spline>.<point>: "
            "Stiff Rods finds each bone's branch by its name. Give it back its Sapling name, or move extra bones "
            "to another armature"
        )


def _pinned_neighbours_message(owner) -> str:
    """Two kinematic segments that share a joint (the solver's "joint j joins two pinned segments"), in the
    user's words: which object holds the segment, and what to do."""
    pin = owner.stiff_rods.pin_object
    hooks = [m.object.name for m in getattr(owner, "modifiers", ()) if m.type == "HOOK" and m.object is not None]
    holders = ([f"Pin To '{pin.name}'"] if pin is not None else []) + [f"Hook '{h}'" for h in hooks]
    what = " and ".join(holders) or "Its pins"
    root = " or the pinned root (Pinned Root)" if owner.stiff_rods.pin_root else ""
    return (
        f"'{owner.name}': {what} holds a segment right next to another held segment (another pin{root}), so "
        "the joint between them cannot move. Move the pin object along the tree, away from the root and from "
        "the other pins" + (", or turn off Pinned Root" if root else "")
    )


def _chosen(context, check: bool):
    """The trees of a forest the operators act on (addon/forest.py:chosen), or None: the active object alone."""
    from . import forest  # forest imports this module

    return forest.chosen(context, check)


def _owners(found) -> list:
    return [bpy.data.objects[t.name] for t in found.trees]


def _report_refused(op, found, level="WARNING") -> None:
    """One report per chosen object that is refused (and why); one for those that are no tree or curve."""
    for r in found.refused:
        op.report({level}, f"'{r.name}' " + ("cannot be baked" if level == "ERROR" else "left out") + f": {r.reason}")
    if found.ignored:
        names = ", ".join(r.name for r in found.ignored)
        op.report({"INFO"}, f"Not a tree or curve, left out: {names}")


def _nothing_chosen(op, found) -> set:
    op.report(
        {"ERROR"},
        "No Sapling tree or curve to work on among the chosen objects (the selection, or the "
        "Forest Collection): select trees, or pick a collection that holds them",
    )
    return {"CANCELLED"}


class STIFF_RODS_OT_convert(bpy.types.Operator):
    """Build the stiff-rod model of the selected Sapling trees and curves (or of the Forest Collection's)"""

    bl_idname = "stiff_rods.convert"
    bl_label = "Convert"
    bl_options = {"REGISTER"}

    def execute(self, context):
        _prepare_solver(self)
        found = _chosen(context, check=False)
        owners = [None] if found is None else _owners(found)
        if found is not None:
            _report_refused(self, found)
            if not owners:
                return _nothing_chosen(self, found)
        built = []
        for owner in owners:
            try:
                s = _session(context, rebuild=True, owner=owner)
            except (reader.ReadError, ValueError) as exc:
                if found is None:
                    self.report({"ERROR"}, str(exc))
                    return {"CANCELLED"}
                self.report({"WARNING"}, f"'{owner.name}' left out: {exc}")
                continue
            built.append(s)
            _report_skipped_colliders(self, s)
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


def _restore_points(curve, saved) -> list[int]:
    """Control points as they were before the bake (removing the keys leaves the last evaluated frame); the
    splines that are gone or have another number of points now (the user edited them: left alone)."""
    changed = []
    for spline, co, hl, hr in saved:
        if spline >= len(curve.data.splines):
            changed.append(spline)
            continue
        cps = reader.read_control_points(curve, spline)
        if len(co) != cps.co.shape[0]:
            changed.append(spline)
            continue
        cps.co = np.array(co)
        if cps.bezier:
            cps.handle_left, cps.handle_right = np.array(hl), np.array(hr)
        reader.write_control_points(curve, cps)
    return changed


def _remove_leaf_cache(info) -> list[str]:
    """Remove the leaves' Mesh Cache modifier and its file; what of them was already gone."""
    missing = []
    leaves = bpy.data.objects.get(info["object"])
    mod = leaves.modifiers.get(info["modifier"]) if leaves is not None else None
    if mod is not None and mod.type == "MESH_CACHE":
        leaves.modifiers.remove(mod)
    else:
        where = f"the leaves object '{info['object']}'" if leaves is None else f"'{info['object']}'"
        missing.append(f"the Mesh Cache modifier '{info['modifier']}' on {where}")
    if os.path.isfile(info["file"]):
        os.remove(info["file"])
    else:
        missing.append(f"the point cache file '{info['file']}'")
    return missing


def _restore_modes(arm, saved) -> list[str]:
    """The rotation modes and values :func:`_switch_to_quaternions` saved; the names of bones no longer there.
    The mode first: setting ``rotation_mode`` converts the current rotation into the new mode's values,
    overwriting them."""
    gone = []
    for n, (mode, q, e, aa) in saved.items():
        pb = arm.pose.bones.get(n)
        if pb is None:
            gone.append(n)
            continue
        pb.rotation_mode = mode
        pb.rotation_quaternion = q
        pb.rotation_euler = e
        pb.rotation_axis_angle = aa
    return gone


NEEDS_WINDOW = (
    "Simulate is the live preview and needs a Blender window (it runs on a timer while the timeline plays); "
    "in background mode (blender -b) or from a script, use Bake (bpy.ops.stiff_rods.bake) to simulate a frame range"
)


def _check_not_running(owner_name: str) -> None:
    run = RUNNING.get(owner_name)
    if run is not None:
        raise reader.ReadError(
            f"'{owner_name}' is already running a {run}: wait for it to finish or press Esc to stop it first"
        )


def _check_editable(s: Session, what: str) -> None:
    """Refuse, before anything changes, to write into data linked from a library (read-only here)."""
    src = s.source
    parts: list = [src.armature] if src.armature is not None else [src.curve, src.curve.data]
    if s.leaf_mesh is not None and src.leaves is not None:
        parts += [src.leaves] + ([src.leaves.data] if what == "Simulate" else [])
    for part in parts:
        if part is not None and part.library is not None:
            raise reader.ReadError(
                f"'{part.name}' is linked from the library '{part.library.filepath}' and cannot be changed here, "
                f"so {what} cannot write to it: make a library override (Object > Library Override > Make) "
                "or make it local (Object > Relations > Make Local)"
            )


def _check_not_tweaking(holder, what: str) -> None:
    """Refuse while ``holder``'s NLA is in tweak mode: its action cannot be swapped then (Blender refuses)."""
    anim = holder.animation_data
    if anim is not None and anim.use_tweak_mode:
        raise reader.ReadError(
            f"'{holder.name}' is in NLA tweak mode (editing the strip of '{anim.action.name if anim.action else ''}'): "
            f"{what} swaps its action, which Blender does not allow then; leave tweak mode first "
            "(Nonlinear Animation editor: Edit > Stop Tweaking Strip Actions, Tab)"
        )


def check_bake(owner) -> None:
    """Refuse, with a reader.ReadError naming the object, a tree or curve (``owner``: its Sapling armature, or
    the curve) that Bake cannot bake, before anything changes: another run of it in progress, Pin To on its
    own parts, renamed bones, parts linked from a library, a leaves point cache that cannot be written, a bake
    not freed, an armature moved by its own action. Bake checks its tree with it, a forest bake every tree
    (addon/forest.py); building the model checks the rest (transforms, spans, settings)."""
    _check_not_running(owner.name)
    _check_pin_object(owner)
    _check_bone_names(owner)
    curve, armature, leaves = reader.find_parts(owner)
    leaves = leaves if armature is not None and owner.stiff_rods.use_leaves else None
    parts: list = [armature] if armature is not None else [curve, curve.data]
    for part in parts + [leaves]:
        if part is not None and part.library is not None:
            raise reader.ReadError(
                f"'{part.name}' is linked from the library '{part.library.filepath}' and cannot be changed here, "
                "so Bake cannot write to it: make a library override (Object > Library Override > Make) "
                "or make it local (Object > Relations > Make Local)"
            )
    _check_not_tweaking(armature or curve.data, "Bake")
    try:
        if leaves is not None:
            point_cache.check_writable(leaves.name)
        BakeRun.check_own_motion(armature)
    except ValueError as exc:
        raise reader.ReadError(str(exc)) from None
    if _baked_action(armature or curve.data) is not None:
        raise reader.ReadError(f"'{owner.name}' already has a Stiff Rods bake: Free Bake first")
    if any(k in owner for k in BAKE_MARKS):  # a new bake would record the old bake's state as the user's
        raise reader.ReadError(
            f"'{owner.name}' still holds what its last bake changed (its baked action was unlinked): "
            "Free Bake first, it gives the rotation modes, added bones and leaves back"
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
        _check_not_running(_target(context).name if owner is None else owner.name)
        s = _session(context, owner=owner)
        _check_editable(s, "Simulate")
        if _baked_action(_keyed_id(s)) is not None:
            raise reader.ReadError(f"'{s.owner_name}' has a Stiff Rods bake: Free Bake first")
        s.set_wind(wind.SceneWind.from_scene(context.scene))
        s.reset(context.scene.frame_current, context.scene, live=True)
        return s

    def invoke(self, context, event):
        if context.window is None or bpy.app.background:
            return self.execute(context)
        _prepare_solver(self)
        found = _chosen(context, check=False)
        owners = [None] if found is None else _owners(found)
        if found is not None:
            _report_refused(self, found)
            if not owners:
                return _nothing_chosen(self, found)
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
            _report_skipped_colliders(self, s)
        self._stop_playback(context)
        self.modes = [
            _switch_to_quaternions(s.source.armature, s.source.bone_names) if s.source.armature else {}
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
                    _restore_modes(s.source.armature, modes)
                s.write_rest()
                context.scene.frame_set(s.start_frame)
            except ReferenceError:  # its objects were deleted or replaced (undo, file loaded): nothing to restore
                SESSIONS.pop(s.owner_name, None)


def _redraw_panels(context) -> None:
    for area in context.screen.areas if context.screen else ():
        if area.type == "VIEW_3D":
            area.tag_redraw()


def step_live(session: Session, scene, preview: live_preview.EnvelopePreview | None = None) -> None:
    """One tick of the live simulation: one frame of physics, pose written (and the curves of ``preview``),
    timeline advanced. This is the whole body of the modal timer, testable without a window."""
    session.advance_frame(scene)
    session.write_pose()
    if preview is not None:
        preview.write()
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
            self.sample = lambda: session.frame_state()[1][seg].copy()  # seen from the carrier
        else:
            self.sample = session.control_points_now
        self.leaf_frames: list[np.ndarray] = []  # float32 leaf-mesh base coordinates per frame
        self.check_own_motion(session.source.armature)
        try:
            session.reset(start, scene)
            self._take()
        except Exception:
            self.close()
            raise

    @staticmethod
    def check_own_motion(arm) -> None:
        """Refuse an armature whose own action moves it: the bake replaces that action with the bones' keys,
        so the tree would stand still in playback while its bones sway as if carried."""
        from .frames import TRANSFORM_PATHS

        if any(fc.data_path.startswith(TRANSFORM_PATHS) for fc in keyframes.assigned_fcurves(arm)):
            raise ValueError(
                f"Armature '{arm.name}' is moved by its own action '{arm.animation_data.action.name}', which Bake "
                "replaces with the bones' keys: parent the tree to an Empty (Object > Parent) and move that instead"
            )

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

    # not given: the scene's range (any frame can be given, negative ones too)
    frame_start: IntProperty(name="Start", default=1, description="First frame (not given: the scene's start)")
    frame_end: IntProperty(name="End", default=250, description="Last frame (not given: the scene's end)")

    def frame_range(self, scene) -> tuple[int, int]:
        given = self.properties.is_property_set
        start = self.frame_start if given("frame_start") else scene.frame_start
        end = self.frame_end if given("frame_end") else scene.frame_end
        return start, end

    def _prepare(self, context, owner=None):
        """Check everything and start the simulation of the selected tree (or ``owner``); a set (CANCELLED) on
        bad input, None when ready."""
        _prepare_solver(self)
        scene = context.scene
        start, end = self.frame_range(scene)
        if end < start:
            self.report({"ERROR"}, f"Bake range is empty: end frame {end} is before start frame {start}")
            return {"CANCELLED"}
        try:
            owner = _target(context) if owner is None else owner
            check_bake(owner)
            s = _session(context, rebuild=True, owner=owner)
        except (reader.ReadError, ValueError) as exc:
            self.report({"ERROR"}, str(exc))
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
        """Blocking bake (scripts, headless): simulate every frame, then write the keys. Several trees: one
        after the other in this process, or with Parallel Workers above 1 in that many worker processes
        (waiting for them); every tree's keys are written once all are baked."""
        found = _chosen(context, check=True)
        if found is not None:
            return self._bake_forest(context, found, modal=False)
        return self._execute(context)

    def _execute(self, context, owner=None):
        failed = self._prepare(context, owner)
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
        """Interactive bake: a few frames per timer tick, progress in the status bar, Esc cancels. Several
        trees (or Parallel Workers above 1): in worker processes, polled by the timer (:meth:`_bake_forest`)."""
        if context.window is None:
            return self.execute(context)
        found = _chosen(context, check=True)
        if found is not None:
            return self._bake_forest(context, found, modal=True)
        return self._invoke(context)

    def _invoke(self, context, owner=None):
        failed = self._prepare(context, owner)
        if failed:
            return failed
        wm = context.window_manager
        wm.progress_begin(0, self._run.end - self._run.start + 1)
        self._timer = wm.event_timer_add(0.001, window=context.window)
        wm.modal_handler_add(self)
        self._owner_name = self._run.session.owner_name
        RUNNING[self._owner_name] = "Bake"
        return {"RUNNING_MODAL"}

    def cancel(self, context):
        """Blender ends the modal run itself (a file is loaded, the window closes): nothing is written."""
        self._stop_modal(context)
        if getattr(self, "_forest", None) is not None:
            self._forest.cancel()
            return
        try:
            self._finish_run()
        except ReferenceError:  # the scene went with the file
            pass

    def modal(self, context, event):
        if getattr(self, "_forest", None) is not None:
            return self._modal_forest(context, event)
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

    # -- several trees
    def _bake_forest(self, context, found, modal: bool) -> set:
        """Bake every tree of ``found`` (addon/forest.py:chosen), refusing them all, with each refused object
        named, before anything starts. One tree and one worker: the single bake of that tree. From a window
        (``modal``), or with Parallel Workers above 1, the trees go to worker processes that open a snapshot of
        the file; else they are simulated here one after the other. Keys are written when every tree is done."""
        from . import forest

        scene = context.scene
        start, end = self.frame_range(scene)
        if end < start:
            self.report({"ERROR"}, f"Bake range is empty: end frame {end} is before start frame {start}")
            return {"CANCELLED"}
        if found.refused:
            _report_refused(self, found, "ERROR")
            self.report({"ERROR"}, f"Bake refused: {len(found.refused)} of the chosen trees cannot be baked")
            return {"CANCELLED"}
        if not found.trees:
            return _nothing_chosen(self, found)
        _report_refused(self, found)
        workers = scene.stiff_rods.forest_workers
        if len(found.trees) == 1 and workers <= 1:
            owner = bpy.data.objects[found.trees[0].name]
            return self._invoke(context, owner) if modal else self._execute(context, owner)
        if not modal and workers <= 1:
            return self._forest_here(context, forest, found.trees, start, end)
        try:
            run = forest.Background(found.trees, start, end, workers, scene.name)
        except (OSError, RuntimeError, ValueError) as exc:
            self.report({"ERROR"}, f"The forest bake could not start: {exc}")
            return {"CANCELLED"}
        if not modal:
            try:
                while not run.poll().finished:
                    time.sleep(0.1)
            except BaseException:
                run.cancel()
                raise
            return self._forest_written(context, run)
        self._forest = run
        wm = context.window_manager
        wm.progress_begin(0, run.pool.progress().frames_total)
        self._timer = wm.event_timer_add(0.2, window=context.window)
        wm.modal_handler_add(self)
        self._owner_names = [t.name for t in found.trees]
        for name in self._owner_names:
            RUNNING[name] = "Bake"
        return {"RUNNING_MODAL"}

    def _forest_here(self, context, forest, trees, start, end) -> set:
        """The trees simulated in this process one after the other, then all written."""
        wm = context.window_manager
        total = len(trees) * (end - start + 1)
        wm.progress_begin(0, total)
        t0 = time.perf_counter()
        records = []
        try:
            for k, tree in enumerate(trees):
                base = k * (end - start + 1)
                try:
                    records.append(
                        forest.bake_tree(
                            context.scene, tree.name, start, end, lambda f, b=base: wm.progress_update(b + f)
                        )
                    )
                except Exception as exc:  # nothing is written: the scene stays as it was
                    self.report({"ERROR"}, f"Bake failed on '{tree.name}': {exc}; nothing was written")
                    return {"CANCELLED"}
        finally:
            wm.progress_end()
        written = sum(forest.write_records(records))
        return self._forest_report(trees, written, start, end, time.perf_counter() - t0)

    def _modal_forest(self, context, event) -> set:
        run = self._forest
        if event.type in {"ESC", "RIGHTMOUSE"}:
            self._stop_modal(context)
            run.cancel()
            self.report({"WARNING"}, "Bake cancelled: nothing was written, the cache folder is removed")
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"RUNNING_MODAL"}
        p = run.poll()
        context.window_manager.progress_update(p.frames_done)
        _redraw_panels(context)
        if not p.finished:
            return {"RUNNING_MODAL"}
        self._stop_modal(context)
        return self._forest_written(context, run)

    def _forest_written(self, context, run) -> set:
        try:
            written = run.finish()
        except ValueError as exc:
            self.report({"ERROR"}, f"{exc}; nothing was written")
            return {"CANCELLED"}
        return self._forest_report(run.pool.trees, written, run.pool.start_frame, run.pool.end_frame, run.seconds)

    def _forest_report(self, trees, written, start, end, seconds) -> set:
        self.report(
            {"INFO"},
            f"Baked {len(trees)} trees × {end - start + 1} frames ({written} F-curves) in {seconds:.1f} s",
        )
        if not bpy.data.filepath and any(len(t.parts) == 3 for t in trees):  # armature, curve and leaves
            self.report(
                {"WARNING"},
                "The file is not saved: leaves' point caches went to Blender's temporary folder; save the file "
                "and bake again to keep them",
            )
        return {"FINISHED"}

    def _stop_modal(self, context):
        RUNNING.pop(getattr(self, "_owner_name", ""), None)
        for name in getattr(self, "_owner_names", ()):
            RUNNING.pop(name, None)
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


BAKE_MARKS = (PREV_ACTION, PREV_MODES, PREV_FAKE_USER, PREV_POINTS, PREV_LEAF_CACHE, bones.ADDED_BONES)


class STIFF_RODS_OT_free_bake(bpy.types.Operator):
    """Remove exactly what Bake added and give the armature back its previous action"""

    bl_idname = "stiff_rods.free_bake"
    bl_label = "Free Bake"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        found = _chosen(context, check=False)
        if found is None:
            try:
                owner = _target(context)
                _check_not_running(owner.name)
            except reader.ReadError as exc:
                self.report({"ERROR"}, str(exc))
                return {"CANCELLED"}
            owners = [owner]
        else:
            _report_refused(self, found)
            owners = _owners(found)
            if not owners:
                return _nothing_chosen(self, found)
        todo, bare = [], []
        for owner in owners:
            try:
                _check_not_running(owner.name)
                todo.append(self._check(owner))
            except reader.ReadError as exc:  # checked for every tree before any is freed
                self.report({"ERROR"}, str(exc))
                return {"CANCELLED"}
            except LookupError:
                bare.append(owner.name)
        if not todo:
            what = f"'{bare[0]}' has" if len(bare) == 1 else f"None of {', '.join(repr(n) for n in bare)} has"
            self.report({"ERROR"}, f"{what} no Stiff Rods bake to free")
            return {"CANCELLED"}
        if bare:
            self.report({"WARNING"}, f"No Stiff Rods bake to free on {', '.join(repr(n) for n in bare)}")
        for owner, holder, action, unlinked in todo:
            missing = self._free(owner, holder, action, unlinked)
            self.report({"INFO"}, f"Freed the Stiff Rods bake of '{owner.name}'")
            if missing:
                self.report(
                    {"WARNING"},
                    f"Free Bake of '{owner.name}' could not find {'; '.join(missing)}: the rest is back as before "
                    "the bake",
                )
        return {"FINISHED"}

    @staticmethod
    def _check(owner) -> tuple:
        """(owner, holder, baked action, unlinked bake actions) when ``owner``'s bake can be freed; LookupError
        when it has none, ReadError when it cannot be freed now."""
        holder = owner if owner.type == "ARMATURE" else owner.data
        action = _baked_action(holder)
        unlinked = keyframes.unlinked_bake_actions(holder)
        if action is None and not unlinked and not any(k in owner for k in BAKE_MARKS):
            raise LookupError(owner.name)
        _check_not_tweaking(holder, "Free Bake")
        if owner.type == "ARMATURE" and any(n in owner.data.bones for n in owner.get(bones.ADDED_BONES, [])):
            try:
                bones.check_editable(owner)  # removing the added bones needs Edit Mode: check before any change
            except ValueError:
                raise reader.ReadError(
                    f"Armature '{owner.name}' must be visible for Free Bake to remove the bones its bake added: "
                    "unhide it (and enable it in the viewport), then Free Bake again"
                ) from None
        return owner, holder, action, unlinked

    @staticmethod
    def _free(owner, holder, action, unlinked) -> list[str]:
        """Put back everything the bake recorded on ``owner``; what was no longer there to put back."""
        missing: list[str] = []
        previous_name = owner.get(PREV_ACTION)
        previous = bpy.data.actions.get(previous_name) if previous_name else None
        if previous_name and previous is None:
            missing.append(f"its previous action '{previous_name}' (deleted)")
        anim = holder.animation_data
        current = anim.action if anim else None
        if action is not None or current is None:  # the bake's slot, or empty since the user unlinked the bake
            if previous is not None:
                holder.animation_data_create()
            if holder.animation_data is not None:
                holder.animation_data.action = previous
            if previous is not None and PREV_FAKE_USER in owner:
                previous.use_fake_user = bool(owner[PREV_FAKE_USER])
        elif previous is not None:  # the user assigned an action of their own since: theirs stays
            missing.append(f"an empty action slot to give '{previous.name}' back to (it keeps a fake user)")
        for a in ([action] if action is not None else []) + unlinked:
            bpy.data.actions.remove(a)
        if owner.type == "ARMATURE":
            added = list(owner.get(bones.ADDED_BONES, []))
            gone = [n for n in added if n not in owner.data.bones]
            bones.remove_added_bones(owner)
            if gone:
                missing.append(f"{len(gone)} of the {len(added)} bones it added (e.g. '{gone[0]}')")
            if PREV_MODES in owner:
                gone = _restore_modes(owner, json.loads(owner[PREV_MODES]))
                if gone:
                    missing.append(f"{len(gone)} bones to give their rotation mode back to (e.g. '{gone[0]}')")
        if owner.type == "CURVE" and PREV_POINTS in owner:
            changed = _restore_points(owner, json.loads(owner[PREV_POINTS]))
            if changed:
                missing.append(f"splines {changed} as they were baked (edited since: left as they are)")
        if PREV_LEAF_CACHE in owner:
            missing += _remove_leaf_cache(json.loads(owner[PREV_LEAF_CACHE]))
        for key in BAKE_MARKS:
            if key in owner:
                del owner[key]
        return missing


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
