"""Bake a Sapling tree headless, the way a user would script it.

With Debian's Blender 3.4 (legacy add-on zip):
    blender -b sample_blends/white_birch.blend --python tools/bake_headless.py -- --zip dist/stiff_rods-0.1.0-legacy.zip --frames 1 48 --storm --out baked.blend
With the bpy module (Blender 4.2+ extension zip):
    python3 tools/bake_headless.py --blend sample_blends/white_birch.blend --zip dist/stiff_rods-0.1.0.zip --frames 1 48 --out baked.blend

Installs and enables the add-on from ``--zip`` when it is not enabled yet, selects the Sapling
armature, bakes the frame range and saves ``--out``. Prints one JSON line with what it did.
"""
import argparse
import json
import os
import sys
import time

import bpy


def parse():
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blend", help="file to open (with the bpy module; blender -b takes it on its command line)")
    ap.add_argument("--zip", help="add-on zip to install if Stiff Rods is not enabled")
    ap.add_argument("--frames", nargs=2, type=int, default=None, metavar=("START", "END"))
    ap.add_argument("--out", required=True, help="where to save the baked .blend")
    ap.add_argument("--storm", action="store_true",
                    help="blow the add-on's storm preset (calm → 30 m/s → calm) over the baked frames")
    return ap.parse_args(argv)


def enable(zip_path):
    if hasattr(bpy.ops, "stiff_rods") and "bake" in dir(bpy.ops.stiff_rods):
        return
    if not zip_path:
        raise SystemExit("Stiff Rods is not enabled: pass --zip with the add-on zip")
    if bpy.app.version >= (4, 2, 0) and not zip_path.endswith("-legacy.zip"):
        bpy.ops.extensions.package_install_files(filepath=os.path.abspath(zip_path), repo="user_default",
                                                 enable_on_install=True)
    else:
        import addon_utils
        bpy.ops.preferences.addon_install(filepath=os.path.abspath(zip_path), overwrite=True)
        addon_utils.enable("stiff_rods", default_set=True)


def main():
    args = parse()
    if args.blend:
        bpy.ops.wm.open_mainfile(filepath=os.path.abspath(args.blend))
    enable(args.zip)
    arm = next((o for o in bpy.context.scene.objects if o.type == "ARMATURE"), None)
    if arm is None:
        raise SystemExit("no armature in the scene: open a Sapling tree made with 'Use Armature'")
    bpy.context.view_layer.objects.active = arm
    scene = bpy.context.scene
    start, end = args.frames or (scene.frame_start, scene.frame_end)
    if args.storm:
        scene.frame_start, scene.frame_end = start, end      # the preset spans the scene's range
        assert bpy.ops.stiff_rods.storm_preset() == {"FINISHED"}
    # save first: the leaves' point cache (.pc2) is written next to the .blend it belongs to
    bpy.ops.wm.save_as_mainfile(filepath=os.path.abspath(args.out))
    t0 = time.perf_counter()
    result = bpy.ops.stiff_rods.bake(frame_start=start, frame_end=end)
    seconds = time.perf_counter() - t0
    bpy.ops.wm.save_mainfile()
    print(json.dumps({"result": sorted(result), "armature": arm.name, "frames": [start, end], "storm": args.storm,
                      "seconds": round(seconds, 2), "action": arm.animation_data.action.name, "out": args.out}))


main()
