"""Gravity pre-stress (solver/prestress.py): the modelled pose becomes a static equilibrium."""

import numpy as np
import pytest

from solver import Simulator
from solver.build.prestress import gravity_prestress
from solver.build.tree_builder import attach_leaves, tree_from_branches
from solver.core import joint_constraint
from solver.core.model import rod_from_polyline

G = np.array([0.0, 0.0, -9.81])


def horizontal_rod(n=20, length=1.0, radius=0.01, e=1e9, pinned=("start",)):
    pts = np.zeros((n + 1, 3))
    pts[:, 0] = np.linspace(0.0, length, n + 1)
    return rod_from_polyline(pts, radius=radius, youngs_modulus=e, density=1000.0, pinned=pinned)


def drift(model, reference, seconds=1.0, gravity=G, dt=1 / 60):
    sim = Simulator(model, dt=dt, max_iterations=4, gravity=gravity)
    sim.run(int(round(seconds / dt)))
    return float(np.max(np.linalg.norm(sim.positions - reference.positions, axis=1)))


def test_cantilever_rest_curvature_is_the_bending_moment_over_ei():
    """Each joint of a horizontal cantilever carries M(s) = μ g (L − s)²/2: its rest strain is M/EI."""
    n, length, r, e = 20, 1.0, 0.01, 1e9
    plain = horizontal_rod(n, length, r, e)
    loaded = gravity_prestress(plain, G)
    c = joint_constraint.evaluate(loaded, plain.positions, plain.orientations, with_jacobians=False)
    mu = 1000.0 * np.pi * r**2
    ei = e * np.pi * r**4 / 4
    # joint i + 1 sits at s = i·L/n (joint 0 is the clamp: the pinned start segment to the first free one)
    s = np.arange(n) * length / n
    expected = mu * 9.81 * (length - s) ** 2 / (2 * ei)
    bend = np.linalg.norm(c[:, 3:], axis=1)
    assert bend == pytest.approx(expected[-bend.size :], rel=1e-4)
    assert np.max(np.abs(c[:, :3])) < 1e-12  # stretch rows untouched


def test_prestressed_cantilever_does_not_sag():
    plain = horizontal_rod()
    sag = drift(plain, plain)
    held = drift(gravity_prestress(plain, G), plain)
    assert sag > 1e-2  # without pre-stress the tip drops by centimetres
    assert held < 1e-4 * sag  # with it: below 1e-4 of that


def _tree():
    trunk = (np.array([[0, 0, 0], [0, 0, 1.0], [0, 0, 2.0], [0, 0, 3.0]]), [0.08, 0.07, 0.06, 0.05])
    a = np.linspace(0.0, 1.0, 9)[:, None]
    b1 = (np.array([0, 0, 1.0]) + a * np.array([1.5, 0.3, 0.6]), np.linspace(0.03, 0.008, 9))
    b2 = (np.array([0, 0, 2.0]) + a * np.array([-1.0, 0.8, 0.4]), np.linspace(0.025, 0.006, 9))
    twig = (np.array([0.75, 0.15, 1.3]) + a[:5] * np.array([0.2, 0.5, 0.1]), 0.004)
    return [trunk, b1, b2, twig]


def test_tree_with_leaves_holds_its_shape():
    model, bmap = tree_from_branches(_tree(), youngs_modulus=1e9)
    k = 6  # leaves on branch 1, spans 2..7
    axis = np.tile([0.0, 0.3, -1.0], (k, 1))
    stem = np.array([bmap.span_segment[1][j] for j in range(2, 8)])
    model, leaves = attach_leaves(
        model,
        bmap,
        stem=model.positions[stem],
        axis=axis,
        normal=np.tile([1.0, 0.0, 0.0], (k, 1)),
        length=np.full(k, 0.08),
        width=np.full(k, 0.04),
        parent=np.array([[1, j] for j in range(2, 8)]),
    )
    sag = drift(model, model)
    held = drift(gravity_prestress(model, G), model)
    assert sag > 1e-2
    assert held < 1e-4 * sag


def test_any_gravity_direction():
    plain = horizontal_rod()
    g = np.array([0.0, 6.0, -7.0])
    assert drift(gravity_prestress(plain, g), plain, gravity=g) < 1e-4 * drift(plain, plain, gravity=g)


def test_indeterminate_and_free_components_keep_their_rest():
    both = horizontal_rod(pinned=("start", "end"))
    assert np.array_equal(gravity_prestress(both, G).rest_darboux, both.rest_darboux)
    free = horizontal_rod(pinned=())
    assert np.array_equal(gravity_prestress(free, G).rest_darboux, free.rest_darboux)
    info = {"clamped": -1}  # reported for a model it leaves as it is, too
    gravity_prestress(both, G, max_angle=0.5 * np.pi, info=info)
    assert info == {"clamped": 0, "max_prebend_rad": 0.0}


def test_eq23_strain_gets_the_same_rest_strain():
    plain = horizontal_rod()
    rot = joint_constraint.evaluate(
        gravity_prestress(plain, G), plain.positions, plain.orientations, with_jacobians=False
    )
    eq23 = joint_constraint.evaluate(
        gravity_prestress(plain, G, strain="eq23"),
        plain.positions,
        plain.orientations,
        with_jacobians=False,
        strain="eq23",
    )
    assert eq23[:, 3:] == pytest.approx(rot[:, 3:], rel=1e-3, abs=1e-9)


def test_too_soft_to_hold_the_shape_raises():
    soft = horizontal_rod(e=1e3)
    with pytest.raises(ValueError, match="too soft"):
        gravity_prestress(soft, G)


def test_too_soft_joints_are_capped_when_asked():
    """With max_angle the pre-bend is capped (here 30°) instead of raising: the capped joints sag, the others
    hold; info says how many were capped."""
    soft = horizontal_rod(e=2e6)
    info = {}
    capped = gravity_prestress(soft, G, max_angle=np.radians(30.0), info=info)
    assert info["clamped"] > 0 and info["max_prebend_rad"] == pytest.approx(np.radians(30.0), rel=1e-9)
    c = joint_constraint.evaluate(capped, soft.positions, soft.orientations, with_jacobians=False)
    angle = 2 * np.arcsin(np.linalg.norm(c[:, 3:], axis=1) * soft.joint_lengths / 2)
    assert np.max(angle) == pytest.approx(np.radians(30.0), rel=1e-9)
    stiff_info = {}
    gravity_prestress(horizontal_rod(), G, max_angle=np.radians(30.0), info=stiff_info)
    assert stiff_info["clamped"] == 0 and stiff_info["max_prebend_rad"] < np.radians(30.0)


def test_bad_rest_darboux_is_refused():
    plain = horizontal_rod()
    with pytest.raises(ValueError, match="rest_darboux"):
        plain.with_rest_darboux(np.zeros((plain.n_joints, 4)))
    with pytest.raises(ValueError, match="gravity"):
        gravity_prestress(plain, (0.0, np.nan, 0.0))
