"""Bake: simulate a frame range and write it as plain keyframes (addon/bake.py), for one tree or a forest.

One tree: blocking (:meth:`STIFF_RODS_OT_bake.execute`, scripts and ``blender -b``) or modal (a few frames per
timer tick, Esc cancels), both stepping one :class:`bake.BakeRun` into a :class:`bake.BakeRecord` that
:func:`bake.write_bake` writes. Several trees: addon/forest.py (here one after the other, or in worker processes).
"""

from __future__ import annotations

import math
import time

import bpy
from bpy.props import IntProperty

from . import bake, bones, forest, named_actions, ops_common, reader, settings, wind
from .checks import RUNNING, active_tree, check_bake, tree_session


def _empty_range(op, start, end) -> set | None:
    if end < start:
        op.report({"ERROR"}, f"Bake range is empty: end frame {end} is before start frame {start}")
        return {"CANCELLED"}
    return None


class STIFF_RODS_OT_bake(bpy.types.Operator):
    """Simulate a frame range and bake it to plain keyframes (the user's action is kept)"""

    bl_idname = "stiff_rods.bake"
    bl_label = "Bake"
    bl_options = {"REGISTER", "UNDO"}

    # not given: the scene's range (any frame can be given, negative ones too); Blender's properties are
    # annotations whose value is a call, no type to mypy
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
        ops_common.prepare_solver(self)
        scene = context.scene
        start, end = self.frame_range(scene)
        empty = _empty_range(self, start, end)
        if empty:
            return empty
        try:
            owner = active_tree(context) if owner is None else owner
            check_bake(owner)
            s = tree_session(context, rebuild=True, owner=owner)
            s.set_wind(wind.SceneWind.from_scene(scene, loop=settings.bake_spec(scene).loop > 0))
        except (reader.ReadError, ValueError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self._run = None
        spec = settings.bake_spec(scene)
        try:
            plan = bake.plan_bones(s)
            if plan is not None:
                bones.check_editable(s.source.armature)
            if spec.actions:
                self._run = named_actions.NamedRuns(scene, s, start, end, plan, spec.actions, spec.loop > 0)
            else:
                self._run = bake.BakeRun(scene, s, start, end, plan)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        ops_common.report_skipped_colliders(self, s)
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
        found = ops_common.chosen(context, check=True)
        if found is not None:
            return self._bake_forest(context, found, modal=False)
        return self._execute(context)

    def _begin(self, context, owner) -> set | None:
        """:meth:`_prepare`, then the progress bar over the frame range; a set (CANCELLED) on bad input."""
        failed = self._prepare(context, owner)
        if not failed:
            context.window_manager.progress_begin(0, self._run.frames_total)
        return failed

    def _execute(self, context, owner=None):
        failed = self._begin(context, owner)
        if failed:
            return failed
        wm = context.window_manager
        try:
            record = self._run.run(progress=lambda done: wm.progress_update(done + 1))
        except Exception as exc:  # a failed frame must leave the scene as it was
            return self._fail(exc)
        finally:
            wm.progress_end()
        return self._write(context, record)

    def invoke(self, context, event):
        """Interactive bake: a few frames per timer tick, progress in the status bar, Esc cancels. Several
        trees (or Parallel Workers above 1): in worker processes, polled by the timer (:meth:`_bake_forest`)."""
        if context.window is None:
            return self.execute(context)
        found = ops_common.chosen(context, check=True)
        if found is not None:
            return self._bake_forest(context, found, modal=True)
        return self._invoke(context)

    def _invoke(self, context, owner=None):
        failed = self._begin(context, owner)
        if failed:
            return failed
        wm = context.window_manager
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
        waiting = self._escape_or_wait(context, event, self._finish_run, "Bake cancelled: nothing was written")
        if waiting:
            return waiting
        try:
            t_end = time.perf_counter() + 0.1  # bounded work per tick keeps Blender responsive
            while not self._run.done and time.perf_counter() < t_end:
                self._run.step()
            wm.progress_update(self._run.frames_done)
        except Exception as exc:
            self._stop_modal(context)
            return self._fail(exc)
        if not self._run.done:
            return {"RUNNING_MODAL"}
        self._stop_modal(context)
        self._finish_run()
        return self._write(context, self._run.record())

    def _report_seam(self, record: bake.BakeRecord) -> None:
        """A loop's seam: blended (its largest correction) or not (a warning: the warm-up was too short)."""
        if record.seam_ratio != record.seam_ratio:  # NaN: no loop
            return
        unit = "°" if record.kind == "armature" else " m"
        size = math.degrees(record.seam_correction) if record.kind == "armature" else record.seam_correction
        if record.seam_ratio <= 1.0:
            blended = f", blended over the loop (at most {size:.3g}{unit})" if record.seam_correction > 0 else ""
            self.report(
                {"INFO"},
                f"Loop of {record.end - record.start} frames after {record.preroll} frames of warm-up: seam "
                f"{record.seam_ratio:.3g} of a frame's motion{blended}",
            )
            return
        self.report(
            {"WARNING"},
            f"Loop of '{record.name}': the sway has not settled into the loop after {record.preroll} frames of "
            f"warm-up (seam {record.seam_ratio:.2f} times a frame's motion): raise Pre-roll, or Damping",
        )

    def _write(self, context, record):
        """Key the baked tree (bake.write_bake; a list of (wind, record): named_actions.write) and say what was
        written."""
        if isinstance(record, list):
            return self._write_named(record)
        written = bake.write_bake(record, bpy.data.objects)
        self._report_seam(record)
        if record.kind == "armature":
            added = len(record.plan_names)
            what = f"{len(record.bone_names) + added} bones" + (f" ({added} added)" if added else "")
            if record.leaf_frames is not None:
                what += f" and {record.leaf_count} leaves"
                if not bpy.data.filepath:
                    self.report(
                        {"WARNING"},
                        "The file is not saved: the leaves' point cache went to Blender's "
                        "temporary folder; save the file and bake again to keep it",
                    )
        else:
            what = f"{int(record.count.sum())} curve points"
        self.report({"INFO"}, f"Baked {what} × {record.end - record.start + 1} frames ({written} F-curves)")
        return {"FINISHED"}

    def _write_named(self, records) -> set:
        written = named_actions.write(records, bpy.data.objects)
        for _, record in records:
            self._report_seam(record)
        first = records[0][1]
        tracks = ", ".join(named_actions.track_name(p) for p, _ in records)
        self.report(
            {"INFO"},
            f"Baked {len(first.bone_names) + len(first.plan_names)} bones × {first.end - first.start + 1} frames in "
            f"{len(records)} winds ({tracks}: one action and NLA track each, {written} F-curves)",
        )
        return {"FINISHED"}

    # -- several trees
    def _bake_forest(self, context, found, modal: bool) -> set:
        """Bake every tree of ``found`` (addon/forest.py:chosen), refusing them all, with each refused object
        named, before anything starts. One tree and one worker: the single bake of that tree. From a window
        (``modal``), or with Parallel Workers above 1, the trees go to worker processes that open a snapshot of
        the file; else they are simulated here one after the other. Keys are written when every tree is done."""
        scene = context.scene
        start, end = self.frame_range(scene)
        loop = settings.bake_spec(scene).loop
        end = start + loop if loop else end  # every tree's BakeRun keys the loop
        refused = _empty_range(self, start, end) or self._refuse_forest(found)
        if refused:
            return refused
        workers = scene.stiff_rods.forest_workers
        if settings.bake_spec(scene).actions and len(found.trees) > 1:
            self.report({"ERROR"}, "Named Actions bake one tree at a time: select one tree, or turn them off")
            return {"CANCELLED"}
        if len(found.trees) == 1 and workers <= 1:
            owner = bpy.data.objects[found.trees[0].name]
            return self._invoke(context, owner) if modal else self._execute(context, owner)
        if not modal and workers <= 1:
            return self._forest_here(context, found.trees, start, end)
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

    def _refuse_forest(self, found) -> set | None:
        """CANCELLED when a tree of ``found`` is refused (each named) or none is left; else the objects left
        out are reported and None."""
        if found.refused:
            ops_common.report_refused(self, found, "ERROR")
            self.report({"ERROR"}, f"Bake refused: {len(found.refused)} of the chosen trees cannot be baked")
            return {"CANCELLED"}
        if not found.trees:
            return ops_common.nothing_chosen(self, found)
        ops_common.report_refused(self, found)
        return None

    def _forest_here(self, context, trees, start, end) -> set:
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
        waiting = self._escape_or_wait(
            context, event, run.cancel, "Bake cancelled: nothing was written, the cache folder is removed"
        )
        if waiting:
            return waiting
        p = run.poll()
        context.window_manager.progress_update(p.frames_done)
        ops_common.redraw_panels(context)
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

    def _escape_or_wait(self, context, event, stop, message: str) -> set | None:
        """Esc or right-click: the modal run ends, ``stop()`` undoes it, WARNING ``message``, CANCELLED. Another
        event than the timer: RUNNING_MODAL (nothing to do). The timer: None, the caller works."""
        if event.type in {"ESC", "RIGHTMOUSE"}:
            self._stop_modal(context)
            stop()
            self.report({"WARNING"}, message)
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"RUNNING_MODAL"}
        return None

    def _stop_modal(self, context):
        RUNNING.pop(getattr(self, "_owner_name", ""), None)
        for name in getattr(self, "_owner_names", ()):
            RUNNING.pop(name, None)
        wm = context.window_manager
        if getattr(self, "_timer", None) is not None:
            wm.event_timer_remove(self._timer)
            self._timer = None
        wm.progress_end()
