"""The add-on's numeric modules import without Blender, and the settings become a plain spec."""

import subprocess
import sys
from types import SimpleNamespace

import pytest

from conftest import PURE_MODULES, ROOT

# the Material menu as the add-on had it, with its own E [Pa], G [Pa], ρ [kg/m³]
OLD_MATERIALS = {
    "WOOD": (12.5e9, 6.5e9, 1000.0),
    "LEAF": (1.2e9, 0.6e9, 1000.0),
    "STEEL": (209e9, 79e9, 7800.0),
    "RUBBER": (0.05e9, 0.017e9, 1100.0),
}
OLD_ITEMS = [
    ("WOOD", "Wood (E 12.5 GPa, G 6.5 GPa, 1000 kg/m³)", "Deul et al.'s trees"),
    ("LEAF", "Leaf (E 1.2 GPa, G 0.6 GPa, 1000 kg/m³)", "Deul et al.'s leaves"),
    ("STEEL", "Steel (E 209 GPa, G 79 GPa, 7800 kg/m³)", "Spring steel"),
    ("RUBBER", "Rubber (E 0.05 GPa, G 0.017 GPa, 1100 kg/m³)", "A soft cable"),
    ("CUSTOM", "Custom", "Use the moduli and density below"),
]


def test_the_numeric_modules_import_without_bpy():
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'tests' / 'addon')!r})\n"
        "import importlib, conftest\n"
        "p = conftest.load_package()\n"
        f"for name in {PURE_MODULES!r}: importlib.import_module(p + '.addon.' + name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('bpy', 'mathutils')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]"


def test_material_menu_comes_from_the_solver_presets_with_the_add_ons_numbers(addon):
    spec = addon("spec")
    assert spec.material_items() == OLD_ITEMS
    for identifier, constants in OLD_MATERIALS.items():
        assert spec.preset_constants(identifier) == constants


def _object_settings(**changes):
    base = dict(
        rod_model="STIFF_KKT",
        material="STEEL",
        youngs_modulus_gpa=2.0,
        torsion_modulus_gpa=1.0,
        density=900.0,
        default_radius=0.02,
        segment_length=0.1,
        pin_root=True,
        root_joint="HINGE",
        root_axis="X",
        pin_joint="BALL",
        pin_axis="ROD",
        stretch="PHYSICAL",
        shear_coefficient=0.8,
        use_leaves=False,
        rest_shape="AUTO",
        add_bones=True,
        damping=0.25,
        drag_coefficient=1.1,
        collide=False,
        friction=0.3,
        self_collision=True,
        use_fracture=True,
        rupture_strain=2.0,
        pin_object=None,
    )
    base.update(changes)
    return SimpleNamespace(**base)


def _scene(**changes):
    ss = dict(
        substeps=3,
        iterations=7,
        live_iterations=2,
        live_matrix_reuse=4,
        tolerance=1e-7,
        integrator="BDF2",
        use_damping_ratio=True,
        damping_ratio=0.05,
        damping_frequency=1.5,
        use_scene_gravity=True,
        preroll_frames=0,
        use_loop=False,
        loop_frames=120,
        use_auto_preroll=True,
        use_seam_blend=True,
        use_named_actions=False,
        named_actions={"CALM", "BREEZE", "STORM"},
    )
    ss.update(changes)
    return SimpleNamespace(
        stiff_rods=SimpleNamespace(**ss),
        render=SimpleNamespace(fps=30, fps_base=1.001),
        gravity=(0.0, 0.0, -9.8100004196167),
        use_gravity=True,
        unit_settings=SimpleNamespace(system="METRIC", scale_length=0.01),
        name="Scene",
    )


def test_settings_become_a_frozen_spec(addon):
    settings, spec = addon("settings"), addon("spec")
    obj = SimpleNamespace(stiff_rods=_object_settings())
    s = settings.simulation_spec(obj, _scene())
    assert s.rod.material == OLD_MATERIALS["STEEL"]
    assert s.rod.rupture_strain == 0.01 * 2.0 and s.rod.root_axis == "X" and s.rod.seed_model is None
    assert s.scene.unit == 0.01 and s.scene.frame_time == 1.0 / (30 / 1.001)
    assert s.scene.gravity == (0.0, 0.0, -9.8100004196167) and s.scene.integrator == "bdf2"
    assert s.scene.damping_ratio == (0.05, 1.5)
    assert s.scene.solver.run(live=False) == spec.RunSpec(3, 7, 0, 1e-7)
    assert s.scene.solver.run(live=True) == spec.RunSpec(1, 2, 4, 1e-7)
    with pytest.raises(AttributeError):
        s.rod.damping = 1.0  # frozen
    custom = settings.rod_spec(_object_settings(material="CUSTOM", use_fracture=False))
    assert custom.material == (2.0 * 1e9, 1.0 * 1e9, 900.0) and custom.rupture_strain is None
    off = settings.scene_spec(_scene(use_scene_gravity=False, use_damping_ratio=False))
    assert off.gravity == (0.0, 0.0, 0.0) and off.damping_ratio is None


def test_builder_refuses_settings_that_cannot_go_together(addon):
    builder, spec = addon("builder"), addon("spec")
    scene = spec.SceneSpec(integrator="bdf2", damping_ratio=(0.1, 1.0))
    rod = spec.RodSpec(rod_model="PBER", stretch="PHYSICAL", root_joint="BALL")
    with pytest.raises(ValueError, match="'Rope': Rod Model 'PBER' clamps its root") as info:
        builder.refuse_combinations("Rope", rod, scene, is_tree=False)
    for label in ("Root Joint 'Ball'", "Stretch 'Physical'", "Integrator 'BDF2'", "Damping Ratio"):
        assert label in str(info.value)
    with pytest.raises(ValueError, match="a Sapling tree needs a Stiff Rods model"):
        builder.refuse_combinations("treeArm", rod, scene, is_tree=True)
    with pytest.raises(ValueError, match="Rest Shape 'Straight' is for curves"):
        builder.refuse_combinations("treeArm", spec.RodSpec(rest_shape="STRAIGHT"), scene, is_tree=True)
    builder.refuse_combinations("Rope", spec.RodSpec(), scene, is_tree=False)  # a Stiff Rods model takes them all


def test_wind_settings_become_a_spec(addon):
    settings = addon("settings")
    storm = dict(
        storm_peak_speed=25.0,
        storm_direction=90.0,
        storm_frame_start=1,
        storm_frame_peak_start=10,
        storm_frame_peak_end=20,
        storm_frame_end=30,
        storm_gusts=0.2,
        storm_turbulence=0.1,
        storm_turbulence_length=4.0,
        storm_seed=3,
    )
    scene = _scene(use_force_fields=False, field_speed_scale=2.0, use_storm=True, **storm)
    w = settings.wind_spec(scene)
    assert (w.use_force_fields, w.field_speed_scale, w.use_storm) == (False, 2.0, True)
    assert w.storm.frames == (1, 10, 20, 30) and w.storm.peak_speed == 25.0 and w.storm.direction == 90.0
    assert (w.storm.gusts, w.storm.turbulence, w.storm.turbulence_length, w.storm.seed) == (0.2, 0.1, 4.0, 3)
    assert w.period == 120 * 1.001 / 30  # a loop bake's wind repeats with the Loop Length


def test_bake_settings_become_a_spec(addon):
    settings = addon("settings")
    b = settings.bake_spec(_scene(preroll_frames=48, use_loop=True, loop_frames=96, use_seam_blend=False))
    assert (b.preroll, b.loop, b.auto_preroll, b.blend_seam) == (48, 96, True, False)
    assert settings.bake_spec(_scene(loop_frames=96)).loop == 0  # Loop off: no loop, whatever its length
    assert settings.bake_spec(_scene()).actions == ()
    named = _scene(use_named_actions=True, named_actions={"STORM", "SCENE", "CALM"})
    assert settings.bake_spec(named).actions == ("CALM", "STORM", "SCENE")  # calm to storm, then the scene's
