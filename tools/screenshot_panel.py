#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Screenshot the "Stiff Rods" tab of the 3D View sidebar in Blender's real GUI, under Xvfb.

    python3 tools/build_extension.py --legacy-only --out /tmp/dist_pics
    python3 tools/screenshot_panel.py --zip /tmp/dist_pics/stiff_rods-0.1.0-legacy.zip --out-dir /tmp/pics

Starts ``xvfb-run -a blender --enable-event-simulate`` (Debian's blender 3.4; Blender 3.4-4.1 take
the legacy add-on) with a throw-away user profile (BLENDER_USER_RESOURCES, BLENDER_USER_SCRIPTS,
BLENDER_USER_CONFIG and TMPDIR in a temporary folder), opens ``--blend`` (default
``sample_blends/white_birch.blend``), installs and enables the add-on from ``--zip``, makes the
tree's armature the active object, maximises the 3D View, opens its sidebar (region overlap off,
so it has its own background), drags its edge to ``--sidebar-width`` pixels (default 400: no
label cut short) and switches it to the "Stiff Rods" tab. Blender 3.4's Python cannot set a
sidebar tab, so the script moves the simulated mouse over the sidebar's tab strip and turns the
wheel (which cycles the tabs) until the add-on's panel is the one drawn. It then takes
``bpy.ops.screen.screenshot`` from a timer and quits Blender.

Writes into ``--out-dir`` (required; ``docs/images/`` replaces the README's picture) ``n_panel.png`` (the
sidebar, cut to the panel's height) and, with ``--full``, ``n_panel_window.png`` (the whole window).
``--size W H`` is the window's size in pixels (default 1280 1100: tall enough for the whole panel). Gives
up after ``--timeout`` seconds (default 300). Prints one JSON line with the files written, their sizes and
the seconds taken.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)  # inside Blender (--python) this folder is not on the path
import _blender_run  # noqa: E402

CATEGORY = "Stiff Rods"
PANEL = "STIFF_RODS_PT_main"


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zip", required=True, help="legacy add-on zip (tools/build_extension.py --legacy-only)")
    ap.add_argument(
        "--blend",
        default=os.path.join(ROOT, "sample_blends", "white_birch.blend"),
        help="tree to open (default: sample_blends/white_birch.blend)",
    )
    ap.add_argument("--out-dir", required=True, help="folder for the PNGs (the README's picture: docs/images/)")
    ap.add_argument("--full", action="store_true", help="also write the whole window as n_panel_window.png")
    _blender_run.add_size(ap, "--size", (1280, 1100), "window size in pixels")
    ap.add_argument(
        "--sidebar-width", type=int, default=400, help="widen the sidebar to this many pixels (default 400)"
    )
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds before giving up (default 300)")
    return _blender_run.parse(ap, argv)


# ---------------------------------------------------------------- launcher (plain python)


def launch(args):
    for path, what in ((args.zip, "add-on zip"), (args.blend, ".blend")):
        if not os.path.isfile(path):
            raise SystemExit(f"screenshot_panel: no such {what}: {path}")
    blender = shutil.which(args.blender)
    if blender is None:
        raise SystemExit(f"screenshot_panel: Blender binary not found: {args.blender}")
    if shutil.which("xvfb-run") is None:
        raise SystemExit("screenshot_panel: xvfb-run is not installed (apt-get install xvfb xauth)")
    w, h = args.size
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="screenshot_panel_") as profile:
        env = _blender_run.blender_env(
            BLENDER_USER_RESOURCES=os.path.join(profile, "resources"),
            BLENDER_USER_SCRIPTS=os.path.join(profile, "scripts"),
            BLENDER_USER_CONFIG=os.path.join(profile, "config"),
            # Blender's quit.blend goes there too
            TMPDIR=profile,
            TEMP=profile,
        )
        cmd = [
            "xvfb-run",
            "-a",
            "-s",
            f"-screen 0 {w}x{h}x24",
            blender,
            "--enable-event-simulate",
            "--window-geometry",
            "0",
            "0",
            str(w),
            str(h),
            "--no-window-focus",
            os.path.abspath(args.blend),
            "--python",
            os.path.abspath(__file__),
            "--",
            "--worker",
            "--zip",
            os.path.abspath(args.zip),
            "--out-dir",
            os.path.abspath(args.out_dir),
            "--sidebar-width",
            str(args.sidebar_width),
        ] + (["--full"] if args.full else [])
        proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        try:
            out, _ = proc.communicate(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)  # xvfb-run, Xvfb and Blender: the group started here
            out, _ = proc.communicate()
            sys.stderr.write(out[-4000:])
            raise SystemExit(f"screenshot_panel: Blender did not finish within {args.timeout:.0f} s") from None
    lines = [line for line in out.splitlines() if line.startswith("SCREENSHOT_PANEL ")]
    result = json.loads(lines[-1][len("SCREENSHOT_PANEL ") :]) if lines else None
    if not result or "error" in result:
        sys.stderr.write(out[-4000:])
        raise SystemExit(
            "screenshot_panel: " + (result["error"] if result else f"Blender failed (exit {proc.returncode})")
        )
    result["seconds"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(result))


# ---------------------------------------------------------------- worker (inside Blender's GUI)


def _view3d(win):
    """The window's largest 3D View, or None."""
    areas = [a for a in win.screen.areas if a.type == "VIEW_3D"]
    return max(areas, key=lambda a: a.width * a.height) if areas else None


def _sidebar(area):
    """The 3D View's sidebar (its UI region)."""
    return next(r for r in area.regions if r.type == "UI")


class _Shooter:
    """The timer's state machine inside Blender: ``step`` 0 maximise the 3D View, 1 open the sidebar and frame
    the tree, 10… drag the sidebar's edge (four events per attempt), 2 wheel over the tab strip until the panel
    is drawn, 3 take the screenshot and quit. Each stage returns the seconds until the next tick, or None."""

    def __init__(self, args, bpy):
        self.args, self.bpy = args, bpy
        self.step, self.drawn, self.tries, self.t0 = 0, 0, 0, time.perf_counter()

    def report(self, **kw):
        print("SCREENSHOT_PANEL " + json.dumps(kw), flush=True)

    def fail(self, msg):
        self.report(error=msg)
        self.bpy.ops.wm.quit_blender()
        return None

    def tick(self):
        try:
            return self.advance()
        except Exception as exc:  # a timer's exception would leave Blender running
            import traceback

            traceback.print_exc()
            return self.fail(f"{type(exc).__name__}: {exc}")

    def advance(self):
        win = self.bpy.context.window_manager.windows[0]
        area = _view3d(win)
        if area is None:
            return self.fail("no 3D View in the window")
        s = self.step
        if s == 0:
            return self.maximise(win, area)
        if s == 1:
            return self.open_sidebar(win, area)
        if s >= 10:
            return self.widen_sidebar(win, area, s)
        if s == 2:
            return self.find_tab(win, area)
        if s == 3:
            return self.shoot(win, area)
        return None

    def maximise(self, win, area):
        """The 3D View fills the window."""
        with self.bpy.context.temp_override(window=win, area=area, region=area.regions[-1]):
            self.bpy.ops.screen.screen_full_area()
        self.step = 1
        return 0.5

    def open_sidebar(self, win, area):
        """Sidebar open, solid shading with overlays, the tree in view."""
        space = area.spaces.active
        space.show_region_ui = True
        space.shading.type = "SOLID"
        space.overlay.show_overlays = True
        region = next(r for r in area.regions if r.type == "WINDOW")
        with self.bpy.context.temp_override(window=win, area=area, region=region):
            self.bpy.ops.view3d.view_all(center=False)
        self.step = 10
        return 0.5

    def widen_sidebar(self, win, area, s):
        """Drag the sidebar's edge to ``--sidebar-width``: labels unabridged (three attempts)."""
        args = self.args
        ui = _sidebar(area)
        phase, attempt = (s - 10) % 4, (s - 10) // 4
        if phase == 0 and (ui.width >= args.sidebar_width - 2 or attempt >= 3):
            self.step = 2
            self.drawn = 0
            return 0.5
        x0, y = ui.x + (-2, 1, 4)[attempt], ui.y + ui.height // 2
        x1 = x0 - (args.sidebar_width - ui.width)
        # one event a tick: the press must find the edge's action zone under the mouse
        ev = (
            ("MOUSEMOVE", "NOTHING", x0),
            ("LEFTMOUSE", "PRESS", x0),
            ("MOUSEMOVE", "NOTHING", x1),
            ("LEFTMOUSE", "RELEASE", x1),
        )[phase]
        win.event_simulate(type=ev[0], value=ev[1], x=ev[2], y=y)
        self.step = s + 1
        return 0.2

    def find_tab(self, win, area):
        """Turn the wheel over the tab strip until our tab is drawn (at most 12 tries)."""
        if self.drawn > 0:
            self.step = 3
            return 0.5
        if self.tries >= 12:
            os.makedirs(self.args.out_dir, exist_ok=True)
            with self.bpy.context.temp_override(window=win, area=area):
                self.bpy.ops.screen.screenshot(filepath=os.path.join(self.args.out_dir, "n_panel_failed.png"))
            return self.fail(f'the sidebar never showed the "{CATEGORY}" tab (window: n_panel_failed.png)')
        ui = _sidebar(area)
        # the tabs run down the sidebar's outer edge; there the wheel cycles them (over the panel,
        # Ctrl+Wheel would change the number field under the mouse instead)
        x, y = ui.x + ui.width - 8, ui.y + ui.height - 40
        win.event_simulate(type="MOUSEMOVE", value="NOTHING", x=x, y=y)
        win.event_simulate(type="WHEELDOWNMOUSE", value="PRESS", x=x, y=y)
        self.tries += 1
        self.drawn = 0
        return 0.5

    def shoot(self, win, area):
        """Screenshot the window, cut the sidebar out of it, report the files and quit."""
        args, bpy = self.args, self.bpy
        ui = _sidebar(area)
        os.makedirs(args.out_dir, exist_ok=True)
        full = (
            os.path.join(args.out_dir, "n_panel_window.png")
            if args.full
            else os.path.join(bpy.app.tempdir, "n_panel_window.png")
        )
        with bpy.context.temp_override(window=win, area=area, region=ui):
            bpy.ops.screen.screenshot(filepath=full, check_existing=False)
        panel_png = os.path.join(args.out_dir, "n_panel.png")
        size = crop(full, panel_png, ui)
        files = {panel_png: {"px": size, "bytes": os.path.getsize(panel_png)}}
        if args.full:
            files[full] = {"px": [win.width, win.height], "bytes": os.path.getsize(full)}
        self.report(
            files=files,
            tab_tries=self.tries,
            sidebar_width=ui.width,
            gui_seconds=round(time.perf_counter() - self.t0, 1),
        )
        bpy.ops.wm.quit_blender()
        return None


def _count_draws(bpy, shooter: _Shooter) -> bool:
    """Re-register the add-on's panel with a draw that counts its calls (which sidebar tab Blender draws);
    False when the add-on did not register it."""
    panel = getattr(bpy.types, PANEL, None)
    if panel is None:
        return False
    draw = panel.draw

    def counting_draw(self, context):
        shooter.drawn += 1
        draw(self, context)

    # a registered class's draw is bound at registration: register it again with the counting one
    bpy.utils.unregister_class(panel)
    panel.draw = counting_draw
    bpy.utils.register_class(panel)
    return True


def work(args):
    import addon_utils
    import bpy

    shooter = _Shooter(args, bpy)
    bpy.context.preferences.system.use_region_overlap = False  # the sidebar on its own background
    bpy.ops.preferences.addon_install(filepath=args.zip, overwrite=True)
    addon_utils.enable("stiff_rods", default_set=True)
    if not _count_draws(bpy, shooter):
        shooter.fail(f"the add-on did not register {PANEL}")
        return
    arm = next((o for o in bpy.context.scene.objects if o.type == "ARMATURE"), None)
    if arm is None:
        shooter.fail("no armature in the scene: open a Sapling tree made with 'Use Armature'")
        return
    for o in bpy.context.scene.objects:
        o.select_set(o is arm)
    bpy.context.view_layer.objects.active = arm
    bpy.app.timers.register(shooter.tick, first_interval=1.0)


def crop(full_png, out_png, region):
    """The sidebar region of the window screenshot, cut below the panel's last row of content."""
    import bpy
    import numpy as np

    img = bpy.data.images.load(full_png)
    w, h = img.size
    a = np.empty(w * h * 4, dtype=np.float32)
    img.pixels.foreach_get(a)
    bpy.data.images.remove(img)
    a = a.reshape(h, w, 4)  # rows from the bottom, like region.y
    side = a[region.y : region.y + region.height, region.x : region.x + region.width]
    empty = side[4]  # a row of the empty sidebar below the panel (row 0: a border)
    content = 4 + np.nonzero(np.abs(side[4:, :, :3] - empty[None, :, :3]).max(axis=(1, 2)) > 0.02)[0]
    bottom = max(0, int(content.min()) - 8) if len(content) else 0
    side = np.ascontiguousarray(side[bottom:])
    out = bpy.data.images.new("n_panel", side.shape[1], side.shape[0], alpha=False)
    out.pixels.foreach_set(side.ravel())
    out.filepath_raw = out_png
    out.file_format = "PNG"
    out.save()
    bpy.data.images.remove(out)
    return [int(side.shape[1]), int(side.shape[0])]


if __name__ == "__main__":
    _blender_run.main(parse, launch, work)
