"""Spec + arrays → solver objects (no bpy): the tree model, its leaf segments, the pre-stressed rest model, the
Simulator (or a seed model's RodSet) with its force fields, contacts and breakage, and the bindings that carry
curve control points on the segments.

Inputs are a :class:`addon.spec.SimulationSpec` and what :mod:`addon.reader` read (a ``TreeSource``'s
``branches``, ``parents``, ``curves``, ``control_points``; a ``LeafMesh``), all in metres.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..solver import (
    Contacts,
    Fracture,
    RodSet,
    Simulator,
    attach_leaves,
    bind_points,
    carried_points,
    gravity_prestress,
    leaf_frames,
    tree_from_branches,
)
from ..solver import quaternion as quat
from .kinematics import WORLD_AXES
from .spec import LEAF_MATERIAL, RodSpec, RunSpec, SceneSpec, SimulationSpec, preset_constants


def refuse_combinations(name: str, rod: RodSpec, scene: SceneSpec, is_tree: bool) -> None:
    """ValueError naming the settings of the object ``name`` that cannot go together (before anything is
    built); ``is_tree``: a Sapling tree (an armature), not a plain curve."""
    seed = rod.seed_model
    if seed is not None:
        if is_tree:
            raise ValueError(
                f"Rod Model '{seed}' simulates curves, one rod per spline; a Sapling tree needs a Stiff Rods model"
            )
        chosen = [
            label
            for label, on in (
                (f"Root Joint '{rod.root_joint.title()}'", rod.pin_root and rod.root_joint != "CLAMP"),
                ("Stretch 'Physical'", rod.stretch == "PHYSICAL"),
                ("Rest Shape 'Straight'", rod.rest_shape == "STRAIGHT"),
                ("Integrator 'BDF2'", scene.integrator == "bdf2"),
                ("Damping Ratio", scene.damping_ratio is not None),
            )
            if on
        ]
        if chosen:
            raise ValueError(
                f"'{name}': Rod Model '{seed}' clamps its root and steps by its own scheme: {', '.join(chosen)} "
                "need a Stiff Rods model"
            )
    if rod.rest_shape == "STRAIGHT" and is_tree:
        raise ValueError(f"'{name}': Rest Shape 'Straight' is for curves; a Sapling tree rests as grown")


def tree_model(rod: RodSpec, branches, parents):
    """The model of the branch polylines ``branches`` [(points (K, 3) [m], radii (K,) [m])] with ``parents``,
    and its branch map (solver/build/tree.py)."""
    youngs, torsion, density = rod.material
    return tree_from_branches(
        branches,
        parents=parents,
        youngs_modulus=youngs,
        torsion_modulus=torsion,
        density=density,
        pin_roots=rod.pin_root,
        root_joint=rod.root_joint.lower(),
        root_axis=WORLD_AXES[rod.root_axis],
        stretch=rod.stretch.lower(),
        shear_coefficient=rod.shear_coefficient,
        rest="straight" if rod.rest_shape == "STRAIGHT" else None,
    )


def attach_leaf_segments(model, branch_map, leaves, branches, curves):
    """Every leaf (a connected piece of the leaves mesh ``leaves``, solver/build/leaves.py) a plate segment
    jointed to its branch (Deul §5), of the Leaf preset. All the leaf's vertices ride on that one segment, so it
    keeps its shape. Returns (model, leaf segments (L,), binding (used vertices, their segments, local
    coordinates [m]))."""
    f = leaf_frames(leaves.co, leaves.loop_start, leaves.loop_total, leaves.loop_vertex, branches, curves or None)
    youngs, torsion, density = preset_constants(LEAF_MATERIAL)
    model, leaf_segments = attach_leaves(
        model,
        branch_map,
        stem=f["leaf_stem"],
        axis=f["leaf_axis"],
        normal=f["leaf_normal"],
        length=f["leaf_length"],
        width=f["leaf_width"],
        parent=f["leaf_parent"],
        density=density,
        youngs_modulus=youngs,
        torsion_modulus=torsion,
    )  # 0.2 mm blades on 1 mm petioles
    used = np.flatnonzero(f["leaf_of_vertex"] >= 0)  # vertices of no polygon follow their bones
    seg = leaf_segments[f["leaf_of_vertex"][used]]
    local = quat.rotate_inverse(model.orientations[seg], leaves.co[used] - model.positions[seg])
    return model, leaf_segments, (used, seg, local)


def loaded_rest(rod: RodSpec, is_tree: bool) -> bool:
    """True when the drawn shape is the loaded one (Rest Shape Loaded, or Auto on a Sapling tree)."""
    return rod.rest_shape == "LOADED" or (rod.rest_shape == "AUTO" and is_tree)


@dataclass
class RestModels:
    """The pinned model, pre-stressed (solver/build/prestress.py) when its drawn shape is the loaded one. The
    pre-stress depends only on which segments are pinned: every reset chooses the pins again, mostly the same
    ones, so it is computed once per pinned set (0.7 s on the leafy birch). ``capped``: joints too soft to
    hold their drawn bend, which got at most 90° and sag from there."""

    loaded: bool
    gravity: np.ndarray
    seed: bool
    capped: int = 0
    _cache: tuple | None = field(default=None, repr=False)  # (pinned mask bytes, pre-stressed model)

    def __call__(self, model):
        if not self.loaded or not np.any(self.gravity) or self.seed:
            self.capped = 0
            return model
        key = model.pinned.tobytes()
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        info = {}
        model = gravity_prestress(model, self.gravity, max_angle=0.5 * np.pi, info=info)
        self.capped = info["clamped"]
        self._cache = (key, model)
        return model


@dataclass
class SceneInputs:
    """What the scene adds to a model at a start: ``kinematic`` (the pins' driver, or None), whether pins are
    ``driven`` and the carrier ``carried`` (animated; named ``carrier_name``), the ``wind`` (addon.wind.SceneWind
    or None) and the solver ``colliders``."""

    kinematic: Callable | None = None
    driven: bool = False
    carried: bool = False
    carrier_name: str = ""
    wind: object = None
    colliders: list = field(default_factory=list)


def make_simulator(spec: SimulationSpec, model, run: RunSpec, inputs: SceneInputs, name: str) -> Simulator:
    """The Simulator of ``model`` for the object ``name``: steps of frame_time / substeps, its force fields
    (wind drag), breakage and contacts."""
    rod, scene = spec.rod, spec.scene
    sim = Simulator(
        model,
        dt=scene.frame_time / run.substeps,
        max_iterations=run.max_iterations,
        tolerance=run.tolerance,
        gravity=np.array(scene.gravity),
        damping=rod.damping,
        solver="gs" if rod.rod_model == "STIFF_GS" else "kkt",
        kinematic=inputs.kinematic,
        integrator=scene.integrator,
    )
    if scene.damping_ratio is not None:
        try:
            sim.set_damping_ratio(*scene.damping_ratio)
        except ValueError as exc:
            raise ValueError(f"'{name}': Damping Ratio: {exc}") from None
    sim.factor_reuse = run.factor_reuse
    if inputs.wind is not None:
        sim.force_fields.append(inputs.wind.drag(model, rod.drag_coefficient))  # type: ignore[attr-defined]
    if rod.rupture_strain is not None:
        sim.post_step.append(Fracture(rod.rupture_strain))
    if inputs.colliders or rod.self_collision:
        sim.gs_constraints.append(
            Contacts(model, inputs.colliders, friction=rod.friction, self_collision=rod.self_collision)
        )
    return sim


def _refuse_seed_inputs(seed: str, rod: RodSpec, inputs: SceneInputs) -> None:
    """ValueError naming what a seed rod model cannot simulate."""
    if inputs.driven:
        raise ValueError(f"Rod Model '{seed}': Pin To and Hook modifiers need a Stiff Rods model")
    if inputs.carried:
        raise ValueError(
            f"Rod Model '{seed}' does not follow a moving carrier: '{inputs.carrier_name}' is animated "
            "(keys, drivers or constraints move it or a parent); use a Stiff Rods model"
        )
    if inputs.wind is not None:
        raise ValueError(
            f"Rod Model '{seed}' has no wind drag: turn off Force Fields and Storm, or use a Stiff Rods model"
        )
    if inputs.colliders or rod.self_collision:
        raise ValueError(
            f"Rod Model '{seed}' has no collisions: turn off Collide and Self Collision, or use a Stiff Rods model"
        )
    if rod.rupture_strain is not None:
        raise ValueError(f"Rod Model '{seed}' has no breakage: turn off Breakage, or use a Stiff Rods model")


def make_rod_set(spec: SimulationSpec, model, run: RunSpec, inputs: SceneInputs, branches, span_segment) -> RodSet:
    """One rod of a seed model per spline (solver/models/rod_set.py): root clamp and gravity only."""
    rod, scene = spec.rod, spec.scene
    assert rod.seed_model is not None
    _refuse_seed_inputs(rod.seed_model, rod, inputs)
    youngs, torsion, density = rod.material
    return RodSet(
        rod.rod_model.lower(),
        model,
        branches,
        span_segment,
        youngs_modulus=youngs,
        torsion_modulus=torsion,
        density=density,
        pin_start=rod.pin_root,
        iterations=run.max_iterations,
        dt=scene.frame_time / run.substeps,
        gravity=np.array(scene.gravity),
        damping=rod.damping,
    )


def bind_control_points(control_points, span_segment, curve_matrix: np.ndarray, model) -> list:
    """Every curve control point (and Bézier handle) of ``control_points`` (reader.ControlPoints per branch,
    object-local) bound to the nearest segment of its own rod: (segments, local coordinates [m]) per branch.
    ``curve_matrix``: the curve's world matrix [m]."""
    mw = curve_matrix
    binding = []
    for b, cps in enumerate(control_points):
        cand = np.asarray(span_segment[b], dtype=np.int64)
        pts = [cps.co] + ([cps.handle_left, cps.handle_right] if cps.bezier else [])
        world = np.concatenate(pts) @ mw[:3, :3].T + mw[:3, 3]
        binding.append(bind_points(world, model.positions, model.orientations, model.lengths, cand))
    return binding


def carried_control_points(binding, positions, orientations, curve_matrix: np.ndarray) -> list:
    """Object-local points (co, then handles) per branch carried by the segments' ``positions`` [m],
    ``orientations``; ``binding`` of :func:`bind_control_points`."""
    inv = np.linalg.inv(curve_matrix)
    out = []
    for seg, local in binding:
        world = carried_points(positions, orientations, seg, local)
        out.append(world @ inv[:3, :3].T + inv[:3, 3])
    return out
