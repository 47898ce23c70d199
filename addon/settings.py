"""Blender properties → :class:`addon.spec.SimulationSpec`, the way the glTF exporter turns its operator into
``export_settings``: every read of the Stiff Rods settings a simulation needs happens here, once.

Takes the Blender objects it is given (an object with ``stiff_rods`` settings, a scene); imports no bpy.
"""

from __future__ import annotations

from .frames import unit_scale
from .spec import BakeSpec, RodSpec, SceneSpec, SimulationSpec, SolverSpec, StormSpec, WindSpec, preset_constants


def material(settings) -> tuple[float, float, float]:
    """(E [Pa], G [Pa], ρ [kg/m³]) of an object's settings: a preset's, or the Custom moduli and density."""
    if settings.material == "CUSTOM":
        return settings.youngs_modulus_gpa * 1e9, settings.torsion_modulus_gpa * 1e9, settings.density
    return preset_constants(settings.material)


def rod_spec(settings) -> RodSpec:
    """The object settings ``settings`` (properties.StiffRodsObjectSettings) as a RodSpec."""
    return RodSpec(
        rod_model=settings.rod_model,
        material=material(settings),
        default_radius=settings.default_radius,
        segment_length=settings.segment_length,
        pin_root=settings.pin_root,
        root_joint=settings.root_joint,
        root_axis=settings.root_axis,
        stretch=settings.stretch,
        shear_coefficient=settings.shear_coefficient,
        use_leaves=settings.use_leaves,
        rest_shape=settings.rest_shape,
        add_bones=settings.add_bones,
        damping=settings.damping,
        drag_coefficient=settings.drag_coefficient,
        collide=settings.collide,
        friction=settings.friction,
        self_collision=settings.self_collision,
        rupture_strain=0.01 * settings.rupture_strain if settings.use_fracture else None,
    )


def solver_spec(scene) -> SolverSpec:
    """The scene's solver settings (substeps, iterations, the live preview's, tolerance)."""
    ss = scene.stiff_rods
    return SolverSpec(
        substeps=ss.substeps,
        iterations=ss.iterations,
        live_iterations=ss.live_iterations,
        live_matrix_reuse=ss.live_matrix_reuse,
        tolerance=ss.tolerance,
    )


def scene_spec(scene) -> SceneSpec:
    """The scene's settings a model is built with (unit scale, frame rate, gravity, integrator, damping ratio)."""
    ss = scene.stiff_rods
    fps = scene.render.fps / scene.render.fps_base
    gravity = tuple(scene.gravity) if (ss.use_scene_gravity and scene.use_gravity) else (0.0, 0.0, 0.0)
    return SceneSpec(
        unit=unit_scale(scene),
        frame_time=1.0 / fps,
        gravity=gravity,
        integrator=ss.integrator.lower(),
        damping_ratio=(ss.damping_ratio, ss.damping_frequency) if ss.use_damping_ratio else None,
        solver=solver_spec(scene),
    )


def wind_spec(scene) -> WindSpec:
    """The scene's wind settings (Force Fields, Field Speed, Storm and the storm's parameters)."""
    ss = scene.stiff_rods
    storm = StormSpec(
        peak_speed=ss.storm_peak_speed,
        direction=ss.storm_direction,
        frames=(ss.storm_frame_start, ss.storm_frame_peak_start, ss.storm_frame_peak_end, ss.storm_frame_end),
        gusts=ss.storm_gusts,
        turbulence=ss.storm_turbulence,
        turbulence_length=ss.storm_turbulence_length,
        seed=ss.storm_seed,
    )
    period = ss.loop_frames * scene_spec(scene).frame_time  # a loop's wind repeats with the Loop Length
    return WindSpec(ss.use_force_fields, ss.field_speed_scale, ss.use_storm, storm, period)


def bake_spec(scene) -> BakeSpec:
    """The scene's Pre-roll and Loop settings."""
    ss = scene.stiff_rods
    order = ("CALM", "BREEZE", "STORM", "SCENE")
    actions = tuple(a for a in order if a in ss.named_actions) if ss.use_named_actions else ()
    loop = ss.loop_frames if ss.use_loop else 0
    return BakeSpec(ss.preroll_frames, loop, ss.use_auto_preroll, ss.use_seam_blend, actions)


def simulation_spec(obj, scene) -> SimulationSpec:
    """The settings of ``obj`` (a Sapling armature or a curve) and of ``scene``."""
    return SimulationSpec(rod=rod_spec(obj.stiff_rods), scene=scene_spec(scene))


def pin_settings(obj) -> tuple:
    """(Pin To object or None, Pin Joint, Pin Axis) of ``obj``'s settings: read again at every start of a
    simulation, where the pins are chosen."""
    s = obj.stiff_rods
    return getattr(s, "pin_object", None), getattr(s, "pin_joint", "CLAMP"), getattr(s, "pin_axis", "ROD")
