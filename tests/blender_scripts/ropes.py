"""Ropes and cables in Blender: root and pin joints, physical stretch, a straight rest shape, the integrator and
the damping ratio, set in the N-panel's settings (run by tests/blender/test_blender_ropes.py).

    blender -b --factory-startup --python ropes.py -- LEGACY_ZIP OUT_DIR

Every motion is read from the keys a Bake wrote (the curve's F-curves evaluated by Blender, not the add-on's
session). Prints one line ``ROPES_RESULT {json}``.
"""

import os
import sys

import bpy
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bad_input import install, report_cases  # noqa: E402
from curves_wind import bezier_curve  # noqa: E402
from inputs import action_of, activate, fcurves_of, live_session, mod, refused, rope, run  # noqa: E402
from inputs import reset as reset_scene  # noqa: E402


def reset():
    """inputs.reset, and the scene's integrator and damping ratio at their defaults."""
    reset_scene()
    ss = bpy.context.scene.stiff_rods
    ss.integrator, ss.use_damping_ratio = "EULER", False


def baked_points(obj, frames):
    """The curve's control points (frames, points, 3) [object-local] from its baked F-curves."""
    fcs = {(fc.data_path, fc.array_index): fc for fc in fcurves_of(action_of(obj))}
    n = len(obj.data.splines[0].bezier_points)
    return np.array(
        [
            [[fcs[(f"splines[0].bezier_points[{k}].co", i)].evaluate(f) for i in range(3)] for k in range(n)]
            for f in frames
        ]
    )


def bake(obj, frames, substeps, iterations=5, integrator="EULER"):
    """Bake ``obj`` over frames 1..``frames`` at 24 fps; its control points per frame (frame 1 first)."""
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 24, 1.0
    ss = scene.stiff_rods
    ss.substeps, ss.iterations, ss.integrator = substeps, iterations, integrator
    activate(obj)
    outcome = run("bake", frame_start=1, frame_end=frames)
    assert outcome["outcome"] == ["FINISHED"], outcome
    return baked_points(obj, range(1, frames + 1))


def steel_rod(name="Rod", pin_root=True):
    """A 1 m steel rod along +X at 1 m height, radius 1 cm, 10 segments, undamped."""
    obj = rope(name, n=6, spacing=0.2, z=1.0, material="STEEL", pin_root=pin_root)
    obj.stiff_rods.damping = 0.0
    return obj


def pendulum(joint, integrator="BDF2"):
    """The steel rod released horizontal from a root joint at its first point, 60 frames at Δt = 1/240 s: the
    tip's (x, z) per frame [m] (pivot at the origin's height 1 m)."""
    reset()
    obj = steel_rod()
    obj.stiff_rods.root_joint = joint
    obj.stiff_rods.root_axis = "Y"
    pts = bake(obj, 60, substeps=10, integrator=integrator)
    return {"tip_x": pts[:, -1, 0].tolist(), "tip_z": pts[:, -1, 2].tolist(), "fps": 24}


def pin_joint(joint):
    """The steel rod, root free, held by Pin To an empty at its first point with Pin Joint ``joint``: the tip's
    lowest z over 24 frames [m]."""
    reset()
    obj = steel_rod(pin_root=False)
    empty = bpy.data.objects.new("Hand", None)
    bpy.context.scene.collection.objects.link(empty)
    empty.location = (0.0, 0.0, 1.0)
    obj.stiff_rods.pin_object = empty
    obj.stiff_rods.pin_joint = joint
    pts = bake(obj, 24, substeps=4)
    return {"tip_z_min": float(pts[:, -1, 2].min()), "held_x": pts[:, 0, 0].tolist()}


def cord(stretch, length=2.0):
    """A rubber cord (E 2 MPa, ρ 1100 kg/m³) drawn vertical from a ball joint at 2 m, 3 s with damping 10/s: its
    end's drop at rest [m] (the mean of the last 6 frames) and its drawn length."""
    reset()
    obj = bezier_curve("Cord", [(0.0, 0.0, 2.0 - 0.4 * i) for i in range(6)], bevel=0.005)
    s = obj.stiff_rods
    s.material, s.youngs_modulus_gpa, s.torsion_modulus_gpa, s.density = "CUSTOM", 2e-3, 2e-3 / 3, 1100.0
    s.segment_length, s.collide, s.damping, s.stretch, s.root_joint = 0.1, False, 10.0, stretch, "BALL"
    pts = bake(obj, 72, substeps=4)
    drop = pts[0, -1, 2] - pts[-6:, -1, 2].mean()
    return {"drop_m": float(drop), "length_m": length, "density": 1100.0, "youngs": 2e6}


def bent_rod(rest_shape):
    """A steel rod drawn as a coarse arc (four 0.2 m legs turning 20° each in the XY plane), clamped at its first
    point, gravity off, damping 10/s, 2 s: its end at the start and at rest, and the drawn legs."""
    reset()
    bpy.context.scene.use_gravity = False
    angles = np.radians([0.0, 20.0, 40.0, 60.0])
    legs = 0.2 * np.stack((np.cos(angles), np.sin(angles), np.zeros(4)), axis=1)
    points = np.vstack(([0.0, 0.0, 1.0], [0.0, 0.0, 1.0] + np.cumsum(legs, axis=0)))
    obj = bezier_curve("Bent", [tuple(p) for p in points])
    s = obj.stiff_rods
    s.material, s.segment_length, s.collide, s.damping, s.rest_shape = "STEEL", 0.1, False, 10.0, rest_shape
    pts = bake(obj, 48, substeps=2)
    return {"start": pts[0, 0].tolist(), "end_first": pts[0, -1].tolist(), "end_last": pts[-1, -1].tolist()}


def stale_settings():
    """Convert a rope, then change one new setting at a time: the model is out of date after each change, and the
    session Simulate then builds has the setting."""
    reset()
    obj = rope()
    scene = bpy.context.scene
    ops = mod("operators")
    empty = bpy.data.objects.new("Hand", None)
    bpy.context.scene.collection.objects.link(empty)
    empty.location = (0.8, 0.0, 1.0)
    obj.stiff_rods.pin_object = empty
    out = {}
    changes = (
        ("root_joint", obj.stiff_rods, "BALL"),
        ("root_axis", obj.stiff_rods, "Y"),
        ("pin_joint", obj.stiff_rods, "BALL"),
        ("pin_axis", obj.stiff_rods, "Z"),
        ("stretch", obj.stiff_rods, "PHYSICAL"),
        ("shear_coefficient", obj.stiff_rods, 0.7),
        ("rest_shape", obj.stiff_rods, "STRAIGHT"),
        ("integrator", scene.stiff_rods, "BDF2"),
        ("use_damping_ratio", scene.stiff_rods, True),
        ("damping_ratio", scene.stiff_rods, 0.2),
        ("damping_frequency", scene.stiff_rods, 2.0),
    )
    for name, group, value in changes:
        run("convert")
        before = mod("session").SESSIONS["Rope"]
        setattr(group, name, value)
        out[name] = {"up_to_date": ops.up_to_date(before, obj, scene, every=0.0)}
    s, _ = live_session()
    m = s.model
    kinds = mod("kinematics").JOINT_KINDS
    root = int(np.flatnonzero(m.joint_parent == s.branch_map.anchors[0])[0])
    held = s.pins.segments[0]
    at_pin = np.flatnonzero((m.joint_parent == held) | (m.joint_child == held))
    out["built"] = {
        "root_kind": kinds[int(m.joint_kind[root])],
        "pin_kinds": [kinds[int(k)] for k in m.joint_kind[at_pin]],
        "physical": bool(np.all(m.physical_stretch)),
        "shear_coefficient": float(m.shear_coefficient[0]),
        "rest_identity": bool(np.allclose(np.abs(m.rest_darboux[:, 0]), 1.0)),
        "integrator": s.sim.integrator,
        "damping": float(s.sim.damping),
    }
    return out


def refusals():
    """Settings that cannot go together are refused by name, the scene unchanged."""
    out = {}
    reset()
    obj = rope()
    obj.stiff_rods.rod_model, obj.stiff_rods.root_joint = "PAOBCR", "BALL"
    out["seed_with_ball"] = refused("convert", obj)
    reset()
    obj = rope()
    obj.stiff_rods.rod_model, obj.stiff_rods.stretch = "DLO", "PHYSICAL"
    out["seed_with_physical"] = refused("convert", obj)
    reset()
    obj = rope()
    ss = bpy.context.scene.stiff_rods
    ss.substeps, ss.use_damping_ratio, ss.damping_ratio, ss.damping_frequency = 1, True, 0.001, 10.0
    out["ratio_below_euler"] = refused("convert", obj)
    return out


CASES = (
    ("ball_bdf2", lambda: pendulum("BALL")),
    ("ball_euler", lambda: pendulum("BALL", "EULER")),
    ("hinge_bdf2", lambda: pendulum("HINGE")),
    ("clamp", lambda: pendulum("CLAMP")),
    ("pin_ball", lambda: pin_joint("BALL")),
    ("pin_clamp", lambda: pin_joint("CLAMP")),
    ("cord_physical", lambda: cord("PHYSICAL")),
    ("cord_inextensible", lambda: cord("INEXTENSIBLE")),
    ("bent_straight", lambda: bent_rod("STRAIGHT")),
    ("bent_as_drawn", lambda: bent_rod("STRESS_FREE")),
    ("stale_settings", stale_settings),
    ("refusals", refusals),
)


def main():
    zip_path, out_dir = sys.argv[sys.argv.index("--") + 1 :][:2]
    install(zip_path)
    os.makedirs(out_dir, exist_ok=True)
    cases = list(CASES)
    only = os.environ.get("ROPES_CASES")  # a comma-separated subset, when debugging one case
    if only:
        cases = [c for c in cases if c[0] in only.split(",")]
    report_cases("ROPES_RESULT", {"blender": list(bpy.app.version)}, cases)


if __name__ == "__main__":
    main()
