"""What the window scripts (gui_modal.py, inputs_gui.py, forest_panel_gui.py) share: the first window's 3D View as
operator context, simulated key presses, and the timer that runs a script's steps and quits Blender."""

import json
import traceback

import bpy


def view3d():
    """The first window, its 3D View area and that area's main region."""
    win = bpy.context.window_manager.windows[0]
    area = next(a for a in win.screen.areas if a.type == "VIEW_3D")
    return win, area, next(r for r in area.regions if r.type == "WINDOW")


def in_view3d(fn, *args, **kw):
    """``fn(*args, **kw)`` with the first window's 3D View as context."""
    win, area, region = view3d()
    with bpy.context.temp_override(window=win, area=area, region=region):
        return fn(*args, **kw)


def key(kind, ctrl=False):
    """Press and release ``kind`` (e.g. "ESC") in the first window."""
    win = view3d()[0]
    for value in ("PRESS", "RELEASE"):
        win.event_simulate(type=kind, value=value, ctrl=ctrl)


def run(steps, out: dict, tag: str, persistent: bool = False) -> None:
    """Run the generator ``steps`` from a timer (each yield: seconds to wait), then print ``tag {out as json}``
    (with "error" set to the traceback if a step raised) and quit Blender, so no timer is left behind.
    ``persistent``: the timer survives a file load done by a step."""

    def tick():
        try:
            return next(steps)
        except StopIteration:
            pass
        except Exception:
            out["error"] = traceback.format_exc()
        print(tag + " " + json.dumps(out), flush=True)
        bpy.ops.wm.quit_blender()
        return None

    bpy.app.timers.register(tick, first_interval=1.0, persistent=persistent)
