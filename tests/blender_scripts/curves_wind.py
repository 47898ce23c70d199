"""Curves, pins and wind inside real Blender (run by tests/blender/test_blender_curves_wind.py).

    blender -b --factory-startup --python curves_wind.py -- LEGACY_ZIP

Every case builds its own small scene, runs the add-on's operators (or the live step and the bake's
frame loop directly: timers and modal handlers never run in background mode) and prints numbers;
the pytest side judges them. One line ``CURVES_WIND_RESULT {json}``.
"""

import sys

import addon_utils
import bpy
import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bad_input import activate, first_diff, install, report_cases, snapshot, wind_field  # noqa: E402

FPS = 24


def clear():
    for obj in list(bpy.data.objects):
        bpy.data.objects.remove(obj)
    for a in list(bpy.data.actions):
        bpy.data.actions.remove(a)
    for c in list(bpy.data.curves):
        bpy.data.curves.remove(c)
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    scene.frame_start, scene.frame_end = 1, 24
    scene.frame_set(1)
    ss = scene.stiff_rods
    ss.use_storm, ss.use_force_fields, ss.substeps, ss.iterations = False, True, 2, 3


def bezier_curve(name, points, bevel=0.01):
    data = bpy.data.curves.new(name, "CURVE")
    data.dimensions = "3D"
    data.bevel_depth = bevel
    sp = data.splines.new("BEZIER")
    sp.bezier_points.add(len(points) - 1)
    for bp, p in zip(sp.bezier_points, points, strict=True):
        bp.co = p
        bp.handle_left_type = bp.handle_right_type = "VECTOR"
    obj = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def moving_empty(name, *keys):
    """An empty with its location keyframed at (frame, location) ``keys``."""
    empty = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(empty)
    for frame, location in keys:
        empty.location = location
        empty.keyframe_insert("location", frame=frame)
    return empty


def points_of(obj):
    sp = obj.data.splines[0]
    co = np.empty(3 * len(sp.bezier_points))
    sp.bezier_points.foreach_get("co", co)
    return co.reshape(-1, 3)


def world_points(obj):
    m = np.array(obj.matrix_world)
    return points_of(obj) @ m[:3, :3].T + m[:3, 3]


def simulate_frames(session, start, end):
    """The bake's frame loop (addon.operators.BakeRun) run to the end; the samples per frame."""
    from stiff_rods.addon import operators

    run = operators.BakeRun(bpy.context.scene, session, start, end)
    while not run.done:
        run.step()
    run.close()
    return run.frames


def rope_with_moving_pin():
    """A 2 m rubber rope clamped at x = 0, its far end held by an empty that moves 0.4 m in and 0.3 m up
    over 24 frames (never farther from the clamp than the rope is long)."""
    clear()
    rope = bezier_curve("Rope", [(0.4 * i, 0.0, 2.0) for i in range(6)])
    empty = moving_empty("Hand", (1, (2.0, 0.0, 2.0)), (24, (1.6, 0.0, 2.3)))
    s = rope.stiff_rods
    s.material, s.segment_length, s.pin_object = "RUBBER", 0.1, empty
    activate(rope)
    rest = points_of(rope).copy()
    before = snapshot()
    out = {"bake": sorted(bpy.ops.stiff_rods.bake())}
    action = rope.data.animation_data.action
    out["action_tagged"] = bool(action and action.get("stiff_rods_bake"))
    # play the keys back with the add-on disabled: the curve's own F-curves move its points
    addon_utils.disable("stiff_rods", default_set=True)
    seg_len, end_err, mid_z = [], [], []
    for f in range(1, 25):
        bpy.context.scene.frame_set(f)
        w = world_points(rope)
        hand = np.array(empty.matrix_world)[:3, 3]
        end_err.append(float(np.linalg.norm(w[-1] - hand)))
        seg_len.append(np.linalg.norm(np.diff(w, axis=0), axis=1).tolist())
        mid_z.append(float(w[2, 2]))
    out["first_point_max_drift_m"] = float(max(np.linalg.norm(world_points(rope)[0] - rest[0]), 0.0))
    out["end_follows_pin_max_error_m"] = max(end_err)
    out["span_lengths"] = seg_len
    out["mid_z"] = mid_z
    addon_utils.enable("stiff_rods", default_set=True)
    activate(rope)
    out["free"] = sorted(bpy.ops.stiff_rods.free_bake())
    bpy.context.scene.frame_set(1)
    out["after_free_diff"] = first_diff(before, snapshot())
    out["after_free_max_point_error_m"] = float(np.abs(points_of(rope) - rest).max())
    out["actions_left"] = [a.name for a in bpy.data.actions if a.get("stiff_rods_bake")]
    return out


def pole_in_wind(angle_y_deg):
    """A 2 m vertical wooden pole, clamped at its foot, in a Wind field whose +Z is turned by angle_y."""
    clear()
    pole = bezier_curve("Pole", [(0.0, 0.0, 0.5 * i) for i in range(5)], bevel=0.005)
    pole.stiff_rods.material, pole.stiff_rods.segment_length = "WOOD", 0.1
    field = wind_field(20.0, (-5.0, 0.0, 1.0), angle_y_deg)
    field.field.shape = "PLANE"
    bpy.context.view_layer.update()
    activate(pole)
    from stiff_rods.addon import operators
    from stiff_rods.addon.session import SESSIONS

    assert bpy.ops.stiff_rods.convert() == {"FINISHED"}
    session = SESSIONS["Pole"]
    session.set_wind(operators.wind.SceneWind.from_scene(bpy.context.scene))
    tip = simulate_frames(session, 1, 12)[-1][0].co[-1] @ np.array(pole.matrix_world)[:3, :3].T
    return {"tip_x_m": float(tip[0]), "tip_y_m": float(tip[1]), "frame_after": bpy.context.scene.frame_current}


def live_curve_step_and_restore():
    clear()
    rope = bezier_curve("Rope", [(0.4 * i, 0.0, 2.0) for i in range(6)])
    rope.stiff_rods.material = "RUBBER"
    activate(rope)
    rest = points_of(rope).copy()
    from stiff_rods.addon import operators
    from stiff_rods.addon.session import SESSIONS

    assert bpy.ops.stiff_rods.convert() == {"FINISHED"}
    s = SESSIONS["Rope"]
    scene = bpy.context.scene
    s.reset(scene.frame_current, scene, live=True)
    for _ in range(6):
        operators.step_live(s, scene)
    moved = float(np.abs(points_of(rope) - rest).max())
    s.write_rest()
    return {
        "live_max_point_motion_m": moved,
        "live_frame": scene.frame_current,
        "restored_max_error_m": float(np.abs(points_of(rope) - rest).max()),
    }


def hooked_curve():
    """A Hook modifier holds control point 3 of a rope on an empty that moves 0.3 m in +y."""
    clear()
    rope = bezier_curve("Rope", [(0.4 * i, 0.0, 2.0) for i in range(6)])
    rope.stiff_rods.material, rope.stiff_rods.pin_root = "RUBBER", True
    hook = moving_empty("Hook", (1, (1.2, 0.0, 2.0)), (12, (1.2, 0.3, 2.0)))
    mod = rope.modifiers.new("Hook", "HOOK")
    mod.object = hook
    mod.vertex_indices_set([3 * 3 + 1])  # Bézier point 3: (handle, point, handle) per point
    activate(rope)
    from stiff_rods.addon.session import SESSIONS

    assert bpy.ops.stiff_rods.convert() == {"FINISHED"}
    last = simulate_frames(SESSIONS["Rope"], 1, 12)[-1][0]
    return {"hooked_point_y_m": float(last.co[3][1]), "free_end_y_m": float(last.co[-1][1])}


def storm_on_sapling(zip_unused=None):
    """The storm preset bends a Sapling aspen downwind (+X) much more than calm air."""
    from bad_input import make_sapling

    arm, curve, leaves = make_sapling("quaking_aspen")
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 24
    from stiff_rods.addon import operators
    from stiff_rods.addon.session import SESSIONS

    activate(arm)
    tips = {}
    for storm in (False, True):
        scene.stiff_rods.use_storm = storm
        if storm:
            assert bpy.ops.stiff_rods.storm_preset() == {"FINISHED"}
            ss = scene.stiff_rods  # rise over one frame, then blow until the end: the tree leans downwind
            ss.storm_frame_start, ss.storm_frame_peak_start, ss.storm_frame_peak_end, ss.storm_frame_end = 1, 2, 24, 24
        assert bpy.ops.stiff_rods.convert() == {"FINISHED"}
        s = SESSIONS[arm.name]
        s.set_wind(operators.wind.SceneWind.from_scene(scene))
        simulate_frames(s, 1, 24)
        disp = s.sim.positions - s.model.positions
        tips[storm] = float(np.mean(disp[:, 0]))
    return {"mean_dx_calm_m": tips[False], "mean_dx_storm_m": tips[True]}


def breaking_pole():
    """A 2 m wooden pole (r = 5 mm) clamped at its foot in a 20 m/s Wind field, with Breakage at 0.1 %
    strain: it snaps near the foot and the top falls; without Breakage it bends and stands."""
    from stiff_rods.addon.session import SESSIONS

    out = {}
    for breakage in (False, True):
        clear()
        pole = bezier_curve("Pole", [(0.0, 0.0, 0.5 * i) for i in range(5)], bevel=0.005)
        s = pole.stiff_rods
        s.material, s.segment_length, s.use_fracture, s.rupture_strain = "WOOD", 0.1, breakage, 0.1
        wind_field(20.0, (-5.0, 0.0, 1.0))
        activate(pole)
        from stiff_rods.addon import operators

        assert bpy.ops.stiff_rods.convert() == {"FINISHED"}
        session = SESSIONS["Pole"]
        session.set_wind(operators.wind.SceneWind.from_scene(bpy.context.scene))
        tip = simulate_frames(session, 1, 24)[-1][0].co[-1]
        out["breakage" if breakage else "intact"] = {
            "tip_z_m": float(tip[2]),
            "joints_left": session.sim.model.n_joints,
            "joints": session.model.n_joints,
        }
    return out


def seed_models_on_a_rope():
    """A 2 m rubber rope clamped at x = 0 falls for 12 frames in still air with each Rod Model (the bake's
    frame loop); PaOBCR also through Bake / Free Bake; then the refusals, each an ERROR report."""
    from stiff_rods.addon.session import SESSIONS

    out = {}
    for model in ("STIFF_KKT", "STIFF_GS", "PAOBCR", "PBER"):
        clear()
        rope = bezier_curve("Rope", [(0.4 * i, 0.0, 2.0) for i in range(6)], bevel=0.005)
        s = rope.stiff_rods
        s.material, s.segment_length, s.rod_model = "RUBBER", 0.1, model
        activate(rope)
        assert bpy.ops.stiff_rods.convert() == {"FINISHED"}
        frames = simulate_frames(SESSIONS["Rope"], 1, 12)
        pts = frames[-1][0].co
        out[model] = {
            "end_x_m": float(pts[-1][0]),
            "end_z_m": float(pts[-1][2]),
            "first_point_drift_m": float(np.linalg.norm(np.asarray(pts[0]) - [0.0, 0.0, 2.0])),
        }
    rest = points_of(rope).copy()
    before = snapshot()
    rope.stiff_rods.rod_model = "PAOBCR"
    out["bake"] = sorted(bpy.ops.stiff_rods.bake())
    bpy.context.scene.frame_set(12)
    out["baked_end_z_m"] = float(world_points(rope)[-1, 2])
    out["free"] = sorted(bpy.ops.stiff_rods.free_bake())
    bpy.context.scene.frame_set(1)
    rope.stiff_rods.rod_model = "STIFF_KKT"
    out["after_free_diff"] = first_diff(before, snapshot())
    out["after_free_max_point_error_m"] = float(np.abs(points_of(rope) - rest).max())
    refusals = {}
    for name, model, material, wind in (("dlo_wood", "DLO", "WOOD", False), ("paobcr_wind", "PAOBCR", "RUBBER", True)):
        rope.stiff_rods.rod_model, rope.stiff_rods.material = model, material
        if wind:
            wind_field(5.0, (-5.0, 0.0, 1.0), 0.0)
            activate(rope)
        before = snapshot()
        try:
            bpy.ops.stiff_rods.bake()
            refusals[name] = "no error"
        except RuntimeError as exc:
            refusals[name] = str(exc)
        refusals[name + "_diff"] = first_diff(before, snapshot())
    out["refusals"] = refusals
    return out


def collider(kind, location, **kw):
    """A mesh primitive with a Collision modifier."""
    add = {
        "plane": bpy.ops.mesh.primitive_plane_add,
        "sphere": bpy.ops.mesh.primitive_uv_sphere_add,
        "tube": bpy.ops.mesh.primitive_cylinder_add,
    }[kind]
    add(location=location, **kw)
    obj = bpy.context.active_object
    obj.modifiers.new("Collision", "COLLISION")
    return obj


def rope_on_colliders():
    """A 2 m rubber rope (r = 1 cm, not pinned) falls 36 frames onto: a plane; a UV sphere (r = 0.5 m); a
    plane keyframed to rise 0.5 m over frames 12–36. And an open tube is refused."""
    from stiff_rods.addon.session import SESSIONS

    out = {}
    for name in ("plane", "sphere", "rising"):
        clear()
        bpy.context.scene.frame_end = 36
        if name == "sphere":
            collider("sphere", (1.0, 0.0, 0.0), radius=0.5, segments=64, ring_count=32)
            z0 = 0.8
        else:
            ground = collider("plane", (1.0, 0.0, 0.0), size=6.0)
            z0 = 0.3
            if name == "rising":
                ground.keyframe_insert("location", frame=12)
                ground.location.z = 0.5
                ground.keyframe_insert("location", frame=36)
        rope = bezier_curve("Rope", [(0.4 * i, 0.0, z0) for i in range(6)], bevel=0.01)
        s = rope.stiff_rods
        s.material, s.segment_length, s.pin_root = "RUBBER", 0.1, False
        activate(rope)
        assert bpy.ops.stiff_rods.convert() == {"FINISHED"}
        pts = np.asarray(simulate_frames(SESSIONS["Rope"], 1, 36)[-1][0].co)
        res = {"min_z_m": float(pts[:, 2].min()), "max_z_m": float(pts[:, 2].max())}
        if name == "sphere":
            d = np.linalg.norm(pts - [1.0, 0.0, 0.0], axis=1)
            res.update(min_centre_distance_m=float(d.min()), middle_z_m=float(pts[len(pts) // 2, 2]))
        out[name] = res
    clear()
    collider("tube", (1.0, 0.0, 0.0), radius=0.3, depth=1.0, end_fill_type="NOTHING")
    rope = bezier_curve("Rope", [(0.4 * i, 0.0, 1.0) for i in range(6)])
    activate(rope)
    before = snapshot()
    try:
        bpy.ops.stiff_rods.convert()
        out["open_mesh"] = "no error"
    except RuntimeError as exc:
        out["open_mesh"] = str(exc)
    out["open_mesh_diff"] = first_diff(before, snapshot())
    return out


class RecordingLayout:
    """Stands in for a panel's UILayout: every prop must be a real RNA property of its data and every
    operator a registered one, with a text for each label; records what was drawn."""

    def __init__(self, drawn):
        self.drawn = drawn

    def column(self, **kw):
        return self

    box = row = column

    def prop(self, data, name, **kw):
        assert name in data.bl_rna.properties, f"panel draws unknown property {name!r} of {data.bl_rna.identifier}"
        self.drawn.append(name)

    def operator(self, idname, **kw):
        cat, name = idname.split(".")
        assert hasattr(getattr(bpy.ops, cat), name), f"panel draws unknown operator {idname!r}"
        self.drawn.append(idname)

    def label(self, text="", **kw):
        self.drawn.append("label:" + text)


def panel_draws():
    """The N-panel's draw on a converted rope with every optional part shown (Custom material, storm,
    stats): every property and operator it shows exists."""
    clear()
    rope = bezier_curve("Rope", [(0.4 * i, 0.0, 2.0) for i in range(6)])
    rope.stiff_rods.material = "CUSTOM"
    bpy.context.scene.stiff_rods.use_storm = True
    activate(rope)
    assert bpy.ops.stiff_rods.convert() == {"FINISHED"}
    mod = sys.modules["stiff_rods.addon.panel"]
    drawn = []
    fake = type("PanelSelf", (), {"layout": RecordingLayout(drawn)})()
    mod.STIFF_RODS_PT_main.draw(fake, bpy.context)
    bpy.context.scene.stiff_rods.use_storm = False
    return {"drawn": drawn}


def main():
    zip_path = sys.argv[sys.argv.index("--") + 1]
    install(zip_path)
    out = {"blender": list(bpy.app.version)}
    cases = [
        ("rope_pin", rope_with_moving_pin),
        ("wind_plus_x", lambda: pole_in_wind(90.0)),
        ("wind_minus_x", lambda: pole_in_wind(-90.0)),
        ("live", live_curve_step_and_restore),
        ("hook", hooked_curve),
        ("storm", storm_on_sapling),
        ("seed_models", seed_models_on_a_rope),
        ("colliders", rope_on_colliders),
        ("panel", panel_draws),
        ("breakage", breaking_pole),
    ]
    report_cases("CURVES_WIND_RESULT", out, cases)


if __name__ == "__main__":
    main()
