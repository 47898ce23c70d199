"""Inside Blender 3.4 (``blender -b white_birch.blend --python live_preview.py -- LEGACY_ZIP``): the live preview's
curve against Blender's own Armature modifier, and the curve given back exactly by Simulate's stop.

Cases (one line ``LIVE_PREVIEW_RESULT {json}``):
- ``accuracy``: after live ticks in a 20 m/s wind, the tree curve's evaluated mesh with the control points the
  preview wrote (modifier off) vs the same pose evaluated by Blender's envelope Armature modifier (points at rest,
  modifier on); also how far that mesh moved from the rest pose (what a curve left at rest would be off by).
- ``stop``: Simulate's stop (its ``_stop``, which Esc, a failed step and ``cancel()`` run) after live ticks: every
  curve point and handle and every modifier's viewport flag compared bit for bit with before the start.
"""

import os
import sys
import types

import bpy
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bad_input import install, report_cases  # noqa: E402

TICKS = 12


def curve_state(obj):
    """Every spline's co/handles as the float32 bytes Blender stores, and every modifier's show_viewport."""
    arrays = []
    for sp in obj.data.splines:
        for attr in ("co", "handle_left", "handle_right"):
            a = np.empty(3 * len(sp.bezier_points), np.float32)
            sp.bezier_points.foreach_get(attr, a)
            arrays.append(a.tobytes())
    return arrays, [m.show_viewport for m in obj.modifiers]


def evaluated_mesh(obj):
    graph = bpy.context.evaluated_depsgraph_get()
    graph.update()
    ev = obj.evaluated_get(graph)
    mesh = ev.to_mesh()
    co = np.empty(3 * len(mesh.vertices))
    mesh.vertices.foreach_get("co", co)
    ev.to_mesh_clear()
    m = np.array(obj.matrix_world)
    return co.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]


def start(scene):
    from stiff_rods.addon import live_preview, operators, wind
    from stiff_rods.addon.session import Session

    arm = next(o for o in scene.objects if o.type == "ARMATURE")
    s = Session(arm, scene)
    modes = operators._switch_to_quaternions(arm, s.source.bone_names)
    s.set_wind(wind.SceneWind.from_scene(scene))
    s.reset(scene.frame_current, scene, live=True)
    return s, modes, live_preview.EnvelopePreview(s, scene)


def accuracy():
    from stiff_rods.addon.operators import step_live

    scene = bpy.context.scene
    curve = next(o for o in scene.objects if o.type == "CURVE")
    rest = evaluated_mesh(curve)
    s, _, preview = start(scene)
    written = len(preview.curves)
    for _ in range(TICKS):
        step_live(s, scene, preview)
    shown_during = curve.modifiers[0].show_viewport
    ours = evaluated_mesh(curve)
    preview.restore()  # rest points, modifier on: Blender deforms the same pose itself
    blender = evaluated_mesh(curve)
    unit = scene.unit_settings.scale_length
    d = np.linalg.norm(ours - blender, axis=1) * unit
    return dict(
        curves_written=written,
        modifier_shown_during=shown_during,
        vertices=int(d.size),
        max_error_m=float(d.max()),
        p99_error_m=float(np.percentile(d, 99)),
        max_motion_m=float(np.linalg.norm(blender - rest, axis=1).max() * unit),
    )


def stop():
    from stiff_rods.addon import operators

    scene = bpy.context.scene
    curve = next(o for o in scene.objects if o.type == "CURVE")
    before = curve_state(curve)
    frame = scene.frame_current
    s, modes, preview = start(scene)
    for _ in range(TICKS):
        operators.step_live(s, scene, preview)
    during = curve_state(curve)
    op = types.SimpleNamespace(owner_names=[], _timer=None, sessions=[s], modes=[modes], previews=[preview])
    operators.STIFF_RODS_OT_simulate._stop(op, bpy.context)
    after = curve_state(curve)
    return dict(
        arrays=len(before[0]),
        arrays_changed_during=sum(a != b for a, b in zip(before[0], during[0], strict=True)),
        flags_before=before[1],
        flags_during=during[1],
        arrays_identical_after=sum(a == b for a, b in zip(before[0], after[0], strict=True)),
        flags_after=after[1],
        frame_back=scene.frame_current == frame,
    )


def main():
    install(sys.argv[sys.argv.index("--") + 1])
    bpy.ops.object.effector_add(type="WIND", location=(-8.0, 0.0, 4.0), rotation=(0.0, np.pi / 2, 0.0))
    bpy.context.object.field.strength = 20.0
    out = {"blender": list(bpy.app.version)}
    report_cases("LIVE_PREVIEW_RESULT", out, [("accuracy", accuracy), ("stop", stop)])


main()
