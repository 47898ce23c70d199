#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Render pictures of a baked tree with Blender's Workbench engine (Debian's blender 3.4 or newer).

    python3 tools/render_birch.py baked_birch.blend --out-dir /tmp/pics

``baked_birch.blend`` is what README command 1 writes (the leaves' point cache
``leaves_stiff_rods.pc2`` must lie next to it). The command starts ``blender -b --factory-startup``
on the file with this script (without the add-on: a baked tree plays on its own) and writes into
``--out-dir`` (required; ``docs/images/`` replaces the README's pictures)

* ``crown_rest_vs_storm.png``: the crown at the first frame and at the storm peak, side by side,
  seen by one orthographic camera from the side, across the wind;
* ``birch_storm_strip.png``: the whole tree at ``--strip`` frames (default 6) spread over the baked
  range, the storm peak among them, all framed alike.

The storm peak is the frame at which the crown's bone tails (the bones whose rest tail lies in the
top ``--crown`` fraction of the tree's height) are displaced farthest from the first frame, on
average; it is found from the baked bones, and the view looks across the mean displacement at that
frame, so the bend lies in the picture plane. Cameras are fitted to the bounding box of the bone
tails and of the leaves (1st to 99th percentile of the leaves' vertices, so a few stray vertices do
not shrink the tree). Bark and leaves take object colours under studio lighting; each panel is
labelled with its frame (Blender's render stamp). The panels are stitched with numpy through
``bpy.data.images`` (no other dependency) and stored with 32 levels per channel, which keeps each
PNG under 400 KB at the default sizes (a third smaller than 256 levels, no visible banding).

``--xvfb`` runs Blender under ``xvfb-run -a`` (for machines where background Workbench rendering
needs an X display); ``--blender PATH`` picks the Blender binary. Prints one JSON line with the
peak frame, the strip frames, the image sizes and the seconds taken.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # inside Blender (--python) this folder is not on the path
import _blender_run  # noqa: E402

BARK = (0.86, 0.84, 0.80, 1.0)  # birch bark: off-white
LEAVES = (0.22, 0.48, 0.12, 1.0)  # leaf green
SKY = (0.62, 0.72, 0.84)  # background (world colour)
GAP = 6  # pixels of white between stitched panels
LEVELS = 31  # 32 levels per channel: PNGs a third smaller, no visible banding


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("blend", help="baked .blend (README command 1's baked_birch.blend)")
    ap.add_argument("--out-dir", required=True, help="folder for the PNGs (the README's pictures: docs/images/)")
    ap.add_argument("--strip", type=int, default=6, help="frames in the storm strip (default 6)")
    ap.add_argument(
        "--crown", type=float, default=0.2, help="top fraction of the tree's height that is its crown (default 0.2)"
    )
    _blender_run.add_size(ap, "--crown-size", (720, 360), "pixels of each crown panel")
    _blender_run.add_size(ap, "--strip-size", (240, 330), "pixels of each strip panel")
    ap.add_argument("--xvfb", action="store_true", help="run Blender under xvfb-run -a")
    return _blender_run.parse(ap, argv)


# ---------------------------------------------------------------- launcher (plain python)


def launch(args):
    blend = os.path.abspath(args.blend)
    if not os.path.isfile(blend):
        raise SystemExit(f"render_birch: no such .blend: {blend}")
    if not os.path.isfile(os.path.join(os.path.dirname(blend), "leaves_stiff_rods.pc2")):
        print(
            "render_birch: warning: no leaves_stiff_rods.pc2 next to the .blend; the leaves will not move",
            file=sys.stderr,
        )
    blender = shutil.which(args.blender)
    if blender is None:
        raise SystemExit(f"render_birch: Blender binary not found: {args.blender}")
    cmd = [
        blender,
        "-b",
        "--factory-startup",
        blend,
        "--python",
        os.path.abspath(__file__),
        "--",
        blend,
        "--worker",
        "--out-dir",
        os.path.abspath(args.out_dir),
        "--strip",
        str(args.strip),
        "--crown",
        str(args.crown),
        "--crown-size",
        *map(str, args.crown_size),
        "--strip-size",
        *map(str, args.strip_size),
    ]
    if args.xvfb:
        if shutil.which("xvfb-run") is None:
            raise SystemExit("render_birch: --xvfb given but xvfb-run is not installed (apt-get install xvfb)")
        cmd = ["xvfb-run", "-a"] + cmd
    proc = subprocess.run(cmd, env=_blender_run.blender_env(), capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RENDER_BIRCH ")]
    if proc.returncode != 0 or not lines:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"render_birch: Blender failed (exit {proc.returncode})")
    print(lines[-1][len("RENDER_BIRCH ") :])


# ---------------------------------------------------------------- worker (inside Blender)


def world_points(arm, np):
    """Heads and tails of all pose bones, world space, shape (2, n, 3)."""
    m = np.array(arm.matrix_world)
    pts = np.array([[pb.head[:] for pb in arm.pose.bones], [pb.tail[:] for pb in arm.pose.bones]])
    return pts @ m[:3, :3].T + m[:3, 3]


def leaf_points(obj, depsgraph, np):
    ev = obj.evaluated_get(depsgraph)
    mesh = ev.to_mesh()
    co = np.empty(len(mesh.vertices) * 3)
    mesh.vertices.foreach_get("co", co)
    ev.to_mesh_clear()
    m = np.array(obj.matrix_world)
    return co.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]


def find_peak(scene, arm, crown_fraction, np):
    """Frame of largest mean crown-tail displacement from the first frame, and that mean displacement."""
    hidden = [o for o in scene.objects if o is not arm and not o.hide_viewport]
    for o in hidden:  # the scan needs the bones only: skip evaluating meshes and curves
        o.hide_viewport = True
    try:
        scene.frame_set(scene.frame_start)
        rest = world_points(arm, np)[1]
        z = rest[:, 2]
        crown = z >= z.max() - crown_fraction * (z.max() - z.min())
        best = (scene.frame_start, -1.0, np.zeros(3))
        for f in range(scene.frame_start, scene.frame_end + 1):
            scene.frame_set(f)
            d = world_points(arm, np)[1][crown] - rest[crown]
            size = float(np.linalg.norm(d, axis=1).mean())
            if size > best[1]:
                best = (f, size, d.mean(axis=0))
    finally:
        for o in hidden:
            o.hide_viewport = False
    return best, crown


def view_axes(mean_disp, np, tilt_deg=6.0):
    """Camera looking horizontally (tilted down a little) across the horizontal mean displacement,
    so that the displacement points to the picture's right."""
    h = np.array([mean_disp[0], mean_disp[1], 0.0])
    if np.linalg.norm(h) < 1e-9:
        h = np.array([1.0, 0.0, 0.0])
    right = h / np.linalg.norm(h)
    look = np.cross(np.array([0.0, 0.0, 1.0]), right)  # right × look = up: looks with +z up
    t = np.radians(tilt_deg)
    look = look * np.cos(t) - np.array([0.0, 0.0, 1.0]) * np.sin(t)
    up = np.cross(right, look)
    return right, up / np.linalg.norm(up), look / np.linalg.norm(look)


def fit_camera(cam, pts, axes, size, margin, np, top=False):
    """Orthographic camera along ``axes`` fitting ``pts`` (n, 3) into ``size`` pixels with ``margin``;
    ``top``: the points' top at the picture's top, the spare height below (more of the tree, not sky)."""
    from mathutils import Matrix

    right, up, look = axes
    u, v, w = pts @ right, pts @ up, pts @ look
    uc, vc = (u.min() + u.max()) / 2, (v.min() + v.max()) / 2
    ue, ve = (u.max() - u.min()) * (1 + 2 * margin), (v.max() - v.min()) * (1 + 2 * margin)
    W, H = size
    depth = w.max() - w.min()
    scale = float(max(ue, ve * W / H) if W >= H else max(ve, ue * H / W))
    if top:
        seen = scale * H / W if W >= H else scale  # world height the picture shows
        vc = v.max() + margin * (v.max() - v.min()) - seen / 2
    pos = right * uc + up * vc + look * (w.min() - depth - 1.0)
    m = np.eye(4)
    m[:3, 0], m[:3, 1], m[:3, 2], m[:3, 3] = right, up, -look, pos
    cam.matrix_world = Matrix(m.tolist())
    cam.data.type = "ORTHO"
    cam.data.sensor_fit = "AUTO"  # ortho_scale spans the longer side of the image
    cam.data.ortho_scale = scale
    cam.data.clip_start = 0.1
    cam.data.clip_end = float(3 * depth + 10.0)


def render_panel(scene, frame, size, label, path):
    scene.frame_set(frame)
    scene.render.resolution_x, scene.render.resolution_y = size
    scene.render.stamp_note_text = label
    scene.render.filepath = path
    import bpy

    bpy.ops.render.render(write_still=True)
    return path


def stitch(paths, out, np):
    """Panels side by side (same height), GAP pixels of background between them, saved as PNG."""
    import bpy

    arrays = []
    for p in paths:
        img = bpy.data.images.load(p)
        w, h = img.size
        a = np.empty(w * h * 4, dtype=np.float32)
        img.pixels.foreach_get(a)
        arrays.append(a.reshape(h, w, 4))
        bpy.data.images.remove(img)
    h = arrays[0].shape[0]
    gap = np.ones((h, GAP, 4), dtype=np.float32)
    gap[..., :3] = 1.0
    parts = []
    for i, a in enumerate(arrays):
        parts += ([gap] if i else []) + [a]
    full = np.concatenate(parts, axis=1)
    full = np.round(full * LEVELS) / LEVELS
    full[..., 3] = 1.0
    img = bpy.data.images.new("stitched", full.shape[1], full.shape[0], alpha=False)
    img.pixels.foreach_set(full.ravel())
    img.save_render(out, scene=bpy.context.scene)  # the scene's PNG settings: RGB, compression 100
    bpy.data.images.remove(img)
    return int(full.shape[1]), int(full.shape[0])


def setup_look(scene):
    import bpy

    scene.render.engine = "BLENDER_WORKBENCH"
    sh = scene.display.shading
    sh.light = "STUDIO"
    sh.color_type = "OBJECT"
    sh.show_shadows = False
    sh.show_cavity = False  # its fine-grained shading doubles the PNG's size
    scene.display.render_aa = "8"
    scene.view_settings.view_transform = "Standard"  # object colours as given, no filmic tone curve
    scene.view_settings.look = "None"
    if scene.world is None:
        scene.world = bpy.data.worlds.new("render_birch")
    scene.world.color = SKY
    r = scene.render
    r.resolution_percentage = 100
    r.film_transparent = False
    r.image_settings.file_format = "PNG"
    r.image_settings.color_mode = "RGB"
    r.image_settings.compression = 100
    r.use_stamp = True
    for name in dir(r):
        if name.startswith("use_stamp_") and name not in ("use_stamp_note", "use_stamp_labels"):
            try:
                setattr(r, name, False)
            except (AttributeError, TypeError):
                pass
    r.use_stamp_note = True
    r.use_stamp_labels = False
    r.stamp_font_size = 18
    r.stamp_foreground = (1.0, 1.0, 1.0, 1.0)
    r.stamp_background = (0.0, 0.0, 0.0, 0.45)
    for o in scene.objects:
        if o.type == "ARMATURE":
            o.hide_render = True
        elif o.type == "MESH":
            o.color = LEAVES
        else:
            o.color = BARK


def strip_frames(first: int, last: int, count: int, peak: int, np) -> list[int]:
    """``count`` (at least 2) frames spread evenly over first…last, the one nearest the peak moved onto it."""
    n = max(2, count)
    frames = sorted(set(int(round(x)) for x in np.linspace(first, last, n)))
    near = min(range(len(frames)), key=lambda i: abs(frames[i] - peak))
    frames[near] = peak
    return sorted(set(frames))


def work(args):
    import bpy
    import numpy as np

    t0 = time.perf_counter()
    scene = bpy.context.scene
    arm = next((o for o in scene.objects if o.type == "ARMATURE"), None)
    if arm is None or arm.animation_data is None or arm.animation_data.action is None:
        raise SystemExit("render_birch: no baked armature in the file (bake it first: README command 1)")
    meshes = [o for o in scene.objects if o.type == "MESH" and not o.hide_render]
    os.makedirs(args.out_dir, exist_ok=True)
    (peak, peak_size, disp), crown = find_peak(scene, arm, args.crown, np)
    if peak_size <= 0.0:
        raise SystemExit("render_birch: the baked bones do not move; was the tree baked with wind (--storm)?")
    t_peak = time.perf_counter() - t0
    setup_look(scene)
    axes = view_axes(disp, np)
    cam = bpy.data.objects.new("render_birch_cam", bpy.data.cameras.new("render_birch_cam"))
    scene.collection.objects.link(cam)
    scene.camera = cam
    depsgraph = bpy.context.evaluated_depsgraph_get()
    first = scene.frame_start
    scene.frame_set(first)
    cut = float(world_points(arm, np)[1][crown][:, 2].min())  # the crown's lowest rest tail

    def points(frame, crown_only):
        """Bone tails (crown only: of the crown; else all heads and tails) and the leaves' 1st and 99th
        percentile corners (crown only: of the vertices above the crown's lowest rest tail)."""
        scene.frame_set(frame)
        bones = world_points(arm, np)
        pts = [bones[1][crown]] if crown_only else [bones[0], bones[1]]
        zcut = cut if crown_only else -np.inf
        for o in meshes:
            lp = leaf_points(o, depsgraph, np)
            lp = lp[lp[:, 2] >= zcut]
            if len(lp):
                pts.append(np.percentile(lp, [1, 99], axis=0))
        return np.concatenate(pts)

    tmp = tempfile.mkdtemp(prefix="render_birch_")
    # (a) crown at rest and at the peak, one camera for both
    crown_pts = np.concatenate([points(first, True), points(peak, True)])
    fit_camera(cam, crown_pts, axes, args.crown_size, 0.04, np, top=True)
    panels = [
        render_panel(scene, first, args.crown_size, f"frame {first}: rest", os.path.join(tmp, "c0.png")),
        render_panel(scene, peak, args.crown_size, f"frame {peak}: storm peak", os.path.join(tmp, "c1.png")),
    ]
    crown_png = os.path.join(args.out_dir, "crown_rest_vs_storm.png")
    crown_wh = stitch(panels, crown_png, np)
    # (b) the whole tree through the storm
    frames = strip_frames(first, scene.frame_end, args.strip, peak, np)
    fit_camera(cam, np.concatenate([points(f, False) for f in frames]), axes, args.strip_size, 0.03, np)
    panels = [
        render_panel(
            scene, f, args.strip_size, f"frame {f}" + (" (peak)" if f == peak else ""), os.path.join(tmp, f"s{f}.png")
        )
        for f in frames
    ]
    strip_png = os.path.join(args.out_dir, "birch_storm_strip.png")
    strip_wh = stitch(panels, strip_png, np)
    shutil.rmtree(tmp, ignore_errors=True)
    print(
        "RENDER_BIRCH "
        + json.dumps(
            {
                "peak_frame": peak,
                "peak_mean_crown_displacement_m": round(peak_size, 3),
                "crown_bones": int(crown.sum()),
                "strip_frames": frames,
                "images": {
                    crown_png: {"px": crown_wh, "bytes": os.path.getsize(crown_png)},
                    strip_png: {"px": strip_wh, "bytes": os.path.getsize(strip_png)},
                },
                "seconds": {"peak_scan": round(t_peak, 1), "total": round(time.perf_counter() - t0, 1)},
            }
        )
    )


if __name__ == "__main__":
    _blender_run.main(parse, launch, work)
