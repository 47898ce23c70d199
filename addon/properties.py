"""Settings stored in the .blend: per object (material, pins, radius) and per scene (solver)."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, PointerProperty

from . import reader
from .spec import material_items


def own_parts(owner) -> dict:
    """The objects of the tree or curve ``owner`` by role ("armature", "curve", "leaves"); just ``owner`` when
    it is no tree (reader.find_parts refuses it)."""
    try:
        curve, armature, leaves = reader.find_parts(owner)
    except reader.ReadError:
        return {owner: owner.type.lower()}
    roles = {curve: "curve", armature: "armature", leaves: "leaves"}
    return {o: role for o, role in roles.items() if o is not None}


def settings_owner(obj):
    """The object whose settings a simulation of ``obj`` reads: a Sapling tree's armature when its curve or
    leaves are selected, else ``obj``."""
    if obj.type == "MESH" and obj.parent is not None and obj.parent.type == "CURVE":
        obj = obj.parent  # a Sapling tree's leaves
    parts = own_parts(obj)
    return next((o for o, role in parts.items() if role == "armature"), None) or next(
        (o for o, role in parts.items() if role == "curve"), obj
    )


JOINT_ITEMS = [
    ("CLAMP", "Clamp", "Holds position and rotation (a welded end)"),
    ("BALL", "Ball", "Holds the position only: the rod turns freely about the point (a hook, a pivot)"),
    ("BALL_TWIST_LOCK", "Ball, Twist Locked", "A ball joint that keeps the rod from twisting about its own axis"),
    ("HINGE", "Hinge", "Turns freely about the Axis only (a door hinge, a pendulum swinging in one plane)"),
    ("RAIL", "Rail", "A clamp that slides freely along the Axis (a sliding support, a ring on a pole)"),
]
AXIS_ITEMS = [
    ("ROD", "Along Rod", "The rod's own axis where it is held"),
    ("X", "X", "The world X axis"),
    ("Y", "Y", "The world Y axis"),
    ("Z", "Z", "The world Z axis"),
]


def _pin_candidate(settings, obj) -> bool:
    """Pin To offers no part of the tree itself: a tree cannot be held by its own armature, curve or leaves."""
    return obj not in own_parts(settings.id_data)


class StiffRodsObjectSettings(bpy.types.PropertyGroup):
    material: EnumProperty(
        name="Material",
        items=material_items(),  # the solver's presets (solver/build/materials.py), then Custom
        default="WOOD",
    )
    rod_model: EnumProperty(
        name="Rod Model",
        items=[
            (
                "STIFF_KKT",
                "Stiff Rods (direct)",
                "Deul et al.: rigid segments, 6-D joints, the whole tree's KKT "
                "system solved directly each iteration (stiff wood, any tree)",
            ),
            (
                "STIFF_GS",
                "Stiff Rods (Gauss–Seidel)",
                "The same segments and joints solved by XPBD Gauss–Seidel: "
                "cheaper iterations, soft unless iterated a lot",
            ),
            (
                "PAOBCR",
                "PaOBCR (curves)",
                "Kugelstadt & Schömer's position and orientation based Cosserat rods: "
                "cheap, for soft hair and cables; curves only, root pin only, no wind",
            ),
            (
                "PBER",
                "PBER (curves)",
                "Umetani et al.'s position-based elastic rods with ghost points; curves only, root pin only, no wind",
            ),
            (
                "DLO",
                "Force-based (curves)",
                "Springs and a torsion quaternion integrated explicitly (symplectic "
                "Euler, substepped to stay stable); curves only, root pin only, "
                "no wind",
            ),
        ],
        default="STIFF_KKT",
    )
    youngs_modulus_gpa: FloatProperty(
        name="Young's Modulus (GPa)",
        default=12.5,
        min=1e-6,
        soft_max=300.0,
        description="Young's modulus E in GPa (bending stiffness E·I)",
    )
    torsion_modulus_gpa: FloatProperty(
        name="Torsion Modulus (GPa)",
        default=6.5,
        min=1e-6,
        soft_max=150.0,
        description="Torsion modulus G in GPa (twisting stiffness G·J)",
    )
    density: FloatProperty(name="Density (kg/m³)", default=1000.0, min=1e-3, soft_max=20000.0)
    damping: FloatProperty(
        name="Damping (1/s)", default=0.5, min=0.0, soft_max=20.0, description="Mass-proportional velocity damping rate"
    )
    default_radius: FloatProperty(
        name="Radius (no bevel)",
        default=0.01,
        min=1e-5,
        unit="LENGTH",
        description="Rod radius for curves without a bevel depth",
    )
    segment_length: FloatProperty(
        name="Segment Length",
        default=0.1,
        min=1e-4,
        unit="LENGTH",
        description="Curves (not Sapling trees) are resampled to segments of about this length",
    )
    pin_root: BoolProperty(
        name="Pinned Root", default=True, description="Hold every root branch at its first point (by the Root Joint)"
    )
    root_joint: EnumProperty(
        name="Root Joint",
        items=JOINT_ITEMS,
        default="CLAMP",
        description="How Pinned Root holds each root branch at its first point",
    )
    root_axis: EnumProperty(
        name="Root Axis",
        items=AXIS_ITEMS,
        default="ROD",
        description="Hinge: the axis it turns about (a world axis across the rod; Along Rod: twist only). "
        "Rail: the direction it slides along",
    )
    pin_joint: EnumProperty(
        name="Pin Joint",
        items=JOINT_ITEMS,
        default="CLAMP",
        description="How Pin To and the curve's Hook modifiers hold their segment: the joints from the held "
        "segment to its neighbours are of this kind",
    )
    pin_axis: EnumProperty(
        name="Pin Axis",
        items=AXIS_ITEMS,
        default="ROD",
        description="Rail: the direction the rod slides along. Hinge: the axis it turns about (Along Rod, or a "
        "world axis within 5° of a section axis of the rod where it is held)",
    )
    stretch: EnumProperty(
        name="Stretch",
        items=[
            (
                "INEXTENSIBLE",
                "Inextensible",
                "Segments stay joined end to end (trees, steel wire: stretch far below what shows)",
            ),
            (
                "PHYSICAL",
                "Physical",
                "Stretch from E·A and shear from κ·G·A of the material and radius (rubber cords, soft cables)",
            ),
        ],
        default="INEXTENSIBLE",
    )
    shear_coefficient: FloatProperty(
        name="Shear Coefficient κ",
        default=0.9,
        min=0.01,
        max=2.0,
        description="Timoshenko shear coefficient of the section for Physical stretch (round sections 0.9–1.0)",
    )
    use_leaves: BoolProperty(
        name="Leaves",
        default=True,
        description="Simulate every leaf of a Sapling tree as its own segment (a thin plate, "
        "E 1.2 GPa, G 0.6 GPa) jointed to its branch; off: leaves follow their bones",
    )
    rest_shape: EnumProperty(
        name="Rest Shape",
        items=[
            ("AUTO", "Auto", "Sapling trees: Loaded; curves: Stress-free"),
            (
                "LOADED",
                "Loaded",
                "The shape as drawn already carries gravity: the joints start pre-stressed "
                "and nothing sags when the simulation starts (trees, stiff branches)",
            ),
            (
                "STRESS_FREE",
                "As Drawn",
                "The shape as drawn is stress-free: it carries no load and sags under gravity (ropes, cables)",
            ),
            (
                "STRAIGHT",
                "Straight",
                "Curves: the rod is straight at rest and starts from the curve as drawn (a bent rod springs "
                "straight, an arc hung by its ends becomes a catenary)",
            ),
        ],
        default="AUTO",
    )
    add_bones: BoolProperty(
        name="Bones for All Branches",
        default=True,
        description="Bake adds bones (named and shaped like Sapling's) for simulated branches "
        "that have none, so every branch moves in the baked animation; Free Bake "
        "removes them",
    )
    pin_object: PointerProperty(
        name="Pin To",
        type=bpy.types.Object,
        poll=_pin_candidate,
        description="The rod segment nearest to this object's origin is held by it "
        "and follows its animation (a hand, a pole, a moving anchor); not a part of the tree itself",
    )
    collide: BoolProperty(
        name="Collide",
        default=True,
        description="Collide with the scene's mesh objects that have a Collision modifier (Physics > Collision)",
    )
    friction: FloatProperty(
        name="Friction μ",
        default=0.5,
        min=0.0,
        soft_max=2.0,
        description="Coulomb friction coefficient of the rods' contacts",
    )
    self_collision: BoolProperty(
        name="Self Collision",
        default=False,
        description="Segments of this object collide with each other (costly on trees)",
    )
    use_fracture: BoolProperty(
        name="Breakage",
        default=False,
        description="Branches break where their bending strain passes the Rupture Strain; "
        "what hung on them falls (collides with Collision objects)",
    )
    rupture_strain: FloatProperty(
        name="Rupture Strain (%)",
        default=2.0,
        min=0.01,
        soft_max=10.0,
        description="Bending strain r·κ at which a branch joint breaks, in percent (green wood: 1–2 %)",
    )
    drag_coefficient: FloatProperty(
        name="Drag Coefficient",
        default=1.2,
        min=0.0,
        soft_max=3.0,
        description="C_d of the branches' cross-flow drag in wind "
        "(1.2: a circular cylinder at the Reynolds numbers of branches)",
    )


class StiffRodsSceneSettings(bpy.types.PropertyGroup):
    substeps: IntProperty(name="Substeps", default=2, min=1, max=100, description="Solver steps per frame")
    iterations: IntProperty(
        name="Iterations", default=5, min=1, max=100, description="Newton iterations per step at most"
    )
    live_iterations: IntProperty(
        name="Live Iterations",
        default=1,
        min=1,
        max=100,
        description="Simulate (live preview): one solver step per frame with at most this "
        "many Newton iterations, so big trees stay interactive; Bake uses "
        "Substeps and Iterations",
    )
    live_matrix_reuse: IntProperty(
        name="Live Matrix Reuse",
        default=2,
        min=0,
        max=10,
        description="Simulate (live preview): frames a factorised KKT matrix is reused "
        "for before it is factorised again (simplified Newton: the same "
        "motion, approached a little more slowly; renewed at once when it "
        "stops converging). 0: factorise every frame. Bake always "
        "factorises every iteration",
    )
    preview_quality: EnumProperty(
        name="Preview Quality",
        items=[
            ("FAST", "Fast", "Simulate steps once per frame with Live Iterations and Live Matrix Reuse (interactive)"),
            (
                "BAKE",
                "Bake",
                "Simulate steps with Bake's Substeps and Iterations, factorising every iteration: the preview is "
                "what Bake writes (Bake from Preview keys it), at Bake's cost per frame",
            ),
        ],
        default="FAST",
    )
    preview_cache_mb: IntProperty(
        name="Preview Cache (MB)",
        default=1024,
        min=1,
        max=65536,
        description="Simulate records the frames it shows for Bake from Preview, up to this size; later frames "
        "are not recorded (a leafy birch frame: 0.83 MB)",
    )
    tolerance: FloatProperty(
        name="Tolerance η",
        default=1e-6,
        min=0.0,
        precision=9,
        description="Stop iterating when the constraint residual ‖C + α̃λ‖∞ is below this",
    )
    integrator: EnumProperty(
        name="Integrator",
        items=[
            ("EULER", "Euler", "Implicit Euler (XPBD): first order, damps a mode of frequency f by about π f Δt"),
            (
                "BDF2",
                "BDF2",
                "Second order (two-step backward differentiation): keeps a swing's energy, so the damping is "
                "the one you set, whatever the substeps",
            ),
        ],
        default="EULER",
    )
    use_damping_ratio: BoolProperty(
        name="Damping Ratio",
        default=False,
        description="Damp every object by a damping ratio at a mode's frequency instead of its Damping (1/s); "
        "the integrator's own damping included",
    )
    damping_ratio: FloatProperty(
        name="Ratio ζ",
        default=0.05,
        min=0.0,
        max=2.0,
        description="Damping ratio of the mode at Mode Frequency (0.05: 5 % of critical)",
    )
    damping_frequency: FloatProperty(
        name="Mode Frequency (Hz)",
        default=1.0,
        min=1e-3,
        soft_max=50.0,
        description="Frequency of the mode that gets the Damping Ratio, e.g. a tree's first sway mode; "
        "lower modes are damped more, higher ones less",
    )
    use_scene_gravity: BoolProperty(
        name="Scene Gravity", default=True, description="Use the scene's gravity (Scene Properties > Gravity)"
    )
    # wind (addon/wind.py documents the mapping)
    use_force_fields: BoolProperty(
        name="Force Fields", default=True, description="Blow with the scene's Wind and Turbulence force fields"
    )
    field_speed_scale: FloatProperty(
        name="Field Speed (m/s)",
        default=1.0,
        min=0.0,
        soft_max=10.0,
        description="Wind speed in m/s per unit of a force field's Strength",
    )
    use_storm: BoolProperty(
        name="Storm", default=False, description="The add-on's own wind: calm → storm → calm over a frame range"
    )
    storm_peak_speed: FloatProperty(
        name="Peak Speed (m/s)",
        default=30.0,
        min=0.0,
        soft_max=60.0,
        description="Mean wind speed at 10 m height during the peak, m/s",
    )
    storm_direction: FloatProperty(
        name="Direction (°)",
        default=0.0,
        soft_min=-180.0,
        soft_max=360.0,
        description="Where the wind blows to, degrees from +X toward +Y",
    )
    storm_frame_start: IntProperty(name="Start", default=1, description="Frame the wind starts to rise")
    storm_frame_peak_start: IntProperty(name="Peak Start", default=60, description="Frame the peak is reached")
    storm_frame_peak_end: IntProperty(name="Peak End", default=150, description="Frame the wind starts to fall")
    storm_frame_end: IntProperty(name="End", default=200, description="Frame the wind is calm again")
    storm_gusts: FloatProperty(
        name="Gusts",
        default=0.25,
        min=0.0,
        max=2.0,
        description="Gust intensity: standard deviation of the speed over its mean",
    )
    storm_turbulence: FloatProperty(
        name="Turbulence",
        default=0.15,
        min=0.0,
        max=2.0,
        description="Turbulence intensity: standard deviation over the mean speed",
    )
    storm_turbulence_length: FloatProperty(
        name="Eddy Size (m)",
        default=5.0,
        min=1e-3,
        soft_max=50.0,
        description="Length scale of the turbulence, m: branches closer than this move together",
    )
    storm_seed: IntProperty(name="Seed", default=0, min=0, description="Same seed, same wind")
    # many trees (addon/forest.py)
    forest_collection: PointerProperty(
        name="Forest Collection",
        type=bpy.types.Collection,
        description="Convert, Simulate, Bake and Free Bake act on every tree and curve of this collection "
        "(and of its child collections); empty: on the selected ones",
    )
    preroll_frames: IntProperty(
        name="Pre-roll",
        default=0,
        min=0,
        soft_max=2000,
        description="Frames simulated before the start frame and not keyed: the tree starts the bake already "
        "moving in the wind it meets there (a loop: the warm-up before the keyed loop)",
    )
    use_loop: BoolProperty(
        name="Loop",
        default=False,
        description="Bake a seamless loop of Loop Length frames from the start frame: the wind repeats with "
        "the loop's period, the tree is warmed up until its sway repeats, and the last key equals the first",
    )
    loop_frames: IntProperty(
        name="Loop Length", default=120, min=2, soft_max=1000, description="Frames of one loop (foliage: 120–250)"
    )
    use_seam_blend: BoolProperty(
        name="Blend Seam",
        default=True,
        description="Loop: spread what is left of the change across the seam over the loop, so the last key "
        "equals the first; only when it is less than a frame's motion (the Bake reports its size)",
    )
    use_named_actions: BoolProperty(
        name="Named Actions",
        default=False,
        description="Bake one action per chosen wind, each on its own NLA track named after it (glTF and FBX "
        "export them as separate animations); Free Bake removes exactly those",
    )
    named_actions: EnumProperty(
        name="Winds",
        options={"ENUM_FLAG"},
        items=[
            ("CALM", "Calm", "3 m/s at 10 m, gusty"),
            ("BREEZE", "Breeze", "8 m/s at 10 m, gusty"),
            ("STORM", "Storm", "25 m/s at 10 m, gusty"),
            ("SCENE", "Scene", "The scene's own wind as set (force fields, storm)"),
        ],
        default={"CALM", "BREEZE", "STORM"},
        description="The winds Named Actions bakes, in this order (the storm settings' direction, turbulence "
        "length and seed)",
    )
    use_auto_preroll: BoolProperty(
        name="Auto Pre-roll",
        default=True,
        description="Loop: warm up for at least as many whole loops as the tree's damping needs to bring the "
        "start-up sway under 1 % (more when Pre-roll is longer)",
    )
    game_max_bones: IntProperty(
        name="Max Bones",
        default=64,
        min=2,
        max=1024,
        description="Game Rig: joints of the game skeleton, at most (mobile foliage 32–64, desktop 128–256)",
    )
    game_lods: IntProperty(
        name="LODs",
        default=1,
        min=1,
        max=4,
        description="Game Rig: rigs built from one read of the bake, Max Bones and half as many for each further LOD",
    )
    forest_workers: IntProperty(
        name="Parallel Workers",
        default=2,
        min=1,
        max=256,
        description="Bake of several trees: worker processes (headless Blenders opening a copy of the file) "
        "that bake the trees in parallel while Blender stays responsive; 1 from a script: one tree after "
        "the other in Blender itself",
    )
    instance_variants: IntProperty(
        name="Variants",
        default=8,
        min=1,
        max=64,
        description="Bake Instances: phase-shifted copies of each asset's loop; every instance plays one, chosen "
        "from its position so that neighbours differ",
    )
    hero_distance: FloatProperty(
        name="Hero Distance (m)",
        default=0.0,
        min=0.0,
        unit="LENGTH",
        description="Bake Instances: instances whose origin is closer than this to the scene camera are made real "
        "and baked individually in the shared wind (0: off)",
    )
    hero_collection: PointerProperty(
        name="Hero Collection",
        type=bpy.types.Collection,
        description="Bake Instances: every collection instancer in this collection is made real and baked "
        "individually in the shared wind",
    )


classes = (StiffRodsObjectSettings, StiffRodsSceneSettings)


def register_properties():
    bpy.types.Object.stiff_rods = PointerProperty(type=StiffRodsObjectSettings)
    bpy.types.Scene.stiff_rods = PointerProperty(type=StiffRodsSceneSettings)


def unregister_properties():
    del bpy.types.Scene.stiff_rods
    del bpy.types.Object.stiff_rods
