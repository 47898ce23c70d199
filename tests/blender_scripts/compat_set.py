"""The compatibility set, the same on every Blender of the test matrix (run by tests/blender/test_blender_matrix.py).

    blender -b --factory-startup --python compat_set.py -- run ZIP WORK [core]      (Blender 3.4, the legacy zip)
    PYTHON compat_set.py run ZIP WORK [core]                                   (the bpy module, the extension zip)

``run`` installs ZIP from disk into the user profile (the caller isolates it: BLENDER_USER_* for Blender 3.4;
for the bpy module this script points them at WORK/profile before ``import bpy``) and, in this one process:

* ``compiled``: the solver's compiled status, where numba was loaded from;
* ``bake``: opens sample_blends/white_birch.blend, adds a steady Wind field (8 m/s along +X), sets the
  Newton tolerance η to 1e-10, Leaves off (they follow their bones) and the range to FRAMES frames, saves
  that as WORK/birch.blend; Convert, Bake (saved as WORK/baked.blend), then a plain simulation loop of the
  same tree (Session.reset, advance_frame) whose bone tails per frame go to WORK/expected_tails.npy; Free Bake;
* ``forest``: WORK/forest.blend, the birch plus a copy of its armature, curve and leaves moved 5 m and
  turned 90° about Z; both armatures selected, Parallel Workers 2, Bake (the forest pool); the keys
  compared with each tree's serial bake: ``bake``'s for the first, Bake with only the second selected in a
  fresh copy of the file;
* ``headless``: tools/bake_headless.py on WORK/birch.blend, frames 1-2, in a process of its own;
  (with ``core``, neither ``forest`` nor ``headless`` runs)
* ``replay``: a new process of the same Blender with a fresh, empty profile (the add-on not installed)
  opens WORK/baked.blend, plays the frames and compares every bone tail with WORK/expected_tails.npy;
  the played tails go to WORK/tails.npy (the cross-version comparison reads them).

Each part's result (or its traceback) goes into one line ``COMPAT {json}``; ``replay`` prints
``COMPAT_REPLAY {json}``.
"""

import json
import math
import os
import shutil
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIRCH = os.path.join(ROOT, "sample_blends", "white_birch.blend")
HEADLESS = os.path.join(ROOT, "tools", "bake_headless.py")
FRAMES = 12
HEADLESS_FRAMES = (1, 2)
TOLERANCE = 1e-10  # Newton tolerance η of every bake here: the cross-version comparison needs converged steps
WIND_MPS = 8.0
SUB_TIMEOUT = 600
USER_DIRS = ("RESOURCES", "CONFIG", "SCRIPTS", "DATAFILES", "EXTENSIONS")
IS_MODULE = "bpy" not in sys.modules  # a Python with the bpy module (a Blender executable has imported bpy)


def args():
    return sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]


def profile_env(profile):
    """os.environ with every BLENDER_USER_* folder inside ``profile``."""
    env = dict(os.environ)
    for name in USER_DIRS:
        env[f"BLENDER_USER_{name}"] = os.path.join(profile, name.lower())
        os.makedirs(env[f"BLENDER_USER_{name}"], exist_ok=True)
    return env


if IS_MODULE:  # before `import bpy`, which reads the profile
    _a = args()
    os.environ.update(
        profile_env(os.path.join(_a[2], "profile") if _a[0] == "run" else os.path.join(_a[1], "profile_replay"))
    )

import bpy  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, HERE)
from forest_bake import scene_keys  # noqa: E402


def blender_command(script, *script_args, blend=None):
    """This Blender running ``script`` (on ``blend``)."""
    if IS_MODULE:
        opened = ["--blend", blend] if blend and script == HEADLESS else []
        return [sys.executable, script, *script_args, *opened]
    return [bpy.app.binary_path, "-b", *([blend] if blend else []), "--python", script, "--", *script_args]


# ------------------------------------------------------------------ install and the compiled kernels
def install(zip_path):
    """Install ``zip_path`` the way a user does; the add-on's module name."""
    if bpy.app.version >= (4, 2, 0):
        result = bpy.ops.extensions.package_install_files(
            filepath=zip_path, repo="user_default", enable_on_install=True
        )
        assert result == {"FINISHED"}, result
        name = "bl_ext.user_default.stiff_rods"
    else:
        import addon_utils

        assert bpy.ops.preferences.addon_install(filepath=zip_path, overwrite=True) == {"FINISHED"}
        name = "stiff_rods"
        addon_utils.enable(name, default_set=True, handle_error=lambda exc: (_ for _ in ()).throw(exc))
    assert name in bpy.context.preferences.addons, f"{name} is not enabled"
    assert hasattr(bpy.ops.stiff_rods, "bake"), "bpy.ops.stiff_rods.bake is not registered"
    return name


def compiled_part(mod, info):
    solver = sys.modules[mod + ".solver"]
    said = []
    ok, message = solver.prepare_compiled(said.append)
    numba = sys.modules.get("numba")
    info.update(
        compiled=bool(ok),
        compiled_message=message,
        numba=getattr(numba, "__version__", None),
        numba_file=getattr(numba, "__file__", None),
        addon_file=sys.modules[mod].__file__,
        user_resources=os.environ.get("BLENDER_USER_RESOURCES") or os.environ.get("BLENDER_USER_SCRIPTS"),
        numpy=np.__version__,
        python=sys.version.split()[0],
    )


# ------------------------------------------------------------------ one tree: Convert, Bake, Free Bake
def prepare_birch(work):
    """The bundled birch with a steady wind, η = TOLERANCE and FRAMES frames, saved as WORK/birch.blend."""
    bpy.ops.wm.open_mainfile(filepath=BIRCH)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, FRAMES
    scene.frame_set(1)
    scene.stiff_rods.tolerance = TOLERANCE
    # the leaves follow their bones: 5878 segments instead of 15338 (every leaf its own), for CI time
    bpy.data.objects["treeArm"].stiff_rods.use_leaves = False
    bpy.ops.object.effector_add(type="WIND", location=(-6.0, 0.0, 3.0), rotation=(0.0, math.pi / 2, 0.0))
    bpy.context.active_object.field.strength = WIND_MPS
    path = os.path.join(work, "birch.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    return path


def select_only(*objects):
    for o in bpy.context.view_layer.objects:
        o.select_set(o in objects)
    bpy.context.view_layer.objects.active = objects[0]


def reference_tails(mod, arm, scene):
    """Bone tails (world) per frame from a plain simulation loop of ``arm``: Session, reset, advance_frame."""
    session_mod = sys.modules[mod + ".addon.session"]
    wind_mod = sys.modules[mod + ".addon.wind"]
    ref = session_mod.Session(arm, scene)
    scene.frame_set(1)
    ref.set_wind(wind_mod.SceneWind.from_scene(scene))
    ref.reset(1, scene)
    seg = ref.bone_segment
    local = np.zeros((seg.size, 3))
    local[:, 2] = 0.5 * ref.model.lengths[seg]
    tails = [ref.sim.segment_points(local, seg)]
    for _ in range(FRAMES - 1):
        ref.advance_frame(scene)
        tails.append(ref.sim.segment_points(local, seg))
    scene.frame_set(1)
    return ref, np.array(tails)


def bake_part(mod, work, info):
    ops_mod = sys.modules[mod + ".addon.operators"]
    prepare_birch(work)
    scene = bpy.context.scene
    arm = bpy.data.objects["treeArm"]
    select_only(arm)
    bones_before = len(arm.data.bones)
    anim = arm.animation_data
    info["action_before"] = anim.action.name if anim and anim.action else None
    assert bpy.ops.stiff_rods.convert() == {"FINISHED"}
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(work, "baked.blend"))  # the leaves' cache goes next to it
    t0 = time.perf_counter()
    assert bpy.ops.stiff_rods.bake(frame_start=1, frame_end=FRAMES) == {"FINISHED"}
    info["bake_seconds"] = time.perf_counter() - t0
    bpy.ops.wm.save_mainfile()
    keys = scene_keys(bpy, [arm.name])[arm.name]
    info.update(bones_before=bones_before, bones_baked=len(arm.data.bones), fcurves=len(keys))
    info["keyed_frames"] = sorted({float(f) for k in keys.values() for f in k[:, 0]})
    t0 = time.perf_counter()
    ref, tails = reference_tails(mod, arm, scene)
    info["reference_seconds"] = time.perf_counter() - t0
    info.update(sim_compiled=bool(ref.sim.compiled), segments=int(ref.model.n_segments))
    np.save(os.path.join(work, "expected_tails.npy"), tails)
    with open(os.path.join(work, "bone_names.json"), "w") as fh:
        json.dump(list(ref.source.bone_names), fh)
    info["max_tail_motion_m"] = float(np.max(np.linalg.norm(tails[-1] - tails[0], axis=1)))
    free_bake(ops_mod, arm, info)
    return keys


def free_bake(ops_mod, arm, info):
    """Free Bake; the leaves' point cache file is kept aside and put back (the replay plays the saved bake)."""
    cache = json.loads(arm[ops_mod.PREV_LEAF_CACHE])["file"] if ops_mod.PREV_LEAF_CACHE in arm else None
    if cache:
        shutil.copy(cache, cache + ".keep")
    select_only(arm)
    assert bpy.ops.stiff_rods.free_bake() == {"FINISHED"}
    info["leaf_cache_removed"] = None if cache is None else not os.path.exists(cache)
    if cache:
        shutil.move(cache + ".keep", cache)
    anim = arm.animation_data
    info["bones_after_free"] = len(arm.data.bones)
    info["action_after_free"] = anim.action.name if anim and anim.action else None


# ------------------------------------------------------------------ two trees: the forest pool
def make_forest(work):
    """WORK/forest.blend: WORK/birch.blend plus a second birch (its armature, curve, leaves) 5 m along +Y,
    turned 90° about Z (the wind then comes from its side: its keys differ from the first tree's)."""
    bpy.ops.wm.open_mainfile(filepath=os.path.join(work, "birch.blend"))
    with bpy.data.libraries.load(BIRCH, link=False) as (src, dst):  # Blender 3.4 crashes appending the open file
        dst.objects = ["treeArm", "tree", "leaves"]
    for obj in dst.objects:
        bpy.context.scene.collection.objects.link(obj)
    arm = next(o for o in dst.objects if o.type == "ARMATURE")
    arm.location = (0.0, 5.0, 0.0)
    arm.rotation_euler = (0.0, 0.0, math.pi / 2)
    path = os.path.join(work, "forest.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    return path, ["treeArm", arm.name]


def key_difference(a, b):
    """The largest |difference| of the key (frame, value) pairs of two bakes of one tree; a string if the
    F-curves differ."""
    if set(a) != set(b) or not a:
        return f"F-curves differ: {len(a)} vs {len(b)}"
    return max(float(np.max(np.abs(a[k] - b[k]))) for k in a)


def forest_part(work, first, info):
    path, names = make_forest(work)
    scene = bpy.context.scene
    scene.stiff_rods.forest_workers = 2
    select_only(*(bpy.data.objects[n] for n in names))
    t0 = time.perf_counter()
    info["outcome"] = sorted(bpy.ops.stiff_rods.bake())
    info["forest_seconds"] = time.perf_counter() - t0
    forest = scene_keys(bpy, names)
    info["trees"] = names
    info["fcurves"] = {n: len(k) for n, k in forest.items()}
    info["keyed_frames"] = {n: sorted({float(f) for c in k.values() for f in c[:, 0]}) for n, k in forest.items()}
    t0 = time.perf_counter()
    serial = {names[0]: first}  # the first tree is the birch of bake_part, where it is, as it is
    for name in names[1:]:
        bpy.ops.wm.open_mainfile(filepath=path)
        select_only(bpy.data.objects[name])
        assert bpy.ops.stiff_rods.bake() == {"FINISHED"}, name
        serial.update(scene_keys(bpy, [name]))
    info["serial_seconds"] = time.perf_counter() - t0
    info["forest_vs_serial"] = {n: key_difference(forest[n], serial[n]) for n in names}
    info["tree_vs_tree"] = key_difference(serial[names[0]], serial[names[1]])


# ------------------------------------------------------------------ subprocesses: bake_headless.py, replay
def headless_part(zip_path, work, info):
    out = os.path.join(work, "headless.blend")
    frames = [str(f) for f in HEADLESS_FRAMES]
    cmd = blender_command(
        HEADLESS, "--zip", zip_path, "--frames", *frames, "--out", out, blend=os.path.join(work, "birch.blend")
    )
    env = profile_env(os.path.join(work, "profile_headless"))
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=SUB_TIMEOUT, env=env)
    info.update(exit=proc.returncode, seconds=time.perf_counter() - t0, out=out, out_exists=os.path.isfile(out))
    info["summary"] = [line for line in proc.stdout.splitlines() if line.startswith(("Stiff Rods: ", "  "))]
    if proc.returncode != 0:
        info["stderr"] = proc.stderr[-3000:]


def replay_part(work, info):
    cmd = blender_command(os.path.abspath(__file__), "replay", work, blend=os.path.join(work, "baked.blend"))
    if not IS_MODULE:
        cmd.insert(2, "--factory-startup")
    t0 = time.perf_counter()
    env = profile_env(os.path.join(work, "profile_replay"))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=SUB_TIMEOUT, env=env)
    info["seconds"] = time.perf_counter() - t0
    lines = [line for line in proc.stdout.splitlines() if line.startswith("COMPAT_REPLAY ")]
    assert lines, f"no COMPAT_REPLAY line (exit {proc.returncode}): {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    info.update(json.loads(lines[-1][len("COMPAT_REPLAY ") :]))


def replay(work):
    """Play WORK/baked.blend with the add-on not installed: every bone tail against the plain loop's."""
    import addon_utils

    if IS_MODULE:
        bpy.ops.wm.open_mainfile(filepath=os.path.join(work, "baked.blend"))
    enabled = [m.__name__ for m in addon_utils.modules() if addon_utils.check(m.__name__)[1]]
    info = {
        "addon_enabled": any("stiff_rods" in m for m in enabled) or any("stiff_rods" in m for m in sys.modules),
        "operators": hasattr(bpy.ops, "stiff_rods") and "bake" in dir(bpy.ops.stiff_rods),
        "file": bpy.data.filepath,
    }
    expected = np.load(os.path.join(work, "expected_tails.npy"))
    with open(os.path.join(work, "bone_names.json")) as fh:
        names = json.load(fh)
    arm = bpy.data.objects["treeArm"]
    for o in bpy.data.objects:  # only the bones are played: the bevelled curve and the leaves need no update
        o.hide_viewport = o is not arm
    mw = np.array(arm.matrix_world)
    index = {pb.name: i for i, pb in enumerate(arm.pose.bones)}
    order = np.array([index[n] for n in names])
    played = []
    for frame in range(1, FRAMES + 1):
        bpy.context.scene.frame_set(frame)
        flat = np.empty(3 * len(arm.pose.bones))
        arm.pose.bones.foreach_get("tail", flat)
        played.append(flat.reshape(-1, 3)[order] @ mw[:3, :3].T + mw[:3, 3])
    played = np.array(played)
    np.save(os.path.join(work, "tails.npy"), played)
    info["bones"] = len(names)
    info["max_error_m"] = float(np.max(np.linalg.norm(played - expected, axis=2)))
    print("COMPAT_REPLAY " + json.dumps(info), flush=True)


# ------------------------------------------------------------------ driver
def run(zip_path, work, core=False):
    result = {"blender": bpy.app.version_string, "zip": os.path.basename(zip_path), "module": IS_MODULE}
    timings = result["seconds"] = {}
    state = {}

    def part(name, fn, *fn_args):
        info = result[name] = {}
        t0 = time.perf_counter()
        try:
            fn(*fn_args, info)
        except Exception:
            info["error"] = traceback.format_exc()
        timings[name] = round(time.perf_counter() - t0, 2)
        print(f"compat_set: {name} {timings[name]} s", file=sys.stderr, flush=True)

    part("install", lambda info: info.update(module=state.setdefault("mod", install(zip_path))))
    if "mod" in state:
        mod = state["mod"]
        part("compiled", compiled_part, mod)
        part("bake", lambda info: state.update(keys=bake_part(mod, work, info)))
        if "keys" in state and not core:
            part("forest", forest_part, work, state["keys"])
        if not core:
            part("headless", headless_part, zip_path, work)
        part("replay", replay_part, work)
    print("COMPAT " + json.dumps(result), flush=True)


def main():
    a = args()
    if a[0] == "run":
        run(os.path.abspath(a[1]), os.path.abspath(a[2]), core=a[3:] == ["core"])
    elif a[0] == "replay":
        replay(os.path.abspath(a[1]))
    else:
        raise SystemExit(f"compat_set.py: unknown mode {a[0]!r}")


main()
