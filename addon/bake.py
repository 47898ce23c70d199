"""One bake pipeline: simulate a frame range into a :class:`BakeRecord`, then write the record as keys.

* :func:`run_bake` simulates a tree or curve from its Session over frames ``start``..``end`` (a
  :class:`BakeRun` stepped to the end) and returns its record; nothing in the scene changes.
* :func:`write_bake` writes a record into the scene's objects: bone rotation keys (after adding the bones the
  bake plans, addon/bones.py), the leaves' point cache (addon/point_cache.py), or a curve's point keys; it
  remembers on the tree what it changed, so Free Bake gives everything back.

Bake (one tree, blocking or modal), the forest's workers and its parent (addon/forest.py), the Dask tool
(tools/bake_forest.py) and the headless tool (tools/bake_headless.py, through Bake) all use these two.
"""

from __future__ import annotations

import json
import math
import time

import numpy as np

from ..solver import quaternion as quat
from . import bones, keyframes, loop, point_cache, settings
from .bake_record import BakeRecord, curve_arrays
from .bone_maps import local_quaternions
from .frames import TRANSFORM_PATHS

PREV_ACTION = "stiff_rods_previous_action"
PREV_MODES = "stiff_rods_rotation_modes"
PREV_FAKE_USER = "stiff_rods_previous_fake_user"
PREV_POINTS = "stiff_rods_rest_points"
PREV_LEAF_CACHE = "stiff_rods_leaf_cache"
NAMED_ACTIONS = "stiff_rods_named_actions"  # [[NLA track, action], ...] a Named Actions bake added
# The longest Pre-roll [s] Bake accepts. The default Damping (0.5/s, mass-proportional: every mode's amplitude
# decays as e^(-0.25 t)) brings a start-up transient below double precision (2^-52) after ln(2^52)/0.25 = 144 s;
# 600 s does so for any Damping from 0.12/s up, and a longer pre-roll only costs time (14,400 frames at 24 fps).
PREROLL_LIMIT_S = 600.0
BAKE_MARKS = (PREV_ACTION, PREV_MODES, PREV_FAKE_USER, PREV_POINTS, PREV_LEAF_CACHE, bones.ADDED_BONES, NAMED_ACTIONS)


class BakeCancelled(Exception):
    """:func:`run_bake` stopped because its ``cancel()`` said so; nothing was written."""


def baked_action(holder):
    """The Stiff Rods bake action assigned to ``holder`` (the armature, or a curve's Curve data), or None."""
    anim = holder.animation_data
    action = anim.action if anim else None
    return action if action is not None and action.get(keyframes.BAKE_TAG) else None


def keyed_id(session):
    """The datablock a bake animates: the armature object, or a plain curve's Curve data."""
    return session.source.armature or session.source.curve.data


def check_own_motion(arm) -> None:
    """Refuse an armature whose own action moves it: the bake replaces that action with the bones' keys,
    so the tree would stand still in playback while its bones sway as if carried."""
    if any(fc.data_path.startswith(TRANSFORM_PATHS) for fc in keyframes.assigned_fcurves(arm)):
        raise ValueError(
            f"Armature '{arm.name}' is moved by its own action '{arm.animation_data.action.name}', which Bake "
            "replaces with the bones' keys: parent the tree to an Empty (Object > Parent) and move that instead"
        )


def check_preroll(preroll: int, session) -> None:
    """Refuse a Pre-roll of ``preroll`` frames longer than :data:`PREROLL_LIMIT_S` at the scene's frame rate."""
    dt = session.frame_time
    if preroll * dt > PREROLL_LIMIT_S:
        raise ValueError(
            f"Pre-roll of '{session.owner_name}' is {preroll} frames ({preroll * dt:.6g} s at {1.0 / dt:.4g} fps): "
            f"the limit is {PREROLL_LIMIT_S:.0f} s ({math.floor(PREROLL_LIMIT_S / dt + 1e-9)} frames), after which "
            "the start-up sway of the default damping is below double precision. Lower the Pre-roll"
        )


def plan_bones(session):
    """The bones the bake adds for branches without bones (addon/bones.py), or None."""
    if session.source.armature is not None and session.add_bones:
        return bones.plan_missing_bones(session)
    return None


# ------------------------------------------------------------------ simulating
class BakeRun:
    """The simulation half of a bake, one frame per :meth:`step`, so a modal operator can show progress
    and be cancelled between frames; nothing in the scene is changed except the current frame, which
    :meth:`close` gives back. :meth:`record` is the result once :attr:`done`.

    The scene's Pre-roll and Loop (``settings.bake_spec``): the simulation starts ``preroll`` frames before
    ``start`` (at most :data:`PREROLL_LIMIT_S`, :func:`check_preroll`) and keys from ``start`` on; a loop keys
    ``start``..``start`` + Loop Length (``end`` is then that) after a warm-up of whole loops (:func:`loop_warmup`:
    with Auto Pre-roll until a loop repeats itself, at most ``preroll`` frames), and :meth:`record` closes its
    seam (addon/loop.py)."""

    def __init__(self, scene, session, start: int, end: int, plan=None):
        self.spec = settings.bake_spec(scene)
        check_preroll(self.spec.preroll, session)  # the user's Pre-roll; a loop's automatic warm-up is bounded
        if self.spec.loop:
            end = start + self.spec.loop
        self.scene, self.session, self.start, self.end, self.plan = scene, session, start, end, plan
        self.warmup = loop_warmup(self.spec, session) if self.spec.loop else None
        self.preroll = self.warmup.most * self.spec.loop if self.warmup else self.spec.preroll
        self.preroll_left = self.preroll
        self.seam: loop.Seam | None = None
        self.frame_before = scene.frame_current
        # one sample per frame: the bone segments' orientations (k, 4), or a curve's list of ControlPoints
        self.frames: list[np.ndarray | list] = []
        if session.source.armature is not None:  # world orientations of the bones' segments (and of the
            seg = self.bone_segments()  # segments of bones the bake will add), made local at the end
            self.sample = lambda: session.frame_state()[1][seg].copy()  # seen from the carrier
        else:
            self.sample = session.control_points_now
        self.leaf_frames: list[np.ndarray] = []  # float32 leaf-mesh base coordinates per frame
        check_own_motion(session.source.armature)
        try:
            session.reset(start - self.preroll, scene)
            if self.warmup is not None:
                self.warmup.add(session.frame_state()[0])
            if not self.preroll:
                self._take()
        except Exception:
            self.close()
            raise

    def bone_segments(self) -> np.ndarray:
        """The segments the keyed bones follow: the armature's bones, then those the bake adds."""
        seg = self.session.bone_segment
        return seg if self.plan is None else np.concatenate((seg, self.plan.segments))

    def _take(self) -> None:
        self.frames.append(self.sample())
        if self.session.leaf_mesh is not None:
            self.leaf_frames.append(self.session.leaf_base_coordinates().astype(np.float32))

    @property
    def done(self) -> bool:
        return self.start + len(self.frames) > self.end

    @property
    def frame(self) -> int:
        """The next frame to simulate (before ``start`` during the pre-roll)."""
        return self.session.frame + 1

    @property
    def frames_total(self) -> int:
        """Frames to simulate: the pre-roll's and the keyed ones."""
        return self.preroll + self.end - self.start + 1

    @property
    def frames_done(self) -> int:
        return self.preroll - self.preroll_left + len(self.frames)

    def step(self) -> None:
        self.session.advance_frame(self.scene)
        if self.preroll_left:
            self.preroll_left -= 1
            if self.warmup is not None and self.warmup.add(self.session.frame_state()[0]):
                self.preroll, self.preroll_left = self.warmup.loops * self.spec.loop, 0  # it repeats: key it
            if self.preroll_left:
                return
        self._take()

    def close(self) -> None:
        if self.scene.frame_current != self.frame_before:
            self.scene.frame_set(self.frame_before)

    def run(self, progress=None, cancel=None) -> BakeRecord:
        """Simulate the frames left, then :meth:`close`; the :meth:`record`. ``progress(frames done)`` after
        every frame; :class:`BakeCancelled` as soon as ``cancel()`` is true (any failure: the run is closed)."""
        try:
            while not self.done:
                if cancel is not None and cancel():
                    raise BakeCancelled(f"Bake of '{self.session.owner_name}' cancelled at frame {self.frame}")
                self.step()
                if progress is not None:
                    progress(self.frames_done - 1)
        finally:
            self.close()
        return self.record()

    def record(self) -> BakeRecord:
        """The simulated frames as a :class:`BakeRecord`, once :attr:`done` (``seconds`` left 0 for the caller)."""
        rec = self._record()
        if self.spec.loop:
            self.seam = loop.close_seam(rec, 1.0 if self.spec.blend_seam else -1.0)
            rec.seam_ratio, rec.seam_correction = self.seam.ratio, self.seam.correction
        rec.preroll = self.preroll
        return rec

    def _record(self) -> BakeRecord:
        s = self.session
        rec = BakeRecord(s.owner_name, "armature", self.start, self.end, s.model.n_segments)
        if s.source.armature is None:
            rec.kind = "curve"
            for key, value in curve_arrays(s.source.control_points, self.frames).items():
                setattr(rec, key, value)
            return rec
        plan = self.plan
        rec.q_seg, rec.q_rest = np.array(self.frames), s.model.orientations[self.bone_segments()]
        rec.bone_names, rec.bone_parent = list(s.source.bone_names), np.asarray(s.source.bone_parent, dtype=np.int64)
        rec.bone_rest, rec.armature_rotation = np.asarray(s.bone_rest, float), np.asarray(s.armature_rotation, float)
        if plan is not None:
            rec.plan_names, rec.plan_parents = list(plan.names), list(plan.parents)
            rec.plan_head, rec.plan_tail, rec.plan_radius = plan.head, plan.tail, plan.radius
        if self.leaf_frames:
            rec.leaves, rec.leaf_count = s.source.leaves.name, int(s.leaf_segments.size)
            rec.leaf_frames = np.array(self.leaf_frames)
        return rec


def loop_warmup(spec, session) -> loop.Warmup:
    """A loop's warm-up: the Pre-roll frames rounded up to whole loops; with Auto Pre-roll at least one loop and
    until a loop repeats itself, at most the whole loops the tree's damping needs (:func:`loop.warmup_loops`)."""
    n = spec.loop
    loops = -(-spec.preroll // n)
    if not spec.auto_preroll:
        return loop.Warmup(n, loops, loops)
    rate = loop.decay_rate(session.spec.rod.damping, session.spec.scene.damping_ratio)
    most = loop.warmup_loops(rate, n * session.frame_time, owner=session.owner_name)
    return loop.Warmup(n, max(loops, 1), max(loops, most))


def run_bake(scene, session, start: int, end: int, plan=None, progress=None, cancel=None) -> BakeRecord:
    """Simulate ``session``'s tree or curve over frames ``start``..``end`` in ``scene`` (its wind and colliders
    as the Session reads them) with the bones ``plan`` adds (:func:`plan_bones`); its :class:`BakeRecord`
    (:meth:`BakeRun.run`; ``seconds``: the time it took). The scene's current frame is given back; nothing else
    in the scene changes."""
    t0 = time.perf_counter()
    rec = BakeRun(scene, session, start, end, plan).run(progress, cancel)
    rec.seconds = time.perf_counter() - t0
    return rec


# ------------------------------------------------------------------ writing
def write_bake(record: BakeRecord, objects) -> int:
    """Key the tree or curve of ``record`` in ``objects`` (a name → object mapping, e.g. ``bpy.data.objects``):
    its bones (and the leaves' point cache) or its curve points. Returns the F-curves written."""
    owner = objects.get(record.name)
    if record.kind == "curve":
        return _write_curve(owner, record)
    written = _write_bones(owner, record)
    if record.leaf_frames is not None:
        _write_leaves(owner, objects.get(record.leaves), record.leaf_frames, record.start)
    return written


def switch_to_quaternions(arm, names):
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


def restore_modes(arm, saved) -> list[str]:
    """The rotation modes and values :func:`switch_to_quaternions` saved; the names of bones no longer there.
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


def keep_previous_action(obj, holder) -> None:
    """Before a bake replaces ``holder``'s action (the armature, or a curve's data): remember it on
    ``obj`` for Free Bake and give it a fake user, so it is kept, never overwritten."""
    anim = holder.animation_data
    previous = anim.action if anim else None
    if previous is not None:
        obj[PREV_FAKE_USER] = previous.use_fake_user
        previous.use_fake_user = True
        obj[PREV_ACTION] = previous.name


def bone_plan(record: BakeRecord):
    """The bones ``record`` adds as a bones.BonePlan (their segments numbered after the armature's bones, as
    ``q_rest`` holds them), or None."""
    if not record.plan_names:
        return None
    n, p = len(record.bone_names), len(record.plan_names)
    parents = list(record.plan_parents)
    return bones.BonePlan(
        list(record.plan_names), parents, record.plan_head, record.plan_tail, record.plan_radius, np.arange(n, n + p)
    )


def bone_keys(arm, record: BakeRecord, add: bool = True) -> tuple[list[str], np.ndarray]:
    """(bone names, local rotations (F, B, 4)) of ``record``'s keys: the armature's bones, then the planned ones
    (addon/bones.py), added to ``arm`` first when ``add`` (a later action of the same bake finds them there)."""
    names, rest = list(record.bone_names), record.bone_rest
    plan = bone_plan(record)
    if plan is not None:
        if add:
            bones.add_bones(arm, plan)
        new_rest = np.array([np.array(arm.data.bones[n].matrix_local)[:3, :3] for n in plan.names])
        rest = np.concatenate((rest, quat.from_matrix(new_rest)))
        names += plan.names
    parent = record.bone_parents()
    return names, local_quaternions(record.q_seg, record.q_rest, rest, parent, record.armature_rotation)


def _write_bones(arm, record: BakeRecord) -> int:
    """Bone rotation keys from the segments' world orientations per frame ``q_seg`` (F, B, 4), after adding
    the planned bones (addon/bones.py); returns the F-curves written."""
    names, quats = bone_keys(arm, record)
    keep_previous_action(arm, arm)
    arm[PREV_MODES] = json.dumps(switch_to_quaternions(arm, record.bone_names))
    action = keyframes.new_bake_action(arm)
    return keyframes.write_bone_quaternions(action, arm, names, record.frames(), quats)


def _write_leaves(arm, leaves, frames: np.ndarray, start: int) -> None:
    """The leaves' own motion ``frames`` (F, V, 3) from frame ``start`` as a PC2 point cache under their Armature
    modifier (see Session.leaf_base_coordinates); Free Bake removes the modifier and the file."""
    path, stored = point_cache.cache_path(leaves.name)
    point_cache.write_pc2(path, frames, start)
    mod = point_cache.add_mesh_cache(leaves, stored, start)
    arm[PREV_LEAF_CACHE] = json.dumps({"object": leaves.name, "modifier": mod.name, "file": path})


def _write_curve(curve, record: BakeRecord) -> int:
    """Point keyframes on the Curve data: ``co`` (and Bézier handles) of every control point."""
    data = curve.data
    keep_previous_action(curve, data)
    curve[PREV_POINTS] = json.dumps(record.rest_points())
    action = keyframes.new_bake_action(data)
    written = 0
    for group, paths, values in record.curve_keys():
        written += keyframes.write_keys(action, data, paths, [group] * len(paths), record.frames(), values)
    return written
