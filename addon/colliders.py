"""The scene's Collision objects as solver colliders (solver/contact/colliders.py).

A mesh object with a Collision modifier (Physics > Collision) is a collider:

* a flat mesh (every vertex within 1e-4 of its size from one plane: a ground plane, a tabletop) becomes a
  thin box whose top face is the mesh's face side (the side its face normals point to), of the mesh's
  extent in the plane and a thickness of 5 % of that extent below it;
* any other mesh must be closed (every edge shared by exactly two triangles) and becomes a signed distance
  grid of its triangles with ~48 cells along its longest side.

The shape is taken in world space (scale included) at the start frame; after that the object moves
rigidly with its animated transform (location and rotation; a changing scale or a deforming mesh is not
followed), read at every simulated frame and interpolated across substeps. Friction μ is the rod
object's *Friction* setting. Hidden objects (viewport) and the simulated objects themselves are ignored.
"""

from __future__ import annotations

import numpy as np

from ..solver.contact.colliders import Box, Mesh
from ..solver.core import quaternion as quat
from .frames import FramePoses, rigid

FLAT_TOLERANCE = 1e-4  # relative to the mesh's size
CELLS_ALONG_LONGEST = 48
BOX_THICKNESS = 0.05  # of the plane's extent


def collision_objects(scene, exclude=()):
    """Visible mesh objects of ``scene`` with a Collision modifier, except the objects in ``exclude``."""
    names = {o.name for o in exclude if o is not None}
    return [
        o
        for o in scene.objects
        if o.type == "MESH"
        and o.name not in names
        and not o.hide_viewport
        and any(m.type == "COLLISION" for m in o.modifiers)
    ]


def _world_triangles(obj):
    me = obj.data
    me.calc_loop_triangles()
    co = np.empty(3 * len(me.vertices))
    me.vertices.foreach_get("co", co)
    tri = np.empty(3 * len(me.loop_triangles), dtype=np.int64)
    me.loop_triangles.foreach_get("vertices", tri)
    m = np.array(obj.matrix_world)
    return co.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3], tri.reshape(-1, 3)


class SceneCollider:
    """One Collision object: its solver collider (shape fixed at the start frame) and its motion since."""

    def __init__(self, obj):
        self.obj = obj
        v, f = _world_triangles(obj)
        if f.shape[0] == 0:
            raise ValueError(f"Collision object '{obj.name}' has no faces")
        self.start = rigid(obj.matrix_world)  # world pose at the start frame
        self._frames = FramePoses(*self.start)
        # shape in the frame of the start pose, so the collider's pose(t) is the motion since the start
        t0, q0 = self.start
        local = quat.rotate_inverse(np.broadcast_to(q0, (v.shape[0], 4)), v - t0)
        self.collider = _shape(obj.name, local, f, self.pose)

    def read(self, t: float, first: bool = False) -> None:
        """The object's pose at simulation time ``t`` [s] (the scene is at that frame)."""
        self._frames.read(t, *rigid(self.obj.matrix_world), first=first)

    def pose(self, t: float):
        return self._frames.at(t)

    @property
    def animated(self) -> bool:
        ad = self.obj.animation_data
        return bool(ad and (ad.action or ad.drivers)) or self.obj.parent is not None or bool(self.obj.constraints)


def _shape(name, v, f, pose):
    centre = v.mean(axis=0)
    u, s, vt = np.linalg.svd(v - centre, full_matrices=False)
    size = float(np.max(v.max(axis=0) - v.min(axis=0)))
    if size <= 0.0:
        raise ValueError(f"Collision object '{name}' has zero size")
    normal = vt[2]
    if np.max(np.abs((v - centre) @ normal)) <= FLAT_TOLERANCE * size:  # flat: a thin box below it
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
