"""The scene's Collision objects as solver colliders (solver/contact/colliders.py).

A mesh object with a Collision modifier (Physics > Collision) is a collider:

* a flat mesh (every vertex within 1e-4 of its size from one plane: a ground plane, a tabletop) becomes a
  thin box whose top face is the mesh's face side (the side its face normals point to), of the mesh's
  extent in the plane and a thickness of 5 % of that extent below it (also a mesh flattened by an object
  scale of zero along one axis);
* any other mesh must be closed (every edge shared by exactly two triangles) and becomes a signed distance
  grid of its triangles with ~48 cells along its longest side.

A collider that has no shape to collide with is skipped, and the operators report a warning naming it
(:func:`collision_objects`): a vertex or transform that is not a finite number, no faces, no area (every
vertex on one line or point), or a closed mesh flattened to zero thickness (its faces point to both sides
in equal measure, so there is no face side to put the thin box under).

The shape is taken in world space (scale included, in metres: scene units times the scene's Unit Scale) at the
start frame; after that the object moves rigidly with its animated transform (location and rotation; a
changing scale or a deforming mesh is not followed), read at every simulated frame and interpolated across
substeps. Friction μ is the rod object's *Friction* setting. Hidden objects (viewport) and the simulated
objects themselves are ignored.
"""

from __future__ import annotations

import numpy as np

from ..solver import Box, Mesh
from ..solver import quaternion as quat
from .frames import FramePoses, animated, metric, rigid

FLAT_TOLERANCE = 1e-4  # relative to the mesh's size
CELLS_ALONG_LONGEST = 48
BOX_THICKNESS = 0.05  # of the plane's extent
TWO_SIDED = 1e-3  # a flat mesh whose net face area (up minus down) is below this share of its area has no side


def _candidates(scene, exclude):
    names = {o.name for o in exclude if o is not None}
    return [
        o
        for o in scene.objects
        if o.type == "MESH"
        and o.name not in names
        and not o.hide_viewport
        and any(m.type == "COLLISION" for m in o.modifiers)
    ]


def collision_objects(scene, exclude=()) -> tuple[list, list[str]]:
    """``(objects, skipped)``: the visible mesh objects of ``scene`` with a Collision modifier, except the
    objects in ``exclude``, that have a shape to collide with; and a warning for each of the others, naming
    it and why (:func:`_degenerate`)."""
    objects, skipped = [], []
    for o in _candidates(scene, exclude):
        why = _degenerate(o)
        if why is None:
            objects.append(o)
        else:
            skipped.append(f"Collision object '{o.name}' {why}: skipped as a collider")
    return objects, skipped


def _local_triangles(obj):
    """The mesh's vertex coordinates (V, 3) in object space and its triangles (F, 3)."""
    me = obj.data
    me.calc_loop_triangles()
    co = np.empty(3 * len(me.vertices))
    me.vertices.foreach_get("co", co)
    tri = np.empty(3 * len(me.loop_triangles), dtype=np.int64)
    me.loop_triangles.foreach_get("vertices", tri)
    return co.reshape(-1, 3), tri.reshape(-1, 3)


def _degenerate(obj) -> str | None:
    """Why ``obj`` has no shape to collide with (a phrase after its name), or None."""
    co, f = _local_triangles(obj)
    return _why_degenerate(co, f, np.array(obj.matrix_world))


def _why_degenerate(co, f, m) -> str | None:
    """:func:`_degenerate` of object-space vertices ``co`` (V, 3), triangles ``f`` (F, 3) and world matrix ``m``."""
    bad = np.flatnonzero(~np.all(np.isfinite(co), axis=1))
    if bad.size:
        return f"has a vertex whose coordinates are not finite numbers (vertex {int(bad[0])})"
    if not np.all(np.isfinite(m)):
        return "has a transform that is not finite"
    if f.shape[0] == 0:
        return "has no faces"
    v = co @ m[:3, :3].T + m[:3, 3]
    size = float(np.max(v.max(axis=0) - v.min(axis=0)))
    cross = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    area = 0.5 * float(np.sum(np.linalg.norm(cross, axis=1)))
    if not area > (FLAT_TOLERANCE * size) ** 2:
        return "has no area (its vertices lie on one line or point)"
    _, axes, flat = _principal(v)
    if flat and abs(0.5 * float(np.sum(cross @ axes[2]))) <= TWO_SIDED * area:
        return "is flat (zero thickness) with faces on both sides, so there is no face side to collide from"
    return None


def _principal(v):
    """Centre (3,), principal directions (3, 3) (rows, longest extent first) and whether the vertices
    (V, 3) are flat: all within FLAT_TOLERANCE of the mesh's size from the plane normal to the last."""
    centre = v.mean(axis=0)
    _, _, vt = np.linalg.svd(v - centre, full_matrices=False)
    size = float(np.max(v.max(axis=0) - v.min(axis=0)))
    return centre, vt, bool(np.max(np.abs((v - centre) @ vt[2])) <= FLAT_TOLERANCE * size)


def _rigid(name, matrix):
    """:func:`frames.rigid`, also for an object scaled to zero along one axis (a plane flattened by its
    scale): the polar factor of the rest, completed to a right-handed frame."""
    m = np.array(matrix, dtype=float)
    if not np.all(np.isfinite(m)):
        raise ValueError(f"Collision object '{name}' has a transform that is not finite")
    a = m[:3, :3]
    length = np.linalg.norm(a, axis=0)
    if np.all(length > 0.0):
        return rigid(m)
    u, _, vt = np.linalg.svd(a / np.where(length > 0.0, length, 1.0))
    if np.linalg.det(u @ vt) < 0.0:
        u[:, 2] = -u[:, 2]  # the direction of no length, its sign free
    return m[:3, 3].copy(), quat.from_matrix((u @ vt)[None])[0]


class SceneCollider:
    """One Collision object: its solver collider (shape fixed at the start frame) and its motion since."""

    def __init__(self, obj, unit: float = 1.0):
        self.obj, self.unit = obj, unit  # unit: metres per Blender unit
        co, f = _local_triangles(obj)
        m = metric(obj.matrix_world, unit)
        why = _why_degenerate(co, f, m)
        if why is not None:
            raise ValueError(f"Collision object '{obj.name}' {why}")
        v = co @ m[:3, :3].T + m[:3, 3]  # world space
        self.start = _rigid(obj.name, m)  # world pose at the start frame
        self._frames = FramePoses(*self.start)
        # shape in the frame of the start pose, so the collider's pose(t) is the motion since the start
        t0, q0 = self.start
        local = quat.rotate_inverse(np.broadcast_to(q0, (v.shape[0], 4)), v - t0)
        self.collider = _shape(obj.name, local, f, self.pose)

    def read(self, t: float, first: bool = False) -> None:
        """The object's pose at simulation time ``t`` [s] (the scene is at that frame)."""
        x, q = _rigid(self.obj.name, metric(self.obj.matrix_world, self.unit))
        self._frames.read(t, x, q, first=first)

    def pose(self, t: float):
        return self._frames.at(t)

    @property
    def animated(self) -> bool:
        return animated(self.obj)


def _shape(name, v, f, pose):
    """The solver collider of a mesh that :func:`_degenerate` accepts."""
    centre, vt, flat = _principal(v)
    size = float(np.max(v.max(axis=0) - v.min(axis=0)))
    normal = vt[2]
    if flat:  # a thin box below it
        a, b = v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]
        if np.sum(np.cross(a, b) @ normal) < 0:
            normal = -normal  # the face side is "up"
        e1 = vt[0]
        e2 = np.cross(normal, e1)
        p1, p2 = (v - centre) @ e1, (v - centre) @ e2
        half = np.array([0.5 * (p1.max() - p1.min()), 0.5 * (p2.max() - p2.min()), 0.0])
        half[2] = BOX_THICKNESS * max(half[0], half[1])  # 5 % of the extent 2·max(half)
        mid = centre + e1 * 0.5 * (p1.max() + p1.min()) + e2 * 0.5 * (p2.max() + p2.min()) - normal * half[2]
        orientation = quat.from_matrix(np.stack((e1, e2, normal), axis=1)[None])[0]
        return Box(mid, half, orientation, pose=pose)
    edges = np.sort(np.concatenate((f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]])), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    if np.any(counts != 2):
        raise ValueError(
            f"Collision object '{name}' is an open mesh ({int(np.sum(counts != 2))} edges not shared by "
            "two faces): use a closed mesh, or a flat one (a plane)"
        )
    return Mesh(v, f, cell_size=size / CELLS_ALONG_LONGEST, pose=pose)
