r"""Bake a Sapling tree headless, the way a user would script it.

With Debian's Blender 3.4 (legacy add-on zip):
    blender -b sample_blends/white_birch.blend --python tools/bake_headless.py -- \
        --zip dist/stiff_rods-0.1.0-legacy.zip --frames 1 48 --storm --out baked.blend
With the bpy module (the Blender 4.2+ extension zip for your platform):
    python3 tools/bake_headless.py --blend sample_blends/white_birch.blend \
        --zip dist/stiff_rods-0.1.0-blender4.2-5.0-linux_x64.zip --frames 1 48 --out baked.blend
A game-ready loop, its game rig, glTF and FBX:
    python3 tools/bake_headless.py --blend tree.blend --zip ZIP --object treeArm --loop 120 \
        --max-bones 64 --gltf tree.glb --fbx tree.fbx --out baked.blend

Enables Stiff Rods from ``--zip`` for this run only: the legacy zip is unpacked into a temporary
folder and imported from there; the extension zip is installed into a temporary Blender user profile
(BLENDER_USER_* set before ``import bpy``; a Blender 4.2+ executable restarts itself once with them).
Your own Blender profile is read, never written, and the temporary folder is removed at exit.
``--install-to-profile`` installs the zip into your profile instead and saves your preferences with it
enabled. Without ``--zip`` the add-on must already be enabled in your profile.

Then selects the Sapling armature, saves the tree as ``--out`` (the leaves' point cache is written
next to the .blend it belongs to, and relative paths are remapped to the new folder), bakes the frame
range with the Bake operator (addon/bake.py: ``run_bake``, then ``write_bake``), saves ``--out`` again with no
``.blend1`` backup, and prints a short summary with the solver that ran
(compiled, or numpy without numba; ``--json``: one JSON line instead). Blender's reports of these steps are held
back; warnings and errors are printed.
"""

import argparse
import atexit
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
import zipfile

PACKAGE = "stiff_rods"
# Set in a Blender that this script restarted with a temporary profile: that folder, removed at exit.
PROFILE_ENV = "STIFF_RODS_BAKE_PROFILE"
PROFILE_PREFIX = "stiff_rods_bake_"
USER_DIRS = {
    "BLENDER_USER_RESOURCES": "resources",
    "BLENDER_USER_CONFIG": "config",
    "BLENDER_USER_SCRIPTS": "scripts",
    "BLENDER_USER_DATAFILES": "datafiles",
    "BLENDER_USER_EXTENSIONS": "extensions",
}
# Lines of Blender's own output about steps this script takes for the user (saving, installing).
KERNEL_CACHE_ENV = "STIFF_RODS_KERNEL_CACHE"  # read by the add-on at register
QUIET_PREFIXES = ("Info: ", "addon_utils.disable: ", "Modules Installed ", "STATUS ")


def parse():
    argv = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]
    ap = argparse.ArgumentParser(
        prog="bake_headless.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--blend", help="file to open (with the bpy module; blender -b takes it on its command line)")
    ap.add_argument(
        "--zip", help="Stiff Rods add-on zip (legacy for Blender 3.4-4.1, extension for 4.2+) to enable for this run"
    )
    ap.add_argument(
        "--install-to-profile",
        action="store_true",
        help="install --zip into your Blender user profile and save the preferences with it enabled",
    )
    ap.add_argument(
        "--frames",
        nargs=2,
        type=int,
        default=None,
        metavar=("START", "END"),
        help="frame range to bake (default: the scene's)",
    )
    ap.add_argument("--out", required=True, help="where to save the baked .blend (not the input file)")
    ap.add_argument(
        "--storm",
        action="store_true",
        help="blow the add-on's storm preset (calm → 30 m/s → calm) over the baked frames",
    )
    ap.add_argument("--object", help="the tree to bake (its armature's or curve's name) when the file holds several")
    # --loop and --preroll as tools/_bake_options.py defines them for bake_forest.py: written out here, since users
    # run a copy of this file alone (tests/blender/test_headless_bake.py)
    ap.add_argument(
        "--loop",
        type=int,
        metavar="FRAMES",
        help="bake a seamless loop of FRAMES frames from the start frame (the wind repeats, the tree is warmed up "
        "until its sway repeats; the last key equals the first)",
    )
    ap.add_argument(
        "--preroll",
        type=int,
        metavar="FRAMES",
        help="simulate FRAMES frames before the start frame, not keyed (with --loop: the warm-up, instead of the "
        "automatic whole loops)",
    )
    ap.add_argument(
        "--max-bones",
        type=int,
        metavar="N",
        help="after the bake, build a game rig of at most N bones (a new armature and skinned mesh, saved with --out)",
    )
    ap.add_argument("--gltf", metavar="OUT.glb", help="export the game rig (--max-bones) as glTF binary")
    ap.add_argument("--fbx", metavar="OUT.fbx", help="export the game rig (--max-bones) as FBX")
    ap.add_argument(
        "--pivot-painter",
        metavar="DIR",
        help="write Unreal Pivot Painter 2 textures of the tree into DIR and the PivotPainter UV map on the game "
        "rig's mesh (needs --max-bones; made before --gltf/--fbx, so they carry the UV map)",
    )
    ap.add_argument(
        "--usd",
        metavar="OUT.usdc",
        help="export the baked branches and leaves per frame as USD (operator stiff_rods.export_cache; a Blender "
        "built with USD: blender.org's or the bpy module, not Debian's)",
    )
    ap.add_argument("--abc", metavar="OUT.abc", help="the same as Alembic (a Blender built with Alembic)")
    ap.add_argument("--json", action="store_true", help="print one JSON line instead of the summary")
    args = ap.parse_args(argv)
    check(ap, args)
    args.kind = zip_kind(ap, args.zip) if args.zip else None
    return args


def check(ap, args) -> None:
    """Refuse, through ``ap.error``, options that cannot work together or paths that cannot be written."""
    if args.frames and args.frames[1] < args.frames[0]:
        ap.error(f"--frames {args.frames[0]} {args.frames[1]}: the end frame is before the start frame")
    if args.loop is not None and args.loop < 2:
        ap.error(f"--loop {args.loop}: a loop needs at least 2 frames")
    if args.preroll is not None and args.preroll < 0:
        ap.error(f"--preroll {args.preroll}: frames before the start cannot be negative")
    if args.max_bones is not None and not 2 <= args.max_bones <= 1024:
        ap.error(f"--max-bones {args.max_bones}: a game rig has 2 to 1024 bones")
    for flag, path in (("--gltf", args.gltf), ("--fbx", args.fbx), ("--pivot-painter", args.pivot_painter)):
        if path and args.max_bones is None:
            ap.error(f"{flag} exports the game rig: give --max-bones too")
    for flag, path in (
        ("--gltf", args.gltf),
        ("--fbx", args.fbx),
        ("--pivot-painter", args.pivot_painter),
        ("--usd", args.usd),
        ("--abc", args.abc),
    ):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            ap.error(f"{flag} {path}: the folder does not exist")
    if args.install_to_profile and not args.zip:
        ap.error("--install-to-profile needs --zip")
    if args.blend and not os.path.isfile(args.blend):
        ap.error(f"--blend {args.blend}: no such file")
    out_dir = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(out_dir):
        ap.error(f"--out {args.out}: the folder {out_dir} does not exist")


def zip_kind(ap, path):
    """'legacy' (a stiff_rods/ folder) or 'extension' (blender_manifest.toml at the top)."""
    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
    except (OSError, zipfile.BadZipFile) as exc:
        ap.error(f"--zip {path}: {exc}")
    if f"{PACKAGE}/__init__.py" in names:
        return "legacy"
    if "blender_manifest.toml" in names:
        return "extension"
    ap.error(f"--zip {path}: not a Stiff Rods add-on zip (no {PACKAGE}/__init__.py, no blender_manifest.toml)")


def temporary_profile():
    """A new temporary Blender user profile, exported in BLENDER_USER_*; removed when Python exits.

    atexit runs after Blender's own exit handling (the bpy module registers its handler when imported,
    after this one; the executable finalises Python last), so the profile outlives the add-on."""
    path = restarted_profile() or tempfile.mkdtemp(prefix=PROFILE_PREFIX)
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    os.environ[PROFILE_ENV] = path
    for var, sub in USER_DIRS.items():
        os.makedirs(os.path.join(path, sub), exist_ok=True)
        os.environ[var] = os.path.join(path, sub)
    return path


def restarted_profile():
    """The temporary profile this Blender was restarted with, if any (only a folder this script made)."""
    path = os.environ.get(PROFILE_ENV)
    return path if path and os.path.basename(path).startswith(PROFILE_PREFIX) and os.path.isdir(path) else None


@contextlib.contextmanager
def quiet():
    """Hold back what Blender prints through Python (operator reports, add-on install messages) and
    pass on what matters: warnings, errors, anything not in QUIET_PREFIXES."""
    buf = io.StringIO()
    skip = QUIET_PREFIXES
    try:
        with contextlib.redirect_stdout(buf):
            yield
    except RuntimeError:  # an operator's error report: the exception carries it
        skip += ("Error: ",)
        raise
    finally:
        for line in buf.getvalue().splitlines():
            if line.strip() and not line.startswith(skip):
                print(line)


def addon_ready(bpy):
    return hasattr(bpy.ops, PACKAGE) and "bake" in dir(getattr(bpy.ops, PACKAGE))


def enable_legacy(bpy, zip_path, folder):
    """Import the legacy add-on from ``zip_path`` unpacked into ``folder``; nothing is installed and the
    preferences are not touched (default_set=False)."""
    import addon_utils

    addons = os.path.join(folder, "addons")
    # the compiled solver's cache goes to the user's cache folder, not the Blender profile, and is kept between runs
    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    os.environ.setdefault(KERNEL_CACHE_ENV, os.path.join(cache_home, "stiff_rods", "kernels"))
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(addons)
    mod = sys.modules.get(PACKAGE)
    if mod is not None and getattr(mod, "__addon_enabled__", False):  # the one in the user's profile
        addon_utils.disable(PACKAGE, default_set=False)
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    sys.path.insert(0, addons)
    errors = []
    if addon_utils.enable(PACKAGE, default_set=False, handle_error=errors.append) is None:
        raise SystemExit(
            f"bake_headless: Stiff Rods from {zip_path} did not enable: {errors[0] if errors else 'see above'}"
        )


def install(bpy, zip_path, kind):
    """Install ``zip_path`` into the running profile and enable it; returns the folder it went to."""
    path = os.path.abspath(zip_path)
    if kind == "extension":
        bpy.ops.extensions.package_install_files(filepath=path, repo="user_default", enable_on_install=True)
        return next(r.directory for r in bpy.context.preferences.extensions.repos if r.module == "user_default")
    import addon_utils

    bpy.ops.preferences.addon_install(filepath=path, overwrite=True)
    addon_utils.enable(PACKAGE, default_set=True)
    return bpy.utils.user_resource("SCRIPTS", path="addons")


def enable(bpy, args, profile):
    """Make the Stiff Rods operators available; returns how, for the summary."""
    if not args.zip:
        if not addon_ready(bpy):
            raise SystemExit("bake_headless: Stiff Rods is not enabled: pass --zip with the add-on zip")
        return "enabled in your Blender profile"
    if args.kind == "extension" and bpy.app.version < (4, 2, 0):
        raise SystemExit(
            f"bake_headless: Blender {bpy.app.version_string} cannot install the extension zip "
            f"{args.zip}: pass the legacy zip ({PACKAGE}-<version>-legacy.zip)"
        )
    with quiet():
        if args.install_to_profile:
            folder = install(bpy, args.zip, args.kind)
            bpy.ops.wm.save_userpref()
            how = f"installed into {folder} and enabled in your preferences"
        elif args.kind == "legacy":
            enable_legacy(bpy, args.zip, profile)
            how = f"{args.zip}, for this run only (your Blender profile is not changed)"
        else:  # extension, in the temporary profile
            install(bpy, args.zip, args.kind)
            how = f"{args.zip}, in a temporary profile for this run only (yours is not changed)"
    if not addon_ready(bpy):
        raise SystemExit(f"bake_headless: Stiff Rods from {args.zip} did not register its operators")
    return how


def restart_with_temporary_profile(bpy):
    """A Blender executable with the user's profile loaded: run this same command again in a temporary
    profile, where the extension (and its scipy wheel) can be installed without touching the user's."""
    temporary_profile()
    shutil.rmtree(bpy.app.tempdir, ignore_errors=True)  # this Blender's session folder: it exits no more
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(bpy.app.binary_path, sys.argv)


def needs_remap(bpy, source, out):
    """Whether saving ``source`` as ``out`` must rewrite relative paths (textures, libraries) for the new
    folder; Blender then prints a 'Total files' line, so the remap is asked for only then."""
    if os.path.dirname(source) == os.path.dirname(out):
        return False
    return any(p.startswith("//") for p in bpy.utils.blend_paths(absolute=False))


def load(bpy, args):
    """Open the input (with the bpy module), check it and --out; returns the input's path and its armature."""
    source = os.path.abspath(args.blend) if args.blend else bpy.data.filepath
    if not source:
        raise SystemExit("bake_headless: no .blend: give it on Blender's command line or with --blend")
    out = os.path.abspath(args.out)
    if os.path.exists(out) and os.path.samefile(source, out):
        raise SystemExit(f"bake_headless: --out {args.out} is the input file: bake into another file")
    if args.blend:
        bpy.ops.wm.open_mainfile(filepath=source)
    return source, pick_tree(bpy, args, source)


def pick_tree(bpy, args, source):
    """The tree to bake: ``--object`` (an armature or a curve), else the file's one armature."""
    objects = bpy.context.scene.objects
    if args.object:
        obj = objects.get(args.object)
        if obj is None or obj.type not in {"ARMATURE", "CURVE"}:
            trees = sorted(o.name for o in objects if o.type in {"ARMATURE", "CURVE"})
            raise SystemExit(
                f"bake_headless: --object {args.object}: no armature or curve of that name in {source}; "
                f"there are: {', '.join(trees) or 'none'}"
            )
        return obj
    arms = [o for o in objects if o.type == "ARMATURE"]
    if not arms:
        raise SystemExit(f"bake_headless: no armature in {source}: open a Sapling tree made with 'Use Armature'")
    if len(arms) > 1:
        names = ", ".join(sorted(o.name for o in arms))
        raise SystemExit(f"bake_headless: {source} holds several trees ({names}): choose one with --object NAME")
    return arms[0]


def game_export(bpy, args, arm) -> dict:
    """--max-bones: the game rig of the baked tree (operator stiff_rods.game_rig); --pivot-painter: its Pivot Painter
    2 textures and UV map (stiff_rods.pivot_painter); --gltf, --fbx: its GLB, its FBX (operators
    stiff_rods.export_gltf, stiff_rods.export_fbx). What was made."""
    if args.max_bones is None:
        return {}
    bpy.context.view_layer.objects.active = arm
    t0 = time.perf_counter()
    bpy.ops.stiff_rods.game_rig(max_bones=args.max_bones)
    game = bpy.context.view_layer.objects.active
    out = {"game_rig": game.name, "game_bones": len(game.data.bones), "game_rig_s": time.perf_counter() - t0}
    if args.pivot_painter:
        t0 = time.perf_counter()
        folder = os.path.abspath(args.pivot_painter)
        bpy.ops.stiff_rods.pivot_painter(directory=folder)
        out.update(pivot_painter=folder, pivot_painter_s=time.perf_counter() - t0)
    for key, path, export in (("gltf", args.gltf, "export_gltf"), ("fbx", args.fbx, "export_fbx")):
        if path:
            path = os.path.abspath(path)
            t0 = time.perf_counter()
            getattr(bpy.ops.stiff_rods, export)(filepath=path)
            out.update({key: path, f"{key}_bytes": os.path.getsize(path), f"{key}_export_s": time.perf_counter() - t0})
    return out


def cache_export(bpy, args, arm) -> dict:
    """--usd, --abc: the baked tree's branches and leaves per frame (operator stiff_rods.export_cache), each
    announced before it starts (the storm birch's USD takes tens of seconds). What was written."""
    out = {}
    for key, path, fmt in (("usd", args.usd, "USD"), ("abc", args.abc, "ALEMBIC")):
        if path:
            path = os.path.abspath(path)
            if not args.json:
                print(f"Stiff Rods: exporting {fmt.title()} cache to {path} ...", flush=True)
            bpy.context.view_layer.objects.active = arm
            t0 = time.perf_counter()
            bpy.ops.stiff_rods.export_cache(filepath=path, format=fmt)
            out.update({key: path, f"{key}_bytes": os.path.getsize(path), f"{key}_export_s": time.perf_counter() - t0})
    return out


def bake_settings(scene, args) -> None:
    """--loop and --preroll as the scene's Loop and Pre-roll settings (saved with --out)."""
    sc = scene.stiff_rods
    if args.loop is not None:
        sc.use_loop, sc.loop_frames = True, args.loop
    if args.preroll is not None:
        sc.preroll_frames = args.preroll
        sc.use_auto_preroll = False


def solver_status():
    """(compiled, message) of the enabled add-on's solver: the compiled Newton iteration or the numpy solver."""
    name = next(n for n in sys.modules if n.rpartition(".")[2] == PACKAGE and n + ".solver" in sys.modules)
    return tuple(sys.modules[name + ".solver"].compiled_status())


def bake(bpy, args, source, arm, how):
    out = os.path.abspath(args.out)
    bpy.context.view_layer.objects.active = arm
    scene = bpy.context.scene
    start, end = args.frames or (scene.frame_start, scene.frame_end)
    filepaths = bpy.context.preferences.filepaths
    save_version = filepaths.save_version
    filepaths.save_version = 0  # no .blend1 next to --out
    try:
        with quiet():
            if args.storm:
                scene.frame_start, scene.frame_end = start, end  # the preset spans the scene's range
                bpy.ops.stiff_rods.storm_preset()
            bake_settings(scene, args)
            if args.loop:
                end = start + args.loop
            # saved first: the leaves' point cache (.pc2) is written next to the .blend it belongs to
            # (reopening a copy of the input there instead takes 6-8 s on the birch, this save 0.2 s)
            bpy.ops.wm.save_as_mainfile(filepath=out, relative_remap=needs_remap(bpy, source, out))
            t0 = time.perf_counter()
            result = bpy.ops.stiff_rods.bake(frame_start=start, frame_end=end)
            seconds = time.perf_counter() - t0
            game = game_export(bpy, args, arm)
            bpy.ops.wm.save_mainfile()
            game.update(cache_export(bpy, args, arm))
    finally:
        filepaths.save_version = save_version
    caches = sorted(
        {
            bpy.path.abspath(m.filepath)
            for o in scene.objects
            for m in o.modifiers
            if m.type == "MESH_CACHE" and m.filepath
        }
    )
    action = arm.animation_data.action.name if arm.animation_data and arm.animation_data.action else None
    compiled, solver = solver_status()
    if args.json:
        print(
            json.dumps(
                {
                    "result": sorted(result),
                    "armature": arm.name,
                    "frames": [start, end],
                    "storm": args.storm,
                    "loop": args.loop,
                    "preroll": args.preroll,
                    "seconds": round(seconds, 2),
                    "action": action,
                    "out": args.out,
                    "blend": out,
                    "caches": caches,
                    "addon": how,
                    "compiled": compiled,
                    "solver": solver,
                    **game,
                }
            )
        )
        return
    storm = " (storm preset)" if args.storm else ""
    print(f"Stiff Rods: baked {arm.name}, frames {start}-{end}{storm}, in {seconds:.1f} s")
    print(f"  add-on: {how}")
    print(f"  solver: {solver}")
    print(f"  saved:  {out}")
    for path in caches:
        print(f"  cache:  {path}")
    if game.get("game_rig"):
        print(f"  game rig: {game['game_rig']}, {game['game_bones']} bones, {game['game_rig_s']:.1f} s")
    for key, label in (("gltf", "glTF:"), ("fbx", "FBX: "), ("usd", "USD: "), ("abc", "Alembic:")):
        if game.get(key):
            print(f"  {label}  {game[key]} ({game[f'{key}_bytes']} bytes in {game[f'{key}_export_s']:.1f} s)")


def main():
    args = parse()
    in_blender = "bpy" in sys.modules  # run by a Blender executable, not the bpy module
    isolate = bool(args.zip) and not args.install_to_profile
    profile = None
    if isolate and (not in_blender or restarted_profile()):
        profile = temporary_profile()  # before `import bpy` reads the profile
    import bpy

    if isolate and profile is None and args.kind == "extension" and bpy.app.version >= (4, 2, 0):
        restart_with_temporary_profile(bpy)
    if isolate and profile is None:  # legacy zip in the user's Blender: a folder for it
        profile = tempfile.mkdtemp(prefix=PROFILE_PREFIX)
        atexit.register(shutil.rmtree, profile, ignore_errors=True)
    try:
        source, arm = load(bpy, args)
        bake(bpy, args, source, arm, enable(bpy, args, profile))
    except RuntimeError as exc:  # an operator's error report
        raise SystemExit(f"bake_headless: {exc}".rstrip()) from None


main()
