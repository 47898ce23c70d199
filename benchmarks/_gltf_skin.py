"""A small independent glTF 2.0 skin reader for the game-export benchmark: pygltflib's data alone, no Blender, no
add-on code.

:func:`read` loads a .glb; :func:`summary` gives its joints, animations and key times; :func:`skinned` rebuilds
the skinned vertex positions of its one skinned primitive at a time t by linear blend skinning (glTF 2.0 §3.7.3.3):
v' = Σ_i w_i · G(joint_i) · IBM_i · v, G the joint node's global matrix with the animation's channels sampled at t
(§3.11: LINEAR lerp and slerp, STEP, clamped outside the keys), IBM its inverse bind matrix. The mesh node's own
transform does not apply to a skinned mesh. Positions come back in Blender's axes (Z up).
"""

from __future__ import annotations

import numpy as np

# accessor component types (§3.6.2.2) and element sizes
_DTYPES = {5120: np.int8, 5121: np.uint8, 5122: np.int16, 5123: np.uint16, 5125: np.uint32, 5126: np.float32}
_WIDTH = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT4": 16}
# glTF is Y up: a glTF point (x, y, z) is Blender's (x, −z, y)
TO_BLENDER = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


class Gltf:
    """A loaded .glb: the pygltflib document and its binary chunk."""

    def __init__(self, path):
        import pygltflib

        self.doc = pygltflib.GLTF2().load(str(path))
        self.blob = self.doc.binary_blob()

    def accessor(self, index: int) -> np.ndarray:
        """Accessor ``index`` as a float array (count, width); normalised integers mapped to [0, 1] or [−1, 1]."""
        acc = self.doc.accessors[index]
        view = self.doc.bufferViews[acc.bufferView]
        dtype = np.dtype(_DTYPES[acc.componentType])
        width = _WIDTH[acc.type]
        row = dtype.itemsize * width
        stride = view.byteStride or row
        start = (view.byteOffset or 0) + (acc.byteOffset or 0)
        raw = np.frombuffer(self.blob, np.uint8, count=stride * (acc.count - 1) + row, offset=start)
        rows = np.lib.stride_tricks.as_strided(raw, (acc.count, row), (stride, 1))
        out = np.ascontiguousarray(rows).view(dtype).reshape(acc.count, width).astype(float)
        if acc.normalized and dtype.kind in "iu":
            out = np.maximum(out / np.iinfo(dtype).max, -1.0)
        return out

    def skinned_node(self):
        return next(n for n in self.doc.nodes if n.mesh is not None and n.skin is not None)


def read(path) -> Gltf:
    return Gltf(path)


def summary(g: Gltf) -> dict:
    """``joints`` of the skinned node's skin; ``skins``, ``animations``, ``channels``; ``keys`` (the longest
    sampler's key count) and its ``t0_s``, ``t1_s``."""
    doc = g.doc
    inputs = {s.input for a in doc.animations for s in a.samplers}  # the full rig's 17k samplers share a few
    times = [g.accessor(i)[:, 0] for i in inputs]
    longest = max(times, key=len) if times else np.zeros(0)
    node = next((n for n in doc.nodes if n.skin is not None), None)
    return dict(
        joints=len(doc.skins[node.skin].joints) if node is not None else 0,
        skins=len(doc.skins),
        animations=len(doc.animations),
        channels=sum(len(a.channels) for a in doc.animations),
        keys=int(longest.size),
        t0_s=float(longest[0]) if longest.size else None,
        t1_s=float(longest[-1]) if longest.size else None,
    )


def _slerp(a: np.ndarray, b: np.ndarray, s: float) -> np.ndarray:
    if np.dot(a, b) < 0.0:  # the shorter arc (§3.11)
        b = -b
    angle = np.arccos(np.clip(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)), -1.0, 1.0))
    if angle < 1e-9:
        return a
    return (np.sin((1.0 - s) * angle) * a + np.sin(s * angle) * b) / np.sin(angle)


def sample(times: np.ndarray, values: np.ndarray, t: float, path: str, interpolation: str) -> np.ndarray:
    """A sampler's value at time t [s]: LINEAR (slerp for rotations) or STEP, clamped to the first and last key."""
    k = int(np.clip(np.searchsorted(times, t, side="right") - 1, 0, times.size - 1))
    if k == times.size - 1 or t <= times[0] or interpolation == "STEP":
        return values[k]
    s = (t - times[k]) / (times[k + 1] - times[k])
    if path == "rotation":
        return _slerp(values[k], values[k + 1], s)
    return (1.0 - s) * values[k] + s * values[k + 1]


def _rotation(q: np.ndarray) -> np.ndarray:
    """The rotation matrix of a unit quaternion (x, y, z, w), glTF's order."""
    x, y, z, w = q / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def global_matrices(g: Gltf, t: float, animation: int = 0) -> list:
    """Every node's global 4×4 matrix at time t [s]: local TRS (or the node's matrix), the channels of
    ``animation`` sampled at t replacing their paths, composed from the scene's roots down."""
    doc = g.doc
    trs = [
        dict(
            translation=np.array(n.translation or (0.0, 0.0, 0.0), float),
            rotation=np.array(n.rotation or (0.0, 0.0, 0.0, 1.0), float),
            scale=np.array(n.scale or (1.0, 1.0, 1.0), float),
        )
        for n in doc.nodes
    ]
    if doc.animations:
        anim = doc.animations[animation]
        for ch in anim.channels:
            smp = anim.samplers[ch.sampler]
            values = sample(g.accessor(smp.input)[:, 0], g.accessor(smp.output), t, ch.target.path, smp.interpolation)
            trs[ch.target.node][ch.target.path] = values
    local = []
    for n, p in zip(doc.nodes, trs, strict=True):
        m = np.eye(4)
        if n.matrix is not None:  # never an animation's target (§3.5.2)
            m = np.array(n.matrix, float).reshape(4, 4).T  # stored column-major
        else:
            m[:3, :3] = _rotation(p["rotation"]) * p["scale"][None, :]
            m[:3, 3] = p["translation"]
        local.append(m)
    out: list = [None] * len(doc.nodes)
    stack = [(i, np.eye(4)) for i in doc.scenes[doc.scene or 0].nodes]
    while stack:
        i, parent = stack.pop()
        out[i] = parent @ local[i]
        stack.extend((c, out[i]) for c in doc.nodes[i].children or [])
    return out


def skinned(g: Gltf, t: float) -> tuple[np.ndarray, np.ndarray]:
    """(rest, skinned) vertex positions (V, 3) [m] in Blender's axes of the file's skinned primitive(s) at t [s]."""
    node = g.skinned_node()
    skin = g.doc.skins[node.skin]
    ibm = g.accessor(skin.inverseBindMatrices).reshape(-1, 4, 4).transpose(0, 2, 1)  # column-major
    glob = global_matrices(g, t)
    joint_m = np.array([glob[j] for j in skin.joints]) @ ibm  # (J, 4, 4)
    rest, moved = [], []
    for prim in g.doc.meshes[node.mesh].primitives:
        pos = g.accessor(prim.attributes.POSITION)
        joints = g.accessor(prim.attributes.JOINTS_0).astype(np.int64)
        weights = g.accessor(prim.attributes.WEIGHTS_0)
        out = np.zeros_like(pos)
        for k in range(joints.shape[1]):  # ≤ 4 influences: one vectorised pass each
            m = joint_m[joints[:, k]]
            out += weights[:, k, None] * (np.einsum("vij,vj->vi", m[:, :3, :3], pos) + m[:, :3, 3])
        rest.append(pos @ TO_BLENDER)
        moved.append(out @ TO_BLENDER)
    return np.concatenate(rest), np.concatenate(moved)


def match_error(rest: np.ndarray, moved: np.ndarray, blender_rest: np.ndarray, blender_now: np.ndarray) -> float:
    """Largest distance [m] of the rebuilt vertices ``moved`` from Blender's ``blender_now``. glTF splits vertices
    at UV seams, so each file vertex is matched to the Blender vertices at its rest position (within 0.1 mm,
    up to 4 coincident ones: the closest counts); a file vertex with no such Blender vertex, or a Blender vertex
    missing from the file, is an error (inf)."""
    from scipy.spatial import cKDTree

    dist, idx = cKDTree(blender_rest).query(rest, k=4)
    near = dist <= 1e-4
    if not near[:, 0].all() or np.unique(idx[near]).size != blender_rest.shape[0]:
        return float("inf")
    err = np.linalg.norm(blender_now[idx] - moved[:, None, :], axis=-1)
    err[~near] = np.inf
    return float(err.min(axis=1).max())
