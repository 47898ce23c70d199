"""One tree's bake as plain arrays: what the simulation gives and the keys are written from.

:class:`BakeRecord` is what ``addon/bake.py:run_bake`` returns and ``write_bake`` writes, in this process or
after a trip through a file (a forest's worker saves one per tree). Only numpy: no ``bpy``, no package-relative
import, so it loads (and is tested) without Blender.

On disk (``numpy.savez``, no pickled objects; the forest cache's ``tree_<k>.npz``), keys ``format``,
``version``, ``name``, ``kind`` ("armature" or "curve"), ``start``, ``end``, ``segments``, ``seconds``,
``preroll`` (frames simulated before ``start``), a loop's ``seam_ratio`` and ``seam_correction``, and

- armature: ``q_seg`` (F, S, 4) float64, the world orientations (w, x, y, z) of the segments the bones follow
  per frame (S = the bones, then the bones the bake adds); ``q_rest`` (S, 4) their rest orientations;
  ``bone_names`` (B,), ``bone_parent`` (B,) index or −1, ``bone_rest`` (B, 4) the bones' rest rotations
  (``Bone.matrix_local``), ``armature_rotation`` (4,); the added bones ``plan_names``, ``plan_parents`` (""
  for none), ``plan_head``, ``plan_tail`` (P, 3) armature space [m], ``plan_radius`` (P, 2); with leaves
  ``leaves`` (name), ``leaf_count`` and ``leaf_frames`` (F, V, 3) float32, the leaves mesh's base coordinates
  (Session.leaf_base_coordinates);
- curve: ``spline``, ``bezier``, ``count`` (C,) per spline, ``w`` (K,) weights (NaN for Bézier), and the
  object-local control points ``co``, ``handle_left``, ``handle_right`` (F + 1, K, 3) [m]: the rest points
  first, then one row per frame (NaN handles for non-Bézier splines).
"""

from __future__ import annotations

import io
import math
import os
from dataclasses import dataclass, field, fields

import numpy as np

FORMAT, VERSION = "stiff_rods_forest", 1
_TEXT = ("name", "kind", "leaves")  # 0-d string arrays on disk
_COUNTS = ("start", "end", "segments", "leaf_count", "preroll")  # 0-d integer arrays on disk
_FLOATS = ("seconds", "seam_ratio", "seam_correction")


def _empty(*shape: int) -> np.ndarray:
    return np.zeros(shape)


@dataclass(eq=False)
class BakeRecord:
    """One baked tree (module docstring for the arrays); ``kind`` "armature" or "curve" says which fields hold
    the result. Frames ``start``..``end``; ``segments`` of the model; ``seconds`` the bake took."""

    name: str
    kind: str
    start: int
    end: int
    segments: int
    seconds: float = 0.0
    preroll: int = 0  # frames simulated before ``start``
    seam_ratio: float = math.nan  # a loop's seam (addon/loop.py), NaN for no loop
    seam_correction: float = 0.0  # a loop's largest blend: rad (bones) or m (curve points)
    # armature
    q_seg: np.ndarray = field(default_factory=lambda: _empty(0, 0, 4))
    q_rest: np.ndarray = field(default_factory=lambda: _empty(0, 4))
    bone_names: list[str] = field(default_factory=list)
    bone_parent: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    bone_rest: np.ndarray = field(default_factory=lambda: _empty(0, 4))
    armature_rotation: np.ndarray = field(default_factory=lambda: _empty(4))
    plan_names: list[str] = field(default_factory=list)
    plan_parents: list[str | None] = field(default_factory=list)
    plan_head: np.ndarray = field(default_factory=lambda: _empty(0, 3))
    plan_tail: np.ndarray = field(default_factory=lambda: _empty(0, 3))
    plan_radius: np.ndarray = field(default_factory=lambda: _empty(0, 2))
    leaves: str | None = None
    leaf_count: int = 0
    leaf_frames: np.ndarray | None = None  # None: no leaves baked
    # curve
    spline: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    bezier: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    count: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    w: np.ndarray = field(default_factory=lambda: _empty(0))
    co: np.ndarray = field(default_factory=lambda: _empty(1, 0, 3))
    handle_left: np.ndarray = field(default_factory=lambda: _empty(1, 0, 3))
    handle_right: np.ndarray = field(default_factory=lambda: _empty(1, 0, 3))

    # -- on disk
    def to_dict(self) -> dict:
        """The arrays saved per tree, by their names on disk, in the order the forest always wrote them."""
        rec: dict = dict(
            format=FORMAT, version=VERSION, name=self.name, start=self.start, end=self.end, segments=self.segments
        )
        if self.kind == "armature":
            rec.update(
                kind="armature",
                q_seg=self.q_seg,
                q_rest=self.q_rest,
                bone_names=np.array(self.bone_names, dtype=str),
                bone_parent=self.bone_parent,
                bone_rest=self.bone_rest,
                armature_rotation=self.armature_rotation,
                plan_names=np.array(self.plan_names, dtype=str),
                plan_parents=np.array([p or "" for p in self.plan_parents], dtype=str),
                plan_head=self.plan_head,
                plan_tail=self.plan_tail,
                plan_radius=self.plan_radius,
            )
            if self.leaf_frames is not None:
                rec.update(leaves=self.leaves, leaf_count=self.leaf_count, leaf_frames=self.leaf_frames)
        else:
            rec.update(kind="curve", spline=self.spline, bezier=self.bezier, count=self.count, w=self.w)
            rec.update(co=self.co, handle_left=self.handle_left, handle_right=self.handle_right)
        rec["seconds"] = self.seconds
        if self.preroll:
            rec["preroll"] = self.preroll
        if not math.isnan(self.seam_ratio):
            rec.update(seam_ratio=self.seam_ratio, seam_correction=self.seam_correction)
        return rec

    @classmethod
    def from_dict(cls, rec: dict) -> BakeRecord:
        """A record from the arrays of :meth:`to_dict` (as read back from a file: 0-d arrays for the scalars)."""
        rec = dict(rec)
        for key in _TEXT:
            if key in rec:
                rec[key] = str(rec[key])
        for key in _COUNTS:
            if key in rec:
                rec[key] = int(rec[key])
        for key in _FLOATS:
            if key in rec:
                rec[key] = float(rec[key])
        for key in ("bone_names", "plan_names"):
            if key in rec:
                rec[key] = [str(x) for x in rec[key]]
        if "plan_parents" in rec:
            rec["plan_parents"] = [str(x) or None for x in rec["plan_parents"]]
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in rec.items() if k in names})

    def to_bytes(self) -> bytes:
        """The record as the bytes of an ``.npz`` file."""
        buf = io.BytesIO()
        np.savez(buf, **self.to_dict())
        return buf.getvalue()

    @classmethod
    def load(cls, path_or_file) -> BakeRecord:
        """A record saved by :meth:`save` (or :meth:`to_bytes`, given as a file object); ValueError naming the
        file when it is not one."""
        where = path_or_file if isinstance(path_or_file, str) else "<bytes>"
        try:
            with np.load(path_or_file, allow_pickle=False) as z:
                rec = {k: z[k] for k in z.files}
        except (OSError, ValueError) as exc:
            raise ValueError(f"Forest cache '{where}' cannot be read: {exc}") from None
        if str(rec.get("format", "")) != FORMAT or int(rec.get("version", -1)) != VERSION:
            raise ValueError(f"Forest cache '{where}' is not a {FORMAT} version {VERSION} file")
        return cls.from_dict(rec)

    @classmethod
    def from_bytes(cls, data: bytes) -> BakeRecord:
        return cls.load(io.BytesIO(data))

    def save(self, path: str) -> None:
        """Write the record to ``path`` atomically (:func:`save_bytes`)."""
        save_bytes(path, self.to_bytes())

    def __eq__(self, other) -> bool:
        """Every field equal (arrays element by element, NaN equal to NaN, same shape and dtype kind)."""
        if not isinstance(other, BakeRecord):
            return NotImplemented
        a, b = self.to_dict(), other.to_dict()
        a.pop("seconds")
        b.pop("seconds")
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a) and self.seconds == other.seconds

    __hash__ = None  # type: ignore[assignment]

    # -- what the writers need, as plain arrays
    def bone_parents(self) -> np.ndarray:
        """The parent index (or −1) of every bone keyed: the armature's, then the added bones' (their parents
        named, existing or added)."""
        if not self.plan_names:
            return self.bone_parent
        index = {n: i for i, n in enumerate(self.bone_names + self.plan_names)}
        added = [index[p] if p is not None else -1 for p in self.plan_parents]
        return np.concatenate((self.bone_parent, added)).astype(np.int64)

    def frames(self) -> np.ndarray:
        """The frame numbers ``start``..``end``."""
        return np.arange(self.start, self.end + 1)

    def spline_slices(self) -> list[tuple[int, bool, slice]]:
        """(spline index, Bézier, its points' slice of ``co``) per spline of a curve record."""
        out, k = [], 0
        for spline, bezier, count in zip(self.spline, self.bezier, self.count, strict=True):
            out.append((int(spline), bool(bezier), slice(k, k + int(count))))
            k += int(count)
        return out

    def rest_points(self) -> list:
        """A curve's control points before the bake, as Free Bake gives them back: ``[spline, co, handle_left,
        handle_right]`` per spline (lists; None handles for a non-Bézier spline)."""
        out = []
        for spline, bezier, sl in self.spline_slices():
            handles = [a[0, sl].tolist() if bezier else None for a in (self.handle_left, self.handle_right)]
            out.append([spline, self.co[0, sl].tolist(), *handles])
        return out

    def curve_keys(self) -> list[tuple[str, list[str], np.ndarray]]:
        """Per spline: (F-curve group, the point properties' data paths (P,), their values (F, P, 3) per frame):
        ``co`` (and Bézier handles) of every control point."""
        out = []
        for spline, bezier, sl in self.spline_slices():
            k = sl.stop - sl.start
            kind = "bezier_points" if bezier else "points"
            attrs = ("co", "handle_left", "handle_right") if bezier else ("co",)
            paths = [f"splines[{spline}].{kind}[{j}].{a}" for a in attrs for j in range(k)]
            values = np.concatenate([getattr(self, a)[1:, sl] for a in attrs], axis=1)
            out.append((f"spline {spline}", paths, values))
        return out


def _same(a, b) -> bool:
    if isinstance(a, str | int | float) or isinstance(b, str | int | float):
        return a == b
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def stack_points(points, attr: str) -> np.ndarray:
    """One attribute (``co``, ``handle_left``, ``handle_right``) of every spline's control points (objects with
    those attributes, e.g. reader.ControlPoints) as one (K, 3) array; NaN where a spline has none (the handles of
    a poly or NURBS spline)."""
    return np.concatenate(
        [np.full_like(c.co, np.nan) if getattr(c, attr) is None else getattr(c, attr) for c in points]
    )


def curve_arrays(rest, frames) -> dict:
    """The curve fields of a record from the control points at rest and per frame (lists of per-spline control
    points, see :func:`stack_points`)."""
    rows = [rest] + list(frames)
    return dict(
        spline=np.array([c.spline for c in rest], dtype=np.int64),
        bezier=np.array([c.bezier for c in rest], dtype=bool),
        count=np.array([c.co.shape[0] for c in rest], dtype=np.int64),
        w=np.concatenate([c.w if c.w is not None else np.full(c.co.shape[0], np.nan) for c in rest]),
        co=np.array([stack_points(r, "co") for r in rows]),
        handle_left=np.array([stack_points(r, "handle_left") for r in rows]),
        handle_right=np.array([stack_points(r, "handle_right") for r in rows]),
    )


def save_bytes(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a reader never sees half a file."""
    tmp = path + ".part"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)
