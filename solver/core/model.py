"""The rod model: a forest of rigid segments joined parent → child by Cosserat joints.

Everything here is computed once per topology. Units are SI throughout: lengths and radii in m,
densities in kg/m³, moduli in Pa, masses in kg, inertia in kg·m², compliances in m/N (stretch)
and 1/(N·m) (bend/twist, per joint, after the discretisation length is folded in).

A segment is a solid (elliptic) cylinder whose local +z axis is the rod axis (the director d3 of
Deul §3); its local x and y axes are d1 and d2 and carry the cross-section semi-axes ``radius[:, 0]``
and ``radius[:, 1]``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field, fields

import numpy as np
import numpy.typing as npt
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from . import quaternion as quat

DEFAULT_STRETCH_COMPLIANCE = 1e-10  # m/N; Deul §4.3 uses 1e-10…1e-8 to keep the KKT system well conditioned
# Timoshenko shear coefficient κ of a solid round section: 6(1 + ν)/(7 + 6ν) (Cowper 1966) is 0.886 at
# ν = 0.3 and 0.9 at ν = 0.5 (rubber); values 0.9–1.0 are usual for round sections.
DEFAULT_SHEAR_COEFFICIENT = 0.9

# Joint kinds: which of the six constraint rows (3 position, then bend d1, bend d2, twist d3) a joint keeps.
#   clamp: all six; ball: the position rows (rotation free); ball_twist_lock: a ball that keeps the twist row;
#   hinge: the position rows and the two rotation rows that keep the hinge axis (free rotation about it);
#   rail: the rotation rows and the position rows across the rail axis (free sliding along it).
JOINT_KINDS = ("clamp", "ball", "ball_twist_lock", "hinge", "rail")
_KIND_ROWS = {
    "clamp": (1, 1, 1, 1, 1, 1),
    "ball": (1, 1, 1, 0, 0, 0),
    "ball_twist_lock": (1, 1, 1, 0, 0, 1),
    "hinge": (1, 1, 1, 1, 1, 1),  # the row of the hinge axis is dropped in _row_masks
    "rail": (0, 1, 1, 1, 1, 1),  # row 0 is along the rail axis (position rows in the rail's basis)
}


def _as_array(name: str, value, shape_tail: tuple, count: int, dtype=float) -> np.ndarray:
    """Broadcast ``value`` to ``(count, *shape_tail)`` and reject NaN/inf, naming the input."""
    arr = np.asarray(value, dtype=dtype)
    try:
        arr = np.broadcast_to(arr, (count,) + shape_tail).copy()
    except ValueError:
        raise ValueError(
            f"{name}: expected shape ({count}, {', '.join(map(str, shape_tail))}) "
            f"or broadcastable, got {np.shape(value)}"
        ) from None
    if dtype is float and not np.all(np.isfinite(arr)):
        bad = int(np.argwhere(~np.isfinite(arr.reshape(count, -1)))[0, 0])
        raise ValueError(f"{name}[{bad}] is not finite (NaN or inf)")
    return arr


def _section_radii(name: str, value, count: int) -> np.ndarray:
    """Cross-section semi-axes (count, 2): a scalar or a 1-D array is a circular radius (per item);
    elliptic sections are given as shape (count, 2) or (1, 2)."""
    arr = np.asarray(value, dtype=float)
    if arr.ndim <= 1:
        arr = np.stack(
            [
                np.broadcast_to(arr, (count,))
                if arr.ndim == 0 or arr.shape[0] == count
                else _as_array(name, arr, (), count)
            ]
            * 2,
            axis=1,
        )
    return _as_array(name, arr, (2,), count)


def _require_positive(name: str, arr: np.ndarray) -> None:
    if arr.size == 0:
        return
    flat = arr.reshape(arr.shape[0], -1)
    bad = np.argwhere(~(flat > 0.0))
    if bad.size:
        i = int(bad[0, 0])
        raise ValueError(f"{name}[{i}] must be > 0, got {arr[i].tolist() if arr.ndim > 1 else float(arr[i])}")


def cross_section_moments(radius: np.ndarray):
    """Second moments of area of an elliptic cross-section with semi-axes ``(a, b)`` along (d1, d2).

    Deul Eq. 6: ``I1 = ∫ x2² dA = π a b³/4``, ``I2 = ∫ x1² dA = π a³ b/4``, ``J = I1 + I2`` (m⁴).
    A circle (a = b = r) gives ``I1 = I2 = π r⁴/4``.
    """
    a, b = radius[..., 0], radius[..., 1]
    i1 = np.pi * a * b**3 / 4.0
    i2 = np.pi * a**3 * b / 4.0
    return i1, i2, i1 + i2


@dataclass(eq=False, repr=False, kw_only=True)
class JointArrays:
    """A set of joints: the joint arrays of :meth:`RodModel.from_arrays` (described in :class:`RodModel`) and
    what :meth:`_derive` computes from them, ``bend_twist_stiffness`` K = diag(E I1, E I2, G J) (m, 3) of
    Deul Eq. 5 [N·m²] and ``rest_darboux`` (m, 4), the rest Darboux quaternion q̄_p⁰ q_c⁰ of every joint.
    The tree joints of a :class:`RodModel` and the loop-closing constraints of a :class:`JointSet` are such sets."""

    joint_parent: np.ndarray
    joint_child: np.ndarray
    joint_point_parent: np.ndarray
    joint_point_child: np.ndarray
    joint_radii: np.ndarray
    youngs_modulus: np.ndarray
    torsion_modulus: np.ndarray
    joint_lengths: np.ndarray
    stretch_compliance: np.ndarray
    # None: every joint a clamp / axis (0, 0, 1) / near-inextensible / κ = DEFAULT_SHEAR_COEFFICIENT (in _derive)
    joint_kind: np.ndarray = None  # type: ignore[assignment]
    joint_axis: np.ndarray = None  # type: ignore[assignment]
    physical_stretch: np.ndarray = None  # type: ignore[assignment]
    shear_coefficient: np.ndarray = None  # type: ignore[assignment]
    # derived
    rest_darboux: np.ndarray = field(init=False)
    bend_twist_stiffness: np.ndarray = field(init=False)
    row_mask: np.ndarray = field(init=False)
    position_basis: np.ndarray = field(init=False)
    framed: np.ndarray = field(init=False)
    position_compliance: np.ndarray = field(init=False)

    @property
    def n_joints(self) -> int:
        return int(self.joint_parent.shape[0])

    @property
    def has_masked_rows(self) -> bool:
        """Whether any joint drops a row (ball, hinge, rail) or states its position rows in a segment frame
        (rail, physical stretch); the numpy and the compiled solvers both handle them."""
        return bool(np.any(self.row_mask == 0.0) or np.any(self.framed))

    def _derive(self, orientations: np.ndarray) -> None:
        """The stiffness and rest Darboux quaternions of these joints between segments at ``orientations``, and
        each joint's row mask, position-row basis and position-row compliance."""
        m = self.joint_parent.shape[0]
        if self.joint_kind is None:
            self.joint_kind = np.zeros(m, np.int64)
        if self.joint_axis is None:
            self.joint_axis = np.tile([0.0, 0.0, 1.0], (m, 1))
        if self.physical_stretch is None:
            self.physical_stretch = np.zeros(m, bool)
        if self.shear_coefficient is None:
            self.shear_coefficient = np.full(m, DEFAULT_SHEAR_COEFFICIENT)
        i1, i2, j = cross_section_moments(self.joint_radii)
        self.bend_twist_stiffness = np.stack(
            (self.youngs_modulus * i1, self.youngs_modulus * i2, self.torsion_modulus * j), axis=1
        )
        self.rest_darboux = quat.multiply(
            quat.conjugate(orientations[self.joint_parent]), orientations[self.joint_child]
        )
        kind = self.joint_kind
        self.row_mask = np.array([_KIND_ROWS[k] for k in JOINT_KINDS], float)[kind].reshape(m, 6)
        hinge = np.flatnonzero(kind == JOINT_KINDS.index("hinge"))
        if hinge.size:  # the axis is one of the child's section axes: its rotation row is dropped
            self.row_mask[hinge, 3 + np.argmax(np.abs(self.joint_axis[hinge]), axis=1)] = 0.0
        rail = kind == JOINT_KINDS.index("rail")
        # position rows: world axes (the default), or a basis fixed in the parent segment: its own axes for
        # physical stretch and shear (stretch along d3), a basis whose first axis is the rail axis for a rail
        self.framed = rail | self.physical_stretch
        basis = np.broadcast_to(np.eye(3), (m, 3, 3)).copy()
        if np.any(rail):
            basis[rail] = _basis_from_axis(self.joint_axis[rail])
        self.position_basis = basis
        area = np.pi * self.joint_radii[:, 0] * self.joint_radii[:, 1]
        shear = self.joint_lengths / (self.shear_coefficient * self.torsion_modulus * area)
        stretch = self.joint_lengths / (self.youngs_modulus * area)
        physical = self.physical_stretch & ~rail
        self.position_compliance = np.where(
            physical[:, None], np.stack((shear, shear, stretch), axis=1), self.stretch_compliance[:, None]
        )


# the joint arrays' names, as RodModel.from_arrays takes them
JOINT_FIELDS = tuple(f.name for f in fields(JointArrays) if f.init)
JOINT_KIND_FIELDS = ("joint_kind", "joint_axis", "physical_stretch", "shear_coefficient")


def _basis_from_axis(axis: np.ndarray) -> np.ndarray:
    """Orthonormal bases (k, 3, 3) whose first column is the unit ``axis`` (k, 3)."""
    a = axis / np.linalg.norm(axis, axis=1, keepdims=True)
    helper = np.where((np.abs(a[:, 0]) < 0.9)[:, None], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    b = np.cross(a, helper)
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    return np.stack((a, b, np.cross(a, b)), axis=2)


def _joint_kinds(value, m: int) -> np.ndarray:
    """Joint kinds (a name of :data:`JOINT_KINDS` or its index, one for all or one per joint) as indices."""
    arr = np.asarray(value)
    if arr.dtype.kind in "iu":
        codes = _as_array("joint_kind", arr, (), m, dtype=np.int64)
        bad = np.argwhere((codes < 0) | (codes >= len(JOINT_KINDS)))
        if bad.size:
            i = int(bad[0, 0])
            raise ValueError(f"joint_kind[{i}] = {int(codes[i])} is not a joint kind index (0…{len(JOINT_KINDS) - 1})")
        return codes
    names = _as_array("joint_kind", arr, (), m, dtype=object)
    codes = np.zeros(m, np.int64)
    for i, name in enumerate(names):
        if name not in JOINT_KINDS:
            raise ValueError(f"joint_kind[{i}] = {name!r} is not a joint kind; use one of {', '.join(JOINT_KINDS)}")
        codes[i] = JOINT_KINDS.index(name)
    return codes


@dataclass(kw_only=True)
class RodModel(JointArrays):
    """Segments and joints of a rod forest, validated and with derived mass properties.

    Segment arrays (n segments): ``positions`` (n, 3) centre of mass [m], ``orientations`` (n, 4)
    unit quaternions (w, x, y, z), ``lengths`` (n,) [m], ``radii`` (n, 2) cross-section semi-axes [m],
    ``densities`` (n,) [kg/m³], ``pinned`` (n,) bool (kinematic: infinite mass), ``leaf`` (n,) bool:
    the segment is a leaf, a thin rectangular plate (local +z stem → tip over ``lengths``, width
    2·radii[:, 0] along local x, thickness 2·radii[:, 1] along local y, the plate normal) instead of
    a cylinder; ``plate_area`` (n,) [m²] its area 2a·l (0 for rod segments).

    Joint arrays (m tree joints, parent → child): ``joint_parent``/``joint_child`` (m,) segment indices,
    ``joint_point_parent``/``joint_point_child`` (m, 3) attachment points in each segment's local
    frame [m], ``joint_radii`` (m, 2) [m] for the bending/twisting stiffness, ``youngs_modulus`` and
    ``torsion_modulus`` (m,) [Pa], ``joint_lengths`` (m,) [m] (the Darboux discretisation length l of
    Eq. 7; default: the mean of the two segment lengths) and ``stretch_compliance`` (m,) [m/N].
    ``joint_kind`` (m,) an index into :data:`JOINT_KINDS` (``from_arrays`` takes the names): ``"clamp"`` (all six
    rows), ``"ball"`` (position rows only, rotation free), ``"ball_twist_lock"`` (a ball that keeps the twist
    row), ``"hinge"`` (free rotation about ``joint_axis``, one of the child's section axes d1, d2, d3 in its
    frame), ``"rail"`` (a clamp that slides freely along ``joint_axis``, a direction in the parent's frame, through
    the parent's attachment point). A dropped row is solved exactly, not softly: its C and Jacobian row are zero
    and its α̃ is 1 in the direct solve, so its λ stays 0. ``joint_axis`` (m, 3) unit vectors (default (0, 0, 1)).
    ``physical_stretch`` (m,) bool: the position rows get the compliance of the rod between the two segment
    centres, ``l/(κ G A)`` across the parent's axis (shear) and ``l/(E A)`` along it (stretch), A = π a b, with
    ``shear_coefficient`` κ (m,) (default 0.9; 0.9–1.0 for round sections); otherwise (the default, for trees) the
    near-inextensible ``stretch_compliance`` in all three. A rail's two held rows always take ``stretch_compliance``.
    The rest Darboux quaternion ``q̄_parent⁰ q_child⁰`` of every joint is taken from the initial pose.
    ``joint_input_index`` (m,) is each tree joint's index in the arrays given to :meth:`from_arrays`;
    joints that close a cycle among free segments are not tree joints but ``loops``, a
    :class:`JointSet` of loop-closing constraints (Deul §4.2), solved by Gauss–Seidel between the
    direct solves.
    """

    positions: np.ndarray
    orientations: np.ndarray
    lengths: np.ndarray
    radii: np.ndarray
    densities: np.ndarray
    pinned: np.ndarray
    # (the joint arrays: JointArrays)
    # None: filled in by __post_init__ (no leaves, no loops, input order), so never None afterwards
    leaf: np.ndarray = None  # type: ignore[assignment]
    loops: JointSet = None  # type: ignore[assignment]
    joint_input_index: np.ndarray = None  # type: ignore[assignment]
    # derived
    plate_area: np.ndarray = field(init=False)
    masses: np.ndarray = field(init=False)
    inertia: np.ndarray = field(init=False)

    @classmethod
    def from_arrays(
        cls,
        positions,
        orientations,
        lengths,
        radii,
        densities,
        *,
        joint_parent: npt.ArrayLike = (),
        joint_child: npt.ArrayLike = (),
        joint_point_parent=None,
        joint_point_child=None,
        joint_radii=None,
        youngs_modulus=1e9,
        torsion_modulus=None,
        joint_lengths=None,
        stretch_compliance=DEFAULT_STRETCH_COMPLIANCE,
        joint_kind="clamp",
        joint_axis=None,
        physical_stretch=False,
        shear_coefficient=DEFAULT_SHEAR_COEFFICIENT,
        pinned=None,
        leaf=None,
    ) -> RodModel:
        """Build and validate a model from segment and joint arrays (broadcasting scalars).

        Radii: a scalar or one value per segment (circular), or semi-axes (a, b) as shape (n, 2). Joint radii
        default to the mean of the two segments' radii. ``torsion_modulus`` defaults to
        ``E / (2 (1 + ν))`` with ν = 0.3. ``leaf``: optional (n,) bool, leaf plates (see the class).
        ``joint_kind``, ``joint_axis``, ``physical_stretch``, ``shear_coefficient``: see the class (one value
        for all joints or one per joint).
        A joint that closes a cycle among free segments (a ring, a segment welded to two parents of one
        tree) becomes a loop-closing constraint in ``loops``; the first joints in input order form the tree.
        Raises ``ValueError`` naming the offending item.
        """
        positions = np.asarray(positions, dtype=float)
        if positions.ndim != 2 or positions.shape[1] != 3 or positions.shape[0] == 0:
            raise ValueError(f"positions: expected shape (n, 3) with n ≥ 1, got {positions.shape}")
        n = positions.shape[0]
        positions = _as_array("positions", positions, (3,), n)
        orientations = _as_array("orientations", orientations, (4,), n)
        norms = np.linalg.norm(orientations, axis=1)
        bad = np.argwhere(norms < 1e-12)
        if bad.size:
            raise ValueError(f"orientations[{int(bad[0, 0])}] is a zero quaternion")
        orientations = orientations / norms[:, None]
        lengths = _as_array("lengths", lengths, (), n)
        _require_positive("lengths", lengths)
        radii = _section_radii("radii", radii, n)
        _require_positive("radii", radii)
        densities = _as_array("densities", densities, (), n)
        _require_positive("densities", densities)
        pinned = np.zeros(n, bool) if pinned is None else _as_array("pinned", pinned, (), n, dtype=bool)
        leaf = np.zeros(n, bool) if leaf is None else _as_array("leaf", leaf, (), n, dtype=bool)

        jp = np.asarray(joint_parent, dtype=np.int64).reshape(-1)
        jc = np.asarray(joint_child, dtype=np.int64).reshape(-1)
        if jp.shape != jc.shape:
            raise ValueError(f"joint_parent and joint_child differ in length ({jp.size} vs {jc.size})")
        m = jp.size
        for name, idx in (("joint_parent", jp), ("joint_child", jc)):
            bad = np.argwhere((idx < 0) | (idx >= n))
            if bad.size:
                j = int(bad[0, 0])
                raise ValueError(f"{name}[{j}] = {int(idx[j])} is not a segment index (0…{n - 1})")
        bad = np.argwhere(jp == jc)
        if bad.size:
            j = int(bad[0, 0])
            raise ValueError(f"joint {j} joins segment {int(jp[j])} to itself")
        bad = np.argwhere(pinned[jp] & pinned[jc])
        if bad.size:
            j = int(bad[0, 0])
            raise ValueError(f"joint {j} joins two pinned segments ({int(jp[j])}, {int(jc[j])}): nothing can move")

        def joint_vec(name, value, default):
            return _as_array(name, default if value is None else value, (3,), m)

        half_p = np.zeros((m, 3))
        half_p[:, 2] = 0.5 * lengths[jp]
        half_c = np.zeros((m, 3))
        half_c[:, 2] = -0.5 * lengths[jc]
        joint_point_parent = joint_vec("joint_point_parent", joint_point_parent, half_p)
        joint_point_child = joint_vec("joint_point_child", joint_point_child, half_c)
        if joint_radii is None:
            joint_radii = 0.5 * (radii[jp] + radii[jc])
        joint_radii = _section_radii("joint_radii", joint_radii, m)
        _require_positive("joint_radii", joint_radii)
        youngs_modulus = _as_array("youngs_modulus", youngs_modulus, (), m)
        _require_positive("youngs_modulus", youngs_modulus)
        if torsion_modulus is None:
            torsion_modulus = youngs_modulus / (2.0 * 1.3)
        torsion_modulus = _as_array("torsion_modulus", torsion_modulus, (), m)
        _require_positive("torsion_modulus", torsion_modulus)
        if joint_lengths is None:
            joint_lengths = 0.5 * (lengths[jp] + lengths[jc])
        joint_lengths = _as_array("joint_lengths", joint_lengths, (), m)
        _require_positive("joint_lengths", joint_lengths)
        stretch_compliance = _as_array("stretch_compliance", stretch_compliance, (), m)
        _require_positive("stretch_compliance", stretch_compliance)
        joint_kind = _joint_kinds(joint_kind, m)
        joint_axis = joint_vec("joint_axis", joint_axis, np.array([0.0, 0.0, 1.0]))
        norms = np.linalg.norm(joint_axis, axis=1)
        bad = np.argwhere(~(norms > 1e-12))
        if bad.size:
            i = int(bad[0, 0])
            raise ValueError(f"joint_axis[{i}] is a zero vector: a rail or hinge axis needs a direction")
        joint_axis = joint_axis / norms[:, None]
        hinge = np.flatnonzero(joint_kind == JOINT_KINDS.index("hinge"))
        off_axis = 1.0 - np.max(np.abs(joint_axis[hinge]), axis=1) if hinge.size else np.zeros(0)
        bad = np.argwhere(off_axis > 1e-9)
        if bad.size:
            i = int(hinge[int(bad[0, 0])])
            raise ValueError(
                f"joint_axis[{i}] = {joint_axis[i].tolist()}: a hinge axis must be one of the child segment's "
                "section axes, (1, 0, 0), (0, 1, 0) or (0, 0, 1) in its frame"
            )
        physical_stretch = _as_array("physical_stretch", physical_stretch, (), m, dtype=bool)
        shear_coefficient = _as_array("shear_coefficient", shear_coefficient, (), m)
        _require_positive("shear_coefficient", shear_coefficient)

        joints = dict(
            joint_parent=jp,
            joint_child=jc,
            joint_point_parent=joint_point_parent,
            joint_point_child=joint_point_child,
            joint_radii=joint_radii,
            youngs_modulus=youngs_modulus,
            torsion_modulus=torsion_modulus,
            joint_lengths=joint_lengths,
            stretch_compliance=stretch_compliance,
            joint_kind=joint_kind,
            joint_axis=joint_axis,
            physical_stretch=physical_stretch,
            shear_coefficient=shear_coefficient,
        )
        loop = _loop_closing_joints(n, pinned, jp, jc)
        loops = JointSet(orientations, np.flatnonzero(loop), **{k: v[loop] for k, v in joints.items()})
        return cls(
            positions=positions,
            orientations=orientations,
            lengths=lengths,
            radii=radii,
            densities=densities,
            pinned=pinned,
            **{k: v[~loop] for k, v in joints.items()},
            leaf=leaf,
            loops=loops,
            joint_input_index=np.flatnonzero(~loop),
        )

    def __post_init__(self):
        n = self.n_segments
        if self.leaf is None:
            self.leaf = np.zeros(n, bool)
        if self.joint_input_index is None:
            self.joint_input_index = np.arange(self.joint_parent.shape[0])
        if self.loops is None:
            self.loops = JointSet.empty(self.orientations)
        a, b = self.radii[:, 0], self.radii[:, 1]
        length = self.lengths
        # Solid elliptic cylinder (area π a b) or, for a leaf, a rectangular plate (area 2a · 2b), about
        # its centre of mass, body axes (d1, d2, d3): cross-section terms ρ·l·(I1, I2, J) of Deul Eq. 28
        # (π a b³/4 … for the ellipse, (2a)(2b)³/12 … for the rectangle) plus m·l²/12 about d1 and d2.
        self.masses = self.densities * np.where(self.leaf, 4.0, np.pi) * a * b * length
        self.plate_area = np.where(self.leaf, 2.0 * a * length, 0.0)
        k = np.where(self.leaf, 1.0 / 3.0, 1.0 / 4.0)
        m = self.masses
        self.inertia = np.stack(
            (m * (k * b**2 + length**2 / 12), m * (k * a**2 + length**2 / 12), m * k * (a**2 + b**2)), axis=1
        )
        self._derive(self.orientations)

    # ------------------------------------------------------------------ topology
    @property
    def n_segments(self) -> int:
        return int(self.positions.shape[0])

    def input_joint_arrays(self) -> dict:
        """The joint arrays in input order (tree joints and loop-closing constraints together), keyed by
        the :meth:`from_arrays` argument names. (After :meth:`without_joints` the input indices keep the
        original numbering, with gaps: the order is what counts.) The joint-kind arrays (:data:`JOINT_KIND_FIELDS`)
        are included only where some joint differs from the default (a near-inextensible clamp), so callers that
        append joints of their own need not know them for trees."""
        order = np.argsort(np.concatenate((self.joint_input_index, self.loops.input_index)), kind="stable")
        arrays = {
            name: np.concatenate((getattr(self, name), getattr(self.loops, name)))[order] for name in JOINT_FIELDS
        }
        default = (
            not np.any(arrays["joint_kind"])
            and not np.any(arrays["physical_stretch"])
            and np.all(arrays["joint_axis"] == (0.0, 0.0, 1.0))
            and np.all(arrays["shear_coefficient"] == DEFAULT_SHEAR_COEFFICIENT)
        )
        return {k: v for k, v in arrays.items() if not (default and k in JOINT_KIND_FIELDS)}

    def with_rest_darboux(self, rest_darboux) -> RodModel:
        """A copy (sharing every other array) whose tree joints have the rest Darboux quaternions
        ``rest_darboux`` (m, 4) instead of the ones taken from the initial pose (pre-stress,
        solver/build/prestress.py). :meth:`copy_with` rebuilds from the pose and drops them."""
        rest = np.asarray(rest_darboux, dtype=float)
        if rest.shape != (self.n_joints, 4) or not np.all(np.isfinite(rest)):
            raise ValueError(f"rest_darboux: expected finite shape ({self.n_joints}, 4), got {rest.shape}")
        norms = np.linalg.norm(rest, axis=1)
        if np.any(np.abs(norms - 1.0) > 1e-9):
            raise ValueError(f"rest_darboux[{int(np.argmax(np.abs(norms - 1.0)))}] is not a unit quaternion")
        new = copy.copy(self)
        new.rest_darboux = rest
        return new

    def without_joints(self, joints) -> RodModel:
        """A copy without the tree joints ``joints`` (indices into the tree joints), every other joint keeping
        its rest Darboux quaternion (a pre-stressed model stays pre-stressed) and its original input index
        (``joint_input_index``, ``loops.input_index``): for fracture."""
        keep = np.ones(self.n_joints, bool)
        keep[np.asarray(joints, dtype=np.int64)] = False
        idx = np.concatenate((self.joint_input_index, self.loops.input_index))
        order = np.argsort(idx, kind="stable")
        kept = np.concatenate((keep, np.ones(self.loops.n_joints, bool)))[order]  # in input order
        new = self.copy_with(**{k: v[kept] for k, v in self.input_joint_arrays().items()})
        if new.n_joints != int(keep.sum()):
            raise ValueError("without_joints: the remaining joints regrouped into tree and loops differently")
        original = idx[order][kept]
        new.joint_input_index = original[new.joint_input_index]
        new.loops.input_index = original[new.loops.input_index]
        return new.with_rest_darboux(self.rest_darboux[keep])

    def copy_with(self, **changes) -> RodModel:
        """A new validated model with some constructor arrays replaced (joint arrays in input order,
        tree joints and loop-closing constraints together, as given to :meth:`from_arrays`)."""
        fields = dict(
            positions=self.positions,
            orientations=self.orientations,
            lengths=self.lengths,
            radii=self.radii,
            densities=self.densities,
            pinned=self.pinned,
            leaf=self.leaf,
            **self.input_joint_arrays(),
        )
        fields.update(changes)
        pos = fields.pop("positions")
        ori = fields.pop("orientations")
        ln = fields.pop("lengths")
        rad = fields.pop("radii")
        den = fields.pop("densities")
        return RodModel.from_arrays(pos, ori, ln, rad, den, **fields)


class JointSet(JointArrays):
    """Joints kept out of the tree: the loop-closing constraints of Deul §4.2 (same 6-D constraint,
    Eq. 23). It has the joint arrays (``JOINT_FIELDS``) and derived ``rest_darboux``/``bend_twist_stiffness``
    under the names :class:`RodModel` uses, so :func:`joint_constraint.evaluate`,
    :func:`joint_constraint.compliance` and :func:`gauss_seidel.gauss_seidel_iteration` take it in place
    of a model. ``input_index`` (k,): each joint's index in the joint arrays given to
    :meth:`RodModel.from_arrays`; ``orientations``: the model's initial segment orientations."""

    def __init__(self, orientations: np.ndarray, input_index: np.ndarray, **joints):
        super().__init__(**joints)
        self.input_index = input_index
        self._derive(orientations)

    @classmethod
    def empty(cls, orientations) -> JointSet:
        shapes = dict(joint_point_parent=(0, 3), joint_point_child=(0, 3), joint_radii=(0, 2), joint_axis=(0, 3))
        types = dict(joint_parent=np.int64, joint_child=np.int64, joint_kind=np.int64, physical_stretch=bool)
        joints = {name: np.zeros(shapes.get(name, (0,)), types.get(name, float)) for name in JOINT_FIELDS}
        return cls(orientations, np.zeros(0, np.int64), **joints)


def _loop_closing_joints(n: int, pinned: np.ndarray, parent: np.ndarray, child: np.ndarray) -> np.ndarray:
    """Mask of the joints that close a cycle among free segments, in input order (a spanning forest of
    the earlier joints is the tree). Pinned segments are not unknowns of the KKT system (their rows
    vanish), so a rope hanging between two pinned segments is still a tree for the direct solver.
    Two joints between the same two segments are an error: one 6-D joint already fixes their motion."""
    loop = np.zeros(parent.size, bool)
    if parent.size == 0:
        return loop
    pairs = np.sort(np.stack((parent, child), axis=1), axis=1)
    _, first, inverse = np.unique(pairs, axis=0, return_index=True, return_inverse=True)
    dup = np.flatnonzero(first[inverse.reshape(-1)] != np.arange(parent.size))
    if dup.size:
        j = int(dup[0])
        raise ValueError(
            f"joint {j} ({int(parent[j])} → {int(child[j])}) joins the same two segments as joint "
            f"{int(first[inverse.reshape(-1)[j]])}: one 6-D joint already fixes their relative motion"
        )
    free = ~pinned
    both = np.flatnonzero(free[parent] & free[child])
    if both.size == 0:
        return loop
    graph = coo_matrix((np.ones(both.size), (parent[both], child[both])), shape=(n, n))
    n_comp, _ = connected_components(graph, directed=False)
    if both.size == n - n_comp:
        return loop  # a forest: the common case, no per-joint pass
    root = list(range(n))

    def find(i):
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    for j in both:  # once per topology (union–find in input order)
        ra, rb = find(int(parent[j])), find(int(child[j]))
        if ra == rb:
            loop[j] = True
        else:
            root[ra] = rb
    return loop


def _cumulative_left_product(r: np.ndarray) -> np.ndarray:
    """``out[k] = r[k-1] ⊗ … ⊗ r[0]`` (``out[0]`` = identity), by a log-depth Hillis–Steele scan."""
    n = r.shape[0] + 1
    out = np.zeros((n, 4))
    out[:, 0] = 1.0
    out[1:] = r
    s = 1
    while s < n:
        out[s:] = quat.multiply(out[s:], out[:-s])
        s *= 2
    return quat.normalize(out)


def _polyline_frames(name: str, points, twist: float):
    """Edge lengths (k−1,) and material frames (k−1, 4) of a polyline (k, 3): parallel transport along it (no
    rest twist), turned by ``twist`` [rad] about the first edge. ValueError naming ``name`` on bad input."""
    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise ValueError(f"{name}: expected shape (k, 3), got {pts.shape}")
    if pts.shape[0] < 2:
        raise ValueError(f"{name}: a rod needs at least 2 points, got {pts.shape[0]}")
    if not np.all(np.isfinite(pts)):
        raise ValueError(f"{name}[{int(np.argwhere(~np.isfinite(pts))[0, 0])}] is not finite (NaN or inf)")
    edges = np.diff(pts, axis=0)
    lengths = np.linalg.norm(edges, axis=1)
    bad = np.argwhere(~(lengths > 0.0))
    if bad.size:
        i = int(bad[0, 0])
        raise ValueError(f"{name}: segment {i} (points {i} and {i + 1}) has zero length")
    dirs = edges / lengths[:, None]
    q0 = quat.from_two_vectors(np.array([0.0, 0.0, 1.0]), dirs[0])
    if twist:
        q0 = quat.multiply(q0, np.array([np.cos(twist / 2), 0.0, 0.0, np.sin(twist / 2)]))
    transport = quat.from_two_vectors(dirs[:-1], dirs[1:]) if pts.shape[0] > 2 else np.zeros((0, 4))
    return lengths, quat.normalize(quat.multiply(_cumulative_left_product(transport), q0))


STRETCH_MODES = ("inextensible", "physical")


def rod_from_polyline(
    points,
    radius,
    youngs_modulus: float,
    torsion_modulus: float | None = None,
    density: float = 1000.0,
    *,
    pinned: Iterable[str] = (),
    stretch_compliance: float = DEFAULT_STRETCH_COMPLIANCE,
    twist: float = 0.0,
    start: str | None = None,
    end: str | None = None,
    start_axis=(0.0, 0.0, 1.0),
    end_axis=(0.0, 0.0, 1.0),
    stretch: str = "inextensible",
    shear_coefficient: float = DEFAULT_SHEAR_COEFFICIENT,
    rest=None,
) -> RodModel:
    """A single rod: one segment per polyline edge, one joint per interior point.

    ``points`` (k, 3) [m]: the initial pose; ``radius`` [m] a scalar or one value per point (a segment takes
    the mean of its end radii, a joint the radius at its point); ``youngs_modulus``/``torsion_modulus`` [Pa];
    ``density`` [kg/m³]. Material frames are parallel-transported along the polyline (no rest twist), then
    optionally turned by ``twist`` [rad] about the axis of the first segment.

    Ends: ``start``/``end`` a joint kind of :data:`JOINT_KINDS` (``"clamp"``, ``"ball"``, ``"ball_twist_lock"``,
    ``"hinge"``, ``"rail"``) or None (free): the end segment (the first or last polyline edge) becomes a
    kinematic anchor, and its joint to the rod that kind, at ``points[1]`` (``points[-2]``). ``pinned``
    ``["start"]``/``["end"]`` is ``start``/``end="clamp"``. ``start_axis``/``end_axis``: the axis of a rail
    (in the anchor's frame at the start, the last free segment's at the end; (0, 0, 1) is along the rod) or of a
    hinge (in the first free segment's frame at the start, the anchor's at the end: (1, 0, 0), (0, 1, 0) or
    (0, 0, 1)).

    ``stretch``: ``"inextensible"`` (the default, for trees: ``stretch_compliance`` [m/N] in every position row)
    or ``"physical"``: stretch ``l/(E A)`` and shear ``l/(κ G A)`` per joint, κ = ``shear_coefficient``.

    ``rest``: the rest shape, if not the initial pose: ``"straight"`` or points (k, 3). Rest Darboux vectors and
    segment lengths come from it, positions and orientations from ``points`` (where its edge lengths differ
    from the rest lengths, the joints start stretched and pull the segments together).
    """
    lengths, orientations = _polyline_frames("points", points, twist)
    pts = np.asarray(points, dtype=float)
    k = pts.shape[0]
    rad = _as_array("radius", radius, (), k)
    _require_positive("radius", rad)
    ends = set(pinned)
    unknown = ends - {"start", "end"}
    if unknown:
        raise ValueError(f"pinned: unknown end(s) {sorted(unknown)}; use 'start' and/or 'end'")
    for name, kind in (("start", start), ("end", end)):
        if kind is not None and kind not in JOINT_KINDS:
            raise ValueError(f"{name}: {kind!r} is not a joint kind; use None or one of {', '.join(JOINT_KINDS)}")
    if stretch not in STRETCH_MODES:
        raise ValueError(f"stretch must be one of {STRETCH_MODES}, got {stretch!r}")
    start_kind = start if start is not None else ("clamp" if "start" in ends else None)
    end_kind = end if end is not None else ("clamp" if "end" in ends else None)
    if (start is not None or end is not None) and k < 3:
        raise ValueError(f"points: a rod with a jointed end needs at least 3 points (anchor and rod), got {k}")
    pin = np.zeros(k - 1, bool)
    pin[0] |= start_kind is not None
    pin[-1] |= end_kind is not None
    kinds = ["clamp"] * (k - 2)
    axes = np.tile([0.0, 0.0, 1.0], (k - 2, 1))
    if start_kind is not None:
        kinds[0], axes[0] = start_kind, start_axis
    if end_kind is not None:
        kinds[-1], axes[-1] = end_kind, end_axis
    rest_darboux = None
    if rest is not None:
        if isinstance(rest, str):
            if rest != "straight":
                raise ValueError(f"rest must be 'straight' or points of shape ({k}, 3), got {rest!r}")
            rest_darboux = np.tile([1.0, 0.0, 0.0, 0.0], (k - 2, 1))
        else:
            rest_lengths, rest_q = _polyline_frames("rest", rest, twist)
            if rest_lengths.shape != lengths.shape:
                raise ValueError(f"rest: expected {k} points as in points, got {rest_lengths.size + 1}")
            lengths = rest_lengths
            rest_darboux = quat.multiply(quat.conjugate(rest_q[:-1]), rest_q[1:])
    seg_r = 0.5 * (rad[:-1] + rad[1:])
    j = np.arange(k - 2)
    model = RodModel.from_arrays(
        0.5 * (pts[:-1] + pts[1:]),
        orientations,
        lengths,
        seg_r,
        density,
        joint_parent=j,
        joint_child=j + 1,
        joint_radii=rad[1:-1],
        youngs_modulus=youngs_modulus,
        torsion_modulus=torsion_modulus,
        stretch_compliance=stretch_compliance,
        joint_kind=kinds,
        joint_axis=axes,
        physical_stretch=stretch == "physical",
        shear_coefficient=shear_coefficient,
        pinned=pin,
    )
    return model if rest_darboux is None else model.with_rest_darboux(rest_darboux)
