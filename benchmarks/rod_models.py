"""Kugelstadt & Schömer Table 1 analogue and their visual-equivalence scenes (Fig. 5), for every rod model.

1. ms per frame (one Δt = 10 ms step, the same 10 iterations) for a 50-element rod (L = 1 m,
   r = 1 cm, E = 10 MPa, clamped at one end, gravity): PaOBCR, PBER (papers' bilateral order and the
   vectorised even/odd order), Deul's segments with Gauss–Seidel (stiff_gs) and with the direct
   solver (stiff_kkt, for reference). Median over --frames frames, the models taking turns.
2. Curl: a 50-element helix (3 turns, radius 5 cm, pitch 2 cm) with intrinsic twist 10 rad/m as
   rest shape, hanging from its clamped top under gravity (2 s, damping 4 /s). Reported per model and
   iteration count: the free end's position and drop, the wire length (stretch), the distance of the
   end from the direct solver's, and the linear close-coiled-spring estimate of the drop.
3. Loop: a straight 50-element rod clamped at both ends, no gravity; over 3 s one end moves 30 cm
   towards the other (in the first second) and turns 4 times about its axis. Reported: writhe Wr of
   the centerline (a plectonemic loop gives |Wr| ≈ 1) at 1, 2, 3 turns and at the end, the turns at
   which |Wr| first exceeds 0.5, the turns at which the rod passes through itself (none of the models
   has self-contact: Wr jumps by ~2 within one step), both end positions (the driven end's target is
   (0.7, 0, 0) m) and the wire length; for the segment models also the twist Tw, with Wr + Tw = applied
   turns (Călugăreanu) checked up to the passage.
Scenes 2–3 run PaOBCR/PBER in the even/odd order (same constraints, vectorised; see docs/rod_models.md),
each Gauss–Seidel model at 10 and 100 iterations per step, PaOBCR also at 1000 (budget: PBER and
stiff_gs at 1000 would take 5–10 min each here), the direct solver at 10.

    python3 benchmarks/rod_models.py --json      # last stdout line: one JSON object
    python3 benchmarks/rod_models.py --plot docs/rod_models.png   # also draw the figure (the one in docs/)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import _common  # noqa: E402
from plotting import add_plot_argument, pyplot, save  # noqa: E402

from solver.build.curve_measures import writhe  # noqa: E402
from solver.core import quaternion as quat  # noqa: E402
from solver.models.rod_models import make_rod  # noqa: E402

RADIUS, E_MOD, DENSITY, DT, ITER = 0.01, 1e7, 1000.0, 0.01, 10
TIMED = (
    ("paobcr", {"ordering": "bilateral"}),
    ("paobcr", {"ordering": "colored"}),
    ("pber", {"ordering": "bilateral"}),
    ("pber", {"ordering": "colored"}),
    ("stiff_gs", {}),
    ("stiff_kkt", {}),
)
SCENE_MODELS = (("paobcr", {"ordering": "colored"}), ("pber", {"ordering": "colored"}), ("stiff_gs", {}))
# (model, options, iterations) per scene: the Gauss–Seidel models at the frame-time budget (10) and at 10× it,
# PaOBCR (the cheapest) also at 100×; the direct solver at 10 as the converged reference
SCENE_RUNS = tuple((k, kw, it) for it in (ITER, 10 * ITER) for k, kw in SCENE_MODELS) + (
    ("paobcr", {"ordering": "colored"}, 100 * ITER),
    ("stiff_kkt", {}, ITER),
)
QUICK_RUNS = tuple((k, kw, ITER) for k, kw in SCENE_MODELS) + (("stiff_kkt", {}, ITER),)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def label(kind, kw):
    return kind + (f"_{kw['ordering']}" if "ordering" in kw else "")


def straight(n=50, length=1.0):
    pts = np.zeros((n + 1, 3))
    pts[:, 0] = np.linspace(0.0, length, n + 1)
    return pts


def helix(n=50, turns=3.0, radius=0.05, pitch=0.02):
    t = np.linspace(0.0, 2 * np.pi * turns, n + 1)
    return np.stack((radius * np.cos(t), radius * np.sin(t), -pitch * t / (2 * np.pi)), axis=1)


def frame_times(frames: int) -> dict:
    """Median ms per frame of every TIMED model; the models take turns frame by frame, so that the load
    of a shared machine falls on all of them alike and their ratios hold."""
    rods = {
        label(kind, kw): make_rod(kind, straight(), RADIUS, E_MOD, None, DENSITY, iterations=ITER, **kw)
        for kind, kw in TIMED
    }
    samples = {name: [] for name in rods}
    for _ in range(frames):
        for name, rod in rods.items():
            t0 = time.perf_counter()
            rod.step(DT)
            samples[name].append(time.perf_counter() - t0)
    out = {name: 1e3 * float(np.median(s)) for name, s in samples.items()}
    for name, ms in out.items():
        log(f"{name:>18}: {ms:.3f} ms/frame")
    return out


def coil_drop_estimate(n=50) -> float:
    """Linear close-coiled spring under its own weight [m]: the wire tension w (L − s) twists the wire by
    T R / (G J) per metre, which lowers the coil by R per radian: δ = w R² L_f² / (2 G J), L_f the free
    wire (the clamped first edge excluded). Bending is neglected (helix angle 3.6°)."""
    pts = helix(n)
    wire = np.linalg.norm(np.diff(pts, axis=0), axis=1)
    free = wire[1:].sum()
    w = DENSITY * 9.81 * np.pi * RADIUS**2
    gj = E_MOD / 2.6 * np.pi * RADIUS**4 / 2.0
    return float(w * 0.05**2 * free**2 / (2.0 * gj))


def run_scene(build, drive, seconds: float, runs) -> dict:
    """Every (kind, kw, iterations) of ``runs``: build, step ``seconds`` with ``drive(rod, k, steps)``
    before each step, return the final centerline, writhe, wire length and wall time."""
    res = {}
    steps = int(round(seconds / DT))
    for kind, kw, iterations in runs:
        name = f"{label(kind, kw)}@{iterations}"
        t0 = time.perf_counter()
        rod = build(kind, kw, iterations)
        extra = {}
        for k in range(1, steps + 1):
            drive(rod, k, steps, extra)
            rod.step(DT)
        c = rod.centerline()
        res[name] = {
            "iterations": iterations,
            "end_m": c[-1].tolist(),
            "writhe": writhe(c),
            "wire_length_m": float(np.linalg.norm(np.diff(c, axis=0), axis=1).sum()),
            "residual": rod.residual(),
            "wall_s": time.perf_counter() - t0,
            **extra,
            "centerline": c,
        }
        log(
            f"{name}: end {np.round(c[-1], 4)}, writhe {res[name]['writhe']:.3f}, "
            f"length {res[name]['wire_length_m']:.4f} m, "
            + (f"first loop at {extra['turns_at_first_loop']} turns, " if "turns_at_first_loop" in extra else "")
            + f"{res[name]['wall_s']:.1f} s"
        )
    return res


def curl_scene(seconds: float, runs) -> dict:
    def build(kind, kw, iterations):
        return make_rod(
            kind, helix(), RADIUS, E_MOD, None, DENSITY, twist_rate=10.0, iterations=iterations, damping=4.0, **kw
        )

    res = run_scene(build, lambda rod, k, steps, extra: None, seconds, runs)
    z0 = float(helix()[-1, 2])
    for r in res.values():
        r["end_drop_m"] = z0 - r["end_m"][2]
    ref = res[f"stiff_kkt@{ITER}"]["end_m"]
    for r in res.values():
        r["end_distance_to_kkt_m"] = float(np.linalg.norm(np.subtract(r["end_m"], ref)))
    return {
        "models": res,
        "rest_wire_length_m": float(np.linalg.norm(np.diff(helix(), axis=0), axis=1).sum()),
        "rest_writhe": writhe(helix()),
        "coil_drop_linear_estimate_m": coil_drop_estimate(),
    }


def twist_turns(rod) -> float:
    """Twist Tw [turns] of a segment rod (stiff_kkt/stiff_gs) relative to its rest frames: the angle about
    the local axis of each joint's relative rotation (swing–twist split), summed over the joints."""
    q = rod.sim.orientations
    rel = quat.multiply(quat.conjugate(q[:-1]), q[1:])
    rel0 = quat.multiply(quat.conjugate(rod.frames[:-1]), rod.frames[1:])
    d = 2.0 * (np.arctan2(rel[:, 3], rel[:, 0]) - np.arctan2(rel0[:, 3], rel0[:, 0]))
    return float(np.sum((d + np.pi) % (2.0 * np.pi) - np.pi) / (2.0 * np.pi))


def loop_scene(seconds: float, turns: float, approach: float, runs) -> dict:
    def build(kind, kw, iterations):
        pts = straight()
        pts[:, 1] = 1e-4 * np.sin(np.pi * pts[:, 0])  # the same 0.1 mm imperfection for every model
        return make_rod(
            kind,
            pts,
            RADIUS,
            E_MOD,
            None,
            DENSITY,
            pinned=("start", "end"),
            gravity=(0, 0, 0),
            iterations=iterations,
            damping=2.0,
            **kw,
        )

    def drive(rod, k, steps, extra):
        s = k / steps
        rod.twist_end("end", 2 * np.pi * turns * s, translation=(-approach * min(1.0, 3 * s), 0.0, 0.0))
        if k == 1:
            extra.update(
                turns_at_first_loop=None,
                strand_passage_at_turns=None,
                writhe_before_passage=None,
                max_abs_writhe=0.0,
                series=[],
                shape_at_max_writhe=None,
                _last=0.0,
            )
        # the centerline of the previous step against the twist applied before it
        c = rod.centerline()
        wr, done = writhe(c), turns * (k - 1) / steps
        if extra["strand_passage_at_turns"] is None:
            # Wr jumps by 2 when the rod passes through itself (no self-contact in these models);
            # a continuous motion changes it by far less than 1 in one 10 ms step
            if abs(wr - extra["_last"]) > 1.0:
                extra["strand_passage_at_turns"], extra["writhe_before_passage"] = done, extra["_last"]
            else:
                if extra["turns_at_first_loop"] is None and abs(wr) > 0.5:
                    extra["turns_at_first_loop"] = done
                if abs(wr) > extra["max_abs_writhe"]:
                    extra["max_abs_writhe"], extra["shape_at_max_writhe"] = abs(wr), c
        extra["_last"] = wr
        if k % 5 == 0:
            extra["series"].append([done, wr] + ([twist_turns(rod)] if hasattr(rod, "sim") else []))

    res = run_scene(build, drive, seconds, runs)
    for r in res.values():
        r.pop("_last")
        c = r["centerline"]
        r["start_m"] = c[0].tolist()
        r["max_lateral_m"] = float(np.max(np.linalg.norm(c[:, 1:], axis=1)))
        series = np.array(r["series"])
        r["writhe_at_turns"] = {f"{t:g}": float(series[np.argmin(np.abs(series[:, 0] - t)), 1]) for t in (1, 2, 3)}
        if series.shape[1] == 3:
            # Călugăreanu: Wr + Tw follows the applied turns until the rod passes through itself
            gap = series[:, 1] + series[:, 2] - series[:, 0]
            jump = np.flatnonzero(np.abs(gap - gap[0]) > 1.0)
            r["link_gap_turns_before_passage"] = float(np.max(np.abs(gap[: jump[0]] if jump.size else gap)))
            r["link_change_at_passage_turns"] = float(gap[jump[0]] - gap[jump[0] - 1]) if jump.size else None
    return {"models": res, "turns": turns, "approach_m": approach, "driven_end_target_m": [1.0 - approach, 0.0, 0.0]}


def _style(name: str, r: dict) -> dict:
    """Line style of a model's run: the direct solver bold black, Gauss–Seidel runs dashed by iteration count."""
    if name.startswith("stiff_kkt"):
        return dict(color="k", lw=2.0)
    return dict(lw=1.0, ls="--" if r["iterations"] == ITER else ":" if r["iterations"] > 10 * ITER else "-")


def draw(times: dict, curl: dict, loop: dict, path: str | None) -> str | None:
    """ms per frame, the curl and loop scenes' shapes and the loop's writhe, written to ``path``; returns the
    path, or None without ``path`` or matplotlib."""
    plt = pyplot(path)
    if plt is None:
        return None
    fig = plt.figure(figsize=(12, 9))
    ax0 = fig.add_subplot(2, 2, 1)
    names = list(times)
    ax0.barh(range(len(names)), [times[n] for n in names])
    ax0.set_yticks(range(len(names)), names, fontsize=8)
    ax0.set_xscale("log")
    ax0.set_xlabel(f"ms per frame (50 elements, {ITER} iterations)")
    for i, (scene, key, title) in enumerate(
        (
            (curl, "centerline", "curl with intrinsic twist, hanging, after 2 s"),
            (loop, "shape_at_max_writhe", "both ends clamped, twisted: at max |Wr| before passing through itself"),
        )
    ):
        ax = fig.add_subplot(2, 2, 2 + i, projection="3d")
        for name, r in scene["models"].items():
            c = r[key] if r.get(key) is not None else r["centerline"]
            ax.plot(c[:, 0], c[:, 1], c[:, 2], label=f"{name} (Wr {writhe(c):.2f})", **_style(name, r))
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=5.5, loc="upper left")
    ax3 = fig.add_subplot(2, 2, 4)
    for name, r in loop["models"].items():
        series = np.array(r["series"])
        ax3.plot(series[:, 0], series[:, 1], label=name, **_style(name, r))
        if series.shape[1] == 3:
            ax3.plot(series[:, 0], series[:, 1] + series[:, 2], color="k", lw=0.8, ls="-.", label=f"{name}: Wr + Tw")
    ax3.set_xlabel("turns applied to the driven end")
    ax3.set_ylabel("writhe Wr")
    ax3.set_title("loop scene: writhe while twisting", fontsize=9)
    ax3.grid(True, alpha=0.3)
    ax3.legend(fontsize=6)
    return save(fig, path)


def main() -> None:
    ap = _common.arguments(__doc__)
    ap.add_argument("--frames", type=int, default=30)
    ap.add_argument("--quick", action="store_true", help="5 frames, 0.5 s scenes, 10 iterations only")
    add_plot_argument(ap, "the timings and the curl and loop scenes")
    args = ap.parse_args()
    t_start = time.perf_counter()
    frames = 5 if args.quick else args.frames
    runs = QUICK_RUNS if args.quick else SCENE_RUNS
    times = frame_times(frames)
    curl = curl_scene(0.5 if args.quick else 2.0, runs)
    loop = loop_scene(0.5 if args.quick else 3.0, 4.0, 0.3, runs)
    plot_path = draw(times, curl, loop, args.plot)
    for scene in (curl, loop):
        for r in scene["models"].values():
            r.pop("centerline")
            r.pop("shape_at_max_writhe", None)
            if "series" in r:
                r["series"] = np.round(r["series"], 4).tolist()
    ratios = {
        "pber_over_paobcr_bilateral": times["pber_bilateral"] / times["paobcr_bilateral"],
        "pber_over_paobcr_colored": times["pber_colored"] / times["paobcr_colored"],
        "stiff_gs_over_paobcr_colored": times["stiff_gs"] / times["paobcr_colored"],
        "stiff_kkt_over_paobcr_colored": times["stiff_kkt"] / times["paobcr_colored"],
    }
    out = {
        "benchmark": "rod_models",
        "elements": 50,
        "iterations": ITER,
        "dt_s": DT,
        "frames": frames,
        "ms_per_frame": times,
        "ratios": ratios,
        "paper_table1_scene1_ms": {"paobcr": 0.14, "pber": 1.65, "pbd": 0.16},
        "curl": curl,
        "loop": loop,
        "plot": plot_path,
        "wall_s": time.perf_counter() - t_start,
    }
    _common.report(out, args.json, summary=[json.dumps({k: out[k] for k in ("ms_per_frame", "ratios")}, indent=1)])


if __name__ == "__main__":
    main()
