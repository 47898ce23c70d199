"""Pivot Painter Textures (addon/pivot_export.py, addon/ops_pivot.py) on a game rig of a real Sapling tree, read by
independent readers.

tests/blender_scripts/pivot_painter.py runs in Debian's Blender 3.4 with the legacy zip: Sapling's small pine
without leaves, baked over FRAMES frames (storm preset), a 16-bone game rig, the tree and the rig then moved and
turned alike (the mesh's object space is not the world), the operator refused twice (unsaved .blend; a folder
under a file) and run with its default folder. The numpy solver runs the bake (STIFF_RODS_COMPILED=0): numba's
first compile in a fresh profile would take minutes and the data here do not depend on it.

Here, without Blender or add-on code: the EXR files are read with OpenEXR's bindings and the PNG with Pillow,
decoded with Unreal's PP2 formulas (tests/pp2_reader.py), and compared with what Blender itself holds, in the mesh
object's space: each spline's first bone (its head is the branch's base joint, its direction the branch's first
segment), the bones' parents, the curve's centre line and bevel radius, and the mesh's ``PivotPainter`` UVs.
"""

import shutil
from pathlib import Path

import numpy as np
import pytest

from blender_env import ROOT, build_legacy_zip, run_blender
from pp2_reader import element_texels, read_exr, read_png, unpack_integer_as_float

SCRIPT = ROOT / "tests" / "blender_scripts" / "pivot_painter.py"
FRAMES = 3
DAMPING = 0.5  # [1/s]: the add-on's default Damping, which the storm preset leaves as it is

pytestmark = pytest.mark.skipif(shutil.which("blender") is None, reason="Debian's blender is not installed")
OpenEXR = pytest.importorskip("OpenEXR")
Image = pytest.importorskip("PIL.Image")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("pivot")
    zip_path = build_legacy_zip(tmp_path_factory.mktemp("dist"))
    args = ["blender", "-b", "--factory-startup", "--python", str(SCRIPT), "--", zip_path, str(out), str(FRAMES)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("STIFF_RODS_COMPILED", "0")  # blender_env copies the environment
        result = run_blender(args, out / "profile", "PIVOT_RESULT", timeout=600)
    print({k: result[k] for k in ("bake_s", "game_rig_s", "pivot_s")}, result["report"]["size"])
    n = len(result["splines"])
    with np.load(out / "bones.npz") as f:
        heads, tails = [f[f"arr_{i}"] for i in range(n)], [f[f"arr_{n + i}"] for i in range(n)]
    with np.load(out / "centre.npz") as f:
        lines, radii = [f[f"arr_{i}"] for i in range(n)], [f[f"arr_{n + i}"] for i in range(n)]
    with np.load(out / "mesh.npz") as f:
        mesh = {k: f[k] for k in f.files}
    return result, out, dict(heads=heads, tails=tails, lines=lines, radii=radii, mesh=mesh)


# --- PP2's decoding, as Unreal's material functions do it ---------------------------------------------------------


def element_index(uv, width, height):
    return element_texels(uv, width, height)[0]


def to_blender(rgb):
    """Unreal's left-handed cm → the object's right-handed m (y flipped back)."""
    return rgb * np.array([1.0, -1.0, 1.0]) / 100.0


def texels(image, count):
    return image.reshape(-1, image.shape[-1])[:count].astype(float)


def _files(result):
    return {k: Path(v) for k, v in result["report"]["files"].items()}


def _match(result, blender):
    """The spline of every element: the one whose first bone's head is the element's float32 pivot."""
    f32 = texels(read_exr(_files(result)["PivotPos_ParentIndex_f32"]), result["report"]["elements"])
    pivots = to_blender(f32[:, :3])
    firsts = np.array([h[0] for h in blender["heads"]])
    dist = np.linalg.norm(pivots[:, None] - firsts[None], axis=2)
    spline = np.argmin(dist, axis=1)
    return spline, dist[np.arange(spline.size), spline], f32


# --- the tests -------------------------------------------------------------------------------------------------


def test_refusals_leave_the_mesh_as_it_was_and_the_default_folder_is_next_to_the_blend(exported):
    result, out, _ = exported
    assert "relative to the .blend, which is not saved" in result["unsaved"]
    assert "Not a directory" in result["bad_folder"] or "failed" in result["bad_folder"]
    assert result["uv_after_refusals"]
    assert result["ok"] == ["FINISHED"]
    assert Path(result["report"]["folder"]) == out / "treeArm_pivot_painter"
    assert all(p.is_file() and p.parent == out / "treeArm_pivot_painter" for p in _files(result).values())
    # PP2 reads TexCoord[1]: Sapling's UVMap stays first and active, PivotPainter comes second
    assert result["uv_maps"] == ["UVMap", "PivotPainter"] and result["active_uv"] == "UVMap"
    assert result["report"]["uv_index"] == 1


def test_one_element_per_branch_each_pivot_and_axis_at_its_branch_base(exported):
    result, _, blender = exported
    count = result["report"]["elements"]
    assert count == len(result["splines"])  # one element per branch (spline) of the tree
    width, height = result["report"]["size"]
    assert width * height >= count > (height - 1) * width
    spline, dist, f32 = _match(result, blender)
    assert np.unique(spline).size == count  # a bijection: every branch's base has its own element
    print("float32 pivot error [mm]: max", 1e3 * dist.max())
    assert dist.max() < 1e-3
    axes = texels(read_exr(_files(result)["XVector_XExtent_f32"]), count)
    first = np.array([t[0] - h[0] for h, t in zip(blender["heads"], blender["tails"], strict=True)])[spline]
    first /= np.linalg.norm(first, axis=1, keepdims=True)
    axis = to_blender(100.0 * axes[:, :3])
    angle = np.degrees(np.arccos(np.clip(np.sum(axis * first, axis=1) / np.linalg.norm(axis, axis=1), -1, 1)))
    print("float32 axis error [deg]: max", angle.max())
    assert angle.max() < 0.5
    # extent: the branch's reach along its axis from the pivot, over its bones' ends [cm]
    reach = np.array(
        [
            np.max((np.concatenate((blender["heads"][s], blender["tails"][s])) - blender["heads"][s][0]) @ a)
            for s, a in zip(spline, first, strict=True)
        ]
    )
    assert np.abs(axes[:, 3] - 100.0 * reach).max() < 0.1  # 1 mm


def test_parents_and_depths_follow_the_bones(exported):
    result, _, blender = exported
    count = result["report"]["elements"]
    spline, _, f32 = _match(result, blender)
    element_of = np.empty(count, np.int64)
    element_of[spline] = np.arange(count)
    parent_spline = np.array(result["spline_parent"])
    expected = np.where(parent_spline[spline] < 0, np.arange(count), element_of[np.maximum(parent_spline[spline], 0)])
    assert np.array_equal(f32[:, 3], expected)
    half = texels(read_exr(_files(result)["PivotPos_ParentIndex"]), count)
    assert np.array_equal(unpack_integer_as_float(half[:, 3].astype(np.float32)), expected)
    depth = np.zeros(count)
    node = np.arange(count)
    for _ in range(count):
        up = expected[node]
        depth += up != node
        node = up
    freq = texels(read_exr(_files(result)["Frequency_Damping_f32"]), count)
    assert np.array_equal(freq[:, 2], depth) and np.array_equal(freq[:, 3], np.arange(count))
    steps = texels(read_exr(_files(result)["PivotPos_StepsFromRoot"]), count)
    assert np.array_equal(steps[:, 3], depth)
    # frequency and damping ratio: ζ = c / (2 ω) under the scene's damping c
    assert np.all(np.isfinite(freq[:, 0]) & (freq[:, 0] > 0.0))
    assert np.allclose(freq[:, 1] * 4.0 * np.pi * freq[:, 0], DAMPING, rtol=1e-5)


def test_the_16_bit_and_8_bit_textures_within_half_their_step(exported):
    result, _, blender = exported
    count = result["report"]["elements"]
    spline, _, _ = _match(result, blender)
    heads = np.array([h[0] for h in blender["heads"]])[spline]
    half = texels(read_exr(_files(result)["PivotPos_ParentIndex"]), count)[:, :3]
    truth_cm = 100.0 * heads * np.array([1.0, -1.0, 1.0])
    step = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(truth_cm), 2.0**-14))) - 10)  # half spacing at the value
    assert np.all(np.abs(half - truth_cm) <= 0.5 * step + 1e-4)  # + float32 rounding of the bones in Blender
    png = texels(read_png(_files(result)["XVector_XExtent"]), count)
    first = np.array([t[0] - h[0] for h, t in zip(blender["heads"], blender["tails"], strict=True)])[spline]
    first = first / np.linalg.norm(first, axis=1, keepdims=True) * np.array([1.0, -1.0, 1.0])
    assert np.abs(png[:, :3] / 255.0 * 2.0 - 1.0 - first).max() <= 1.0 / 255.0 + 1e-6  # half a byte step of 2/255


def test_every_vertex_maps_to_the_element_of_the_branch_it_lies_on(exported):
    result, _, blender = exported
    count = result["report"]["elements"]
    width, height = result["report"]["size"]
    mesh = blender["mesh"]
    loop_element = element_index(mesh["uv"], width, height)
    vertex_element = np.full(mesh["co"].shape[0], -1)
    vertex_element[mesh["loops"]] = loop_element
    assert np.array_equal(vertex_element[mesh["loops"]], loop_element)  # every loop of a vertex alike
    assert vertex_element.min() >= 0 and vertex_element.max() < count  # every vertex's texel holds an element
    assert np.unique(vertex_element).size == count  # every branch has its vertices
    spline, _, _ = _match(result, blender)
    worst = 0.0
    for e in range(count):  # the vertex lies on the tube of the spline whose base is its element's pivot
        co = mesh["co"][vertex_element == e]
        line, radius = blender["lines"][spline[e]], blender["radii"][spline[e]]
        a, b = line[:-1], line[1:]
        ab = b - a
        t = np.clip(np.einsum("vsj,sj->vs", co[:, None] - a[None], ab) / np.sum(ab * ab, axis=1), 0.0, 1.0)
        d = np.linalg.norm(co[:, None] - (a[None] + t[..., None] * ab[None]), axis=2)
        near = np.argmin(d, axis=1)
        r = np.maximum(radius[:-1], radius[1:])[near]
        worst = max(worst, float(np.max(d[np.arange(co.shape[0]), near] / r)))
    print("vertex distance from its branch's centre line over the bevel radius: max", worst)
    assert worst < 1.05
