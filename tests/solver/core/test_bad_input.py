"""Bad input raises ValueError naming the item; a step that would produce NaN raises and changes nothing."""

import numpy as np
import pytest

from solver import NonFiniteStateError, RodModel, Simulator, rod_from_polyline

PTS = np.array([[0, 0, 0], [0, 0, 1], [0, 0, 2], [0, 0, 3]], float)


def two_segments(**kw):
    args = dict(
        positions=[[0, 0, 0.5], [0, 0, 1.5]], orientations=[[1, 0, 0, 0]] * 2, lengths=1.0, radii=0.05, densities=1000.0
    )
    joint = dict(joint_parent=[0], joint_child=[1], youngs_modulus=1e9)
    joint.update({k: v for k, v in kw.items() if k not in args})
    args.update({k: v for k, v in kw.items() if k in args})
    return RodModel.from_arrays(
        args.pop("positions"),
        args.pop("orientations"),
        args.pop("lengths"),
        args.pop("radii"),
        args.pop("densities"),
        **joint,
    )


@pytest.mark.parametrize(
    "kw, words",
    [
        (dict(lengths=[1.0, 0.0]), "lengths[1]"),
        (dict(lengths=[-1.0, 1.0]), "lengths[0]"),
        (dict(radii=[0.05, -0.01]), "radii[1]"),
        (dict(radii=0.0), "radii[0]"),
        (dict(densities=[1000.0, 0.0]), "densities[1]"),
        (dict(youngs_modulus=0.0), "youngs_modulus[0]"),
        (dict(youngs_modulus=-1e9), "youngs_modulus[0]"),
        (dict(torsion_modulus=0.0), "torsion_modulus[0]"),
        (dict(joint_radii=-0.1), "joint_radii[0]"),
        (dict(joint_lengths=0.0), "joint_lengths[0]"),
        (dict(stretch_compliance=0.0), "stretch_compliance[0]"),
        (dict(positions=[[0, 0, np.nan], [0, 0, 1.5]]), "positions[0]"),
        (dict(orientations=[[1, 0, 0, 0], [np.inf, 0, 0, 0]]), "orientations[1]"),
        (dict(orientations=[[1, 0, 0, 0], [0, 0, 0, 0]]), "orientations[1]"),
        (dict(lengths=[1.0, np.nan]), "lengths[1]"),
        (dict(youngs_modulus=np.nan), "youngs_modulus[0]"),
        (dict(joint_point_parent=[[0, np.nan, 0]]), "joint_point_parent[0]"),
        (dict(joint_parent=[2]), "joint_parent[0] = 2"),
        (dict(joint_child=[-1]), "joint_child[0] = -1"),
        (dict(joint_child=[0]), "joint 0 joins segment 0 to itself"),
        (dict(pinned=[True, True]), "joint 0 joins two pinned segments"),
    ],
)
def test_model_rejects_bad_values_naming_them(kw, words):
    with pytest.raises(ValueError) as err:
        two_segments(**kw)
    assert words in str(err.value)


def test_cycle_becomes_a_loop_closing_constraint_and_duplicate_joints_are_rejected():
    pos = np.zeros((3, 3))
    ring = RodModel.from_arrays(
        pos, [[1, 0, 0, 0]] * 3, 1.0, 0.05, 1000.0, joint_parent=[0, 1, 2], joint_child=[1, 2, 0], youngs_modulus=1e9
    )
    assert ring.joint_parent.tolist() == [0, 1] and ring.loops.input_index.tolist() == [2]
    assert (ring.loops.joint_parent.tolist(), ring.loops.joint_child.tolist()) == ([2], [0])
    with pytest.raises(ValueError, match=r"joint 1 \(1 → 0\) joins the same two segments as joint 0"):
        RodModel.from_arrays(
            pos[:2], [[1, 0, 0, 0]] * 2, 1.0, 0.05, 1000.0, joint_parent=[0, 1], joint_child=[1, 0], youngs_modulus=1e9
        )


def test_rope_between_two_pins_is_not_a_cycle():
    model = rod_from_polyline(PTS, 0.01, 1e9, pinned=["start", "end"])
    assert model.pinned.tolist() == [True, False, True]


@pytest.mark.parametrize(
    "points, radius, words",
    [
        (PTS[[0, 1, 1, 2]], 0.01, "segment 1 (points 1 and 2) has zero length"),
        (PTS[:1], 0.01, "at least 2 points"),
        (np.where(np.arange(12).reshape(4, 3) == 4, np.nan, PTS), 0.01, "points[1]"),
        (PTS, [0.01, 0.01, 0.0, 0.01], "radius[2]"),
        (PTS, -0.01, "radius[0]"),
    ],
)
def test_polyline_rejects_bad_input(points, radius, words):
    with pytest.raises(ValueError) as err:
        rod_from_polyline(points, radius, 1e9)
    assert words in str(err.value)


def test_polyline_rejects_bad_material_and_pins():
    with pytest.raises(ValueError, match="youngs_modulus"):
        rod_from_polyline(PTS, 0.01, 0.0)
    with pytest.raises(ValueError, match="densities"):
        rod_from_polyline(PTS, 0.01, 1e9, density=-5.0)
    with pytest.raises(ValueError, match="unknown end"):
        rod_from_polyline(PTS, 0.01, 1e9, pinned=["middle"])


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("dt", 0.0, "dt"),
        ("dt", -0.01, "dt"),
        ("dt", np.nan, "dt"),
        ("max_iterations", 0, "max_iterations"),
        ("tolerance", -1.0, "tolerance"),
        ("damping", -0.5, "damping"),
        ("gravity", (0, np.nan, 0), "gravity"),
        ("solver", "cg", "solver"),
    ],
)
def test_simulator_rejects_bad_parameters(field, value, words):
    model = rod_from_polyline(PTS, 0.01, 1e9)
    with pytest.raises(ValueError, match=words):
        Simulator(model, **{field: value})
    sim = Simulator(model)
    with pytest.raises(ValueError, match=words):
        setattr(sim, field, value)


def test_unknown_segment_index_in_a_load():
    sim = Simulator(rod_from_polyline(PTS, 0.01, 1e9))
    with pytest.raises(ValueError, match="segment 3 is not a segment index"):
        sim.add_point_load(3, [0, 0, 0], [1, 0, 0])
    with pytest.raises(ValueError, match="segment -1 is not a segment index"):
        sim.add_point_load(-1, [0, 0, 0], [1, 0, 0])
    with pytest.raises(ValueError, match="must be finite"):
        sim.add_point_load(1, [0, 0, 0], [np.nan, 0, 0])


def test_step_producing_nan_raises_with_segment_and_restores_state():
    model = rod_from_polyline(PTS, 0.01, 1e9, pinned=["start"])
    sim = Simulator(model)
    sim.run(3)
    before = [a.copy() for a in (sim.positions, sim.orientations, sim.velocities, sim.angular_velocities)]
    t = sim.time

    def poisoned(s):
        f = np.zeros((model.n_segments, 3))
        f[2, 1] = np.nan
        return f, np.zeros_like(f)

    sim.force_fields.append(poisoned)
    with pytest.raises(NonFiniteStateError, match="segment 2"):
        sim.step()
    for a, b in zip(before, (sim.positions, sim.orientations, sim.velocities, sim.angular_velocities), strict=True):
        np.testing.assert_array_equal(a, b)
    assert sim.time == t
    sim.force_fields.clear()
    sim.step()  # and the simulator is still usable
    assert np.all(np.isfinite(sim.positions))
