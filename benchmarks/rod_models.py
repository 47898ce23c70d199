"""Kugelstadt & Schömer Table 1 analogue and their visual-equivalence scenes (Fig. 5), for every rod model.

1. ms per frame (one Δt = 10 ms step, the same 10 iterations) for a 50-element rod (L = 1 m,
   r = 1 cm, E = 10 MPa, clamped at one end, gravity): PaOBCR, PBER (papers' bilateral order and the
   vectorised even/odd order), Deul's segments with Gauss–Seidel (stiff_gs) and with the direct
   solver (stiff_kkt, for reference). Median over --frames frames.
2. Curl: a 50-element helix (3 turns, radius 5 cm, pitch 2 cm) with intrinsic twist 10 rad/m as
   rest shape, hanging from its clamped top under gravity (2 s, damped). Reported: the free end's
   position per model and its spread across models.
3. Loop: a straight 50-element rod clamped at both ends, no gravity; over 3 s one end moves 30 cm
   towards the other and turns 4 times about its axis. Reported: writhe of the centerline per model
   (a plectonemic loop gives |Wr| ≈ 1) and the twist needed before |Wr| first exceeds 0.5.
Scenes 2–3 use the even/odd order for PaOBCR/PBER (same constraints, vectorised; see docs/rod_models.md).

    python3 benchmarks/rod_models.py --json      # last stdout line: one JSON object; writes docs/rod_models.png
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from plotting import pyplot, save  # noqa: E402
from solver.curve_measures import writhe  # noqa: E402
from solver.rod_models import make_rod  # noqa: E402

RADIUS, E_MOD, DT, ITER = 0.01, 1e7, 0.01, 10
TIMED = (("paobcr", {"ordering": "bilateral"}), ("paobcr", {"ordering": "colored"}),
         ("pber", {"ordering": "bilateral"}), ("pber", {"ordering": "colored"}),
         ("stiff_gs", {}), ("stiff_kkt", {}))
SCENE_MODELS = (("paobcr", {"ordering": "colored"}), ("pber", {"ordering": "colored"}), ("stiff_gs", {}),
                ("stiff_kkt", {}))


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
    out = {}
    for kind, kw in TIMED:
        rod = make_rod(kind, straight(), RADIUS, E_MOD, iterations=ITER, **kw)
        samples = []
        for _ in range(frames):
            t0 = time.perf_counter()
            rod.step(DT)
            samples.append(time.perf_counter() - t0)
        out[label(kind, kw)] = 1e3 * float(np.median(samples))
        log(f"{label(kind, kw):>18}: {out[label(kind, kw)]:.3f} ms/frame")
    return out


def curl_scene(seconds: float) -> dict:
    res = {}
    for kind, kw in SCENE_MODELS:
        rod = make_rod(kind, helix(), RADIUS, E_MOD, twist_rate=10.0, iterations=ITER, damping=4.0, **kw)
        for _ in range(int(round(seconds / DT))):
            rod.step(DT)
        c = rod.centerline()
        res[label(kind, kw)] = {"end_m": c[-1].tolist(), "end_drop_m": float(helix()[-1, 2] - c[-1, 2]),
                                "writhe": writhe(c), "centerline": c}
        log(f"curl {label(kind, kw)}: end {np.round(c[-1], 4)}, writhe {res[label(kind, kw)]['writhe']:.3f}")
    ends = np.array([r["end_m"] for r in res.values()])
    return {"models": res, "end_spread_m": float(np.max(np.linalg.norm(ends - ends.mean(0), axis=1)))}


def loop_scene(seconds: float, turns: float, approach: float) -> dict:
    res = {}
    steps = int(round(seconds / DT))
    for kind, kw in SCENE_MODELS:
        pts = straight()
        pts[:, 1] = 1e-4 * np.sin(np.pi * pts[:, 0])       # the same 0.1 mm imperfection for every model
        rod = make_rod(kind, pts, RADIUS, E_MOD, pinned=("start", "end"), gravity=(0, 0, 0), iterations=ITER,
                       damping=2.0, **kw)
        first_loop = None
        for k in range(1, steps + 1):
            s = k / steps
            rod.twist_end("end", 2 * np.pi * turns * s, translation=(-approach * min(1.0, 3 * s), 0.0, 0.0))
            rod.step(DT)
            if first_loop is None and k % 5 == 0 and abs(writhe(rod.centerline())) > 0.5:
                first_loop = turns * s
        c = rod.centerline()
        res[label(kind, kw)] = {"writhe": writhe(c), "turns_at_first_loop": first_loop,
                                "max_lateral_m": float(np.max(np.linalg.norm(c[:, 1:], axis=1))), "centerline": c}
        log(f"loop {label(kind, kw)}: writhe {res[label(kind, kw)]['writhe']:.3f}, first |Wr| > 0.5 at {first_loop} turns")
    return {"models": res, "turns": turns, "approach_m": approach}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--frames", type=int, default=30)
    ap.add_argument("--quick", action="store_true", help="5 frames, 0.5 s scenes")
    args = ap.parse_args()
    t_start = time.perf_counter()
    frames = 5 if args.quick else args.frames
    times = frame_times(frames)
    curl = curl_scene(0.5 if args.quick else 2.0)
    loop = loop_scene(0.5 if args.quick else 3.0, 4.0, 0.3)
    plt, plot_path = pyplot(), None
    if plt is not None:
        fig = plt.figure(figsize=(12, 4.5))
        ax0 = fig.add_subplot(1, 3, 1)
        names = list(times)
        ax0.barh(range(len(names)), [times[n] for n in names])
        ax0.set_yticks(range(len(names)), names, fontsize=8)
        ax0.set_xscale("log")
        ax0.set_xlabel("ms per frame (50 elements, 10 iterations)")
        for i, (scene, title) in enumerate(((curl, "curl with intrinsic twist, hanging"),
                                            (loop, "both ends clamped, end twisted 4 turns"))):
            ax = fig.add_subplot(1, 3, 2 + i, projection="3d")
            for name, r in scene["models"].items():
                c = r["centerline"]
                ax.plot(c[:, 0], c[:, 1], c[:, 2], lw=1.2, label=f"{name} (Wr {r['writhe']:.2f})")
            ax.set_title(title, fontsize=9)
            ax.legend(fontsize=6)
        plot_path = save(fig, "rod_models.png")
    for scene in (curl, loop):
        for r in scene["models"].values():
            r.pop("centerline")
    ratios = {"pber_over_paobcr_bilateral": times["pber_bilateral"] / times["paobcr_bilateral"],
              "pber_over_paobcr_colored": times["pber_colored"] / times["paobcr_colored"],
              "stiff_gs_over_paobcr_colored": times["stiff_gs"] / times["paobcr_colored"]}
    out = {"benchmark": "rod_models", "elements": 50, "iterations": ITER, "dt_s": DT, "ms_per_frame": times,
           "ratios": ratios, "paper_table1_scene1_ms": {"paobcr": 0.14, "pber": 1.65, "pbd": 0.16},
           "curl": curl, "loop": loop, "plot": plot_path, "wall_s": time.perf_counter() - t_start}
    if not args.json:
        print(json.dumps({k: out[k] for k in ("ms_per_frame", "ratios")}, indent=1))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
