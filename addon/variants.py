"""Variants of a looping bake: the arithmetic that makes instances of one tree asset not sway in unison.

One asset (a tree a collection instances many times) is baked once as a seamless loop of L frames
(addon/loop.py: frame start + L equals frame start). Variant k of K plays the same loop shifted by
:func:`phase_offsets`\\ [k] = round(k·L/K) frames: at scene frame f it shows the loop's frame
start + ((f − start + shift) mod L). Each instance gets a variant from its world position
(:func:`assign_variants`): the order of the instances and a first choice come from an integer hash of the
position quantised to a millimetre (:func:`position_hash`, the same scene gives the same assignment), and a
variant whose motion resembles that of an instance's nearest already-assigned neighbours is avoided. How much
two variants resemble each other is measured on the loop itself (:func:`shift_correlation`: the loop's
motion against itself shifted), so shifts that happen to land on a whole period of the sway count as alike.

Geometry Nodes cannot see neighbours: the node group (addon/variant_nodes.py) picks variant
⌊:func:`float_hash`(position) · 1021⌋ mod K, a hash it computes with Math nodes.

Only numpy: tested without Blender (tests/addon/test_variants.py).
"""

from __future__ import annotations

import math

import numpy as np

QUANTUM_M = 1e-3  # positions closer than this hash alike: a scatter re-saved with float32 noise keeps its variants
NEIGHBOURS = 6  # already-assigned nearest neighbours a variant is compared against
_M64 = (1 << 64) - 1
FLOAT_HASH_AXES = (12.9898, 78.233, 37.719)  # the node group's dot product (a classic shader hash)
# float32 keeps ~15 bits of fract(sin · 437.5853): the classic 43758.5453 leaves 8 bits, whose 256 steps times a
# power of two all wrap to one variant
FLOAT_HASH_SCALE = 437.5853
PICK_RANGE = 1021  # the node group's hash → integer (a prime) before Pick Instance wraps it by the variant count


def _mix64(x: int) -> int:
    """splitmix64's finaliser: every input bit flips about half of the output bits."""
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9 & _M64
    x = (x ^ (x >> 27)) * 0x94D049BB133111EB & _M64
    return x ^ (x >> 31)


def position_hash(position) -> int:
    """A 64-bit hash of a world position [m] quantised to :data:`QUANTUM_M`, the same on every machine."""
    h = 0x9E3779B97F4A7C15
    for c in position:
        q = int(math.floor(float(c) / QUANTUM_M + 0.5)) & _M64
        h = _mix64(h ^ q)
    return h


def float_hash(positions: np.ndarray) -> np.ndarray:
    """The node group's hash in [0, 1) of positions (N, 3) [m]: fract(sin(p · a) · 437.5853) (float64 here;
    Blender's float32 gives other values for the same positions, equally spread)."""
    p = np.asarray(positions, dtype=float).reshape(-1, 3)
    s = np.sin(p @ np.asarray(FLOAT_HASH_AXES)) * FLOAT_HASH_SCALE
    return s - np.floor(s)


def phase_offsets(loop_frames: int, k: int) -> list[int]:
    """The shift [frames] of each of ``k`` variants of a loop of ``loop_frames``: round(i·L/K), i = 0..K−1."""
    if loop_frames < 1 or k < 1:
        raise ValueError(f"a loop of {loop_frames} frames cannot give {k} variants")
    return [int(round(i * loop_frames / k)) % loop_frames for i in range(k)]


def loop_frame(frame: float, start: int, loop_frames: int, shift: int) -> float:
    """The loop frame (start..start + L) variant ``shift`` shows at scene ``frame``."""
    return start + (frame - start + shift) % loop_frames


def _centred(motion) -> np.ndarray:
    x = np.asarray(motion, dtype=float)
    x = x[:-1].reshape(x.shape[0] - 1, -1)
    return x - x.mean(axis=0)


def shift_correlation(motion: np.ndarray, shifts: list[int]) -> np.ndarray:
    """How alike two variants of one asset sway: ``motion`` (L + 1, ...) a loop's samples (e.g. points [m]); for
    each pair of ``shifts`` the correlation of the loop's displacements from their mean with the same shifted by
    the difference (1: in unison, 0: unrelated, −1: opposite), a (K, K) matrix."""
    return cross_correlation([motion], shifts)[0, 0]


def cross_correlation(motions: list, shifts: list[int]) -> np.ndarray:
    """:func:`shift_correlation` across assets: ``motions`` one loop per asset, each (L + 1, D) with the same D
    (e.g. each tree's mean bending, baked in the same wind over the same frames); (A, A, K, K): asset a's variant
    i against asset b's variant j."""
    xs = [_centred(m) for m in motions]
    a, k = len(xs), len(shifts)
    out = np.zeros((a, a, k, k))
    for p in range(a):
        for q in range(a):
            norm = math.sqrt(float(np.sum(xs[p] ** 2)) * float(np.sum(xs[q] ** 2)))
            for i in range(k):
                for j in range(k):
                    c = np.sum(np.roll(xs[p], -shifts[i], axis=0) * np.roll(xs[q], -shifts[j], axis=0))
                    out[p, q, i, j] = float(c) / norm if norm > 0.0 else float(p == q and i == j)
    return out


def nearest(positions: np.ndarray, m: int, block: int = 1024) -> np.ndarray:
    """The indices (N, m) of each position's ``m`` nearest others (N, 3) [m], nearest first; −1 where there are
    fewer. Brute force in blocks of ``block`` rows: O(N²) time, O(block·N) memory."""
    p = np.asarray(positions, dtype=float).reshape(-1, 3)
    n = p.shape[0]
    m_eff = min(m, n - 1)
    out = np.full((n, m), -1, dtype=np.int64)
    for a in range(0, n, block):
        d = np.sum((p[a : a + block, None, :] - p[None, :, :]) ** 2, axis=-1)
        d[np.arange(d.shape[0]), np.arange(a, a + d.shape[0])] = np.inf
        if m_eff > 0:
            idx = np.argsort(d, axis=1, kind="stable")[:, :m_eff]
            out[a : a + block, :m_eff] = idx
    return out


def assign_variants(
    positions, k: int, alike: np.ndarray | None = None, assets=None, neighbours: int = NEIGHBOURS
) -> np.ndarray:
    """A variant 0..k−1 for each position (N, 3) [m] of an instance of asset ``assets`` (N,) (default: all of
    asset 0), deterministic in the positions alone.

    Instances are taken in the order of their :func:`position_hash`; each takes, of its asset's variants, the one
    least alike to those of its ``neighbours`` nearest instances already assigned, of any asset, weighting the
    nearest most (1/rank). ``alike`` (A, A, k, k) (:func:`cross_correlation`, or (k, k) for one asset; default:
    1 for the same variant of the same asset, else 0). Ties go to the variant the hash names first, so a scatter
    without neighbours assigned gets hash mod k."""
    p = np.asarray(positions, dtype=float).reshape(-1, 3)
    n = p.shape[0]
    if k < 1:
        raise ValueError(f"{k} variants: at least 1 is needed")
    labels = np.zeros(n, dtype=np.int64) if assets is None else np.asarray(assets, dtype=np.int64)
    if alike is None:
        alike = np.eye(k)[None, None] * np.eye(int(labels.max(initial=0)) + 1)[:, :, None, None]
    alike = np.asarray(alike, dtype=float)
    if alike.ndim == 2:
        alike = alike[None, None]
    hashes = [position_hash(q) for q in p]
    order = sorted(range(n), key=lambda i: (hashes[i], i))
    near = nearest(p, neighbours)
    weight = 1.0 / np.arange(1, neighbours + 1)
    out = np.full(n, -1, dtype=np.int64)
    for i in order:
        first = hashes[i] % k
        cost = np.zeros(k)
        for rank, j in enumerate(near[i]):
            if j >= 0 and out[j] >= 0:
                cost += weight[rank] * alike[labels[i], labels[j]][:, out[j]]
        out[i] = min(range(k), key=lambda v: (round(float(cost[v]), 9), (v - first) % k))
    return out


def strip_layout(start: int, end: int, loop_frames: int, shift: int) -> tuple[int, int]:
    """(first frame, repeats) of an NLA strip that plays a loop keyed start..start + L, shifted by ``shift``,
    over the scene's frames start..end: the strip starts at start − shift − L (a whole loop before, so the
    first frame already shows the shifted motion) and repeats until past ``end``."""
    first = start - shift - loop_frames
    repeats = math.ceil((end + 1 - first) / loop_frames)
    return first, max(repeats, 1)


def memory_bytes(bones: int, keys_per_curve: int, leaf_points: int, loop_samples: int) -> dict:
    """An estimate of what one baked asset takes: its keys (4 F-curves per bone, a keyframe ~ 40 bytes with its
    handles and flags) and its leaves' PC2 file (12 bytes per point per sample, 32 of header), shared by every
    variant."""
    keys = 4 * bones * keys_per_curve * 40
    pc2 = 32 + 12 * leaf_points * loop_samples if leaf_points else 0
    return {"keys": keys, "pc2": pc2, "total": keys + pc2}
