"""Settings stored in the .blend: per object (material, pins, radius) and per scene (solver)."""
from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, PointerProperty


class StiffRodsObjectSettings(bpy.types.PropertyGroup):
    material: EnumProperty(
        name="Material",
        items=[("WOOD", "Wood (E 12.5 GPa, G 6.5 GPa, 1000 kg/m³)", "Deul et al.'s trees"),
               ("LEAF", "Leaf (E 1.2 GPa, G 0.6 GPa, 1000 kg/m³)", "Deul et al.'s leaves"),
               ("STEEL", "Steel (E 209 GPa, G 79 GPa, 7800 kg/m³)", "Spring steel"),
               ("RUBBER", "Rubber (E 0.05 GPa, G 0.017 GPa, 1100 kg/m³)", "A soft cable"),
               ("CUSTOM", "Custom", "Use the moduli and density below")],
        default="WOOD")
    youngs_modulus_gpa: FloatProperty(name="Young's Modulus (GPa)", default=12.5, min=1e-6, soft_max=300.0,
                                      description="Young's modulus E in GPa (bending stiffness E·I)")
    torsion_modulus_gpa: FloatProperty(name="Torsion Modulus (GPa)", default=6.5, min=1e-6, soft_max=150.0,
                                       description="Torsion modulus G in GPa (twisting stiffness G·J)")
    density: FloatProperty(name="Density (kg/m³)", default=1000.0, min=1e-3, soft_max=20000.0)
    damping: FloatProperty(name="Damping (1/s)", default=0.5, min=0.0, soft_max=20.0,
                           description="Mass-proportional velocity damping rate")
    default_radius: FloatProperty(name="Radius (no bevel)", default=0.01, min=1e-5, unit="LENGTH",
                                  description="Rod radius for curves without a bevel depth")
    segment_length: FloatProperty(name="Segment Length", default=0.1, min=1e-4, unit="LENGTH",
                                  description="Curves (not Sapling trees) are resampled to segments of about this length")
    pin_root: BoolProperty(name="Pinned Root", default=True,
                           description="Clamp every root branch at its first point")


class StiffRodsSceneSettings(bpy.types.PropertyGroup):
    substeps: IntProperty(name="Substeps", default=2, min=1, max=100, description="Solver steps per frame")
    iterations: IntProperty(name="Iterations", default=3, min=1, max=100,
                            description="Newton iterations per step at most")
    tolerance: FloatProperty(name="Tolerance η", default=1e-6, min=0.0, precision=9,
                             description="Stop iterating when the constraint residual ‖C + α̃λ‖∞ is below this")
    use_scene_gravity: BoolProperty(name="Scene Gravity", default=True,
                                    description="Use the scene's gravity (Scene Properties > Gravity)")


classes = (StiffRodsObjectSettings, StiffRodsSceneSettings)


def register_properties():
    bpy.types.Object.stiff_rods = PointerProperty(type=StiffRodsObjectSettings)
    bpy.types.Scene.stiff_rods = PointerProperty(type=StiffRodsSceneSettings)


def unregister_properties():
    del bpy.types.Scene.stiff_rods
    del bpy.types.Object.stiff_rods
