"""The compiled drag (numba): :meth:`solver.air.drag.AerodynamicDrag.__call__` in one pass over the segments.

Same formulas, same order of operations per segment as the numpy implementation in :mod:`solver.air.drag`
(which stays the reference and the fallback); loaded with the compiled Newton iteration
(:mod:`solver.core.compiled`), so it shares its disk cache and its "preparing the solver…" step.
"""

from __future__ import annotations

import importlib
import math

nb = importlib.import_module("numba")  # (imported by name: numba ships no type information)

_JIT = dict(cache=True, nogil=True, error_model="numpy")


@nb.njit(**_JIT)
def drag_loads(
    segs, k_rod, q, omega_body, velocity, wind, arm, half, radii, plate_width, roll,
    cd_branch, cd_n, cd_t, vogel, u_r, masses, inertia, lengths, dt, max_shift, max_turn,
    forces, torques, damping,
):  # fmt: skip
    """Drag forces and torques [N, N·m, world] and the implicit damping bounds of every segment ``segs[i]``
    (rods first: i < k_rod, then leaf plates), written into the zeroed (n, 3), (n, 3), (n, 6) arrays.
    ``wind`` (k, 3): the air velocity at the segment centres; ``arm``, ``half``: the Gauss arm a [m] and
    ½ρ × the Gauss weight per segment; ``radii`` (n, 2); ``plate_width``, ``roll`` per plate; ``vogel`` B
    (0: off) and ``u_r`` U_R [m/s]; ``masses``, ``inertia`` (n, 3), ``lengths`` and ``dt`` for a leaf's step
    limit (MAX_PLATE_SHIFT, MAX_PLATE_TURN)."""
    for i in range(segs.shape[0]):
        s = segs[i]
        qw, qx, qy, qz = q[s, 0], q[s, 1], q[s, 2], q[s, 3]
        n2 = qw * qw + qx * qx + qy * qy + qz * qz
        # R(q) columns d1, d2, d3 (local x, y, z in world), q not necessarily of unit length
        r00 = (qw * qw + qx * qx - qy * qy - qz * qz) / n2
        r01 = 2.0 * (qx * qy - qw * qz) / n2
        r02 = 2.0 * (qx * qz + qw * qy) / n2
        r10 = 2.0 * (qx * qy + qw * qz) / n2
        r11 = (qw * qw - qx * qx + qy * qy - qz * qz) / n2
        r12 = 2.0 * (qy * qz - qw * qx) / n2
        r20 = 2.0 * (qx * qz - qw * qy) / n2
        r21 = 2.0 * (qy * qz + qw * qx) / n2
        r22 = (qw * qw - qx * qx - qy * qy + qz * qz) / n2
        bx, by, bz = omega_body[s, 0], omega_body[s, 1], omega_body[s, 2]
        ox = r00 * bx + r01 * by + r02 * bz
        oy = r10 * bx + r11 * by + r12 * bz
        oz = r20 * bx + r21 * by + r22 * bz
        a = arm[i]
        ex = a * (oy * r22 - oz * r12)  # e = a ω × d3
        ey = a * (oz * r02 - ox * r22)
        ez = a * (ox * r12 - oy * r02)
        wx = wind[i, 0] - velocity[s, 0]
        wy = wind[i, 1] - velocity[s, 1]
        wz = wind[i, 2] - velocity[s, 2]
        w0x = wx * r00 + wy * r10 + wz * r20
        w0y = wx * r01 + wy * r11 + wz * r21
        w0z = wx * r02 + wy * r12 + wz * r22
        e_1 = ex * r00 + ey * r10 + ez * r20
        e_2 = ex * r01 + ey * r11 + ez * r21
        if i < k_rod:
            c = half[i] * cd_branch * 2.0
            ra, rb = radii[s, 0], radii[s, 1]
            gp = c * math.hypot(ra * (w0y - e_2), rb * (w0x - e_1))
            gm = c * math.hypot(ra * (w0y + e_2), rb * (w0x + e_1))
            px, py, pz = wx - w0z * r02, wy - w0z * r12, wz - w0z * r22
            sp, sm = gp + gm, gp - gm
            fx, fy, fz = sp * px - sm * ex, sp * py - sm * ey, sp * pz - sm * ez
            dx, dy, dz = sm * px - sp * ex, sm * py - sp * ey, sm * pz - sp * ez
            gain = sp
        else:
            j = i - k_rod
            h = half[i] * plate_width[j]
            w2 = wx * wx + wy * wy + wz * wz + ex * ex + ey * ey + ez * ez
            we = 2.0 * (wx * ex + wy * ey + wz * ez)
            ap = tp = mp = am = tm = mm = 0.0
            for end in range(2):  # the point at +a, then at −a
                sign = 1.0 if end == 0 else -1.0
                wy_p = w0y - sign * e_2
                speed2 = max(w2 - sign * we, 0.0)
                g_n = h * cd_n * abs(wy_p)
                if vogel != 0.0:  # blade curling above U_R (drag.py's module docstring)
                    rel = math.sqrt(speed2) / u_r
                    if rel > 1.0:
                        g_n *= rel**vogel
                g_t = h * cd_t * math.sqrt(max(speed2 - wy_p * wy_p, 0.0))
                if end == 0:
                    ap, tp, mp = (g_n - g_t) * wy_p, g_t, max(g_n, g_t)
                else:
                    am, tm, mm = (g_n - g_t) * wy_p, g_t, max(g_n, g_t)
            fx = (ap + am) * r01 + (tp + tm) * wx - (tp - tm) * ex
            fy = (ap + am) * r11 + (tp + tm) * wy - (tp - tm) * ey
            fz = (ap + am) * r21 + (tp + tm) * wz - (tp - tm) * ez
            dx = (ap - am) * r01 + (tp - tm) * wx - (tp + tm) * ex
            dy = (ap - am) * r11 + (tp - tm) * wy - (tp + tm) * ey
            dz = (ap - am) * r21 + (tp - tm) * wz - (tp + tm) * ez
            gain = mp + mm
        tx = a * (r12 * dz - r22 * dy)  # τ = a d3 × (f₊ − f₋)
        ty = a * (r22 * dx - r02 * dz)
        tz = a * (r02 * dy - r12 * dx)
        lin = 2.0 * gain
        ang = lin * a * a
        damping[s, 0] = lin
        damping[s, 1] = lin
        damping[s, 2] = lin
        damping[s, 3] = ang
        damping[s, 4] = ang
        if i >= k_rod:
            j = i - k_rod
            wzb = omega_body[s, 2]
            troll = -roll[j] * abs(wzb) * wzb  # rolling about the midrib
            tx += troll * r02
            ty += troll * r12
            tz += troll * r22
            damping[s, 5] = 2.0 * roll[j] * abs(wzb)
            # the leaf's step limit (AerodynamicDrag._limit_plate_step)
            mass = masses[s] + dt * damping[s, 0]
            shift = dt * dt * math.sqrt(fx * fx + fy * fy + fz * fz) / mass
            t1 = (r00 * tx + r10 * ty + r20 * tz) / (inertia[s, 0] + dt * damping[s, 3])
            t2 = (r01 * tx + r11 * ty + r21 * tz) / (inertia[s, 1] + dt * damping[s, 4])
            t3 = (r02 * tx + r12 * ty + r22 * tz) / (inertia[s, 2] + dt * damping[s, 5])
            turn = dt * dt * math.sqrt(t1 * t1 + t2 * t2 + t3 * t3)
            limit = min(max_shift * lengths[s] / max(shift, 1e-300), max_turn / max(turn, 1e-300))
            scale = min(1.0, limit)
            fx, fy, fz = fx * scale, fy * scale, fz * scale
            tx, ty, tz = tx * scale, ty * scale, tz * scale
        forces[s, 0], forces[s, 1], forces[s, 2] = fx, fy, fz
        torques[s, 0], torques[s, 1], torques[s, 2] = tx, ty, tz
