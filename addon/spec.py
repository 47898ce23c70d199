"""What a simulation of one tree or curve is built from, as plain frozen values (no bpy).

:mod:`addon.settings` reads the Blender properties (the object's and the scene's Stiff Rods settings) into a
:class:`SimulationSpec` once; :mod:`addon.builder` turns the spec and the arrays :mod:`addon.reader` read into
the solver's model, Simulator and bindings. Units: SI (Pa, kg/m³, m, s, 1/s), lengths already multiplied by the
scene's Unit Scale where the spec says [m]; enum values are the settings' identifiers (``"STIFF_KKT"``,
``"CLAMP"``, …) except ``integrator`` (the Simulator's ``"euler"`` / ``"bdf2"``).

The material presets are the solver's (:data:`solver.PRESETS`): :data:`MATERIAL_PRESETS` names the ones the
add-on's Material menu offers, and :func:`material_items` makes that menu from their numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..solver import PRESETS

# Material menu identifier → (solver preset, tooltip)
MATERIAL_PRESETS = {
    "WOOD": ("wood", "Deul et al.'s trees"),
    "LEAF": ("leaf", "Deul et al.'s leaves"),
    "STEEL": ("steel", "Spring steel"),
    "RUBBER": ("rubber", "A soft cable"),
}
LEAF_MATERIAL = "LEAF"  # every leaf segment's (Deul §5)
SEED_MODELS = {"PAOBCR": "PaOBCR", "PBER": "PBER", "DLO": "DLO"}  # rod models of the seeds, for curves


def preset_constants(identifier: str) -> tuple[float, float, float]:
    """(E [Pa], G [Pa], ρ [kg/m³]) of the Material menu's ``identifier`` (a key of :data:`MATERIAL_PRESETS`)."""
    m = PRESETS[MATERIAL_PRESETS[identifier][0]]
    return m.youngs_modulus, m.torsion_modulus, m.density


def material_items() -> list[tuple[str, str, str]]:
    """The Material menu's items (identifier, label with E, G and ρ, tooltip), then Custom."""
    items = []
    for identifier, (preset, tooltip) in MATERIAL_PRESETS.items():
        e, g, rho = preset_constants(identifier)
        label = f"{preset.title()} (E {e / 1e9:g} GPa, G {g / 1e9:g} GPa, {rho:g} kg/m³)"
        items.append((identifier, label, tooltip))
    return items + [("CUSTOM", "Custom", "Use the moduli and density below")]


@dataclass(frozen=True)
class RodSpec:
    """The object's settings (properties.StiffRodsObjectSettings), resolved: ``material`` (E [Pa], G [Pa],
    ρ [kg/m³]); ``default_radius``, ``segment_length`` in scene units (the reader scales them);
    ``rupture_strain`` a fraction (None: no breakage); ``damping`` [1/s]. Pin To, Pin Joint and Pin Axis are read
    again at every start (settings.pin_settings), where the pins are chosen."""

    rod_model: str = "STIFF_KKT"
    material: tuple[float, float, float] = (12.5e9, 6.5e9, 1000.0)
    default_radius: float = 0.01
    segment_length: float = 0.1
    pin_root: bool = True
    root_joint: str = "CLAMP"
    root_axis: str = "ROD"
    stretch: str = "INEXTENSIBLE"
    shear_coefficient: float = 0.9
    use_leaves: bool = True
    rest_shape: str = "AUTO"
    add_bones: bool = True
    damping: float = 0.5
    drag_coefficient: float = 1.2
    collide: bool = True
    friction: float = 0.5
    self_collision: bool = False
    rupture_strain: float | None = None

    @property
    def seed_model(self) -> str | None:
        """The seed rod model's display name (PaOBCR, PBER, DLO), None for the Stiff Rods models."""
        return SEED_MODELS.get(self.rod_model)


@dataclass(frozen=True)
class SolverSpec:
    """The scene's solver settings that every start of a simulation reads again."""

    substeps: int = 2
    iterations: int = 5
    live_iterations: int = 1
    live_matrix_reuse: int = 2
    tolerance: float = 1e-6

    def run(self, live: bool) -> RunSpec:
        """A bake's substeps and iterations; a live preview takes one step per frame with at most
        ``live_iterations`` Newton iterations (bounded work per timer tick)."""
        if live:
            return RunSpec(1, min(self.live_iterations, self.iterations), self.live_matrix_reuse, self.tolerance)
        return RunSpec(self.substeps, self.iterations, 0, self.tolerance)


@dataclass(frozen=True)
class RunSpec:
    """Solver steps per frame, Newton iterations per step at most, frames a KKT factorisation is reused
    (0: never), the residual tolerance η."""

    substeps: int
    max_iterations: int
    factor_reuse: int
    tolerance: float


@dataclass(frozen=True)
class SceneSpec:
    """The scene's settings a model is built with: ``unit`` metres per Blender unit, ``frame_time`` [s],
    ``gravity`` [m/s²] (zero when the scene's gravity is off or not used), ``integrator`` ("euler", "bdf2"),
    ``damping_ratio`` (ζ, mode frequency [Hz]) or None, ``solver``."""

    unit: float = 1.0
    frame_time: float = 1.0 / 24.0
    gravity: tuple[float, float, float] = (0.0, 0.0, -9.81)
    integrator: str = "euler"
    damping_ratio: tuple[float, float] | None = None
    solver: SolverSpec = SolverSpec()


@dataclass(frozen=True)
class SimulationSpec:
    """Everything a Session reads from the settings: the object's (``rod``) and the scene's."""

    rod: RodSpec = RodSpec()
    scene: SceneSpec = SceneSpec()


@dataclass(frozen=True)
class StormSpec:
    """The add-on's storm: ``peak_speed`` [m/s] at 10 m height, ``direction`` [°] from +X toward +Y,
    ``frames`` (start, peak start, peak end, end), ``gusts`` and ``turbulence`` intensities (std/mean),
    ``turbulence_length`` [m], ``seed``."""

    peak_speed: float = 30.0
    direction: float = 0.0
    frames: tuple[int, int, int, int] = (1, 60, 150, 200)
    gusts: float = 0.25
    turbulence: float = 0.15
    turbulence_length: float = 5.0
    seed: int = 0


@dataclass(frozen=True)
class WindSpec:
    """The scene's wind settings: blow with its force fields (``field_speed_scale`` [m/s] per unit of
    Strength), with the storm, or both."""

    use_force_fields: bool = True
    field_speed_scale: float = 1.0
    use_storm: bool = False
    storm: StormSpec = StormSpec()
    period: float = 5.0  # [s]: a loop bake's wind repeats with this period (the Loop Length)


@dataclass(frozen=True)
class BakeSpec:
    """How Bake runs: ``preroll`` frames simulated before the start frame and not keyed; ``loop`` frames of a
    seamless loop (0: no loop), warmed up for ``preroll`` frames, or with ``auto_preroll`` for at least the
    whole loops the damping needs (addon/loop.py); ``blend_seam``: close a settled loop's seam (addon/loop.py);
    ``actions``: the winds of Named Actions, one action each (empty: one bake)."""

    preroll: int = 0
    loop: int = 0
    auto_preroll: bool = True
    blend_seam: bool = True
    actions: tuple[str, ...] = ()  # Named Actions: the winds (keys of addon.wind.NAMED_WINDS, or "SCENE")
