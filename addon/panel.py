"""The "Stiff Rods" tab of the 3D View sidebar (N-panel)."""

from __future__ import annotations

import time

import bpy

from ..solver import known_compiled_status
from . import bake, forest, instances, preview_record, settings
from .checks import up_to_date
from .properties import settings_owner
from .session import SESSIONS

_CHOSEN: dict = {}  # the panel's last forest.chosen: key → (time, lines)
_INSTANCES: dict = {}  # the panel's last instances.summary: scene name → (time, lines)


def chosen_lines(context, every: float = 1.0) -> list[tuple[str, str]]:
    """The panel's lines (text, icon) on the trees the operators act on when they are a forest: how many, which
    (a few names, "+N more"), which are refused and why. Worked out again at most every ``every`` seconds for
    the same selection (the panel redraws on every mouse move)."""
    sc = context.scene.stiff_rods
    active = context.active_object
    selected = tuple(o.name for o in (getattr(context, "selected_objects", None) or ()))
    coll = sc.forest_collection
    key = (context.scene.name, coll.name if coll else None, active.name if active else None, selected)
    now = time.monotonic()
    last = _CHOSEN.get(key)
    if last is not None and now - last[0] < every:
        return last[1]
    found = forest.chosen(context, check=False)
    lines: list[tuple[str, str]] = []
    if found is not None:
        where = f"collection '{coll.name}'" if coll else "selection"
        names = [t.name for t in found.trees]
        lines.append((f"{len(names)} trees/curves in the {where}: {forest.names_line(names)}", "OUTLINER_COLLECTION"))
        for r in found.refused[:3]:
            lines.append((f"'{r.name}' refused: {r.reason}", "ERROR"))
        if len(found.refused) > 3:
            lines.append((f"+{len(found.refused) - 3} more refused", "ERROR"))
    _CHOSEN.clear()
    _CHOSEN[key] = (now, lines)
    return lines


def _draw_rod(layout, s) -> None:
    """The rod's settings ``s`` (an object's stiff_rods): model, material, geometry, supports, contact, breakage."""
    col = layout.column()
    col.prop(s, "rod_model")
    col.prop(s, "material")
    if s.material == "CUSTOM":
        col.prop(s, "youngs_modulus_gpa")
        col.prop(s, "torsion_modulus_gpa")
        col.prop(s, "density")
    col.prop(s, "damping")
    col.prop(s, "default_radius")
    col.prop(s, "segment_length")
    col.prop(s, "pin_root")
    if s.pin_root:
        col.prop(s, "root_joint")
        if s.root_joint in ("HINGE", "RAIL"):
            col.prop(s, "root_axis")
    col.prop(s, "rest_shape")
    col.prop(s, "stretch")
    if s.stretch == "PHYSICAL":
        col.prop(s, "shear_coefficient")
    col.prop(s, "use_leaves")
    col.prop(s, "add_bones")
    col.prop(s, "pin_object")
    col.prop(s, "pin_joint")
    if s.pin_joint in ("HINGE", "RAIL"):
        col.prop(s, "pin_axis")
    col.prop(s, "collide")
    col.prop(s, "friction")
    col.prop(s, "self_collision")
    col.prop(s, "use_fracture")
    if s.use_fracture:
        col.prop(s, "rupture_strain")
    col.prop(s, "drag_coefficient")


def _draw_solver(layout, sc) -> None:
    """The scene's solver settings ``sc``: compiled status, steps, iterations, integrator, damping, gravity."""
    box = layout.box()
    box.label(text="Solver")
    known = known_compiled_status()  # (not loaded before the first Convert/Simulate/Bake: no compiling in draw)
    if known is not None:
        box.label(text=known[1], icon="CHECKMARK" if known[0] else "ERROR")
    box.prop(sc, "substeps")
    box.prop(sc, "iterations")
    box.prop(sc, "live_iterations")
    box.prop(sc, "live_matrix_reuse")
    box.prop(sc, "preview_quality")
    box.prop(sc, "preview_cache_mb")
    text, differs = preview_record.quality_line(
        settings.solver_spec(sc.id_data), sc.preview_quality == "BAKE", settings.bake_spec(sc.id_data).preroll
    )
    box.label(text=text, icon="ERROR" if differs else "CHECKMARK")
    box.prop(sc, "tolerance")
    box.prop(sc, "integrator")
    box.prop(sc, "use_damping_ratio")
    if sc.use_damping_ratio:
        row = box.row(align=True)
        row.prop(sc, "damping_ratio")
        row.prop(sc, "damping_frequency")
    box.prop(sc, "use_scene_gravity")


def _draw_wind(layout, sc) -> None:
    """Force fields and the storm's profile (speeds, frames, gusts, turbulence)."""
    box = layout.box()
    box.label(text="Wind")
    row = box.row()
    row.prop(sc, "use_force_fields")
    row.prop(sc, "field_speed_scale")
    row = box.row()
    row.prop(sc, "use_storm")
    row.operator("stiff_rods.storm_preset")
    if sc.use_storm:
        col = box.column(align=True)
        col.prop(sc, "storm_peak_speed")
        col.prop(sc, "storm_direction")
        row = col.row(align=True)
        row.prop(sc, "storm_frame_start")
        row.prop(sc, "storm_frame_peak_start")
        row = col.row(align=True)
        row.prop(sc, "storm_frame_peak_end")
        row.prop(sc, "storm_frame_end")
        col.prop(sc, "storm_gusts")
        col.prop(sc, "storm_turbulence")
        col.prop(sc, "storm_turbulence_length")
        col.prop(sc, "storm_seed")


def _draw_bake(layout, sc) -> None:
    """Pre-roll, the seamless loop, Named Actions and the baked tree's cache (USD, Alembic)."""
    box = layout.box()
    box.label(text="Bake")
    box.prop(sc, "use_loop")
    if sc.use_loop:
        col = box.column(align=True)
        col.prop(sc, "loop_frames")
        col.prop(sc, "use_auto_preroll")
        col.prop(sc, "use_seam_blend")
    row = box.row()
    row.prop(sc, "preroll_frames")
    render = sc.id_data.render
    seconds = sc.preroll_frames * render.fps_base / render.fps
    row.alert = seconds > bake.PREROLL_LIMIT_S  # Bake refuses it
    row.label(text=f"{seconds:.1f} s")
    box.prop(sc, "use_named_actions")
    if sc.use_named_actions:
        box.row().prop(sc, "named_actions")
    box.operator("stiff_rods.export_cache", icon="EXPORT")


def _draw_game(layout, sc) -> None:
    """The game rig of a baked tree and its glTF export."""
    box = layout.box()
    box.label(text="Game Export")
    row = box.row(align=True)
    row.prop(sc, "game_max_bones")
    row.prop(sc, "game_lods")
    op = box.operator("stiff_rods.game_rig")
    if op is not None:  # the operator's properties (None where the layout only records what is drawn)
        op.max_bones, op.lods = sc.game_max_bones, sc.game_lods
    box.operator("stiff_rods.export_gltf")
    box.operator("stiff_rods.export_fbx")
    box.operator("stiff_rods.pivot_painter")


def _draw_forest(layout, context, sc) -> None:
    """The forest's collection and workers, the trees the operators would act on, and the running bake's status."""
    box = layout.box()
    box.label(text="Forest")
    box.prop(sc, "forest_collection")
    box.prop(sc, "forest_workers")
    for text, icon in chosen_lines(context):
        box.label(text=text, icon=icon)
    status = forest.STATUS.get(context.scene.name)
    if status:
        box.label(text=status, icon="TIME")


def instance_lines(scene, every: float = 1.0) -> list[str]:
    """instances.summary(scene), worked out again at most every ``every`` seconds (it walks the scene's objects;
    the panel redraws on every mouse move)."""
    now = time.monotonic()
    last = _INSTANCES.get(scene.name)
    if last is None or now - last[0] >= every:
        _INSTANCES.clear()
        last = _INSTANCES[scene.name] = (now, instances.summary(scene))
    return last[1]


def _draw_instances(layout, context, sc) -> None:
    """Instanced forests (addon/instances.py): Variants, Bake and Free Instances, what the result holds."""
    box = layout.box()
    box.label(text="Instances")
    box.prop(sc, "instance_variants")
    box.prop(sc, "hero_distance")
    box.prop(sc, "hero_collection")
    for text in instance_lines(context.scene):
        box.label(text=text)
    row = box.row(align=True)
    row.operator("stiff_rods.bake_instances")
    row.operator("stiff_rods.free_instances")


def _draw_session(layout, context, owner) -> None:
    """The live session's model size, cost per step and residual (nothing when ``owner`` has none)."""
    session = SESSIONS.get(owner.name)
    if session is None:
        return
    st = session.stats()
    box = layout.box()
    if not up_to_date(session, owner, context.scene):
        box.label(text="Model out of date: Simulate and Bake rebuild it", icon="ERROR")
    box.label(text=f"Segments: {st['segments']}   Joints: {st['joints']}")
    box.label(text=f"{st['ms_per_step']:.1f} ms/step, {st['iterations']:.1f} iterations")
    frame_ms = st["ms_per_step"] * session.substeps
    if frame_ms > 0.0:  # what Preview Quality Bake can reach on this machine: physics alone, drawing on top
        box.label(text=f"{frame_ms:.1f} ms of physics per frame ({session.substeps} steps): ≤ {1e3 / frame_ms:.0f} fps")
    box.label(text=f"Residual ‖C + α̃λ‖∞: {st['residual']:.2e}")


def _draw_preview(layout, owner) -> None:
    """Bake from Preview and what the last Simulate of ``owner`` recorded."""
    rec = preview_record.RECORDINGS.get(owner.name)
    row = layout.row()
    row.enabled = rec is not None
    row.operator("stiff_rods.bake_from_preview", icon="REC")
    if rec is not None:
        layout.label(text=rec.summary())


class STIFF_RODS_PT_main(bpy.types.Panel):
    bl_label = "Stiff Rods"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Stiff Rods"

    def draw(self, context):
        layout = self.layout
        obj = context.active_object
        if obj is None:
            layout.label(text="Select a Sapling tree or a curve")
            return
        owner = settings_owner(obj)
        if owner != obj:
            layout.label(text=f"Settings of '{owner.name}'")
        _draw_rod(layout, owner.stiff_rods)
        sc = context.scene.stiff_rods
        _draw_solver(layout, sc)
        _draw_wind(layout, sc)
        _draw_bake(layout, sc)
        _draw_game(layout, sc)
        _draw_forest(layout, context, sc)
        _draw_instances(layout, context, sc)
        row = layout.row(align=True)
        row.operator("stiff_rods.convert")
        row.operator("stiff_rods.simulate")
        row = layout.row(align=True)
        row.operator("stiff_rods.bake")
        row.operator("stiff_rods.free_bake")
        _draw_preview(layout, owner)
        _draw_session(layout, context, owner)


classes = (STIFF_RODS_PT_main,)
