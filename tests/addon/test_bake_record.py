"""addon/bake_record.py without Blender: a BakeRecord survives its file (save → load equal), a record the forest
wrote before BakeRecord existed (a plain dict through ``numpy.savez``) still loads, and the arrays the writers key
(bone parents with the added bones, a curve's point paths and values, its rest points) come out as Bake keyed
them."""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load():
    """The module from its file, without the add-on package (whose __init__ imports bpy)."""
    spec = importlib.util.spec_from_file_location("stiff_rods_bake_record", ROOT / "addon" / "bake_record.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look the module up by name
    spec.loader.exec_module(mod)
    return mod


br = _load()
RNG = np.random.default_rng(7)
F, B, P, V = 4, 3, 2, 5  # frames, bones, added bones, leaf vertices


def armature_dict(leaves: bool = True) -> dict:
    """A record as addon/forest.py wrote it before BakeRecord (its _armature_record, in its key order)."""
    rec: dict = dict(format="stiff_rods_forest", version=1, name="treeArm", start=3, end=3 + F - 1, segments=40)
    rec.update(
        kind="armature",
        q_seg=RNG.normal(size=(F, B + P, 4)),
        q_rest=RNG.normal(size=(B + P, 4)),
        bone_names=np.array(["bone0.000", "bone0.001", "bone1.000"], dtype=str),
        bone_parent=np.array([-1, 0, 0], dtype=np.int64),
        bone_rest=RNG.normal(size=(B, 4)),
        armature_rotation=np.array([1.0, 0.0, 0.0, 0.0]),
        plan_names=np.array(["bone2.000", "bone2.001"], dtype=str),
        plan_parents=np.array(["bone1.000", "bone2.000"], dtype=str),
        plan_head=RNG.normal(size=(P, 3)),
        plan_tail=RNG.normal(size=(P, 3)),
        plan_radius=RNG.uniform(size=(P, 2)),
    )
    if leaves:
        rec.update(leaves="leaves", leaf_count=7, leaf_frames=RNG.normal(size=(F, V, 3)).astype(np.float32))
    rec["seconds"] = 1.25
    return rec


def curve_dict() -> dict:
    """A curve record as the forest wrote it: a Bézier spline of 2 points and a poly spline of 3."""
    k = 5
    co = RNG.normal(size=(F + 1, k, 3))
    hl, hr = RNG.normal(size=(F + 1, k, 3)), RNG.normal(size=(F + 1, k, 3))
    hl[:, 2:], hr[:, 2:] = np.nan, np.nan
    rec: dict = dict(format="stiff_rods_forest", version=1, name="Rope", start=1, end=F, segments=9)
    rec.update(
        kind="curve",
        spline=np.array([0, 1], dtype=np.int64),
        bezier=np.array([True, False]),
        count=np.array([2, 3], dtype=np.int64),
        w=np.array([np.nan, np.nan, 1.0, 1.0, 0.5]),
        co=co,
        handle_left=hl,
        handle_right=hr,
    )
    rec["seconds"] = 0.5
    return rec


def old_bytes(rec: dict) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **rec)
    return buf.getvalue()


@pytest.mark.parametrize("make", [lambda: armature_dict(True), lambda: armature_dict(False), curve_dict])
def test_the_old_record_format_loads_and_saves_back_the_same_arrays(make, tmp_path):
    old = make()
    path = tmp_path / "tree_00000.npz"
    path.write_bytes(old_bytes(old))
    rec = br.BakeRecord.load(str(path))
    assert (rec.name, rec.kind, rec.start, rec.end, rec.segments) == (
        old["name"],
        old["kind"],
        old["start"],
        old["end"],
        40 if old["kind"] == "armature" else 9,
    )
    again = rec.to_dict()
    assert list(again) == list(old)  # the same keys in the same order
    for key, value in old.items():
        got = np.asarray(again[key])
        assert got.shape == np.shape(value) and got.dtype.kind == np.asarray(value).dtype.kind, key
        assert np.array_equal(got, value, equal_nan=got.dtype.kind == "f"), key
    assert rec.to_bytes() == old_bytes(old)  # byte for byte the file the forest wrote


@pytest.mark.parametrize("make", [lambda: armature_dict(True), curve_dict])
def test_save_then_load_gives_an_equal_record(make, tmp_path):
    rec = br.BakeRecord.from_dict(make())
    path = str(tmp_path / "tree.npz")
    rec.save(path)
    assert br.BakeRecord.load(path) == rec
    assert br.BakeRecord.from_bytes(rec.to_bytes()) == rec
    other = br.BakeRecord.from_bytes(rec.to_bytes())
    (other.q_seg if rec.kind == "armature" else other.co)[-1, 0, 0] += 1e-12
    assert other != rec


def test_a_file_that_is_no_record_names_itself(tmp_path):
    path = tmp_path / "tree.npz"
    path.write_bytes(old_bytes({"format": "something else", "version": 1}))
    with pytest.raises(ValueError, match="is not a stiff_rods_forest version 1 file"):
        br.BakeRecord.load(str(path))
    path.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="cannot be read"):
        br.BakeRecord.load(str(path))


def test_added_bones_take_their_parents_by_name():
    rec = br.BakeRecord.from_dict(armature_dict())
    # bone2.000 hangs from the armature's bone1.000 (index 2), bone2.001 from the added bone2.000 (index 3)
    assert rec.bone_parents().tolist() == [-1, 0, 0, 2, 3]
    assert rec.bone_parents().dtype == np.int64
    plain = br.BakeRecord.from_dict(armature_dict() | {"plan_names": np.array([], dtype=str)})
    assert plain.bone_parents() is plain.bone_parent
    assert rec.frames().tolist() == [3, 4, 5, 6]


def _points(spline, bezier, co, hl, hr, w=None):
    return SimpleNamespace(spline=spline, bezier=bezier, co=co, handle_left=hl, handle_right=hr, w=w)


def test_a_curve_is_keyed_as_bake_keyed_its_control_points():
    """curve_arrays stacks the control points per frame as the forest did; curve_keys gives the same paths and
    values as Bake's writer built from the control points (co, then the handles, point by point)."""
    rest = [
        _points(0, True, *RNG.normal(size=(3, 2, 3))),
        _points(1, False, RNG.normal(size=(3, 3)), None, None, np.array([1.0, 1.0, 0.5])),
    ]
    frames = [
        [_points(0, True, *RNG.normal(size=(3, 2, 3))), _points(1, False, RNG.normal(size=(3, 3)), None, None)]
        for _ in range(F)
    ]
    rec = br.BakeRecord("Rope", "curve", 1, F, 9, **br.curve_arrays(rest, frames))
    assert rec.co.shape == (F + 1, 5, 3) and np.isnan(rec.handle_left[:, 2:]).all()
    assert np.array_equal(rec.w, [np.nan, np.nan, 1.0, 1.0, 0.5], equal_nan=True)
    keys = rec.curve_keys()
    for b, (group, paths, values) in enumerate(keys):
        cps = rest[b]
        k = cps.co.shape[0]
        kind = "bezier_points" if cps.bezier else "points"
        attrs = ("co", "handle_left", "handle_right") if cps.bezier else ("co",)
        assert group == f"spline {cps.spline}"
        assert paths == [f"splines[{cps.spline}].{kind}[{j}].{a}" for a in attrs for j in range(k)]
        expected = np.stack([np.concatenate([getattr(fr[b], a) for a in attrs]) for fr in frames])
        assert values.shape == expected.shape and np.array_equal(values, expected)
    assert rec.rest_points() == [
        [
            c.spline,
            c.co.tolist(),
            None if c.handle_left is None else c.handle_left.tolist(),
            None if c.handle_right is None else c.handle_right.tolist(),
        ]
        for c in rest
    ]
