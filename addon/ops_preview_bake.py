"""Bake from Preview: key exactly the frames Simulate showed (as Blender cloth's *Current Cache to Bake*).

Simulate starts a :class:`addon.preview_record.PreviewRecord` per tree (:func:`start_recording`) and appends
every frame it shows (:func:`record_shown`). After Simulate stopped, :class:`STIFF_RODS_OT_bake_from_preview`
writes that recording through Bake's own ``bake.write_bake``, after Bake's checks (``checks.check_bake``: a bake
is never overwritten, the user's action is kept for Free Bake); a tree without a recording, or changed since
(bones renamed, leaves remeshed), is refused by name and nothing changes.
"""

from __future__ import annotations

import bpy

from . import bake, bones, preview_record, reader
from .checks import active_tree, check_bake
from .preview_record import RECORDINGS, PreviewRecord


def start_recording(session, scene) -> PreviewRecord:
    """A new recording of ``session`` (just reset at its start frame), replacing the tree's last one; capped at
    the Scene's Preview Cache (MB)."""
    limit = scene.stiff_rods.preview_cache_mb * 2**20
    rec = PreviewRecord(session, bake.plan_bones(session), session.run, limit)
    RECORDINGS[session.owner_name] = rec
    return rec


def record_shown(session) -> None:
    """Append the frame ``session`` has just written (the leaves' coordinates it wrote reused) to its recording,
    if Simulate is recording it."""
    rec = RECORDINGS.get(session.owner_name)
    if rec is not None and getattr(rec, "session_id", None) == id(session):
        rec.take(session, session.leaf_coordinates_shown)


def check_still_matches(rec: PreviewRecord, owner) -> None:
    """Refuse (reader.ReadError naming ``owner``) a recording the tree no longer fits: bones gone or renamed,
    the leaves' vertex count changed, the curve's splines edited."""
    curve, armature, leaves = reader.find_parts(owner)
    stale = None
    if rec.armature:
        have = set(armature.data.bones.keys()) if armature is not None else set()
        if not set(rec.bone_names) <= have:
            stale = "its bones changed"
        elif rec.leaf_frames and (leaves is None or len(leaves.data.vertices) != rec.leaf_frames[0].shape[0]):
            stale = "its leaves mesh changed"
    elif curve is None or [len(c.co) for c in rec.rest_points] != [
        len(curve.data.splines[c.spline].bezier_points if c.bezier else curve.data.splines[c.spline].points)
        if c.spline < len(curve.data.splines)
        else -1
        for c in rec.rest_points
    ]:
        stale = "its splines changed"
    if stale:
        raise reader.ReadError(f"'{owner.name}': {stale} since its preview was recorded: Simulate it again")


class STIFF_RODS_OT_bake_from_preview(bpy.types.Operator):
    """Bake exactly the frames the last Simulate showed of the selected tree or curve (the user's action is kept)"""

    bl_idname = "stiff_rods.bake_from_preview"
    bl_label = "Bake from Preview"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        try:
            owner = active_tree(context)
            if owner is None:
                raise reader.ReadError("Select a Sapling tree or a curve to bake from its preview")
            rec = RECORDINGS.get(owner.name)
            if rec is None or not rec.frames:
                raise reader.ReadError(
                    f"'{owner.name}' has no recorded preview: run Simulate first (the recording is kept until the "
                    "next Simulate, Free Bake or the file's reload)"
                )
            check_bake(owner)  # also refuses while Simulate still runs it
            check_still_matches(rec, owner)
            if rec.plan is not None:
                bones.check_editable(owner)
            record = rec.record()
        except (reader.ReadError, ValueError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        written = bake.write_bake(record, bpy.data.objects)
        what = f"{int(record.count.sum())} curve points" if record.kind == "curve" else f"{len(record.q_rest)} bones"
        if record.leaf_frames is not None:
            what += f" and {record.leaf_count} leaves"
        self.report(
            {"INFO"},
            f"Baked '{owner.name}' from its preview: {what} × frames {record.start}–{record.end} ({written} F-curves)",
        )
        return {"FINISHED"}


@bpy.app.handlers.persistent  # kept across file loads, which it is for
def forget_on_load(*_args) -> None:
    """A file load ends every recording (its objects are gone)."""
    preview_record.forget()


classes = (STIFF_RODS_OT_bake_from_preview,)
