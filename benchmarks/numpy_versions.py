"""vs_reference.py and live_fps.py under two Pythons side by side: numpy 1.26 and numpy 2.x.

Each side is an interpreter with numpy, scipy, numba, pypbd (the authors' C++, for vs_reference.py) and
the bpy module (for live_fps.py ``--python``), e.g. (``.venvs/`` is not tracked):

    python3.11 -m venv .venvs/bench-np1 && .venvs/bench-np1/bin/pip install bpy==5.0.1 numpy==1.26.4 \\
        scipy==1.15.3 numba==0.61.2 pypbd==2.2.2
    python3.13 -m venv .venvs/bench-np2 && .venvs/bench-np2/bin/pip install bpy==5.2.3 numpy==2.5.5 \\
        scipy==1.16.3 numba==0.68.1 llvmlite==0.50.0 pypbd==2.2.2
    python3 benchmarks/numpy_versions.py --json

Every round runs ``vs_reference.py --json --scenes ...`` with side A, then with side B, then the same for
``live_fps.py --json --matrix-reuse 0 --depsgraph-ticks 0`` on the bare birch and with ``--leaves`` (B before
A in every second round). The
report has, per side, the medians over the rounds: per scene the ratio ours / authors' (each run's own
median of per-step ratios) and ms per step, the live fps and solver ms per tick, and the ``compiled``
flag of every run. Nothing in the repository is written. The last stdout line is one JSON object.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCENES = ["cantilever", "quaking_aspen", "small_pine", "white_birch"]  # the leafy birch adds ~1 min a run
VERSIONS = (
    "import json, sys, numpy, scipy, numba, bpy; print(json.dumps(dict(python=sys.version.split()[0], "
    "numpy=numpy.__version__, scipy=scipy.__version__, numba=numba.__version__, bpy=bpy.app.version_string)))"
)


def last_json(cmd: list) -> dict:
    """Run ``cmd``; its last stdout line as JSON."""
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"failed (exit {proc.returncode}): {' '.join(cmd)}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def vs_reference(python: str, scenes: list) -> dict:
    log(f"  {python}: vs_reference")
    return last_json([python, str(HERE / "vs_reference.py"), "--json", "--scenes", *scenes])


def live_fps(python: str, ticks: int, leaves: bool) -> dict:
    log(f"  {python}: live_fps{' --leaves' if leaves else ''}")
    cmd = [sys.executable, str(HERE / "live_fps.py"), "--json", "--matrix-reuse", "0", "--depsgraph-ticks", "0"]
    return last_json(cmd + ["--ticks", str(ticks), "--python", python] + (["--leaves"] if leaves else []))


def run_round(sides: dict, order: list, scenes: list, ticks: int) -> dict:
    """Each benchmark once with every side's interpreter, in ``order``: {side: {vs_reference, live_fps}}."""
    out = {k: {"live_fps": {}} for k in order}
    for k in order:
        out[k]["vs_reference"] = vs_reference(sides[k], scenes)
    for name in ("bare", "leaves"):
        for k in order:
            out[k]["live_fps"][name] = live_fps(sides[k], ticks, name == "leaves")
    return out


def summarise(runs: list) -> dict:
    """Medians over the rounds of one side, with every run's value and compiled flag."""
    scenes = runs[0]["vs_reference"]["scenes"]
    out: dict = {"vs_reference": {}, "live_fps": {}}
    for k in scenes:
        per = [r["vs_reference"]["scenes"][k] for r in runs]
        out["vs_reference"][k] = {
            "segments": per[0]["segments"],
            "ratio_median": float(np.median([p["ratio"] for p in per])),
            "ratios": [round(p["ratio"], 4) for p in per],
            "ours_ms_per_step_median": float(np.median([p["ours_ms_per_step"] for p in per])),
            "ref_ms_per_step_median": float(np.median([p["ref_ms_per_step"] for p in per])),
        }
    for k in runs[0]["live_fps"]:
        per = [r["live_fps"][k] for r in runs]
        out["live_fps"][k] = {
            "segments": per[0]["segments"],
            "fps_median": float(np.median([p["fps"] for p in per])),
            "fps": [round(p["fps"], 1) for p in per],
            "solver_ms_median": float(np.median([p["solver_ms_median"] for p in per])),
            "addon_ms_median": float(np.median([p["addon_ms_median"] for p in per])),
        }
    out["compiled_vs_reference"] = [r["vs_reference"]["compiled"] for r in runs]
    out["compiled_live_fps"] = [p["compiled"] for r in runs for p in r["live_fps"].values()]
    out["all_compiled"] = all(c.startswith("compiled solver active") for c in out["compiled_vs_reference"]) and all(
        c[0] for c in out["compiled_live_fps"]
    )
    return out


def table(result: dict) -> list:
    """The report's lines: per scene / live run, side A next to side B."""
    a, b = result["sides"]
    sa, sb = result[a], result[b]
    lines = [f"{'':>22} {a:>28} {b:>28}", f"{'numpy':>22} {sa['versions']['numpy']:>28} {sb['versions']['numpy']:>28}"]
    for k, va in sa["vs_reference"].items():
        vb = sb["vs_reference"][k]
        lines.append(
            f"{k:>22} {va['ratio_median']:10.3f} ({va['ours_ms_per_step_median']:7.2f} ms) "
            f"{'':8} {vb['ratio_median']:10.3f} ({vb['ours_ms_per_step_median']:7.2f} ms)"
        )
    for k, va in sa["live_fps"].items():
        vb = sb["live_fps"][k]
        lines.append(f"{'live fps ' + k:>22} {va['fps_median']:28.1f} {vb['fps_median']:28.1f}")
    lines.append(f"{'all compiled':>22} {sa['all_compiled']!s:>28} {sb['all_compiled']!s:>28}")
    return lines


def log(*args) -> None:
    print(*args, file=sys.stderr, flush=True)


def main() -> None:
    ap = _common.arguments(__doc__)
    ap.add_argument("--np1", default=str(ROOT / ".venvs/bench-np1/bin/python"), help="side A's interpreter")
    ap.add_argument("--np2", default=str(ROOT / ".venvs/bench-np2/bin/python"), help="side B's interpreter")
    ap.add_argument("--rounds", type=int, default=3, help="rounds; the order of the sides alternates")
    ap.add_argument("--scenes", nargs="+", default=SCENES, help="vs_reference.py scenes")
    ap.add_argument("--ticks", type=int, default=48, help="live_fps.py frames per run")
    args = ap.parse_args()
    sides = {"numpy_a": args.np1, "numpy_b": args.np2}
    runs: dict = {k: [] for k in sides}
    for i in range(args.rounds):
        log(f"round {i + 1} of {args.rounds}")
        order = list(sides)[:: 1 if i % 2 == 0 else -1]
        for k, run in run_round(sides, order, args.scenes, args.ticks).items():
            runs[k].append(run)
    result: dict = {"benchmark": "numpy_versions", "rounds": args.rounds, "sides": list(sides)}
    for k, python in sides.items():
        result[k] = {"python": python, "versions": last_json([python, "-c", VERSIONS]), **summarise(runs[k])}
    _common.report(result, args.json, summary=table(result))


if __name__ == "__main__":
    main()
