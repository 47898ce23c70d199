"""Named Actions: one Bake, several winds, each baked into its own action on its own NLA track.

Bake > Named Actions bakes the tree once per chosen wind (addon/wind.py ``NAMED_WINDS``: calm, breeze, storm,
steady and gusty; or the scene's own wind), each with the same frames, Pre-roll and Loop. Each record becomes an
action named ``<armature>_<wind>``, tagged as the bake's, pushed as a strip at the start frame onto an NLA track
named after its wind (lower case: ``calm``, ``breeze``, ``storm``, ``scene``), the armature left with no active
action: Blender plays the top track, glTF and FBX export each track as an animation of that name. The armature's
own action, its bones' rotation modes and the bones the bake adds are kept and given back as for one bake
(addon/bake.py); :func:`free` removes exactly the tracks and actions named in the armature's
``stiff_rods_named_actions`` mark.

Bones only: a leaves point cache cannot follow several actions, so a tree with Leaves on is refused (its leaves
still ride their branches through their Armature modifier with Leaves off); curves are refused.
"""

from __future__ import annotations

import json

from . import bake, keyframes, wind
from .bake_record import BakeRecord


def track_name(preset: str) -> str:
    """The NLA track (and glTF animation) of a wind: its name in lower case."""
    return preset.lower()


def check(session, presets) -> None:
    """Refuse, naming the object, what Named Actions cannot bake: a curve, a tree with Leaves on."""
    if session.source.armature is None:
        raise ValueError(f"Named Actions bake armatures: '{session.owner_name}' is a curve, turn Named Actions off")
    if session.leaf_mesh is not None:
        raise ValueError(
            f"Named Actions key bones only and '{session.owner_name}' has Leaves on (a point cache cannot follow "
            "several actions): turn its Leaves off, its leaves then ride their branches"
        )
    if not presets:
        raise ValueError("Named Actions: choose at least one wind (Calm, Breeze, Storm or Scene)")


class NamedRuns:
    """The bakes of one tree in several winds, one :class:`bake.BakeRun` after the other, stepped like one run:
    :meth:`step`, :attr:`done`, :attr:`frames_done` / :attr:`frames_total` (the first run's frames times the
    winds), :meth:`close`, :meth:`run`; :meth:`record` is the list of (wind, BakeRecord) once done."""

    def __init__(self, scene, session, start: int, end: int, plan, presets, loop: bool):
        check(session, presets)
        self.scene, self.session, self.plan, self.presets, self.loop = scene, session, plan, list(presets), loop
        self.records: list[tuple[str, BakeRecord]] = []
        self.requested = (start, end)  # each wind's run bakes this range (a loop may end it earlier)
        self.current = self._begin(0)
        self.start, self.end = self.current.start, self.current.end
        self.frames_total = self.current.frames_total * len(self.presets)

    def _begin(self, i: int) -> bake.BakeRun:
        preset = self.presets[i]
        self.session.set_wind(wind.SceneWind.from_scene(self.scene, loop=self.loop, preset=preset))
        return bake.BakeRun(self.scene, self.session, *self.requested, self.plan)

    @property
    def done(self) -> bool:
        return len(self.records) == len(self.presets)

    @property
    def frame(self) -> int:
        return self.current.frame

    @property
    def frames_done(self) -> int:
        return len(self.records) * self.current.frames_total + (0 if self.done else self.current.frames_done)

    def step(self) -> None:
        self.current.step()
        if not self.current.done:
            return
        self.records.append((self.presets[len(self.records)], self.current.record()))
        self.current.close()
        if not self.done:
            self.current = self._begin(len(self.records))

    def close(self) -> None:
        self.current.close()

    def run(self, progress=None, cancel=None) -> list[tuple[str, BakeRecord]]:
        """Every wind's bake, then :meth:`close` (as :meth:`bake.BakeRun.run`)."""
        try:
            while not self.done:
                if cancel is not None and cancel():
                    raise bake.BakeCancelled(f"Bake of '{self.session.owner_name}' cancelled")
                self.step()
                if progress is not None:
                    progress(self.frames_done - 1)
        finally:
            self.close()
        return self.records

    def record(self) -> list[tuple[str, BakeRecord]]:
        return self.records


def write(records: list[tuple[str, BakeRecord]], objects) -> int:
    """Key each (wind, record) into its own action on its own NLA track of the armature (module docstring); the
    F-curves written."""
    first = records[0][1]
    arm = objects.get(first.name)
    written = bake.write_bake(first, objects)  # the previous action, modes and added bones kept as for one bake
    anim = arm.animation_data
    pairs = []
    for i, (preset, record) in enumerate(records):
        if i:
            action = keyframes.new_bake_action(arm)
            names, quats = bake.bone_keys(arm, record, add=False)
            written += keyframes.write_bone_quaternions(action, arm, names, record.frames(), quats)
        action = anim.action
        action.name = f"{arm.name}_{track_name(preset)}"
        track = anim.nla_tracks.new()
        track.name = track_name(preset)
        track.strips.new(track.name, record.start, action)
        anim.action = None
        pairs.append([track.name, action.name])
    arm[bake.NAMED_ACTIONS] = json.dumps(pairs)
    return written


def free(owner, bpy_data) -> list[str]:
    """Remove the NLA tracks and actions a Named Actions bake added to ``owner``; what was no longer there."""
    if bake.NAMED_ACTIONS not in owner:
        return []
    missing = []
    anim = owner.animation_data
    for track_name_, action_name in json.loads(owner[bake.NAMED_ACTIONS]):
        track = anim.nla_tracks.get(track_name_) if anim is not None else None
        if track is not None:
            anim.nla_tracks.remove(track)
        else:
            missing.append(f"its NLA track '{track_name_}'")
        action = bpy_data.actions.get(action_name)
        if action is not None and action.get(keyframes.BAKE_TAG):
            bpy_data.actions.remove(action)
        else:
            missing.append(f"its action '{action_name}'")
    return missing
