# SPDX-License-Identifier: GPL-3.0-or-later
"""Which Blenders Stiff Rods is tested on, and the line it prints in a newer one (no ``bpy`` here).

The CI matrix (tools/blender_matrix.py) runs Blender 3.4 (legacy zip), 4.2 LTS, 5.0, 5.2 LTS and 5.3; a newer
Blender installs and runs the add-on as well, and is told once, at register, which is the newest one tested.
"""

NEWEST_TESTED = (5, 3)  # = tools/blender_matrix.NEWEST's series (tests/addon/test_compat.py)


def untested_version_note(version) -> str | None:
    """The INFO line for Blender ``version`` (``bpy.app.version``) when it is newer than every tested Blender,
    else None."""
    if tuple(version[:2]) <= NEWEST_TESTED:
        return None
    tested = ".".join(str(v) for v in NEWEST_TESTED)
    return (
        f"Stiff Rods: INFO: Blender {'.'.join(str(v) for v in version)} is newer than {tested}, the newest Blender "
        "Stiff Rods is tested on; it should work, please report anything that does not"
    )
