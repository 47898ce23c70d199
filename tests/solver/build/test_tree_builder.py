"""Branch polylines → rod forest: parents found geometrically, junctions and root clamps with numbers."""

import numpy as np
import pytest

from solver import Simulator, cross_section_moments
from solver.build.tree_builder import find_parent_spans, tree_from_branches
from statics import static_solve


def y_tree(n_branch=20, branch_radius=0.02):
    trunk = (np.array([[0, 0, 0], [0, 0, 1.0], [0, 0, 2.0], [0, 0, 3.0]]), [1.0, 1.0, 1.0, 1.0])  # ~rigid
    x = np.linspace(0, 2.0, n_branch + 1)
    branch = (np.stack((x, np.zeros_like(x), np.full_like(x, 1.5)), 1), branch_radius)
    twig = (np.array([[1.0, 0, 1.5], [1.0, 0.3, 1.8]]), 0.005)
    return [trunk, branch, twig]


def test_parents_are_found_where_branches_start():
    found = find_parent_spans(y_tree())
    assert found[0] is None
    assert found[1][:2] == (0, 1) and found[1][2] == pytest.approx(0.0)  # starts on the trunk axis, span 1
    assert found[2][:2] == (1, 9)  # x = 1.0 is the end of span 9 of 20


def test_branch_far_from_everything_becomes_a_pinned_root():
    trees = y_tree() + [(np.array([[10.0, 0, 0], [10.0, 0, 1]]), 0.05)]
    model, bmap = tree_from_branches(trees, youngs_modulus=1e10)
    assert bmap.branch_parent[3] is None and bmap.branch_parent[0] is None
    assert bmap.anchors.size == 2 and model.pinned.sum() == 2


def test_explicit_parents_override_the_search():
    model, bmap = tree_from_branches(y_tree(), youngs_modulus=1e10, parents=[None, (0, 1), (1, 3)])
    assert bmap.branch_parent == [None, (0, 1), (1, 3)]


def test_tree_at_rest_is_consistent_and_branch_bends_like_a_cantilever():
    """A horizontal branch on a (nearly rigid) trunk under a tip load deflects by FL³/3EI."""
    e, r, force, n = 1e10, 0.02, 2.0, 20
    model, bmap = tree_from_branches(y_tree(n, r)[:2], youngs_modulus=e, stretch_compliance=1e-14)
    sim = Simulator(model, gravity=(0, 0, 0), tolerance=1e-13, max_iterations=20)
    assert sim.residual() < 1e-12  # every joint holds in the rest pose
    tip = bmap.span_segment[1][-1]
    sim.add_point_load(int(tip), [0, 0, 0.5 * model.lengths[tip]], [0, 0, -force])
    static_solve(sim, dt=1 / 120)  # a light, stiff branch (f₁ ≈ 4 Hz): XPBD bias +2.3 % at 1/30 s, 1e-4 here
    i1, _, _ = cross_section_moments(np.array([r, r]))
    analytic = force * 2.0**3 / (3 * e * i1)
    deflection = 1.5 - sim.tip(int(tip))[2]
    assert deflection == pytest.approx(analytic * (1 + 1 / (2 * n**2)), rel=2e-3)


@pytest.mark.parametrize(
    "bad, words",
    [
        ([(np.zeros((1, 3)), 0.1)], "branch 0: needs at least 2 points"),
        ([(np.array([[0, 0, 0], [0, 0, 0.0]]), 0.1)], "branch 0: span 0 has zero length"),
        ([(np.array([[0, 0, 0], [0, 0, 1.0]]), [0.1, 0.0])], "branch 0: radius at point 1"),
        ([(np.array([[0, 0, 0], [0, 0, np.nan]]), 0.1)], "branch 0: points and radii must be finite"),
    ],
)
def test_bad_branches_are_named(bad, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        tree_from_branches(bad, youngs_modulus=1e9)
