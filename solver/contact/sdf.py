"""Signed distance grids of closed triangle meshes, for mesh colliders (Deul §5 Slinky uses SDF collisions).

Built once per mesh: exact point–triangle distances at the grid nodes (the candidate triangles of a
node come from a k-d tree over points sampled on the surface) in a band about the surface, an upper
bound from a Euclidean distance transform farther out, and the sign from ray parity along the
three grid axes (majority vote, robust to rays grazing an edge). Evaluated by trilinear
interpolation, with the gradient of the interpolant as the normal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.ndimage import distance_transform_edt
from scipy.spatial import cKDTree


@dataclass
class SignedDistanceGrid:
    """``phi`` (nx, ny, nz) [m] at nodes ``origin + cell_size·(i, j, k)``; negative inside."""

    phi: np.ndarray
    origin: np.ndarray
    cell_size: float

    def evaluate(self, points):
        """Signed distance [m] (k,) and unit gradient (k, 3) at points (k, 3). Outside the grid the
        distance to the grid box is added to the value at the nearest grid point."""
        p = np.asarray(points, dtype=float)
        shape = np.array(self.phi.shape)
        u = (p - self.origin) / self.cell_size
        uc = np.clip(u, 0.0, shape - 1.0)
        i0 = np.minimum(np.floor(uc).astype(np.int64), shape - 2)
        f = uc - i0
        phi = self.phi
        c = np.empty((p.shape[0], 2, 2, 2))
        for dx in (0, 1):
            for dy in (0, 1):
                for dz in (0, 1):
                    c[:, dx, dy, dz] = phi[i0[:, 0] + dx, i0[:, 1] + dy, i0[:, 2] + dz]
        fx, fy, fz = f[:, 0], f[:, 1], f[:, 2]
        cx = c[:, 0] * (1 - fx)[:, None, None] + c[:, 1] * fx[:, None, None]  # (k, 2, 2) over y, z
        cxy = cx[:, 0] * (1 - fy)[:, None] + cx[:, 1] * fy[:, None]  # (k, 2) over z
        value = cxy[:, 0] * (1 - fz) + cxy[:, 1] * fz
        gx_yz = c[:, 1] - c[:, 0]
        gx = ((gx_yz[:, 0] * (1 - fy)[:, None] + gx_yz[:, 1] * fy[:, None]) * np.stack((1 - fz, fz), 1)).sum(1)
        gy_z = cx[:, 1] - cx[:, 0]
        gy = (gy_z * np.stack((1 - fz, fz), 1)).sum(1)
        gz = cxy[:, 1] - cxy[:, 0]
        grad = np.stack((gx, gy, gz), axis=1) / self.cell_size
        outside = p - (self.origin + uc * self.cell_size)
        out_len = np.linalg.norm(outside, axis=1)
        value = value + out_len
        grad = np.where(out_len[:, None] > 1e-12, outside / np.maximum(out_len, 1e-300)[:, None], grad)
        norm = np.linalg.norm(grad, axis=1)
        grad = np.where(norm[:, None] > 1e-12, grad / np.maximum(norm, 1e-300)[:, None], [0.0, 0.0, 1.0])
        return value, grad


def point_triangle_distance(p, a, b, c):
    """Exact Euclidean distance [m] from points p to triangles (a, b, c), all (k, 3)."""
    ab, ac = b - a, c - a
    nrm = np.cross(ab, ac)
    nn = np.maximum(np.einsum("ij,ij->i", nrm, nrm), 1e-300)
    ap = p - a
    # Barycentric coordinates of the projection onto the triangle's plane.
    v = np.einsum("ij,ij->i", np.cross(ap, ac), nrm) / nn
    w = np.einsum("ij,ij->i", np.cross(ab, ap), nrm) / nn
    inside = (v >= 0.0) & (w >= 0.0) & (v + w <= 1.0)
    plane = np.abs(np.einsum("ij,ij->i", ap, nrm)) / np.sqrt(nn)
    edge = np.full(p.shape[0], np.inf)
    for e0, e1 in ((a, b), (b, c), (c, a)):
        d = e1 - e0
        s = np.clip(np.einsum("ij,ij->i", p - e0, d) / np.maximum(np.einsum("ij,ij->i", d, d), 1e-300), 0.0, 1.0)
        edge = np.minimum(edge, np.linalg.norm(p - e0 - s[:, None] * d, axis=1))
    return np.where(inside, plane, edge)


def _sample_triangles(tri: np.ndarray, spacing: float):
    """Points on every triangle (tri (F, 3, 3)) no farther than about ``spacing`` apart, with their face index."""
    edge = np.max(np.linalg.norm(tri - np.roll(tri, 1, axis=1), axis=2), axis=1)
    k = np.maximum(1, np.ceil(edge / spacing).astype(np.int64))
    pts, ids = [tri.mean(axis=1)], [np.arange(tri.shape[0])]
    for kk in np.unique(k):  # one vectorised batch per subdivision level (few distinct levels)
        faces = np.flatnonzero(k == kk)
        i, j = np.meshgrid(np.arange(kk + 1), np.arange(kk + 1), indexing="ij")
        keep = i + j <= kk
        u, v = i[keep] / kk, j[keep] / kk
        t = tri[faces]
        p = (
            t[:, None, 0]
            + u[None, :, None] * (t[:, None, 1] - t[:, None, 0])
            + v[None, :, None] * (t[:, None, 2] - t[:, None, 0])
        )
        pts.append(p.reshape(-1, 3))
        ids.append(np.repeat(faces, u.size))
    return np.concatenate(pts), np.concatenate(ids)


def _inside_by_parity(tri: np.ndarray, grid_axes, axis: int) -> np.ndarray:
    """Inside flags of all grid nodes by counting mesh crossings of rays cast along +``axis``."""
    a1, a2 = [ax for ax in range(3) if ax != axis]
    g1, g2, g0 = grid_axes[a1], grid_axes[a2], grid_axes[axis]
    # Tiny irrational offsets keep rays off mesh edges and vertices that lie on grid lines.
    y, z = np.meshgrid(g1 + 1.234567e-7, g2 + 2.345678e-7, indexing="ij")
    ry, rz = y.reshape(-1), z.reshape(-1)
    counts = np.zeros((ry.size, g0.size + 1), np.int64)
    ta, tb, tc = tri[:, 0], tri[:, 1], tri[:, 2]
    chunk = max(1, 2_000_000 // max(1, ry.size))
    for f0 in range(0, tri.shape[0], chunk):
        sl = slice(f0, f0 + chunk)
        a, b, c = ta[sl], tb[sl], tc[sl]
        # 2-D barycentric test of each ray (ry, rz) against each triangle's projection.
        d = (b[:, a1] - a[:, a1]) * (c[:, a2] - a[:, a2]) - (c[:, a1] - a[:, a1]) * (b[:, a2] - a[:, a2])
        ok = np.abs(d) > 1e-300
        py = ry[:, None] - a[None, :, a1]
        pz = rz[:, None] - a[None, :, a2]
        dd = np.where(ok, d, 1.0)
        u = (py * (c[:, a2] - a[:, a2]) - pz * (c[:, a1] - a[:, a1])) / dd
        v = (pz * (b[:, a1] - a[:, a1]) - py * (b[:, a2] - a[:, a2])) / dd
        hit = ok & (u >= 0.0) & (v >= 0.0) & (u + v <= 1.0)
        r, f = np.nonzero(hit)
        x_hit = a[f, axis] + u[r, f] * (b[f, axis] - a[f, axis]) + v[r, f] * (c[f, axis] - a[f, axis])
        np.add.at(counts, (r, np.searchsorted(g0, x_hit)), 1)
    # Crossings beyond node i along +axis: those with hit index > i.
    above = np.cumsum(counts[:, ::-1], axis=1)[:, ::-1][:, 1:]
    inside = (above % 2 == 1).reshape(g1.size, g2.size, g0.size)
    order = np.argsort([a1, a2, axis])
    return np.transpose(inside, order)


def mesh_signed_distance_grid(
    vertices, faces, cell_size: float, *, padding: int = 3, neighbours: int = 8
) -> SignedDistanceGrid:
    """Signed distance grid of a closed, consistently meshed triangle surface.

    ``vertices`` (V, 3) [m], ``faces`` (F, 3) int, ``cell_size`` [m], ``padding`` cells around the
    bounding box. Raises ``ValueError`` naming a bad vertex or face.
    """
    v = np.asarray(vertices, dtype=float)
    f = np.asarray(faces)
    if v.ndim != 2 or v.shape[1] != 3 or v.shape[0] < 3:
        raise ValueError(f"vertices: expected shape (V ≥ 3, 3), got {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"vertices[{int(np.argwhere(~np.isfinite(v))[0, 0])}] is not finite")
    if f.ndim != 2 or f.shape[1] != 3 or f.shape[0] == 0 or not np.issubdtype(f.dtype, np.integer):
        raise ValueError(f"faces: expected an integer array of shape (F ≥ 1, 3), got {f.shape} {f.dtype}")
    bad = np.argwhere((f < 0) | (f >= v.shape[0]))
    if bad.size:
        raise ValueError(f"faces[{int(bad[0, 0])}] refers to a vertex outside 0…{v.shape[0] - 1}")
    tri = v[f]
    lo = v.min(axis=0) - padding * cell_size
    n_cells = np.ceil((v.max(axis=0) + padding * cell_size - lo) / cell_size).astype(np.int64)
    axes = [lo[i] + cell_size * np.arange(n_cells[i] + 1) for i in range(3)]
    nodes = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)

    spacing = 0.5 * cell_size
    samples, sample_face = _sample_triangles(tri, spacing)
    tree = cKDTree(samples)
    # Exact distances in a band of ``padding`` cells about the surface: the nearest triangle of a node
    # is among those of its nearest surface samples. (An exact k-NN query far from the surface is slow
    # where many samples are nearly equidistant, e.g. at a sphere's centre.)
    shape = tuple(n_cells + 1)
    rough, _ = tree.query(nodes, k=1, eps=1.0)  # within a factor 2 of the sample distance
    band = rough < 2.0 * (padding * cell_size + spacing)
    k = min(neighbours, samples.shape[0])
    _, near = tree.query(nodes[band], k=k)
    near = near.reshape(-1, k)
    d_band = np.full(near.shape[0], np.inf)
    for col in range(k):
        fi = sample_face[near[:, col]]
        d_band = np.minimum(d_band, point_triangle_distance(nodes[band], tri[fi, 0], tri[fi, 1], tri[fi, 2]))
    dist = np.empty(nodes.shape[0])
    dist[band] = d_band
    if not np.all(band):
        # Far field: distance to the nearest band node plus its distance (an upper bound, within a cell).
        band3 = band.reshape(shape)
        hop, nearest = distance_transform_edt(~band3, sampling=cell_size, return_indices=True)
        flat_nearest = np.ravel_multi_index(tuple(nearest), shape).reshape(-1)
        far = ~band
        dist[far] = hop.reshape(-1)[far] + dist[flat_nearest[far]]
    votes = np.sum([_inside_by_parity(tri, axes, ax) for ax in range(3)], axis=0, dtype=np.int64)
    sign = np.where(votes.reshape(-1) >= 2, -1.0, 1.0)
    phi = (sign * dist).reshape(shape)
    return SignedDistanceGrid(phi, lo, float(cell_size))
