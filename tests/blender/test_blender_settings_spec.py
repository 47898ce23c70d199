"""The Blender properties become the spec (addon/settings.py) and the Material menu is the solver's presets,
read from real properties registered in the bpy module (a subprocess: bpy stays out of the test process)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import importlib.util, json, sys
root = sys.argv[1]
spec = importlib.util.spec_from_file_location("stiff_rods", root + "/__init__.py", submodule_search_locations=[root])
pkg = importlib.util.module_from_spec(spec)
sys.modules["stiff_rods"] = pkg
spec.loader.exec_module(pkg)
import bpy
pkg.register()
from stiff_rods.addon import session, settings

scene = bpy.context.scene
curve = bpy.data.curves.new("Rope", "CURVE")
curve.dimensions = "3D"
sp = curve.splines.new("POLY")
sp.points.add(5)
for i, p in enumerate(sp.points):
    p.co = (0.2 * i, 0.0, 1.0, 1.0)
obj = bpy.data.objects.new("Rope", curve)
scene.collection.objects.link(obj)
s = obj.stiff_rods
s.material, s.use_fracture, s.rupture_strain, s.root_joint, s.collide = "RUBBER", True, 1.5, "BALL", False
scene.stiff_rods.substeps, scene.stiff_rods.live_iterations = 4, 3
scene.render.fps, scene.render.fps_base = 30, 1.001
out = {}
items = s.bl_rna.properties["material"].enum_items
out["items"] = [[i.identifier, i.name, i.description] for i in items]
spec = settings.simulation_spec(obj, scene)
out["rod"] = [spec.rod.material, spec.rod.rupture_strain, spec.rod.root_joint, spec.rod.collide]
out["scene"] = [spec.scene.gravity, spec.scene.frame_time, spec.scene.unit, spec.scene.integrator]
out["runs"] = [list(spec.scene.solver.run(live=live).__dict__.values()) for live in (False, True)]
ses = session.Session(obj, scene)
out["session"] = [list(ses.material), ses.gravity.tolist(), ses.frame_time, ses.substeps, ses.model.n_segments]
print("SPEC_RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    pytest.importorskip("bpy")
    profile = tmp_path_factory.mktemp("settings_spec")  # an isolated user profile (the kernel cache goes there)
    env = dict(os.environ)
    for folder in ("SCRIPTS", "CONFIG", "RESOURCES"):
        env[f"BLENDER_USER_{folder}"] = str(profile / folder.lower())
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(ROOT)], capture_output=True, text=True, timeout=600, cwd=ROOT, env=env
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith("SPEC_RESULT ")), None)
    assert line is not None, proc.stdout[-2000:] + proc.stderr[-4000:]
    return json.loads(line.split(" ", 1)[1])


def test_material_menu_is_the_solver_presets(out):
    assert out["items"] == [
        ["WOOD", "Wood (E 12.5 GPa, G 6.5 GPa, 1000 kg/m³)", "Deul et al.'s trees"],
        ["LEAF", "Leaf (E 1.2 GPa, G 0.6 GPa, 1000 kg/m³)", "Deul et al.'s leaves"],
        ["STEEL", "Steel (E 209 GPa, G 79 GPa, 7800 kg/m³)", "Spring steel"],
        ["RUBBER", "Rubber (E 0.05 GPa, G 0.017 GPa, 1100 kg/m³)", "A soft cable"],
        ["CUSTOM", "Custom", "Use the moduli and density below"],
    ]


def test_the_spec_holds_the_properties_values(out):
    material, rupture, root_joint, collide = out["rod"]
    assert material == [0.05e9, 0.017e9, 1100.0]
    assert rupture == pytest.approx(0.015, rel=1e-6) and root_joint == "BALL" and collide is False
    gravity, frame_time, unit, integrator = out["scene"]
    assert gravity == [0.0, 0.0, -9.8100004196167]  # Blender stores it in float32
    assert frame_time == pytest.approx(1.001 / 30, rel=1e-7) and unit == 1.0 and integrator == "euler"
    assert out["runs"] == [[4, 5, 0, pytest.approx(1e-6)], [1, 3, 2, pytest.approx(1e-6)]]


def test_a_session_is_built_from_the_spec(out):
    material, gravity, frame_time, substeps, segments = out["session"]
    assert material == [0.05e9, 0.017e9, 1100.0] and gravity == [0.0, 0.0, -9.8100004196167]
    assert frame_time == pytest.approx(1.001 / 30, rel=1e-7) and substeps == 4 and segments >= 5
