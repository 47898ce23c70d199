"""What Blender's exporters need around them: the options this Blender's exporter has, and the objects to write
selected alone (exporters write the selection), the user's selection given back afterwards."""

from __future__ import annotations

import contextlib


def known_options(operator) -> set:
    """The option names this Blender's exporter ``operator`` (e.g. ``bpy.ops.export_scene.fbx``) has."""
    return set(getattr(operator, "get_rna_type")().properties.keys())  # noqa: B009 (stubs: no self)


@contextlib.contextmanager
def selected_alone(view_layer, objects):
    """Inside the block ``objects`` alone are selected, the first active; the selection and the active object are
    given back after it."""
    selected = [o for o in view_layer.objects if o.select_get()]
    active = view_layer.objects.active
    try:
        for o in selected:
            o.select_set(False)
        for o in objects:
            o.select_set(True)
        view_layer.objects.active = objects[0]
        yield
    finally:
        for o in view_layer.objects:
            o.select_set(o in selected)
        view_layer.objects.active = active
