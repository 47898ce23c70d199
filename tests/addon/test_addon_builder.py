"""Spec + arrays → solver objects (addon/builder.py) and the bone maps (addon/bone_maps.py), without Blender."""

from types import SimpleNamespace

import numpy as np

from solver import quaternion, tree_from_branches

S = np.sqrt(0.5)


def _rope(n=6, spacing=0.2):
    points = np.column_stack((spacing * np.arange(n), np.zeros(n), np.ones(n)))
    return [(points, np.full(n, 0.01))]


def test_tree_model_is_tree_from_branches_with_the_specs_settings(addon):
    builder, spec = addon("builder"), addon("spec")
    rod = spec.RodSpec(material=(209e9, 79e9, 7800.0), root_joint="HINGE", root_axis="Y", stretch="PHYSICAL")
    model, branch_map = builder.tree_model(rod, _rope(), [None])
    ref, _ = tree_from_branches(
        _rope(),
        parents=[None],
        youngs_modulus=209e9,
        torsion_modulus=79e9,
        density=7800.0,
        pin_roots=True,
        root_joint="hinge",
        root_axis=(0.0, 1.0, 0.0),
        stretch="physical",
        shear_coefficient=0.9,
        rest=None,
    )
    for name in ("positions", "orientations", "masses", "pinned", "joint_kind", "joint_axis", "bend_twist_stiffness"):
        np.testing.assert_array_equal(getattr(model, name), getattr(ref, name))
    assert len(branch_map.span_segment) == 1


def test_a_simulator_from_the_spec_and_the_pre_stressed_rest(addon):
    builder, spec = addon("builder"), addon("spec")
    s = spec.SimulationSpec(
        rod=spec.RodSpec(material=(209e9, 79e9, 7800.0), damping=0.0, collide=False),
        scene=spec.SceneSpec(frame_time=1.0 / 24.0, gravity=(0.0, 0.0, -9.8100004196167)),
    )
    model, _ = builder.tree_model(s.rod, _rope(), [None])
    rest = builder.RestModels(loaded=True, gravity=np.array(s.scene.gravity), seed=False)
    loaded = rest(model)
    assert loaded is not model and rest(model) is loaded  # computed once per pinned set
    run = s.scene.solver.run(live=False)
    sim = builder.make_simulator(s, loaded, run, builder.SceneInputs(), "Rope")
    assert type(sim).__name__ == "Simulator" and sim.dt == (1.0 / 24.0) / 2 and sim.max_iterations == 5
    np.testing.assert_array_equal(sim.gravity, [0.0, 0.0, np.float32(-9.81)])
    x0 = sim.positions.copy()
    for _ in range(4):
        sim.step()
    assert np.abs(sim.positions - x0).max() < 1e-6  # a pre-stressed steel rod holds its drawn shape
    free = builder.RestModels(loaded=False, gravity=np.array(s.scene.gravity), seed=False)
    assert free(model) is model and free.capped == 0


def test_control_points_ride_on_their_segments(addon):
    builder, spec = addon("builder"), addon("spec")
    model, branch_map = builder.tree_model(spec.RodSpec(), _rope(), [None])
    matrix = np.eye(4)
    matrix[:3, 3] = [0.0, 0.0, 1.0]
    co = np.column_stack((np.linspace(0.0, 1.0, 4), np.zeros(4), np.zeros(4)))  # local: world z = 1
    cps = [SimpleNamespace(co=co, bezier=True, handle_left=co - [0.05, 0, 0], handle_right=co + [0.05, 0, 0])]
    binding = builder.bind_control_points(cps, branch_map.span_segment, matrix, model)
    (pts,) = builder.carried_control_points(binding, model.positions, model.orientations, matrix)
    np.testing.assert_allclose(pts, np.concatenate((co, co - [0.05, 0, 0], co + [0.05, 0, 0])), atol=1e-12)
    # the rod turned 90° about the world Z axis through the origin carries them along
    q = np.array([S, 0.0, 0.0, S])
    turned = quaternion.multiply(np.broadcast_to(q, model.orientations.shape), model.orientations)
    x = quaternion.rotate(np.broadcast_to(q, model.orientations.shape), model.positions)
    (moved,) = builder.carried_control_points(binding, x, turned, matrix)
    np.testing.assert_allclose(moved[:4], np.column_stack((np.zeros(4), co[:, 0], np.zeros(4))), atol=1e-12)


def test_bone_maps(addon):
    maps = addon("bone_maps")
    span_segment = [[0, 1, 2], [3, 4]]
    np.testing.assert_array_equal(maps.bone_segments(span_segment, np.array([[0, 2], [1, 0], [0, 0]])), [2, 3, 0])
    rng = np.random.default_rng(1)
    q = rng.normal(size=(20, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    np.testing.assert_allclose(maps.rotation_matrices(q), quaternion.to_matrix(q), atol=1e-15)
    # a root bone with rest frame Q, armature unturned: its pose rotation is Q⁻¹ (q q_rest⁻¹) Q
    ident = np.array([[1.0, 0.0, 0.0, 0.0]])
    rest_frame = np.array([[S, S, 0.0, 0.0]])  # 90° about X
    turn = np.array([[S, 0.0, 0.0, S]])  # 90° about world Z
    local = maps.BoneRotations(ident, rest_frame, np.array([-1]), ident[0])(turn)
    # Q⁻¹ R_z Q turns about Q⁻¹ ẑ = +ŷ (Q takes ŷ to ẑ)
    np.testing.assert_allclose(local, [[S, 0.0, S, 0.0]], atol=1e-15)


def test_collide_lands_a_rope_with_the_default_contacts_for_either_joint_solver(addon):
    """The add-on's Collide makes ``Contacts()`` with the solver's default method: the schur method with the direct
    (KKT) rod model, Gauss–Seidel with the Gauss–Seidel one. Either way a rubber rope clamped at one end and dropped
    2 cm onto a plane lies on it (within 5 % of its radius) after 1 s."""
    from solver import Plane

    builder, spec = addon("builder"), addon("spec")
    for rod_model, method in (("STIFF_KKT", "SchurOptions"), ("STIFF_GS", "GaussSeidelOptions")):
        s = spec.SimulationSpec(
            rod=spec.RodSpec(rod_model=rod_model, material=(1e7, 3e6, 1100.0), collide=True, damping=0.5),
            scene=spec.SceneSpec(frame_time=1.0 / 24.0, gravity=(0.0, 0.0, -9.81)),
        )
        model, _ = builder.tree_model(s.rod, _rope(), [None])
        run = s.scene.solver.run(live=False)
        sim = builder.make_simulator(s, model, run, builder.SceneInputs(colliders=[Plane(offset=0.97)]), "Rope")
        for _ in range(48):
            sim.step()
        (contacts,) = sim.gs_constraints
        assert type(contacts.solver.options).__name__ == method
        assert contacts.surface_gaps(sim)[1] > -0.05 * 0.01
        assert contacts.n_active > 0  # it lies on the plane
