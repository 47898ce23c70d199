"""Greenhill twist buckling (benchmarks/twist_buckling.py): a rod clamped at one end and twisted at the other by
a rail that lets it slide axially buckles at the critical twist of Greenhill's formula for clamped ends,
M_c = 8.9868 EI/L (Timoshenko & Gere §2.18), into a helix."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import twist_buckling  # noqa: E402

# 2 x the first positive root of tan x = x, found here on its own; EI/GJ = 1 + nu for a round section
TAN_ROOT = 4.4934094579
PHI_C = 2.0 * TAN_ROOT * (1.0 + 0.3)


@pytest.fixture(scope="module")
def result():
    return twist_buckling.run(n_segments=40)


def test_the_root_and_the_material():
    assert abs(np.tan(TAN_ROOT) - TAN_ROOT) < 1e-7
    assert twist_buckling.G == pytest.approx(twist_buckling.E / 2.6)
    assert twist_buckling.greenhill_twist() == pytest.approx(PHI_C, rel=1e-9)


def test_critical_twist_within_5_percent_of_greenhill(result):
    """Southwell fit of the imperfection's growth (measured +1.1 %) and the twist at 1 cm deflection (+2.2 %)."""
    assert result["southwell_points"] > 100
    assert abs(result["critical_twist_southwell_rad"] / PHI_C - 1.0) < 0.05
    # the straight rod holds up to the critical twist and gives way right after it
    assert 1.0 < result["twist_at_1cm_deflection_rad"] / PHI_C < 1.05


def test_the_buckled_rod_is_a_helix_that_keeps_its_linking_number(result):
    """At 10 cm deflection: the cross-axis displacement turns monotonically along the rod with the twist's
    handedness (imposed twist −φ/2π turns along the line from the rail to the clamp), part of the twist went into
    writhe of the same sign, and Tw + Wr is the imposed linking number (Călugăreanu) to 1e-2 turns."""
    lk = result["linking_turns_imposed"]
    assert lk == pytest.approx(-result["shape_twist_rad"] / (2 * np.pi))
    assert result["max_deflection_m"] > 0.1
    assert result["helix_monotonic"] and result["helix_turns_along_rod"] < -0.3
    assert result["writhe_turns"] < -0.02
    assert abs(result["lk_minus_tw_plus_wr"]) < 1e-2
    assert result["end_slide_m"] > 0.01  # the rail let the end slide in


def test_writhe_of_known_curves():
    """The writhe routine: 0 for a plane circle; for a right-handed helix of n turns, pitch angle a, closed far
    along its axis, n (1 − sin a) (Fuller's formula, a measured from the plane normal to the axis)."""
    t = np.linspace(0.0, 2 * np.pi, 200, endpoint=False)
    assert abs(twist_buckling.writhe(np.stack((np.cos(t), np.sin(t), 0 * t), 1))) < 1e-9
    n, radius, pitch = 3, 0.1, 0.2
    s = np.linspace(0.0, 2 * np.pi * n, 600)
    helix = np.stack((pitch * s / (2 * np.pi), radius * np.cos(s), radius * np.sin(s)), 1)
    a = np.arctan2(pitch, 2 * np.pi * radius)
    assert twist_buckling.closed_writhe(helix, far=1e4) == pytest.approx(n * (1 - np.sin(a)), abs=0.02)
