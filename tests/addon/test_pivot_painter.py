"""Pivot Painter 2 data of a simulated tree (addon/pivot_painter.py, addon/texture_files.py), read back by
independent readers: OpenEXR's Python bindings for the EXR files and Pillow for the PNG, decoded with PP2's
formulas (tests/pp2_reader.py and here: Unreal's UnpackIntegerAsFloat, CalculateMeshElementIndex, DecodeAxisVector,
Decode8BitAlphaAxisExtent), and compared with the rod model's branch joints and the input polylines. The
frequencies are checked against branch_modes and, for one tapered cantilever, against a finite-element beam
written here with closed-form element matrices."""

import numpy as np
import pytest
import scipy.linalg

from pp2_reader import element_texels, read_exr, read_png, to_metres, unpack_integer_as_float
from solver import attach_leaves, branch_modes, tree_from_branches
from solver import quaternion as quat

E, RHO, DAMPING = 1e10, 800.0, 0.5
BASE = np.array([3.0, -2.0, 0.5])  # off the origin, so that the y flip and the half rounding show


def _polyline(start, direction, length, count, bend=0.0):
    """``count`` points from ``start`` over ``length`` along ``direction``, bowed sideways by ``bend`` [m]."""
    direction = np.asarray(direction, float) / np.linalg.norm(direction)
    side = np.cross(direction, [0.0, 0.0, 1.0] if abs(direction[2]) < 0.9 else [1.0, 0.0, 0.0])
    s = np.linspace(0.0, 1.0, count)
    return np.asarray(start, float) + length * s[:, None] * direction + bend * (s * s)[:, None] * side


def _tree():
    """A curved 4 m trunk, three limbs off it, two twigs off the limbs (depths 0, 1, 2): the branch inputs, the
    parents and the model with its branch map."""
    trunk = _polyline(BASE, [0.1, 0.05, 1.0], 4.0, 13, bend=0.3)
    limbs = [
        _polyline(trunk[4], [1.0, 0.3, 0.6], 1.6, 8, 0.1),
        _polyline(trunk[7], [-0.5, 1.0, 0.5], 1.3, 7, 0.05),
        _polyline(trunk[10], [-0.3, -1.0, 0.8], 1.0, 6),
    ]
    twigs = [_polyline(limbs[0][3], [0.2, 1.0, 0.9], 0.5, 5), _polyline(limbs[1][2], [-1.0, 0.2, 0.4], 0.05, 3)]
    points = [trunk, *limbs, *twigs]
    parents = [None, (0, 4), (0, 7), (0, 10), (1, 3), (2, 2)]
    radii = [
        np.linspace(r0, r0 / 3, len(p)) for p, r0 in zip(points, [0.1, 0.04, 0.035, 0.03, 0.01, 0.004], strict=True)
    ]
    model, bmap = tree_from_branches(
        list(zip(points, radii, strict=True)), parents=parents, youngs_modulus=E, density=RHO
    )
    return points, parents, model, bmap


def _half_step(x):
    """Half the float16 spacing at |x| (the largest rounding error of a correctly rounded half)."""
    x = np.maximum(np.abs(x), 2.0**-14)
    return 2.0 ** (np.floor(np.log2(x)) - 11)


def _expected(points, parents, model, bmap):
    """Per branch, independent of the module: the pivot from the parent side of the joint holding the branch's
    first segment, the axis and reach along it from the input polyline, and the depth by walking the parents."""
    pivot = []
    for spans in bmap.span_segment:
        j = int(np.flatnonzero(model.joint_child == spans[0])[0])
        p = model.joint_parent[j]
        pivot.append(model.positions[p] + quat.to_matrix(model.orientations[p]) @ model.joint_point_parent[j])
    axis = np.array([(p[1] - p[0]) / np.linalg.norm(p[1] - p[0]) for p in points])
    extent = np.array([np.max((p - p[0]) @ a) for p, a in zip(points, axis, strict=True)])
    depth = []
    for b in range(len(parents)):
        d, node = 0, parents[b]
        while node is not None:
            d, node = d + 1, parents[node[0]]
        depth.append(d)
    return np.array(pivot), axis, extent, np.array(depth)


@pytest.fixture(scope="module")
def written(addon, tmp_path_factory):
    pp = addon("pivot_painter")
    points, parents, model, bmap = _tree()
    elements = pp.branch_elements(model, bmap, damping=DAMPING)
    paths = pp.write_textures(elements, tmp_path_factory.mktemp("pp2"), "tree")
    return pp, points, parents, model, bmap, elements, paths


def test_the_model_joints_are_the_input_polylines(written):
    """The oracle's two sources agree: the joints' parent-side points are the polylines' first points."""
    _, points, parents, model, bmap, _, _ = written
    pivot, *_ = _expected(points, parents, model, bmap)
    assert np.max(np.abs(pivot - np.array([p[0] for p in points]))) < 1e-9


def test_float32_exr_rebuilds_pivot_axis_hierarchy_and_modes(written):
    """Measured: pivots within 2e-4 mm, axes within 1.2e-6°, extents within 1e-4 mm of the model."""
    pp, points, parents, model, bmap, elements, paths = written
    pivot, axis, extent, depth = _expected(points, parents, model, bmap)
    first = read_exr(paths["PivotPos_ParentIndex_f32"])
    second = read_exr(paths["XVector_XExtent_f32"])
    modes = read_exr(paths["Frequency_Damping_f32"])
    assert first.dtype == np.float32
    height, width = first.shape[:2]
    index, row, col = element_texels(pp.element_uv(np.arange(len(points)), width, height), width, height)
    assert np.array_equal(index, np.arange(len(points)))
    got_pivot = to_metres(first[row, col, :3].astype(float))
    got_axis = second[row, col, :3].astype(float) * [1.0, -1.0, 1.0]
    angle = np.degrees(np.arccos(np.clip(np.sum(got_axis * axis, 1) / np.linalg.norm(got_axis, axis=1), -1, 1)))
    assert np.max(np.linalg.norm(got_pivot - pivot, axis=1)) < 1e-3
    assert np.max(angle) < 0.5
    assert np.max(np.abs(second[row, col, 3] / 100.0 - extent)) < 1e-3
    assert np.array_equal(first[row, col, 3], [0 if p is None else p[0] for p in parents])
    assert np.array_equal(modes[row, col, 2], depth)
    assert np.array_equal(modes[row, col, 3], np.arange(len(points)))
    reference = branch_modes(model, bmap.span_segment, damping=DAMPING)
    np.testing.assert_allclose(modes[row, col, 0], reference.frequency_hz, rtol=1e-6)
    np.testing.assert_allclose(modes[row, col, 1], DAMPING / (4 * np.pi * reference.frequency_hz), rtol=1e-6)


def test_half_float_and_8_bit_textures_hold_the_data_to_half_their_step(written):
    """PP2's default textures: the half pivots within half a half-float step (measured ≤ 0.123 cm, 0.99 of the
    bound, pivots 2–5 m from the origin), the 8-bit axis within 1/255 per component (measured 0.90/255, 0.25°),
    the extent within 1024/255 cm (measured 3.6 cm), parent index and steps from root exact."""
    pp, points, parents, model, bmap, elements, paths = written
    pivot, axis, extent, depth = _expected(points, parents, model, bmap)
    first = read_exr(paths["PivotPos_ParentIndex"])
    steps = read_exr(paths["PivotPos_StepsFromRoot"])
    xvec = read_png(paths["XVector_XExtent"])
    assert first.dtype == np.float16 and steps.dtype == np.float16
    height, width = first.shape[:2]
    assert xvec.shape[:2] == (height, width)
    index, row, col = element_texels(pp.element_uv(np.arange(len(points)), width, height), width, height)
    assert np.array_equal(index, np.arange(len(points)))
    exact = 100.0 * pivot * [1.0, -1.0, 1.0]  # [cm], Unreal axes
    got = first[row, col, :3].astype(float)
    assert np.all(np.abs(got - exact) <= _half_step(exact) + 1e-9)
    assert np.max(np.abs(to_metres(got) - pivot)) <= 0.0025
    assert np.array_equal(steps[row, col, :3], first[row, col, :3])
    parent = unpack_integer_as_float(first[row, col, 3].astype(np.float32))
    assert np.array_equal(parent, [b if p is None else p[0] for b, p in enumerate(parents)])
    assert np.array_equal(steps[row, col, 3].astype(float), depth)
    got_axis = (xvec[row, col, :3] / 255.0 * 2.0 - 1.0) * [1.0, -1.0, 1.0]  # DecodeAxisVector's input
    assert np.max(np.abs(got_axis - axis)) <= 1.0 / 255.0 + 1e-12
    got_extent = np.maximum(8.0, xvec[row, col, 3] / 255.0 * 2048.0)  # Decode8BitAlphaAxisExtent [cm]
    assert np.max(np.abs(got_extent - np.clip(100.0 * extent, 8.0, 2048.0))) <= 1024.0 / 255.0 + 1e-9
    assert got_extent[5] == pytest.approx(8.0, abs=0.05)  # the 5 cm twig, clamped to PP2's 8 cm floor


def test_int_as_float_indices_survive_the_half_exr_and_every_element_finds_its_texel(addon, tmp_path):
    """30,720 elements (PP2's largest index, 30,719, and the small ones whose halves are near-subnormal):
    every parent index written as Int-as-float decodes exactly; every element's UV lands on its own texel."""
    pp = addon("pivot_painter")
    n = pp.MAX_ELEMENTS
    rng = np.random.default_rng(3)
    parent = rng.integers(0, n, n)
    parent[:6] = [0, 1, 1500, 2047, 2049, n - 1]
    elements = pp.Elements(
        pivot=rng.uniform(-20, 20, (n, 3)), axis=np.tile([0.0, 0.0, 1.0], (n, 1)), parent=parent,
        depth=np.zeros(n, np.int64), extent=np.ones(n), frequency_hz=np.ones(n), damping_ratio=np.zeros(n),
    )  # fmt: skip
    paths = pp.write_textures(elements, tmp_path, "many")
    image = read_exr(paths["PivotPos_ParentIndex"])
    height, width = image.shape[:2]
    assert width * height >= n and width <= 4 * height
    index, row, col = element_texels(pp.element_uv(np.arange(n), width, height), width, height)
    assert np.array_equal(index, np.arange(n))
    assert np.array_equal(unpack_integer_as_float(image[row, col, 3].astype(np.float32)), parent)
    exact = 100.0 * elements.pivot * [1.0, -1.0, 1.0]
    assert np.all(np.abs(image[row, col, :3].astype(float) - exact) <= _half_step(exact) + 1e-9)


def test_every_segment_leaf_and_anchor_belongs_to_its_branch(addon):
    """Branch segments to their branch, leaves to the branch they hang from, the root anchor to the trunk."""
    pp = addon("pivot_painter")
    points, parents, model, bmap = _tree()
    stems = np.array([points[1][2], points[4][3], points[0][8]]) + [0.0, 0.0, 0.01]
    leafy, leaves = attach_leaves(model, bmap, stem=stems, axis=[1.0, 0, 0], normal=[0, 0, 1.0], length=0.08,
                                  width=0.04, parent=[[1, 2], [4, 2], [0, 8]])  # fmt: skip
    element = pp.segment_elements(leafy, bmap)
    for b, spans in enumerate(bmap.span_segment):
        assert np.all(element[spans] == b)
    assert np.array_equal(element[leaves], [1, 4, 0])
    assert np.array_equal(element[bmap.anchors], [0])
    assert np.all(element >= 0)


def test_world_to_object_moves_pivots_axes_and_extents_into_the_objects_space(written):
    """A rotation by 90° about z, a scale of 2 and a shift: pivots, axes and extents follow (float32 set)."""
    pp, points, parents, model, bmap, elements, _ = written
    m = np.array([[0.0, -2.0, 0.0, 1.0], [2.0, 0.0, 0.0, -3.0], [0.0, 0.0, 2.0, 0.5], [0.0, 0.0, 0.0, 1.0]])
    images = pp.float32_textures(elements, world_to_object=m)
    first, second = images["PivotPos_ParentIndex_f32"], images["XVector_XExtent_f32"]
    n = len(points)
    pivot, axis, extent, _ = _expected(points, parents, model, bmap)
    moved = np.array([[-2.0 * p[1] + 1.0, 2.0 * p[0] - 3.0, 2.0 * p[2] + 0.5] for p in pivot])
    turned = np.stack((-axis[:, 1], axis[:, 0], axis[:, 2]), axis=1)
    assert np.max(np.abs(to_metres(first.reshape(-1, 4)[:n, :3].astype(float)) - moved)) < 1e-5
    assert np.max(np.abs(second.reshape(-1, 4)[:n, :3] * [1.0, -1.0, 1.0] - turned)) < 1e-6
    assert np.max(np.abs(second.reshape(-1, 4)[:n, 3] / 100.0 - 2.0 * extent)) < 1e-5


@pytest.mark.parametrize("count", [1, 6, 7, 12, 641, 1021])
def test_texture_size_holds_every_element(addon, count):
    pp = addon("pivot_painter")
    width, height = pp.texture_size(count)
    assert width * height >= count and width >= height
    assert width * height - count < width  # no empty row


def fe_beam_frequency(length, r0, r1, elements=100):
    """First frequency [Hz] of a clamped–free Euler–Bernoulli beam of circular section, radius linear r0 → r1:
    closed-form Hermite beam elements (stiffness EI/h³, consistent mass ρAh/420), each with its mid radius,
    in units of L, E I₀ and ρ A₀ (well conditioned)."""
    h = 1.0 / elements
    s = (np.arange(elements) + 0.5) / elements
    ratio = 1.0 + (r1 / r0 - 1.0) * s  # r / r0
    ke = np.array([[12, 6 * h, -12, 6 * h], [6 * h, 4 * h * h, -6 * h, 2 * h * h],
                   [-12, -6 * h, 12, -6 * h], [6 * h, 2 * h * h, -6 * h, 4 * h * h]]) / h**3  # fmt: skip
    me = np.array([[156, 22 * h, 54, -13 * h], [22 * h, 4 * h * h, 13 * h, -3 * h * h],
                   [54, 13 * h, 156, -22 * h], [-13 * h, -3 * h * h, -22 * h, 4 * h * h]]) * h / 420  # fmt: skip
    k = np.zeros((2 * elements + 2,) * 2)
    m = np.zeros_like(k)
    for e in range(elements):
        dofs = slice(2 * e, 2 * e + 4)
        k[dofs, dofs] += ratio[e] ** 4 * ke
        m[dofs, dofs] += ratio[e] ** 2 * me
    lam = scipy.linalg.eigh(k[2:, 2:], m[2:, 2:], eigvals_only=True, subset_by_index=[0, 0])[0]
    scale = E * np.pi * r0**4 / 4 / (RHO * np.pi * r0**2 * length**4)
    return np.sqrt(lam * scale) / (2 * np.pi)


def test_the_finite_element_beam_has_euler_bernoullis_uniform_frequency():
    """β₁L = 1.8751041: ω = 3.5160152 √(EI/(ρA L⁴)), to 4e-7 with 100 elements; tapered to r0/3 the
    piecewise-constant sections converge as 1/n²: 50 and 100 elements differ by 0.04 %."""
    length, r = 2.0, 0.02
    exact = 1.8751040687**2 * np.sqrt(E * np.pi * r**4 / 4 / (RHO * np.pi * r**2 * length**4)) / (2 * np.pi)
    assert fe_beam_frequency(length, r, r) == pytest.approx(exact, rel=1e-6)
    assert fe_beam_frequency(length, r, r / 3, 50) == pytest.approx(fe_beam_frequency(length, r, r / 3), rel=1e-3)


def test_a_tapered_cantilevers_frequency_channel_is_its_first_mode(addon, tmp_path):
    """One 2 m branch tapering from 2 cm to 6 mm radius, 20 segments, tilted: the float32 texture's frequency
    is within 0.3 % of the finite-element beam's (the target is 5 %), and its damping ratio c/(2ω)."""
    pp = addon("pivot_painter")
    length, r0, r1 = 2.0, 0.02, 0.006
    pts = _polyline(BASE, [1.0, 2.0, 2.0], length, 21)
    model, bmap = tree_from_branches([(pts, np.linspace(r0, r1, 21))], youngs_modulus=E, density=RHO)
    paths = pp.write_textures(pp.branch_elements(model, bmap, damping=DAMPING), tmp_path, "branch")
    texel = read_exr(paths["Frequency_Damping_f32"])[0, 0]
    reference = fe_beam_frequency(length, r0, r1)
    assert texel[0] == pytest.approx(reference, rel=0.003)
    assert texel[1] == pytest.approx(DAMPING / (4 * np.pi * texel[0]), rel=1e-6)
