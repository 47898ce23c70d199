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
from dataclasses import dataclass, field, fields

import numpy as np
import numpy.typing as npt
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from . import quaternion as quat
from .model_arrays import (
    DEFAULT_SHEAR_COEFFICIENT,
    DEFAULT_STRETCH_COMPLIANCE,
    JOINT_KINDS,
    joint_arrays,
    segment_arrays,
)

# the builders, importable from here as before (explicit re-exports)
from .polyline import STRETCH_MODES as STRETCH_MODES
from .polyline import _cumulative_left_product as _cumulative_left_product
from .polyline import rod_from_polyline as rod_from_polyline

_KIND_ROWS = {
    "clamp": (1, 1, 1, 1, 1, 1),
    "ball": (1, 1, 1, 0, 0, 0),
    "ball_twist_lock": (1, 1, 1, 0, 0, 1),
    "hinge": (1, 1, 1, 1, 1, 1),  # the row of the hinge axis is dropped in _row_masks
    "rail": (0, 1, 1, 1, 1, 1),  # row 0 is along the rail axis (position rows in the rail's basis)
}


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
    def from_arrays(  # noqa: PLR0913 (the public keyword arrays, each checked in model_arrays)
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
        segments = segment_arrays(positions, orientations, lengths, radii, densities, pinned, leaf)
        options = dict(
            joint_parent=joint_parent, joint_child=joint_child, joint_point_parent=joint_point_parent,
            joint_point_child=joint_point_child, joint_radii=joint_radii, youngs_modulus=youngs_modulus,
            torsion_modulus=torsion_modulus, joint_lengths=joint_lengths, stretch_compliance=stretch_compliance,
            joint_kind=joint_kind, joint_axis=joint_axis, physical_stretch=physical_stretch,
            shear_coefficient=shear_coefficient,
        )  # fmt: skip
        joints = joint_arrays(segments, options)
        jp, jc = joints["joint_parent"], joints["joint_child"]
        loop = _loop_closing_joints(segments["pinned"].size, segments["pinned"], jp, jc)
        loops = JointSet(segments["orientations"], np.flatnonzero(loop), **{k: v[loop] for k, v in joints.items()})
        return cls(
            **segments,
            **{k: v[~loop] for k, v in joints.items()},
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
