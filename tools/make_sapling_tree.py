r"""Generate a real Sapling Tree Gen tree from one of its presets and save it as a .blend.

Run with Blender (Debian's 3.4 ships Sapling):

    blender -b --factory-startup --python tools/make_sapling_tree.py -- \
        white_birch out.blend [--no-leaves] [--arm-levels N]
"""

import ast
import os
import sys

import addon_utils
import bpy


def load_preset(name: str) -> dict:
    import add_curve_sapling

    path = os.path.join(os.path.dirname(add_curve_sapling.__file__), "presets", name + ".py")
    if not os.path.exists(path):
        raise SystemExit(f"unknown Sapling preset {name!r}")
    with open(path) as fh:
        text = fh.read()
    return ast.literal_eval(text[text.index("{") :])


def make_tree(name: str, leaves: bool = True, arm_levels: int | None = None):
    """Replace the scene's objects with a Sapling tree from preset ``name`` (armature, curve and, with
    ``leaves``, the leaves mesh); returns the armature. Also used by the tests' Blender scripts."""
    addon_utils.enable("add_curve_sapling", default_set=True)
    preset = load_preset(name)
    if arm_levels is not None:
        preset["armLevels"] = arm_levels
    for obj in list(bpy.data.objects):
        bpy.data.objects.remove(obj)
    preset.update(useArm=True, showLeaves=leaves)
    # Sapling's operator rejects unknown keys: keep only its properties
    props = bpy.ops.curve.tree_add.get_rna_type().properties.keys()
    bpy.ops.curve.tree_add(**{k: v for k, v in preset.items() if k in props})
    return next(o for o in bpy.data.objects if o.type == "ARMATURE")


def main(argv):
    args = argv[argv.index("--") + 1 :] if "--" in argv else []
    if len(args) < 2:
        raise SystemExit(__doc__)
    name, out = args[0], os.path.abspath(args[1])
    make_tree(
        name,
        leaves="--no-leaves" not in args,
        arm_levels=int(args[args.index("--arm-levels") + 1]) if "--arm-levels" in args else None,
    )
    bpy.ops.wm.save_as_mainfile(filepath=out, compress=True)
    print("SAPLING_TREE", name, out, [(o.name, o.type) for o in bpy.data.objects])


if __name__ == "__main__":
    main(sys.argv)
