"""The live preview's recording: what Bake would key for every frame Simulate showed, as plain arrays.

While Simulate runs, :class:`PreviewRecord` appends, per shown frame, the same samples a Bake takes
(addon/bake.py ``BakeRun``): the world orientations (S, 4) of the segments the bones follow (the bones, then
those Bones for All Branches adds), with leaves the leaves mesh's base coordinates (V, 3) float32, or a curve's
control points. No Blender writes: a copy of arrays the tick has already computed (Blender 3.4, Sapling's small
pine: 0.002 ms per tick bare, 0.3 ms with its 194,428 leaf vertices). :meth:`PreviewRecord.record`
turns them into a :class:`addon.bake_record.BakeRecord` that ``bake.write_bake`` keys (*Bake from Preview*).

The cap: the Scene's *Preview Cache* (MB, ``preview_cache_mb``); frames past it are not recorded (the recording
stays one contiguous range from the start frame) and :attr:`PreviewRecord.full` says so. A leafy birch frame
(5,878 bones, 56,754 leaf vertices) is 0.83 MB (2^20 bytes): the default 1024 MB hold 1,235 frames, 51 s
at 24 fps.

Only numpy and the record's own module: no ``bpy``. The recordings live in :data:`RECORDINGS` (owner name →
record) until the next Simulate of that tree, Free Bake or a file load.
"""

from __future__ import annotations

import numpy as np

from .bake_record import BakeRecord, curve_arrays

RECORDINGS: dict[str, PreviewRecord] = {}  # owner name → its last live preview


class PreviewRecord:
    """The frames one Simulate showed of ``session``'s tree or curve, from ``session.frame`` on (call right after
    ``Session.reset``); ``plan`` the bones Bake would add (``bake.plan_bones``), ``run`` the live RunSpec,
    ``limit_bytes`` the cap."""

    def __init__(self, session, plan, run, limit_bytes: int):
        self.name = session.owner_name
        self.session_id = id(session)  # only the session that started it appends to it
        self.start = session.frame
        self.plan, self.run, self.limit_bytes = plan, run, int(limit_bytes)
        self.frames: list = []  # (S, 4) orientations, or a curve's list of ControlPoints, per frame
        self.leaf_frames: list[np.ndarray] = []
        self.nbytes = 0
        self.full = False
        self.armature = session.source.armature is not None
        if self.armature:
            seg = session.bone_segment
            self.segments = seg if plan is None else np.concatenate((seg, plan.segments))
        self._session_meta(session)
        self.take(session)

    def _session_meta(self, s) -> None:
        """What the record needs of the session besides the frames (kept: the session is rebuilt by Bake)."""
        self.n_segments = s.model.n_segments
        src = s.source
        if not self.armature:
            self.rest_points = src.control_points
            return
        self.q_rest = s.model.orientations[self.segments].copy()
        self.bone_names, self.bone_parent = list(src.bone_names), np.asarray(src.bone_parent, dtype=np.int64)
        self.bone_rest, self.armature_rotation = np.asarray(s.bone_rest, float), np.asarray(s.armature_rotation, float)
        self.leaves = src.leaves.name if s.leaf_mesh is not None else None
        self.leaf_count = int(s.leaf_segments.size) if s.leaf_mesh is not None else 0

    @property
    def end(self) -> int:
        """The last frame recorded."""
        return self.start + len(self.frames) - 1

    def take(self, session, leaf_coordinates: np.ndarray | None = None) -> bool:
        """Append the frame ``session`` shows now (``leaf_coordinates``: its leaves' base coordinates when the
        tick already has them); False, and nothing appended, once the cap is reached."""
        if self.full:
            return False
        if self.armature:
            sample = session.frame_state()[1][self.segments].copy()  # seen from the carrier, as Bake keys
            size = sample.nbytes
            leaf = None
            if session.leaf_mesh is not None:
                co = session.leaf_base_coordinates() if leaf_coordinates is None else leaf_coordinates
                leaf = np.array(co, dtype=np.float32)  # one copy, float32 as Bake stores them
                size += leaf.nbytes
        else:
            sample = session.control_points_now()
            size = sum(3 * c.co.nbytes for c in sample)
            leaf = None
        if self.nbytes + size > self.limit_bytes and self.frames:
            self.full = True
            return False
        self.frames.append(sample)
        if leaf is not None:
            self.leaf_frames.append(leaf)
        self.nbytes += size
        return True

    def record(self) -> BakeRecord:
        """The recorded frames as the record Bake would have written for frames :attr:`start`..:attr:`end`."""
        rec = BakeRecord(self.name, "armature", self.start, self.end, self.n_segments)
        if not self.armature:
            rec.kind = "curve"
            for key, value in curve_arrays(self.rest_points, self.frames).items():
                setattr(rec, key, value)
            return rec
        rec.q_seg, rec.q_rest = np.array(self.frames), self.q_rest
        rec.bone_names, rec.bone_parent = list(self.bone_names), self.bone_parent
        rec.bone_rest, rec.armature_rotation = self.bone_rest, self.armature_rotation
        plan = self.plan
        if plan is not None:
            rec.plan_names, rec.plan_parents = list(plan.names), list(plan.parents)
            rec.plan_head, rec.plan_tail, rec.plan_radius = plan.head, plan.tail, plan.radius
        if self.leaf_frames:
            rec.leaves, rec.leaf_count = self.leaves, self.leaf_count
            rec.leaf_frames = np.array(self.leaf_frames)
        return rec

    def summary(self) -> str:
        """One line for the panel: the frames recorded, their size, the cap."""
        mb = self.nbytes / 2**20
        text = f"Preview recorded: frames {self.start}–{self.end} ({len(self.frames)}, {mb:.1f} MB)"
        if self.full:
            text += f": cache full ({self.limit_bytes / 2**20:.0f} MB), later frames not recorded"
        return text


def steps_text(run) -> str:
    """A RunSpec (substeps, max_iterations, factor_reuse) as the panel says it."""
    steps = "1 step" if run.substeps == 1 else f"{run.substeps} substeps"
    its = "1 iteration" if run.max_iterations == 1 else f"{run.max_iterations} iterations"
    reuse = f", matrix reused {run.factor_reuse} frames" if run.factor_reuse else ""
    return f"{steps} × {its} per frame{reuse}"


def quality_line(solver, bake_quality: bool, preroll: int = 0) -> tuple[str, bool]:
    """(The panel's line comparing the preview with a Bake, True when they differ) for the scene's
    ``solver`` (spec.SolverSpec), Preview Quality Bake (``bake_quality``) or Fast, and Bake's Pre-roll frames."""
    preview, baked = solver.run(live=not bake_quality), solver.run(live=False)
    differs = preview != baked or preroll > 0
    text = f"Preview: {steps_text(preview)}; Bake: {steps_text(baked)}"
    if preroll:
        text += f", after {preroll} frames of pre-roll"
    return text + (" — differs" if differs else " — same"), differs


def forget(name: str | None = None) -> None:
    """Drop the recording of ``name`` (every recording when None)."""
    if name is None:
        RECORDINGS.clear()
    else:
        RECORDINGS.pop(name, None)
