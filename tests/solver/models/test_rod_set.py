"""RodSet (solver/models/rod_set.py): the seeds' rod models behind the Simulator-like face the add-on uses."""

import numpy as np
import pytest

from solver.build.tree_builder import tree_from_branches
from solver.core import quaternion as quat
from solver.models.rod_models import make_rod
from solver.models.rod_set import RodSet


def ropes(k=11):
    x = np.linspace(0.0, 1.0, k)
    a = (np.stack((x, np.zeros(k), np.full(k, 2.0)), axis=1), np.full(k, 0.005))
    b = (np.stack((np.zeros(k), 1.0 + x, np.full(k, 2.0)), axis=1), np.full(k, 0.004))
    return [a, b]


def build(kind, gravity=(0.0, 0.0, -9.81), dt=None, e=0.05e9, density=1100.0):
    dt = (1 / 480 if kind == "dlo" else 1 / 48) if dt is None else dt  # the explicit model needs short steps
    branches = ropes()
    model, bmap = tree_from_branches(branches, youngs_modulus=e, density=density, parents=[None, None])
    rs = RodSet(
        kind,
        model,
        branches,
        bmap.span_segment,
        youngs_modulus=e,
        torsion_modulus=e / 2.6,
        density=density,
        iterations=5,
        dt=dt,
        gravity=gravity,
    )
    return model, bmap, rs


@pytest.mark.parametrize("kind", ["paobcr", "pber", "dlo"])
def test_segments_agree_with_the_model_at_rest_and_stay_there_without_load(kind):
    model, bmap, rs = build(kind, gravity=(0.0, 0.0, 0.0))
    segs = np.concatenate(bmap.span_segment)
    for _ in range(3):
        rs.step()
    assert np.max(np.abs(rs.positions[segs] - model.positions[segs])) < 1e-9
    dots = np.abs(np.sum(rs.orientations[segs] * model.orientations[segs], axis=1))
    assert np.max(1.0 - dots) < 1e-12


@pytest.mark.parametrize("kind", ["paobcr", "pber"])
def test_segments_follow_the_rods_own_centreline(kind):
    model, bmap, rs = build(kind)
    branches = ropes()
    ref = make_rod(kind, branches[0][0], branches[0][1], 0.05e9, 0.05e9 / 2.6, 1100.0, pinned=("start",), iterations=5)
    for _ in range(24):
        rs.step()
        ref.step(1 / 48)
    pts = ref.centerline()
    segs = bmap.span_segment[0]
    assert np.max(np.abs(rs.positions[segs] - 0.5 * (pts[1:] + pts[:-1]))) < 1e-12
    assert pts[-1, 2] < 2.0 - 0.05  # the rubber rope really fell
    # each segment's local +z is its edge's direction
    d3 = quat.rotate(rs.orientations[segs], np.array([0.0, 0.0, 1.0]))
    edges = np.diff(pts, axis=0)
    cos = np.sum(d3 * edges, axis=1) / np.linalg.norm(edges, axis=1)
    assert np.min(cos) > 1 - 1e-9


def test_explicit_model_is_substepped_within_its_stability_limit():
    """The Gershgorin bound keeps symplectic Euler stable; four times its step blows up."""
    _, _, rs = build("dlo")
    assert rs.substeps > 1
    for _ in range(24):
        report = rs.step()
    assert np.all(np.isfinite(rs.positions)) and report.iterations == rs.substeps
    branches = ropes()
    model, bmap = tree_from_branches(branches, youngs_modulus=0.05e9, density=1100.0, parents=[None, None])
    fast = RodSet(
        "dlo",
        model,
        branches,
        bmap.span_segment,
        youngs_modulus=0.05e9,
        torsion_modulus=0.05e9 / 2.6,
        density=1100.0,
        dt=1 / 480,
        courant=4.0,
    )
    from solver.core.timestep import NonFiniteStateError

    with np.errstate(all="ignore"), pytest.raises(NonFiniteStateError):
        for _ in range(24):
            fast.step()


def test_explicit_model_refuses_stiff_wood():
    with pytest.raises(ValueError, match="explicit substeps"):
        build("dlo", e=12.5e9, density=1000.0, dt=1 / 24)


def test_bad_input_names_the_problem():
    branches = ropes()
    model, bmap = tree_from_branches(branches, youngs_modulus=1e9, parents=[None, None])
    with pytest.raises(ValueError, match="rod model"):
        RodSet("spaghetti", model, branches, bmap.span_segment, youngs_modulus=1e9, torsion_modulus=4e8, density=1e3)
    with pytest.raises(ValueError, match="span lists"):
        RodSet("pber", model, branches, bmap.span_segment[:1], youngs_modulus=1e9, torsion_modulus=4e8, density=1e3)
    short = [(branches[0][0][:2], branches[0][1][:2])]
    m2, b2 = tree_from_branches(short, youngs_modulus=1e9)
    with pytest.raises(ValueError, match="at least 3 points"):
        RodSet("paobcr", m2, short, b2.span_segment, youngs_modulus=1e9, torsion_modulus=4e8, density=1e3)
